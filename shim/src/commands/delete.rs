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
    if let Ok(sig) = crate::commands::kill::parse_signal("SIGKILL") {
        let _ = c.kill(sig, true);
    }
    let Some(pid) = c.pid() else { return };
    for _ in 0..200 {
        // Signal 0: does the process still exist (zombies count as gone once
        // reaped by their parent; a zombie init is already harmless).
        match nix::sys::signal::kill(pid, None) {
            Err(_) => return,
            Ok(()) if is_zombie(pid.as_raw()) => return,
            Ok(()) => std::thread::sleep(std::time::Duration::from_millis(10)),
        }
    }
}

fn is_zombie(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| s.rsplit_once(") ").map(|(_, rest)| rest.starts_with('Z')))
        .unwrap_or(true)
}
