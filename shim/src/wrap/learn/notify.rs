//! The seccomp user-notification side of learn mode: the filter that sends
//! the observed syscalls to the watcher, and the watcher's loop, which reads
//! each call's path or address from the caller's memory and lets the call
//! proceed unchanged (`SECCOMP_USER_NOTIF_FLAG_CONTINUE`).
//!
//! Observation, not enforcement: the caller may change its memory between
//! our read and the kernel's, which only makes the learned policy wrong
//! (and the confined run that follows refuse), never lets anything out.

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::uio::{process_vm_readv, RemoteIoVec};
use nix::unistd::Pid;
use oci_spec::runtime::{LinuxSeccompAction, LinuxSeccompBuilder, LinuxSyscallBuilder};

use super::observed::{Access, Observed};

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
    let rule = LinuxSyscallBuilder::default()
        .names(WATCHED.iter().map(|s| s.to_string()).collect::<Vec<_>>())
        .action(LinuxSeccompAction::ScmpActNotify)
        .build()
        .map_err(|e| e.to_string())?;
    let profile = LinuxSeccompBuilder::default()
        .default_action(LinuxSeccompAction::ScmpActAllow)
        // The profile check wants an agent for NOTIFY; the listener goes to
        // this process instead, over a socketpair (see `learn::run`).
        .listener_path("/dev/null")
        .syscalls(vec![rule])
        .build()
        .map_err(|e| e.to_string())?;
    sandboy_confine::seccomp::compile(&profile).map_err(|e| e.to_string())
}

/// Serve notifications until no filtered process is left (the listener
/// hangs up), recording what each call touches.
pub fn serve(listener: &OwnedFd, seen: &mut Observed) {
    loop {
        let mut fds = [PollFd::new(listener.as_fd(), PollFlags::POLLIN)];
        match poll(&mut fds, PollTimeout::NONE) {
            Err(nix::errno::Errno::EINTR) => continue,
            Err(_) => return,
            Ok(_) => {}
        }
        let ev = fds[0].revents().unwrap_or(PollFlags::empty());
        if ev.contains(PollFlags::POLLIN) {
            if let Some(req) = receive(listener.as_fd()) {
                if let Some(access) = decode(&req) {
                    seen.add(access);
                }
                proceed(listener.as_fd(), req.id);
            }
        } else if ev.intersects(PollFlags::POLLHUP | PollFlags::POLLERR | PollFlags::POLLNVAL) {
            return;
        }
    }
}

fn receive(fd: BorrowedFd<'_>) -> Option<libc::seccomp_notif> {
    // SAFETY: zeroed is a valid seccomp_notif (plain integers), and the
    // kernel requires it zeroed before NOTIF_RECV.
    let mut req: libc::seccomp_notif = unsafe { std::mem::zeroed() };
    // SAFETY: the ioctl writes one seccomp_notif into `req`, which lives
    // for the call; `fd` is a seccomp listener.
    let rc = unsafe { libc::ioctl(fd.as_raw_fd(), libc::SECCOMP_IOCTL_NOTIF_RECV, &mut req) };
    // ENOENT: the caller died (or was signalled) before we read it.
    (rc == 0).then_some(req)
}

fn proceed(fd: BorrowedFd<'_>, id: u64) {
    let mut resp = libc::seccomp_notif_resp {
        id,
        val: 0,
        error: 0,
        flags: libc::SECCOMP_USER_NOTIF_FLAG_CONTINUE as u32,
    };
    // SAFETY: the ioctl reads one seccomp_notif_resp from `resp`, which
    // lives for the call; an id no longer valid gets ENOENT, ignored.
    unsafe { libc::ioctl(fd.as_raw_fd(), libc::SECCOMP_IOCTL_NOTIF_SEND, &mut resp) };
}

/// The access a notified call makes, from its number and arguments.
fn decode(req: &libc::seccomp_notif) -> Option<Access> {
    let pid = Pid::from_raw(req.pid as i32);
    let a = req.data.args;
    let nr = i64::from(req.data.nr);
    let path = |dirfd: u64, addr: u64| resolve(pid, dirfd as i32, &read_cstr(pid, addr)?);
    let cwd = libc::AT_FDCWD as u64;
    Some(match nr {
        libc::SYS_open => Access::open(path(cwd, a[0])?, a[1] as i32),
        libc::SYS_creat => Access::open(path(cwd, a[0])?, libc::O_CREAT | libc::O_WRONLY),
        libc::SYS_openat => Access::open(path(a[0], a[1])?, a[2] as i32),
        libc::SYS_openat2 => Access::open(path(a[0], a[1])?, read_u64(pid, a[2])? as i32),
        libc::SYS_execve => Access::Exec(path(cwd, a[0])?),
        libc::SYS_execveat => Access::Exec(path(a[0], a[1])?),
        libc::SYS_truncate => Access::Write(path(cwd, a[0])?),
        libc::SYS_unlink | libc::SYS_rmdir | libc::SYS_mkdir | libc::SYS_mknod => {
            Access::Change(path(cwd, a[0])?)
        }
        libc::SYS_unlinkat | libc::SYS_mkdirat | libc::SYS_mknodat => {
            Access::Change(path(a[0], a[1])?)
        }
        libc::SYS_rename | libc::SYS_link => Access::Move(path(cwd, a[0])?, path(cwd, a[1])?),
        libc::SYS_renameat | libc::SYS_renameat2 | libc::SYS_linkat => {
            Access::Move(path(a[0], a[1])?, path(a[2], a[3])?)
        }
        libc::SYS_symlink => Access::Change(path(cwd, a[1])?),
        libc::SYS_symlinkat => Access::Change(path(a[1], a[2])?),
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

/// `path` made absolute against `dirfd` (or the caller's cwd) and
/// normalized lexically.
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

fn read_mem(pid: Pid, addr: u64, buf: &mut [u8]) -> Option<usize> {
    let remote = [RemoteIoVec {
        base: addr as usize,
        len: buf.len(),
    }];
    process_vm_readv(pid, &mut [std::io::IoSliceMut::new(buf)], &remote).ok()
}

/// A NUL-terminated string, read page by page so that a string ending
/// just before an unmapped page still reads.
fn read_cstr(pid: Pid, addr: u64) -> Option<String> {
    const PAGE: u64 = 4096;
    let mut out = Vec::new();
    let mut at = addr;
    while out.len() < libc::PATH_MAX as usize {
        let chunk = (PAGE - at % PAGE) as usize;
        let mut buf = vec![0u8; chunk];
        let n = read_mem(pid, at, &mut buf)?;
        if let Some(end) = buf[..n].iter().position(|b| *b == 0) {
            out.extend_from_slice(&buf[..end]);
            return String::from_utf8(out).ok();
        }
        out.extend_from_slice(&buf[..n]);
        at += n as u64;
    }
    None
}

fn read_u64(pid: Pid, addr: u64) -> Option<u64> {
    let mut b = [0u8; 8];
    (read_mem(pid, addr, &mut b)? == 8).then(|| u64::from_ne_bytes(b))
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
/// its fd (pidfd_getfd: the same ptrace right process_vm_readv needs).
fn socket_type(pid: Pid, fd: i32) -> Option<i32> {
    let pidfd = crate::supervisor::pidfd::Pidfd::open(pid).ok()?;
    // SAFETY: pidfd_getfd returns a new fd or -1; a returned fd is owned
    // exactly once below.
    let copy = unsafe { libc::syscall(libc::SYS_pidfd_getfd, pidfd.as_fd().as_raw_fd(), fd, 0) };
    if copy < 0 {
        return None;
    }
    // SAFETY: see above.
    let copy = unsafe { OwnedFd::from_raw_fd(copy as i32) };
    nix::sys::socket::getsockopt(&copy, nix::sys::socket::sockopt::SockType)
        .ok()
        .map(|t| t as i32)
}
