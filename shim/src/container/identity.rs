//! Which process is the container's init: its pid and the kernel's start
//! time of that pid, recorded at `create` (runc keeps the start time in its
//! state for the same reason). A pid alone lies once the init is reaped
//! (by an engine's subreaper) and the kernel hands the number to another
//! process: a red team's `kill` then SIGKILLed an unrelated host process
//! and `exec` entered its namespaces. A container whose pid's start time
//! differs is stopped.

use std::path::Path;

use nix::unistd::Pid;

use crate::error::{Failure, Result};

/// In the state directory: the init's start time (clock ticks since boot).
const FILE: &str = "init-start-time";

/// Field 22 of `/proc/PID/stat`; `None` when the process is gone.
fn start_time(pid: Pid) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces and ')': fields after
    // the last ')' are plain numbers; starttime is the 20th of them.
    let after = &stat[stat.rfind(')')? + 1..];
    after.split_whitespace().nth(19)?.parse().ok()
}

/// Record the init's start time in `state_dir`.
pub fn record(state_dir: &Path, pid: Option<Pid>) -> Result<()> {
    let pid = pid.ok_or_else(|| Failure::runtime("container has no init pid"))?;
    let t = start_time(pid)
        .ok_or_else(|| Failure::runtime(format!("the init {pid} is gone before start")))?;
    std::fs::write(state_dir.join(FILE), t.to_string())
        .map_err(|e| Failure::runtime(format!("{}: {e}", state_dir.join(FILE).display())))
}

/// Whether `pid` is still the process recorded in `state_dir` (true when
/// nothing was recorded: a state another runtime wrote).
pub fn same_init(state_dir: &Path, pid: Option<Pid>) -> bool {
    let Ok(recorded) = std::fs::read_to_string(state_dir.join(FILE)) else {
        return true;
    };
    let Some(pid) = pid else {
        return false;
    };
    start_time(pid).is_some_and(|now| recorded.trim().parse() == Ok(now))
}

/// This process as `"PID START-TIME"`, for [`alive`].
pub fn this_process() -> String {
    describe(Pid::this())
}

/// `pid` as `"PID START-TIME"`, for [`alive`] and [`handle`].
pub fn describe(pid: Pid) -> String {
    format!("{pid} {}", start_time(pid).unwrap_or(0))
}

/// A pidfd on the process [`describe`] recorded, when it still runs: the
/// start time is checked after the pidfd is open, so the handle cannot
/// name a process that took over a recycled pid.
pub fn handle(recorded: &str) -> Option<crate::supervisor::pidfd::Pidfd> {
    let pid = recorded.split_whitespace().next()?.parse::<i32>().ok()?;
    let fd = crate::supervisor::pidfd::Pidfd::open(Pid::from_raw(pid)).ok()?;
    alive(recorded).then_some(fd)
}

/// Whether the process [`this_process`] described is still running.
pub fn alive(recorded: &str) -> bool {
    let mut words = recorded.split_whitespace();
    let (Some(pid), Some(t)) = (words.next(), words.next()) else {
        return false;
    };
    let (Ok(pid), Ok(t)) = (pid.parse::<i32>(), t.parse::<u64>()) else {
        return false;
    };
    start_time(Pid::from_raw(pid)) == Some(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_live_process_is_itself_and_a_recorded_other_is_not() {
        let dir = std::env::temp_dir().join(format!("sandboy-identity-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let me = Pid::this();
        assert!(same_init(&dir, Some(me)), "nothing recorded");
        record(&dir, Some(me)).unwrap();
        assert!(same_init(&dir, Some(me)));
        std::fs::write(dir.join(FILE), "1").unwrap();
        assert!(!same_init(&dir, Some(me)), "another start time");
        assert!(alive(&this_process()));
        assert!(!alive(&format!("{me} 1")));
        assert!(handle(&this_process()).is_some());
        assert!(handle(&format!("{me} 1")).is_none(), "a recycled pid");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
