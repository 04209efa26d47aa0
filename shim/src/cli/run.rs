//! `run`: create + start, and in the foreground wait and delete.

use super::args::Run;
use crate::container::{RunMode, Runtime};
use crate::error::Result;

pub fn run(rt: &Runtime, args: Run) -> Result<i32> {
    let mode = RunMode {
        detach: args.detach,
        keep: args.keep,
    };
    rt.run(&args.container_id, &args.opts.to_options(), mode)
}
