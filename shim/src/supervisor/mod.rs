//! The per-container supervisor: one small process per container that
//! outlives the runtime command which started it (`create` of a detached
//! container too), holds a pidfd of the container's init — so a recycled pid
//! cannot fool it — and exits as soon as the init does.
//!
//! It is spawned once, at the end of a successful `create`, and only when
//! the container has a duty for it ([`Duties`]). Today its one duty is the
//! wall-clock deadline (`dev.sandboy.timeout`); denial reports, the egress
//! gateway and the learn-mode notifier are further duties of the same
//! process, so that each container has exactly one.
//!
//! The supervisor knows nothing of libcontainer or of the CLI: the container
//! layer tells it what to watch ([`Target`]) and hands it the action to take
//! at the deadline.

pub mod pidfd;

use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::time::Duration;

use nix::unistd::{fork, setsid, ForkResult, Pid};

use crate::error::{Failure, Result};
use pidfd::Pidfd;

/// Marker left in the state directory when the deadline fired.
pub const TIMED_OUT_MARKER: &str = "timed-out";

/// What one container's supervisor does.
#[derive(Debug, Default, Clone)]
pub struct Duties {
    /// Kill the whole container this long after create.
    pub timeout: Option<Duration>,
}

impl Duties {
    /// Whether there is anything to supervise (no process otherwise).
    pub fn is_empty(&self) -> bool {
        self.timeout.is_none()
    }
}

/// The container a supervisor watches.
#[derive(Debug, Clone)]
pub struct Target {
    pub id: String,
    /// The container's state directory (for markers and reports).
    pub state_dir: PathBuf,
    pub init: Pid,
}

/// Start the supervisor for `target`, detached from the caller (its own
/// session, stdio on /dev/null), and return once
/// it runs. `kill_all` is what the deadline does: SIGKILL to every process
/// of the container.
pub fn spawn(
    target: Target,
    duties: Duties,
    kill_all: impl FnOnce(&str) -> Result<()>,
) -> Result<()> {
    if duties.is_empty() {
        return Ok(());
    }
    let pidfd = Pidfd::open(target.init)
        .map_err(|e| Failure::runtime(format!("pidfd_open({}): {e}", target.init)))?;

    // SAFETY: the runtime is single-threaded (libcontainer forbids threads
    // before cloning, and none are started after); the child only forks
    // again and continues as a fresh single-threaded process.
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
                    let code = supervise(&target, &duties, &pidfd, kill_all);
                    std::process::exit(code);
                }
                _ => std::process::exit(0),
            }
        }
    }
}

/// Stdio to /dev/null, so the supervisor keeps no pipe of the caller open:
/// engines (conmon, containerd's shim) wait for EOF on the runtime's output.
/// The log file stays open: the supervisor's warnings go there.
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

fn supervise(
    target: &Target,
    duties: &Duties,
    pidfd: &Pidfd,
    kill_all: impl FnOnce(&str) -> Result<()>,
) -> i32 {
    let Some(span) = duties.timeout else {
        return 0;
    };
    match pidfd.wait_exit(span) {
        Ok(true) => return 0,
        Ok(false) => {}
        Err(_) => return 1,
    }
    let id = target.id.as_str();
    tracing::warn!(
        id,
        timeout_ms = span.as_millis() as u64,
        "container exceeded its timeout (dev.sandboy.timeout); killing it"
    );
    let _ = std::fs::write(target.state_dir.join(TIMED_OUT_MARKER), b"");
    match kill_all(id) {
        Ok(()) => 0,
        Err(e) => {
            tracing::warn!(id, error = %e.message, "timeout kill failed");
            1
        }
    }
}
