use libcontainer::container::{Container, ContainerStatus};

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
        wait_gone(pid, 200, std::time::Duration::from_millis(10));
    }
}

/// A `delete` issued right after `start` of a short-lived process can find
/// the init still running its startContainer hooks or its last
/// instructions; runc has the same window (it loses the race too, under
/// load). Give the init up to 300 ms to finish before refusing, enough for
/// a loaded CI host: whether it is gone now.
fn finishing(c: &Container) -> bool {
    c.pid()
        .is_some_and(|pid| wait_gone(pid, 150, std::time::Duration::from_millis(2)))
}

/// Poll (`tries` times, `every` apart) until `pid` is gone or a zombie (a
/// zombie init is already harmless); whether it got there.
fn wait_gone(pid: nix::unistd::Pid, tries: u32, every: std::time::Duration) -> bool {
    for _ in 0..tries {
        // Signal 0: does the process still exist.
        match nix::sys::signal::kill(pid, None) {
            Err(_) => return true,
            Ok(()) if is_zombie(pid.as_raw()) => return true,
            Ok(()) => std::thread::sleep(every),
        }
    }
    false
}

fn is_zombie(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| s.rsplit_once(") ").map(|(_, rest)| rest.starts_with('Z')))
        .unwrap_or(true)
}
