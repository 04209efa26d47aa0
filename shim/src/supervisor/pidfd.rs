//! A handle on a process that a recycled pid cannot fool (pidfd, Linux
//! ≥ 5.3), and a wait for its exit that wakes the moment it happens instead
//! of polling the pid: `delete --force` and the timeout watcher wait on it.

use std::io;
use std::os::fd::{AsFd, FromRawFd, OwnedFd};
use std::time::{Duration, Instant};

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::unistd::Pid;

pub struct Pidfd(OwnedFd);

impl AsFd for Pidfd {
    fn as_fd(&self) -> std::os::fd::BorrowedFd<'_> {
        self.0.as_fd()
    }
}

impl Pidfd {
    /// `ESRCH` when the process is gone (reaped) already.
    pub fn open(pid: Pid) -> io::Result<Self> {
        // SAFETY: pidfd_open takes a pid and flags and returns a new fd or -1.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid.as_raw(), 0) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: the kernel just returned this fd to us; nobody else owns it.
        Ok(Self(unsafe { OwnedFd::from_raw_fd(fd as i32) }))
    }

    /// SIGKILL to the process itself, never to a recycled pid.
    pub fn kill(&self) -> io::Result<()> {
        use std::os::fd::AsRawFd;
        // SAFETY: pidfd_send_signal takes the pidfd, a signal number, a
        // null siginfo and no flags.
        let r = unsafe {
            libc::syscall(
                libc::SYS_pidfd_send_signal,
                self.0.as_raw_fd(),
                libc::SIGKILL,
                std::ptr::null::<libc::siginfo_t>(),
                0,
            )
        };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Wait up to `limit` for the process to exit (a zombie has: it runs no
    /// more code); whether it did.
    pub fn wait_exit(&self, limit: Duration) -> io::Result<bool> {
        let deadline = Instant::now() + limit;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            // Whole milliseconds, rounded up: a sub-millisecond rest must
            // not become a busy loop of zero-timeout polls.
            let ms = left.as_nanos().div_ceil(1_000_000).min(i32::MAX as u128) as i32;
            let wait = PollTimeout::try_from(ms).unwrap_or(PollTimeout::MAX);
            let mut fds = [PollFd::new(self.0.as_fd(), PollFlags::POLLIN)];
            match poll(&mut fds, wait) {
                Ok(0) if left.is_zero() => return Ok(false),
                Ok(0) => continue,
                Ok(_) => return Ok(true),
                Err(nix::errno::Errno::EINTR) => continue,
                Err(e) => return Err(e.into()),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wakes_when_the_process_exits_and_times_out_while_it_runs() {
        let mut child = std::process::Command::new("sleep")
            .arg("0.2")
            .spawn()
            .unwrap();
        let pid = Pid::from_raw(child.id() as i32);
        let fd = Pidfd::open(pid).unwrap();
        assert!(!fd.wait_exit(Duration::from_millis(20)).unwrap());
        let t = Instant::now();
        assert!(fd.wait_exit(Duration::from_secs(5)).unwrap());
        assert!(t.elapsed() < Duration::from_secs(2));
        // A zombie counts as exited; once reaped, the pid is gone.
        assert!(fd.wait_exit(Duration::ZERO).unwrap());
        child.wait().unwrap();
        assert_eq!(
            Pidfd::open(pid).err().and_then(|e| e.raw_os_error()),
            Some(libc::ESRCH)
        );
    }
}
