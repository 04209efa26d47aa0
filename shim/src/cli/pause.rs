use super::args::Id;
use crate::container::{require, Runtime};
use crate::error::Result;

pub fn pause(rt: &Runtime, args: Id) -> Result<i32> {
    let (mut c, _lock) = rt.load_locked(&args.container_id)?;
    require(&c, c.can_pause(), "pause")?;
    c.pause()?;
    Ok(0)
}

pub fn resume(rt: &Runtime, args: Id) -> Result<i32> {
    let (mut c, _lock) = rt.load_locked(&args.container_id)?;
    require(&c, c.can_resume(), "resume")?;
    c.resume()?;
    Ok(0)
}
