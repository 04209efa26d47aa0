//! `dev.sandboy.timeout`: a watcher process that outlives the runtime
//! command (detached containers too) and SIGKILLs the whole container at the
//! deadline. It holds a pidfd of the init, so a recycled pid cannot fool it,
//! and exits as soon as the init does.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use libcontainer::container::Container;
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::unistd::{fork, setsid, ForkResult};

use crate::error::{Failure, Result};
use crate::ops::Runtime;

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
    let pidfd = pidfd_open(pid.as_raw())?;

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
                    let code = wait_or_kill(rt, c.id(), &pidfd, span.as_millis());
                    std::process::exit(code);
                }
                _ => std::process::exit(0),
            }
        }
    }
}

fn pidfd_open(pid: i32) -> Result<OwnedFd> {
    // SAFETY: pidfd_open takes a pid and flags and returns a new fd or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if fd < 0 {
        return Err(Failure::runtime(format!(
            "pidfd_open({pid}): {}",
            std::io::Error::last_os_error()
        )));
    }
    // SAFETY: the kernel just returned this fd to us; nobody else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
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

fn wait_or_kill(rt: &Runtime, id: &str, pidfd: &OwnedFd, ms: u64) -> i32 {
    let deadline = std::time::Instant::now() + std::time::Duration::from_millis(ms);
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            break;
        }
        let wait = PollTimeout::try_from(left.as_millis().min(i32::MAX as u128) as i32)
            .unwrap_or(PollTimeout::MAX);
        let mut fds = [PollFd::new(
            // SAFETY-free: borrowing the fd we own for the duration of poll.
            std::os::fd::AsFd::as_fd(pidfd),
            PollFlags::POLLIN,
        )];
        match poll(&mut fds, wait) {
            Ok(0) => continue,
            Ok(_) => return 0,
            Err(nix::errno::Errno::EINTR) => continue,
            Err(_) => return 1,
        }
    }
    tracing::warn!(
        id,
        timeout_ms = ms,
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
