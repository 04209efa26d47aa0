//! No handle on the host's procfs reaches a container.
//!
//! pathrs, which libcontainer resolves paths with, keeps one detached
//! procfs handle per process (`subset=pid`, of the pid namespace it was
//! made in) and hands out that same fd for good. Made in the runtime
//! before libcontainer clones, it was inherited by the container's init
//! and by every `exec`'s process, which held it until their `execve`: a
//! red team's process with `CAP_SYS_PTRACE` in a sibling container sharing
//! the pid namespace, or in the container itself during a `sandboy exec`,
//! opened `/proc/<init>/fd/17/<host pid>/root` and wrote the host's files.
//!
//! Two steps close it. The init (or exec'd process) drops the inherited
//! handle as soon as sandboy's code runs in it ([`forget_inherited`], from
//! the executor's `validate`, before create returns or the exec'd command
//! starts). Before that, only processes already in the pid namespace could
//! reach it: none for a container with a new pid namespace (it has no
//! process but the init until create returns), but a pod's when the
//! container joins one, and the container's own during `exec`. There the
//! runtime makes pathrs stop caching before libcontainer runs
//! ([`uncached`]): it then makes a handle per use, closed after it, as it
//! does for runc, which closes such fds. That costs a procfs mount per
//! use (about 2 ms a lifecycle), so it is kept to those cases.

use std::os::fd::{AsFd, AsRawFd, BorrowedFd};

/// Replaces pathrs's cached handle with `with` (close-on-exec), so the
/// number stays taken and the next use finds it invalid: pathrs then
/// stops caching (its documented answer to a cached fd that no longer
/// validates) and makes a handle per use. An uncached handle returned
/// here owns the number and closes the copy of `with` when it drops.
fn replace_cached(with: BorrowedFd<'_>) -> std::io::Result<()> {
    let cached = pathrs::procfs::ProcfsHandle::new().map_err(std::io::Error::other)?;
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
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// In the runtime, before libcontainer: pathrs caches no procfs handle
/// from here on (checked: the next handle is another fd).
pub fn uncached() -> std::io::Result<()> {
    let null = std::fs::File::open("/dev/null")?;
    replace_cached(null.as_fd())?;
    // Two handles alive at once: one fd between them is a cache. (Where
    // pathrs cannot make a detached procfs, as for an ordinary user, it
    // never cached one: each handle is its own open of /proc.)
    let new = || pathrs::procfs::ProcfsHandle::new().map_err(std::io::Error::other);
    let (a, b) = (new()?, new()?);
    if a.as_fd().as_raw_fd() == b.as_fd().as_raw_fd() {
        return Err(std::io::Error::other(
            "pathrs still hands out its cached procfs handle",
        ));
    }
    Ok(())
}

/// In a container's init or exec'd process (after `pivot_root`): the
/// handle inherited from the runtime is dropped, replaced by the
/// container's own `/` (an `O_PATH` fd, harmless there and closed at
/// `execve`); later uses make handles of this pid namespace.
pub fn forget_inherited() -> std::io::Result<()> {
    // No handle to be had: none was cached (the runtime stopped caching,
    // or made none) and none can be made here, so none is held either.
    if pathrs::procfs::ProcfsHandle::new().is_err() {
        return Ok(());
    }
    let root = rustix::fs::open(
        "/",
        rustix::fs::OFlags::PATH | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    )?;
    replace_cached(root.as_fd())
}

#[cfg(test)]
mod tests {
    use std::os::fd::{AsFd, AsRawFd};

    /// After [`super::uncached`] every handle is a new fd, closed when it
    /// drops: none outlives its use (as the cached one outlived create).
    #[test]
    fn handles_are_made_per_use_after_uncached() {
        super::uncached().unwrap();
        let a = pathrs::procfs::ProcfsHandle::new().unwrap();
        let fd = a.as_fd().as_raw_fd();
        drop(a);
        // SAFETY: fcntl(F_GETFD) on a number only reads its flags.
        let open = unsafe { libc::fcntl(fd, libc::F_GETFD) } >= 0;
        assert!(!open, "fd {fd} of a dropped handle is still open");
    }
}
