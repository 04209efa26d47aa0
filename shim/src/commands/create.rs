use crate::cli::Create;
use crate::error::Result;
use crate::ops::Runtime;

pub fn run(rt: &Runtime, args: Create) -> Result<i32> {
    rt.create(&args.container_id, &args.opts, true)?;
    Ok(0)
}
