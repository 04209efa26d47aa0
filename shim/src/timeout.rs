//! `dev.sandboy.timeout`: a watcher process that outlives the runtime
//! command (detached containers too) and SIGKILLs the whole container at the
//! deadline. It holds a pidfd of the init, so a recycled pid cannot fool it,
//! and exits as soon as the init does.

use std::os::fd::AsRawFd;
use std::time::Duration;

use libcontainer::container::Container;
use nix::unistd::{fork, setsid, ForkResult};

use crate::error::{Failure, Result};
use crate::ops::Runtime;
use crate::pidfd::Pidfd;

/// Marker left in the state dir when the deadline fired.
pub const MARKER: &str = "timed-out";

pub fn watch(rt: &Runtime, c: &Container) -> Result<()> {
    let Some(span) = c
        .state
        .annotations
        .as_ref()
        .map(crate::bundle::timeout)
        .transpose()?
        .flatten()
    else {
        return Ok(());
    };
    let pid = c
        .pid()
        .ok_or_else(|| Failure::runtime("container has no init pid"))?;
    let pidfd =
        Pidfd::open(pid).map_err(|e| Failure::runtime(format!("pidfd_open({pid}): {e}")))?;

    // SAFETY: the runtime is single-threaded (libcontainer forbids threads
    // before cloning); the child only calls async-signal-safe functions until
    // it forks again and continues as a fresh single-threaded process.
    match unsafe { fork() }? {
        ForkResult::Parent { child } => {
            drop(pidfd);
            nix::sys::wait::waitpid(child, None)?;
            Ok(())
        }
        ForkResult::Child => {
            let _ = setsid();
            // SAFETY: as above; still single-threaded.
            match unsafe { fork() } {
                Ok(ForkResult::Child) => {
                    detach_stdio();
                    let code = wait_or_kill(rt, c.id(), &pidfd, span.0);
                    std::process::exit(code);
                }
                _ => std::process::exit(0),
            }
        }
    }
}

/// Point stdio at /dev/null so the watcher keeps no pipe of the caller open.
fn detach_stdio() {
    if let Ok(null) = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/null")
    {
        for target in 0..3 {
            let _ = nix::unistd::dup2(null.as_raw_fd(), target);
        }
    }
}

fn wait_or_kill(rt: &Runtime, id: &str, pidfd: &Pidfd, span: Duration) -> i32 {
    match pidfd.wait_exit(span) {
        Ok(true) => return 0,
        Ok(false) => {}
        Err(_) => return 1,
    }
    tracing::warn!(
        id,
        timeout_ms = span.as_millis() as u64,
        "container exceeded its timeout (dev.sandboy.timeout); killing it"
    );
    let _ = std::fs::write(rt.root.join(id).join(MARKER), b"");
    match rt.load(id) {
        Ok(c) => {
            match crate::commands::kill::deliver(&c, nix::sys::signal::Signal::SIGKILL, true) {
                Ok(()) => 0,
                Err(e) => {
                    tracing::warn!(id, error = %e.message, "timeout kill failed");
                    1
                }
            }
        }
        Err(e) => {
            tracing::warn!(id, error = %e, "timeout: container state vanished");
            1
        }
    }
}
