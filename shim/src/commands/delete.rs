use libcontainer::container::ContainerStatus;

use crate::cli::Delete;
use crate::error::{Failure, Result};
use crate::ops::Runtime;

pub fn run(rt: &Runtime, args: Delete) -> Result<i32> {
    if args.force && !rt.exists(&args.container_id) {
        crate::ops::validate_id(&args.container_id)?;
        rt.remove_leftovers(&args.container_id);
        return Ok(0);
    }
    let mut c = rt.load(&args.container_id)?;
    if !args.force
        && !matches!(
            c.status(),
            ContainerStatus::Stopped | ContainerStatus::Created
        )
    {
        return Err(Failure::runtime(format!(
            "cannot delete container {} that is not stopped: {}",
            args.container_id,
            c.status()
        )));
    }
    crate::oom::report(&c);
    c.delete(args.force)?;
    rt.remove_leftovers(&args.container_id);
    Ok(0)
}
