use std::time::Duration;

use libcontainer::container::{Container, ContainerStatus};
use nix::unistd::Pid;

use crate::cli::Delete;
use crate::error::{Failure, Result};
use crate::ops::Runtime;
use crate::pidfd::Pidfd;

pub fn run(rt: &Runtime, args: Delete) -> Result<i32> {
    if args.force && !rt.exists(&args.container_id) {
        crate::ops::validate_id(&args.container_id)?;
        rt.remove_leftovers(&args.container_id);
        return Ok(0);
    }
    let mut c = rt.load(&args.container_id)?;
    if !args.force && c.status() == ContainerStatus::Running && finishing(&c) {
        c.refresh_status()?;
    }
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
    if args.force && c.status() != ContainerStatus::Stopped {
        kill_and_wait(&mut c);
    }
    rt.destroy(&mut c, args.force)?;
    Ok(0)
}

/// SIGKILL everything and wait (up to 2 s) for the init to be gone, so the
/// cgroup is empty when libcontainer removes it: its own retry window is
/// short, and a `delete --force` must not fail on a dying container.
fn kill_and_wait(c: &mut Container) {
    if c.status() == ContainerStatus::Paused {
        let _ = c.resume();
    }
    let _ = crate::commands::kill::deliver(c, nix::sys::signal::Signal::SIGKILL, true);
    if let Some(pid) = c.pid() {
        if wait_gone(pid, Duration::from_secs(2)) {
            // Now stopped: the delete of a stopped container applies.
            let _ = c.refresh_status();
        }
    }
}

/// A `delete` issued right after `start` of a short-lived process can find
/// the init still running its startContainer hooks or its last
/// instructions; runc has the same window (it loses the race too, under
/// load). Give the init up to 300 ms to finish before refusing, enough for
/// a loaded CI host: whether it is gone now.
fn finishing(c: &Container) -> bool {
    c.pid()
        .is_some_and(|pid| wait_gone(pid, Duration::from_millis(300)))
}

/// Wait up to `limit` until `pid` has exited (a zombie init is already
/// harmless); whether it has. Woken by the exit itself through a pidfd.
fn wait_gone(pid: Pid, limit: Duration) -> bool {
    match Pidfd::open(pid) {
        Ok(fd) => fd.wait_exit(limit).unwrap_or(false),
        Err(e) => e.raw_os_error() == Some(libc::ESRCH),
    }
}
