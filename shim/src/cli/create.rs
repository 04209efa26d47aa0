//! `create`: the container exists, its init waits for `start`.

use super::args::Create;
use crate::container::Runtime;
use crate::error::{Failure, Result};

pub fn run(rt: &Runtime, args: Create) -> Result<i32> {
    if args.learn.is_some() {
        return Err(Failure::usage(
            "create --learn: learning needs the container's whole life in one command; use `sandboy run --learn OUT.toml [--policy BASE.toml] --bundle B ID` (in the foreground)",
        ));
    }
    rt.create(&args.container_id, &args.opts.to_options(), true)?;
    Ok(0)
}
