//! The fd sweep: every descriptor from `3 + preserve_fds` up is marked
//! close-on-exec, so that nothing the runtime (or an engine) leaked reaches
//! the payload, while the payload's `execve` itself still works. Descriptors
//! `3 .. 3 + preserve_fds` (`--preserve-fds`, LISTEN_FDS style) and stdio are
//! left alone.

use std::io;

use crate::ConfineError;

/// First descriptor that is swept for a given `--preserve-fds`.
pub fn first_swept_fd(preserve_fds: u32) -> u32 {
    3u32.saturating_add(preserve_fds)
}

/// Marks every fd `>= 3 + preserve_fds` close-on-exec.
///
/// Uses `close_range(first, ~0, CLOSE_RANGE_CLOEXEC)`, falling back to
/// walking `/proc/self/fd` on kernels without it (before 5.11).
pub fn mark_cloexec(preserve_fds: u32) -> Result<(), ConfineError> {
    let first = first_swept_fd(preserve_fds);
    // SAFETY: close_range takes plain integers and only changes fd flags of
    // the calling process; no memory is passed.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_close_range,
            first,
            u32::MAX,
            libc::CLOSE_RANGE_CLOEXEC,
        )
    };
    if rc == 0 {
        return Ok(());
    }
    let err = io::Error::last_os_error();
    match err.raw_os_error() {
        Some(libc::ENOSYS) | Some(libc::EINVAL) | Some(libc::EPERM) => {
            tracing::debug!(%err, "close_range(CLOEXEC) unavailable; walking /proc/self/fd");
            mark_cloexec_by_proc(first)
        }
        _ => Err(ConfineError::kernel(
            format!("fd sweep: close_range({first}, ~0, CLOSE_RANGE_CLOEXEC)"),
            err,
        )),
    }
}

fn mark_cloexec_by_proc(first: u32) -> Result<(), ConfineError> {
    let what = "fd sweep: list /proc/self/fd";
    let fds: Vec<i32> = std::fs::read_dir("/proc/self/fd")
        .map_err(|e| ConfineError::kernel(what, e))?
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&fd| fd >= 0 && fd as u32 >= first)
        .collect();
    // The directory's own fd is in the list but closed by now: EBADF is fine.
    for fd in fds {
        // SAFETY: fcntl on an integer fd changes only its flags; an fd that
        // is no longer open yields EBADF, which is ignored below.
        let flags = unsafe { libc::fcntl(fd, libc::F_GETFD) };
        if flags < 0 {
            continue;
        }
        // SAFETY: as above.
        let rc = unsafe { libc::fcntl(fd, libc::F_SETFD, flags | libc::FD_CLOEXEC) };
        if rc < 0 {
            let err = io::Error::last_os_error();
            if err.raw_os_error() != Some(libc::EBADF) {
                return Err(ConfineError::kernel(
                    format!("fd sweep: set FD_CLOEXEC on fd {fd}"),
                    err,
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_fd() {
        assert_eq!(first_swept_fd(0), 3);
        assert_eq!(first_swept_fd(2), 5);
        assert_eq!(first_swept_fd(u32::MAX), u32::MAX);
    }
}
