//! `create`: the container exists, its init waits for `start`.

use super::args::Create;
use crate::container::Runtime;
use crate::error::Result;

pub fn run(rt: &Runtime, args: Create) -> Result<i32> {
    rt.create(&args.container_id, &args.opts.to_options(), true)?;
    Ok(0)
}
