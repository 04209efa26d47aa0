//! sandboy: pathrs's cached procfs handle, replaced in place.
//!
//! pathrs keeps one detached procfs handle per process (`subset=pid`, of
//! the pid namespace it was made in) and hands out that same fd for good; a
//! clone inherits it. Made in the runtime, it is a handle on the host's
//! procfs, which no process of a container may hold: through
//! `/proc/<pid>/fd/<n>/<host pid>/root` a container process with
//! CAP_SYS_PTRACE reached the host's `/` (a red team, stop 38). The
//! intermediate process replaces it before it clones an init that joins a
//! pid namespace with processes in it; sandboy's executor replaces it again
//! in every init once the rootfs is set up (`host::procfs`).

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};

use pathrs::procfs::ProcfsHandle;

/// Puts a copy of `with` (close-on-exec) over `cached`, the handle
/// [`ProcfsHandle::new`] returned, so the number stays taken and the next
/// use finds it invalid: pathrs then stops caching (its documented answer
/// to a cached fd that no longer validates) and makes a handle per use,
/// closed after it. Keep `cached` while checking that [`ProcfsHandle::new`]
/// no longer returns its number; where pathrs made no cache (it could not
/// make a detached procfs), `cached` owns the number and closes the copy
/// when it drops.
pub fn replace(cached: &ProcfsHandle, with: BorrowedFd<'_>) -> io::Result<()> {
    // SAFETY: dup3 onto the handle's fd number replaces what it refers to
    // without freeing the number; pathrs only ever validates that fd again.
    let n = unsafe {
        libc::dup3(
            with.as_raw_fd(),
            cached.as_fd().as_raw_fd(),
            libc::O_CLOEXEC,
        )
    };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}
