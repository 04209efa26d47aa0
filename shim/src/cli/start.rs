use super::args::Id;
use crate::container::{require, Runtime};
use crate::error::Result;

pub fn run(rt: &Runtime, args: Id) -> Result<i32> {
    let (mut c, _lock) = rt.load_locked(&args.container_id)?;
    require(&c, c.can_start(), "start")?;
    c.start()?;
    Ok(0)
}
