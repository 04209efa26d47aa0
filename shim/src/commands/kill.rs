use libcontainer::signal::Signal;

use crate::cli::Kill;
use crate::error::{Failure, Result};
use crate::ops::{require, Runtime};

pub fn run(rt: &Runtime, args: Kill) -> Result<i32> {
    let signal = parse_signal(&args.signal)?;
    let mut c = rt.load(&args.container_id)?;
    // runc lets --all reach a stopped container's leftovers; a plain kill
    // needs a live init.
    if !args.all {
        require(&c, c.can_kill(), "kill")?;
    }
    c.kill(signal, args.all)?;
    Ok(0)
}

pub fn parse_signal(s: &str) -> Result<Signal> {
    Signal::try_from(s).map_err(|_| {
        Failure::usage(format!(
            "invalid signal {s:?}: use a name like SIGTERM/TERM or a number 1-31"
        ))
    })
}
