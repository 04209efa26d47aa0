//! The landlock tier's metadata guard (docs/security.md, "Metadata").
//!
//! Landlock (ABI ≤ 7) does not check `chmod`, `chown`, `utimes` or
//! extended-attribute writes, and the landlock tier cannot make the host
//! read-only the way a container or the namespaces tier does: without this,
//! a step could `chmod 644 ~/.ssh/id_ed25519` — or any file its user owns,
//! listed or not — and so hand a secret to every local user.
//!
//! So those calls notify the watchdog (the step's parent, outside every
//! rule), which decides and does them itself:
//!
//! 1. the path is read once from the caller's memory, and resolved by us
//!    against the caller's cwd or dirfd taken as *fds* (`/proc/PID/cwd`,
//!    `pidfd_getfd`), to an `O_PATH` fd of the object; an fd-based call
//!    (`fchmod`, `fsetxattr`, …) gets a copy of the caller's fd;
//! 2. the object's path (`/proc/self/fd/N`) must lie in a `[fs] write`
//!    path; Landlock forbids linking or renaming files from outside into
//!    one, so that path is where the object really lives;
//! 3. the request is checked to be still pending (the caller alive, its pid
//!    not reused), then the call is made on that fd and its result is the
//!    answer. The caller's memory is never read twice, so a second thread
//!    rewriting the path cannot redirect it (the classic user-notification
//!    race). Anything else fails with EACCES and a `warn` event.
//!
//! The notifying rule is part of the policy's own seccomp program
//! (`direct::with_host_guards`): one filter, whose rules for a syscall run
//! in the kernel's order of precedence, so a refusal there (the
//! `setuid-modes` guard) answers first, as it did when this was a filter
//! of its own: the guard only ever narrows.

use std::ffi::CString;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};

use nix::unistd::Pid;

use crate::supervisor::unotify::{self, copy_fd, read_cstr, read_exact, Reply};

/// The calls sent to the watchdog.
pub const NAMES: &[&str] = &[
    "chmod",
    "fchmod",
    "fchmodat",
    "fchmodat2",
    "chown",
    "fchown",
    "lchown",
    "fchownat",
    "utime",
    "utimes",
    "futimesat",
    "utimensat",
    "setxattr",
    "lsetxattr",
    "fsetxattr",
    "removexattr",
    "lremovexattr",
    "fremovexattr",
    "setxattrat",
    "removexattrat",
];

/// Syscall numbers libc does not name yet (the same on x86_64 and
/// aarch64: syscalls added since Linux 5.1 share one numbering).
const SYS_SETXATTRAT: i64 = 463;
const SYS_REMOVEXATTRAT: i64 = 466;

/// Linux's XATTR_SIZE_MAX.
const XATTR_MAX: usize = 65536;

/// What a call changes.
#[derive(Debug)]
enum Op {
    Mode(libc::mode_t),
    Owner(libc::uid_t, libc::gid_t),
    /// `None`: both to now.
    Times(Option<[libc::timespec; 2]>),
    SetXattr {
        name: CString,
        value: Vec<u8>,
        flags: i32,
    },
    RemoveXattr(CString),
}

/// What it changes it on.
#[derive(Debug)]
enum Target {
    Path {
        dirfd: i32,
        path: String,
        follow: bool,
    },
    Fd(i32),
}

/// The guard of one step: its write paths, canonical.
pub struct Guard {
    roots: Vec<PathBuf>,
    id: String,
}

impl Guard {
    /// A write path reached through a link below another write path (one
    /// the step may have planted) is no root: its rule is refused too.
    pub fn new(write: &[String], id: &str) -> Guard {
        let planted: Vec<&str> = write.iter().map(String::as_str).collect();
        let roots = write
            .iter()
            .filter_map(
                |w| match sandboy_confine::landlock::resolve_rule_path(w, &planted) {
                    Ok(real) => Some(real),
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => Some(PathBuf::from(w)),
                    Err(_) => None,
                },
            )
            .collect();
        Guard {
            roots,
            id: id.to_owned(),
        }
    }

    /// Serve the step's calls until it and all its children have exited.
    pub fn serve(&self, listener: &OwnedFd) {
        unotify::serve(listener, |req| self.answer(listener.as_fd(), req));
    }

    fn answer(&self, listener: BorrowedFd<'_>, req: &libc::seccomp_notif) -> Reply {
        let pid = Pid::from_raw(req.pid as i32);
        let nr = i64::from(req.data.nr);
        if nr == SYS_SETXATTRAT || nr == SYS_REMOVEXATTRAT {
            // No libc wrapper uses them yet; callers fall back to the
            // path calls, which are decided here.
            return Reply::Fail(libc::ENOSYS);
        }
        let Some((target, op)) = decode(pid, nr, &req.data.args) else {
            return Reply::Fail(libc::EFAULT);
        };
        let object = match open_target(pid, &target) {
            Ok(o) => o,
            Err(errno) => return Reply::Fail(errno),
        };
        if !unotify::still_valid(listener, req.id) {
            return Reply::Fail(libc::ESRCH);
        }
        let shown =
            std::fs::read_link(format!("/proc/self/fd/{}", object.as_raw_fd())).unwrap_or_default();
        if !self.allowed(&shown) {
            tracing::warn!(
                id = %self.id,
                kind = "metadata",
                target = %shown.display(),
                pid = req.pid,
                allow = %format!("add {:?} to [fs] write", shown.display().to_string()),
                "refused: {} {} (metadata outside [fs] write)",
                op.verb(),
                shown.display()
            );
            return Reply::Fail(libc::EACCES);
        }
        let symlink = is_symlink(&object);
        match perform(&object, symlink, &op) {
            Ok(()) => Reply::Done,
            Err(errno) => Reply::Fail(errno),
        }
    }

    /// In a write path, or no file of any directory (a pipe, a socket, an
    /// anonymous inode, a memfd): nothing of the host's to protect.
    fn allowed(&self, shown: &Path) -> bool {
        let text = shown.as_os_str().to_string_lossy();
        if !text.starts_with('/') || text.starts_with("/memfd:") {
            return !text.is_empty();
        }
        self.roots.iter().any(|r| shown.starts_with(r))
    }
}

impl Op {
    fn verb(&self) -> &'static str {
        match self {
            Op::Mode(_) => "chmod",
            Op::Owner(..) => "chown",
            Op::Times(_) => "utimes",
            Op::SetXattr { .. } => "setxattr",
            Op::RemoveXattr(_) => "removexattr",
        }
    }
}

/// The call's target and change, read once from the caller.
fn decode(pid: Pid, nr: i64, a: &[u64; 6]) -> Option<(Target, Op)> {
    let cwd = libc::AT_FDCWD;
    let path = |dirfd: i32, addr: u64, follow: bool| -> Option<Target> {
        Some(Target::Path {
            dirfd,
            path: read_cstr(pid, addr)?,
            follow,
        })
    };
    // `*at` calls with AT_EMPTY_PATH and "" act on the dirfd itself.
    let at = |dirfd: u64, addr: u64, flags: u64| -> Option<Target> {
        let follow = flags & libc::AT_SYMLINK_NOFOLLOW as u64 == 0;
        match path(dirfd as i32, addr, follow)? {
            Target::Path { path, .. }
                if path.is_empty() && flags & libc::AT_EMPTY_PATH as u64 != 0 =>
            {
                Some(Target::Fd(dirfd as i32))
            }
            t => Some(t),
        }
    };
    let mode = |m: u64| Op::Mode(m as libc::mode_t);
    let owner = |u: u64, g: u64| Op::Owner(u as libc::uid_t, g as libc::gid_t);
    Some(match nr {
        libc::SYS_chmod => (path(cwd, a[0], true)?, mode(a[1])),
        libc::SYS_fchmod => (Target::Fd(a[0] as i32), mode(a[1])),
        libc::SYS_fchmodat => (path(a[0] as i32, a[1], true)?, mode(a[2])),
        libc::SYS_fchmodat2 => (at(a[0], a[1], a[3])?, mode(a[2])),
        libc::SYS_chown => (path(cwd, a[0], true)?, owner(a[1], a[2])),
        libc::SYS_lchown => (path(cwd, a[0], false)?, owner(a[1], a[2])),
        libc::SYS_fchown => (Target::Fd(a[0] as i32), owner(a[1], a[2])),
        libc::SYS_fchownat => (at(a[0], a[1], a[4])?, owner(a[2], a[3])),
        libc::SYS_utime => (path(cwd, a[0], true)?, Op::Times(utimbuf(pid, a[1])?)),
        libc::SYS_utimes => (path(cwd, a[0], true)?, Op::Times(timevals(pid, a[1])?)),
        libc::SYS_futimesat => (
            path(a[0] as i32, a[1], true)?,
            Op::Times(timevals(pid, a[2])?),
        ),
        libc::SYS_utimensat => {
            // A NULL path is futimens(dirfd).
            let target = if a[1] == 0 {
                Target::Fd(a[0] as i32)
            } else {
                at(a[0], a[1], a[3])?
            };
            (target, Op::Times(timespecs(pid, a[2])?))
        }
        libc::SYS_setxattr | libc::SYS_lsetxattr | libc::SYS_fsetxattr => {
            let target = match nr {
                libc::SYS_fsetxattr => Target::Fd(a[0] as i32),
                _ => path(cwd, a[0], nr == libc::SYS_setxattr)?,
            };
            let name = CString::new(read_cstr(pid, a[1])?).ok()?;
            let size = (a[3] as usize).min(XATTR_MAX + 1);
            let mut value = vec![0u8; size];
            if size > 0 {
                read_exact(pid, a[2], &mut value)?;
            }
            let flags = a[4] as i32;
            (target, Op::SetXattr { name, value, flags })
        }
        libc::SYS_removexattr | libc::SYS_lremovexattr | libc::SYS_fremovexattr => {
            let target = match nr {
                libc::SYS_fremovexattr => Target::Fd(a[0] as i32),
                _ => path(cwd, a[0], nr == libc::SYS_removexattr)?,
            };
            let name = CString::new(read_cstr(pid, a[1])?).ok()?;
            (target, Op::RemoveXattr(name))
        }
        _ => return None,
    })
}

fn read_i64s<const N: usize>(pid: Pid, addr: u64) -> Option<[i64; N]> {
    let mut b = vec![0u8; 8 * N];
    read_exact(pid, addr, &mut b)?;
    let mut out = [0i64; N];
    for (i, c) in b.chunks_exact(8).enumerate() {
        out[i] = i64::from_ne_bytes(c.try_into().ok()?);
    }
    Some(out)
}

fn ts(sec: i64, nsec: i64) -> libc::timespec {
    libc::timespec {
        tv_sec: sec,
        tv_nsec: nsec,
    }
}

/// `struct timespec[2]`; a NULL pointer means now (`Some(None)`).
fn timespecs(pid: Pid, addr: u64) -> Option<Option<[libc::timespec; 2]>> {
    if addr == 0 {
        return Some(None);
    }
    let [s0, n0, s1, n1] = read_i64s::<4>(pid, addr)?;
    Some(Some([ts(s0, n0), ts(s1, n1)]))
}

/// `struct timeval[2]` (utimes, futimesat).
fn timevals(pid: Pid, addr: u64) -> Option<Option<[libc::timespec; 2]>> {
    if addr == 0 {
        return Some(None);
    }
    let [s0, u0, s1, u1] = read_i64s::<4>(pid, addr)?;
    Some(Some([ts(s0, u0 * 1000), ts(s1, u1 * 1000)]))
}

/// `struct utimbuf` (utime): access and modification seconds.
fn utimbuf(pid: Pid, addr: u64) -> Option<Option<[libc::timespec; 2]>> {
    if addr == 0 {
        return Some(None);
    }
    let [a, m] = read_i64s::<2>(pid, addr)?;
    Some(Some([ts(a, 0), ts(m, 0)]))
}

/// The object the call means, opened by us: an `O_PATH` fd resolved from
/// the caller's cwd or dirfd (as fds), or a copy of the caller's fd.
fn open_target(pid: Pid, target: &Target) -> Result<OwnedFd, i32> {
    let (dirfd, path, follow) = match target {
        Target::Fd(fd) => return copy_fd(pid, *fd).ok_or(libc::EBADF),
        Target::Path {
            dirfd,
            path,
            follow,
        } => (*dirfd, path, *follow),
    };
    let base: Option<OwnedFd> = if path.starts_with('/') {
        None
    } else if dirfd == libc::AT_FDCWD {
        Some(open_path(
            libc::AT_FDCWD,
            &format!("/proc/{pid}/cwd"),
            libc::O_DIRECTORY,
        )?)
    } else {
        Some(copy_fd(pid, dirfd).ok_or(libc::EBADF)?)
    };
    let at = base.as_ref().map_or(libc::AT_FDCWD, |b| b.as_raw_fd());
    let nofollow = if follow { 0 } else { libc::O_NOFOLLOW };
    open_path(at, path, nofollow)
}

fn open_path(at: i32, path: &str, flags: i32) -> Result<OwnedFd, i32> {
    let c = CString::new(path).map_err(|_| libc::EINVAL)?;
    // SAFETY: openat with a valid NUL-terminated path; a returned fd is
    // owned exactly once.
    let fd = unsafe { libc::openat(at, c.as_ptr(), libc::O_PATH | libc::O_CLOEXEC | flags) };
    if fd < 0 {
        return Err(errno());
    }
    // SAFETY: see above.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn is_symlink(fd: &OwnedFd) -> bool {
    nix::sys::stat::fstat(fd.as_raw_fd()).is_ok_and(|st| st.st_mode & libc::S_IFMT == libc::S_IFLNK)
}

fn errno() -> i32 {
    nix::errno::Errno::last_raw()
}

/// The call, on our fd. Through `/proc/self/fd/N`, which leads to the very
/// object the fd holds; a symbolic link itself (an `l*` call) is changed
/// through the fd with AT_EMPTY_PATH instead.
fn perform(fd: &OwnedFd, symlink: bool, op: &Op) -> Result<(), i32> {
    let magic = CString::new(format!("/proc/self/fd/{}", fd.as_raw_fd())).expect("no NUL");
    let empty = c"";
    // SAFETY (every call below): valid NUL-terminated paths, buffers that
    // live for the call with their true lengths; no memory is kept.
    let rc = unsafe {
        match (op, symlink) {
            (Op::Mode(_), true) => return Err(libc::EOPNOTSUPP),
            (Op::Mode(m), false) => libc::chmod(magic.as_ptr(), *m),
            (Op::Owner(u, g), true) => {
                libc::fchownat(fd.as_raw_fd(), empty.as_ptr(), *u, *g, libc::AT_EMPTY_PATH)
            }
            (Op::Owner(u, g), false) => libc::chown(magic.as_ptr(), *u, *g),
            (Op::Times(t), true) => libc::utimensat(
                fd.as_raw_fd(),
                empty.as_ptr(),
                t.as_ref().map_or(std::ptr::null(), |t| t.as_ptr()),
                libc::AT_EMPTY_PATH,
            ),
            (Op::Times(t), false) => libc::utimensat(
                libc::AT_FDCWD,
                magic.as_ptr(),
                t.as_ref().map_or(std::ptr::null(), |t| t.as_ptr()),
                0,
            ),
            // The kernel allows no user xattrs on symbolic links.
            (Op::SetXattr { .. } | Op::RemoveXattr(_), true) => return Err(libc::EPERM),
            (Op::SetXattr { name, value, flags }, false) => libc::setxattr(
                magic.as_ptr(),
                name.as_ptr(),
                value.as_ptr().cast(),
                value.len(),
                *flags,
            ),
            (Op::RemoveXattr(name), false) => libc::removexattr(magic.as_ptr(), name.as_ptr()),
        }
    };
    if rc < 0 {
        Err(errno())
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_write_paths_and_anonymous_objects_are_allowed() {
        let g = Guard::new(&["/nonexistent/w".into()], "t");
        assert!(g.allowed(Path::new("/nonexistent/w/a/b")));
        assert!(g.allowed(Path::new("/nonexistent/w")));
        assert!(!g.allowed(Path::new("/nonexistent/wx")));
        assert!(!g.allowed(Path::new("/home/u/.ssh/id_ed25519")));
        assert!(g.allowed(Path::new("pipe:[123]")));
        assert!(g.allowed(Path::new("/memfd:x (deleted)")));
        assert!(!g.allowed(Path::new("")));
    }
}
