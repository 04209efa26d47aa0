//! The seccomp user-notification side of learn mode: the filter that sends
//! the observed syscalls to the watcher, and the watcher's loop, which reads
//! each call's path or address from the caller's memory and lets the call
//! proceed unchanged (`SECCOMP_USER_NOTIF_FLAG_CONTINUE`).
//!
//! Observation, not enforcement: the caller may change its memory between
//! our read and the kernel's, which only makes the learned policy wrong
//! (and the confined run that follows refuse), never lets anything out.
//!
//! Paths are the caller's: relative ones are made absolute against its cwd
//! or dirfd (`/proc/<pid>/cwd`, `/proc/<pid>/fd/N`, which the kernel names
//! as the caller sees them), and whether one exists is asked in the
//! caller's root ([`Root`]), never by following it on the host.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use nix::fcntl::{OFlag, OpenHow, ResolveFlag};
use nix::sys::stat::Mode;
use nix::unistd::Pid;

use super::super::unotify::{self, read_cstr, read_mem, read_u64, Reply};
use super::observed::{Access, Observed};

/// Where the observed processes' paths live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Root {
    /// `wrap --learn`: the command shares the host's root.
    Host,
    /// A container: paths are looked up under the caller's own root
    /// (`/proc/<pid>/root`, with `RESOLVE_IN_ROOT`, so an absolute symlink
    /// inside stays inside).
    Caller,
}

impl Root {
    /// Whether `path` (absolute, as the caller sees it) exists for `pid`.
    pub fn exists(self, pid: Pid, path: &str) -> bool {
        match self {
            Root::Host => std::path::Path::new(path).exists(),
            Root::Caller => exists_in_root(pid, path, OFlag::empty()),
        }
    }

    /// [`Root::exists`] of the entry itself: a last component that is a
    /// symlink is not followed (a dangling one exists).
    pub fn entry_exists(self, pid: Pid, path: &str) -> bool {
        match self {
            Root::Host => std::path::Path::new(path).symlink_metadata().is_ok(),
            Root::Caller => exists_in_root(pid, path, OFlag::O_NOFOLLOW),
        }
    }
}

impl Root {
    /// `path` with its symlinks resolved, as `pid` sees it; for a path that
    /// does not exist (yet), its directory resolved and its name kept; the
    /// path as given when not even that resolves.
    pub fn real(self, pid: Pid, path: &str) -> String {
        let whole = self.resolve(pid, path);
        whole
            .or_else(|| {
                let (dir, name) = path.rsplit_once('/')?;
                let dir = if dir.is_empty() { "/" } else { dir };
                let real = self.resolve(pid, dir)?;
                Some(format!("{}/{name}", real.trim_end_matches('/')))
            })
            .unwrap_or_else(|| path.to_owned())
    }

    fn resolve(self, pid: Pid, path: &str) -> Option<String> {
        match self {
            Root::Host => std::fs::canonicalize(path)
                .ok()
                .and_then(|p| p.to_str().map(str::to_owned)),
            Root::Caller => {
                // The resolved object's path, less the path of the caller's
                // root, both as this process sees them.
                let root = std::fs::File::open(format!("/proc/{pid}/root")).ok()?;
                let fd = open_in_root(&root, path, OFlag::empty())?;
                let at = |fd: i32| std::fs::read_link(format!("/proc/self/fd/{fd}")).ok();
                let (root_at, at) = (at(root.as_raw_fd())?, at(fd.as_raw_fd())?);
                let rel = at.strip_prefix(&root_at).ok()?;
                Some(format!("/{}", rel.to_str()?))
            }
        }
    }
}

/// `path` opened `O_PATH` beneath `root`, symlinks resolved as if that
/// root were `/`, magic links not followed out.
fn open_in_root(root: &std::fs::File, path: &str, flags: OFlag) -> Option<OwnedFd> {
    let how = OpenHow::new()
        .flags(OFlag::O_PATH | OFlag::O_CLOEXEC | flags)
        .mode(Mode::empty())
        .resolve(ResolveFlag::RESOLVE_IN_ROOT | ResolveFlag::RESOLVE_NO_MAGICLINKS);
    let rel = path.trim_start_matches('/');
    let rel = if rel.is_empty() { "." } else { rel };
    let fd = nix::fcntl::openat2(root.as_raw_fd(), rel, how).ok()?;
    // SAFETY: openat2 returned a new fd, owned once here.
    Some(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// `path` looked up beneath `pid`'s root, symlinks resolved as if that
/// root were `/`, magic links (`/proc/self/exe`, …) not followed out.
fn exists_in_root(pid: Pid, path: &str, flags: OFlag) -> bool {
    std::fs::File::open(format!("/proc/{pid}/root"))
        .ok()
        .and_then(|root| open_in_root(&root, path, flags))
        .is_some()
}

/// The syscalls whose paths and ports make up a policy.
const WATCHED: &[&str] = &[
    "open",
    "openat",
    "openat2",
    "creat",
    "execve",
    "execveat",
    "connect",
    "bind",
    "unlink",
    "unlinkat",
    "rmdir",
    "mkdir",
    "mkdirat",
    "rename",
    "renameat",
    "renameat2",
    "link",
    "linkat",
    "symlink",
    "symlinkat",
    "mknod",
    "mknodat",
    "truncate",
];

/// The filter: every watched syscall notifies, everything else runs.
pub fn filter() -> Result<sandboy_confine::CompiledSeccomp, String> {
    unotify::filter(WATCHED)
}

/// [`filter`]'s profile, for a container's spec.
pub fn profile() -> Result<oci_spec::runtime::LinuxSeccomp, String> {
    unotify::profile(WATCHED)
}

/// Serve notifications until no filtered process is left (the listener
/// hangs up), recording what each call touches; `seen` is locked per call
/// (a container's supervisor reads it from another thread).
pub fn serve(listener: &OwnedFd, root: Root, seen: &std::sync::Mutex<Observed>) {
    unotify::serve(listener, |req| {
        if let Some(access) = decode(req, root) {
            let pid = Pid::from_raw(req.pid as i32);
            let mut seen = seen.lock().unwrap_or_else(|e| e.into_inner());
            // Paths as they resolve: a rule names what a path reaches,
            // and a red team's `$PWD/r -> /` once got `read = ["<cwd>/r"]`,
            // the whole file system, past every protected-path check.
            let access = access.resolved(|p| root.real(pid, p));
            // Whether a path exists is asked at the end for the host; a
            // container's root is gone by then, so it is asked now.
            seen.add(access, |p| root == Root::Caller && root.exists(pid, p));
        }
        Reply::Continue
    });
}

/// The access a notified call makes, from its number and arguments.
fn decode(req: &libc::seccomp_notif, root: Root) -> Option<Access> {
    let pid = Pid::from_raw(req.pid as i32);
    let open = |path: String, flags: i32| {
        let exists = root.exists(pid, &path);
        Access::open(path, flags, exists)
    };
    // The kernel answers EEXIST (making) or ENOENT (removing) before any
    // Landlock check: such a call needs no rule (`mkdir -p` of /usr).
    let made = |p: String| (!root.entry_exists(pid, &p)).then_some(Access::Change(p));
    let removed = |p: String| root.entry_exists(pid, &p).then_some(Access::Change(p));
    let a = req.data.args;
    let nr = i64::from(req.data.nr);
    let path = |dirfd: u64, addr: u64| resolve(pid, dirfd as i32, &read_cstr(pid, addr)?);
    let cwd = libc::AT_FDCWD as u64;
    Some(match nr {
        libc::SYS_open => open(path(cwd, a[0])?, a[1] as i32),
        libc::SYS_creat => open(path(cwd, a[0])?, libc::O_CREAT | libc::O_WRONLY),
        libc::SYS_openat => open(path(a[0], a[1])?, a[2] as i32),
        libc::SYS_openat2 => open(path(a[0], a[1])?, read_u64(pid, a[2])? as i32),
        libc::SYS_execve => Access::Exec(path(cwd, a[0])?),
        libc::SYS_execveat => Access::Exec(path(a[0], a[1])?),
        libc::SYS_truncate => Access::Write(path(cwd, a[0])?),
        libc::SYS_mkdir | libc::SYS_mknod => made(path(cwd, a[0])?)?,
        libc::SYS_mkdirat | libc::SYS_mknodat => made(path(a[0], a[1])?)?,
        libc::SYS_unlink | libc::SYS_rmdir => removed(path(cwd, a[0])?)?,
        libc::SYS_unlinkat => removed(path(a[0], a[1])?)?,
        libc::SYS_rename | libc::SYS_link => Access::Move(path(cwd, a[0])?, path(cwd, a[1])?),
        libc::SYS_renameat | libc::SYS_renameat2 | libc::SYS_linkat => {
            Access::Move(path(a[0], a[1])?, path(a[2], a[3])?)
        }
        libc::SYS_symlink => made(path(cwd, a[1])?)?,
        libc::SYS_symlinkat => made(path(a[1], a[2])?)?,
        libc::SYS_connect | libc::SYS_bind => {
            let port = read_port(pid, a[1], a[2])?;
            let udp = socket_type(pid, a[0] as i32) == Some(libc::SOCK_DGRAM);
            Access::Port {
                bind: nr == libc::SYS_bind,
                udp,
                port,
            }
        }
        _ => return None,
    })
}

/// `path` made absolute against `dirfd` (or the caller's cwd), as the
/// caller sees them, and normalized lexically.
fn resolve(pid: Pid, dirfd: i32, path: &str) -> Option<String> {
    let joined = if path.starts_with('/') {
        path.to_owned()
    } else {
        let base = if dirfd == libc::AT_FDCWD {
            std::fs::read_link(format!("/proc/{pid}/cwd")).ok()?
        } else {
            std::fs::read_link(format!("/proc/{pid}/fd/{dirfd}")).ok()?
        };
        format!("{}/{path}", base.display())
    };
    let mut parts: Vec<&str> = Vec::new();
    for c in joined.split('/') {
        match c {
            "" | "." => {}
            ".." => drop(parts.pop()),
            c => parts.push(c),
        }
    }
    Some(format!("/{}", parts.join("/")))
}

/// The port of an AF_INET/AF_INET6 address (same offset in both).
fn read_port(pid: Pid, addr: u64, len: u64) -> Option<u16> {
    if len < 4 {
        return None;
    }
    let mut b = [0u8; 4];
    read_mem(pid, addr, &mut b)?;
    let family = i32::from(u16::from_ne_bytes([b[0], b[1]]));
    (family == libc::AF_INET || family == libc::AF_INET6).then(|| u16::from_be_bytes([b[2], b[3]]))
}

/// SOCK_STREAM or SOCK_DGRAM of the caller's socket, through a copy of
/// its fd.
fn socket_type(pid: Pid, fd: i32) -> Option<i32> {
    let copy = unotify::copy_fd(pid, fd)?;
    nix::sys::socket::getsockopt(&copy, nix::sys::socket::sockopt::SockType)
        .ok()
        .map(|t| t as i32)
}
