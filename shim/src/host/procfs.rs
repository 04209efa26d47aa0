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
//! Two steps close it. Where the init joins a pid namespace that has
//! processes already (an `exec`, a pod's member, the host's), they see it
//! from its clone on: there libcontainer's intermediate process, which is
//! in the host's pid namespace and out of their sight, hands the init a
//! pipe in place of the cache (`vendor/libcontainer/SANDBOY.md`), and the
//! init's pathrs makes a handle per use, closed after it. And the init (or
//! exec'd process) drops whatever handle it inherited as soon as sandboy's
//! code runs in it ([`forget_inherited`], from the executor's `validate`,
//! before create returns or the exec'd command starts).

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
