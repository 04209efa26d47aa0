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
//! pipe in place of the cache (`libcontainer::procfs_cache`, vendored),
//! and the init's pathrs makes a handle per use, closed after it. And the
//! init (or exec'd process) drops whatever handle it inherited as soon as
//! sandboy's code runs in it ([`forget_inherited`], from the executor's
//! `validate`, before create returns or the exec'd command starts).

use std::os::fd::AsFd;

/// In a container's init or exec'd process (after `pivot_root`): the
/// handle inherited from the runtime is dropped, replaced by the
/// container's own `/` (an `O_PATH` fd, harmless there and closed at
/// `execve`); later uses make handles of this pid namespace.
pub fn forget_inherited() -> std::io::Result<()> {
    // No handle to be had: none was cached (the intermediate withheld it,
    // or none was made) and none can be made here, so none is held either.
    let Ok(cached) = pathrs::procfs::ProcfsHandle::new() else {
        return Ok(());
    };
    let root = rustix::fs::open(
        "/",
        rustix::fs::OFlags::PATH | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    )?;
    libcontainer::procfs_cache::replace(&cached, root.as_fd())
}

#[cfg(test)]
mod tests {
    use std::os::fd::{AsFd, AsRawFd};

    use pathrs::procfs::ProcfsHandle;

    fn is_procfs(fd: std::os::fd::BorrowedFd<'_>) -> bool {
        rustix::fs::fstatfs(fd).unwrap().f_type as i64 == libc::PROC_SUPER_MAGIC
    }

    /// The mechanism both steps use (`libcontainer::procfs_cache`): once
    /// replaced, the cache's number holds the copy and is never handed out
    /// as a procfs again; procfs still works, a new handle per use.
    #[test]
    fn a_replaced_cache_is_never_handed_out_again() {
        let (a, b) = (ProcfsHandle::new().unwrap(), ProcfsHandle::new().unwrap());
        let n = a.as_fd().as_raw_fd();
        if nix::unistd::geteuid().is_root() {
            assert_eq!(
                n,
                b.as_fd().as_raw_fd(),
                "pathrs caches one handle for root"
            );
        }
        drop((a, b));
        let (pipe, _writer) = nix::unistd::pipe().unwrap();
        let replaced = ProcfsHandle::new().unwrap();
        libcontainer::procfs_cache::replace(&replaced, pipe.as_fd()).unwrap();
        // Refused: the number pathrs handed out holds the pipe, no procfs.
        assert!(!is_procfs(replaced.as_fd()));
        // Allowed: a procfs handle still, at another number each time.
        let (c, d) = (ProcfsHandle::new().unwrap(), ProcfsHandle::new().unwrap());
        for h in [&c, &d] {
            assert!(is_procfs(h.as_fd()));
            assert_ne!(h.as_fd().as_raw_fd(), replaced.as_fd().as_raw_fd());
        }
        assert_ne!(c.as_fd().as_raw_fd(), d.as_fd().as_raw_fd());
    }
}
