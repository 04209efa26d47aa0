//! `delete`: remove a stopped container, or with `--force` any container.

use super::args::Delete;
use crate::container::Runtime;
use crate::error::Result;

pub fn run(rt: &Runtime, args: Delete) -> Result<i32> {
    rt.delete(&args.container_id, args.force)?;
    Ok(0)
}
