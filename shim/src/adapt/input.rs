//! Opening an adapter's input as root without handing over what the
//! path's owner could not read (issue 14, found by trying this build).
//!
//! `adapt` as root reads inputs from paths others may control (`audit
//! reports/`: a directory of tool outputs). A path without symlinks is
//! root's own choice and is opened as root (`openat2` with
//! `RESOLVE_NO_SYMLINKS`, so no component can be swapped for a link in
//! between). A path through a symlink is opened by a thread whose
//! filesystem ids are the adapter's user 65534 and which holds no
//! supplementary groups, and may follow no magic link (`/proc/self/…`
//! would be root's process): the kernel's permission walk, done in that
//! one open, decides, with no window between a check and the use; the
//! descriptor is what the container's copy is made from. The
//! container gets a copy of what the descriptor reads, never a bind of the
//! path (a bind resolves the path again).

use std::fs::File;
use std::os::fd::FromRawFd;
use std::path::Path;

use nix::errno::Errno;
use nix::fcntl::{OFlag, OpenHow, ResolveFlag};
use nix::sys::stat::Mode;

use crate::error::{Failure, Result};

/// The adapter's user inside the container.
const ADAPTER_ID: u32 = 65534;

/// The input at `path`, open for reading (see the module docs).
pub fn open(path: &Path) -> Result<File> {
    let how = OpenHow::new()
        .flags(OFlag::O_RDONLY | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC)
        .mode(Mode::empty())
        .resolve(ResolveFlag::RESOLVE_NO_SYMLINKS);
    let file = match nix::fcntl::openat2(libc::AT_FDCWD, path, how) {
        // SAFETY: openat2 returned a new fd, owned once here.
        Ok(fd) => unsafe { File::from_raw_fd(fd) },
        Err(Errno::ELOOP) => as_adapter(path)?,
        Err(e) => {
            let e = std::io::Error::from_raw_os_error(e as i32);
            return Err(refused(&format!("cannot read: {e}")));
        }
    };
    let meta = file
        .metadata()
        .map_err(|e| refused(&format!("cannot read: {e}")))?;
    if !meta.is_file() {
        return Err(refused("not a regular file"));
    }
    Ok(file)
}

/// Open `path` with the adapter's filesystem ids, in a thread of its own.
fn as_adapter(path: &Path) -> Result<File> {
    let p = path.to_path_buf();
    let opened = std::thread::spawn(move || -> std::io::Result<File> {
        // SAFETY: raw syscalls change the calling thread's credentials
        // only (glibc's wrappers would change every thread's); this thread
        // makes one open and exits, its credentials with it.
        unsafe {
            if libc::syscall(libc::SYS_setgroups, 0, std::ptr::null::<libc::gid_t>()) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            libc::syscall(libc::SYS_setfsgid, ADAPTER_ID);
            libc::syscall(libc::SYS_setfsuid, ADAPTER_ID);
            // An invalid id changes nothing and returns the current one:
            // fail closed unless the switch took.
            let fsuid = libc::syscall(libc::SYS_setfsuid, u32::MAX);
            let fsgid = libc::syscall(libc::SYS_setfsgid, u32::MAX);
            if fsuid != i64::from(ADAPTER_ID) || fsgid != i64::from(ADAPTER_ID) {
                return Err(std::io::Error::other("cannot switch to user 65534"));
            }
        }
        // No magic links: this thread is root's process, so
        // `/proc/self/cwd/…` (a red team's symlink target) would reach
        // root's own directories with no permission walk over their
        // parents.
        let how = OpenHow::new()
            .flags(OFlag::O_RDONLY | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC)
            .mode(Mode::empty())
            .resolve(ResolveFlag::RESOLVE_NO_MAGICLINKS);
        nix::fcntl::openat2(libc::AT_FDCWD, p.as_path(), how)
            .map_err(|e| std::io::Error::from_raw_os_error(e as i32))
            // SAFETY: openat2 returned a new fd, owned once here.
            .map(|fd| unsafe { File::from_raw_fd(fd) })
    })
    .join()
    .map_err(|_| refused("the opening thread failed"))?;
    opened.map_err(|e| {
        refused(&format!("user 65534 (the adapter's) cannot read it through its symlinks: {e}; pass a path without symlinks, or make the file readable by others"),
        )
    })
}

fn refused(why: &str) -> Failure {
    Failure::usage(why.to_string())
}
