//! Seccomp user notification, the plumbing shared by learn mode
//! (`learn::notify`, which observes, for `wrap --learn` and a container's
//! supervisor) and the landlock tier's metadata guard (`wrap::metadata`,
//! which decides): a filter that sends named syscalls to a listener, the
//! listener handed from the filtered process to its watcher, requests
//! received and answered, and the caller's memory read.

use std::io::IoSlice;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};

use nix::sys::socket::{recvmsg, sendmsg, ControlMessage, ControlMessageOwned, MsgFlags};
use nix::sys::uio::{process_vm_readv, RemoteIoVec};
use nix::unistd::Pid;
use oci_spec::runtime::{LinuxSeccompAction, LinuxSeccompBuilder, LinuxSyscallBuilder};

/// A filter under which each of `names` notifies and everything else runs.
pub fn filter(names: &[&str]) -> Result<sandboy_confine::CompiledSeccomp, String> {
    sandboy_confine::seccomp::compile(&profile(names)?).map_err(|e| e.to_string())
}

/// The rule sending `names` to the listener, for a profile of its own
/// ([`profile`]) or added to another one (one filter instead of two).
pub fn rule(names: &[&str]) -> Result<oci_spec::runtime::LinuxSyscall, String> {
    LinuxSyscallBuilder::default()
        .names(names.iter().map(|s| s.to_string()).collect::<Vec<_>>())
        .action(LinuxSeccompAction::ScmpActNotify)
        .build()
        .map_err(|e| e.to_string())
}

/// What a profile with [`rule`] names as its agent: the profile check wants
/// one for NOTIFY; the listener goes to the watcher instead, over a
/// socketpair ([`install_and_send`], [`send_listener`], or the
/// container's `init::seccomp_notify` channel).
pub const NO_AGENT: &str = "/dev/null";

/// [`filter`]'s profile, as a spec's `linux.seccomp`.
pub fn profile(names: &[&str]) -> Result<oci_spec::runtime::LinuxSeccomp, String> {
    let rule = rule(names)?;
    LinuxSeccompBuilder::default()
        .default_action(LinuxSeccompAction::ScmpActAllow)
        .listener_path(NO_AGENT)
        .syscalls(vec![rule])
        .build()
        .map_err(|e| e.to_string())
}

/// In the child (under no_new_privs): install `filter` and pass its
/// listener to the parent over `to_parent`.
pub fn install_and_send(
    filter: &sandboy_confine::CompiledSeccomp,
    to_parent: RawFd,
) -> Result<(), String> {
    let listener = match filter.install() {
        Ok(Some(l)) => l,
        Ok(None) => return Err("the notifying filter gave no listener".into()),
        Err(e) => return Err(format!("installing the notifying filter: {e}")),
    };
    send_listener(&listener, to_parent)
}

/// Pass an installed filter's `listener` to the parent over `to_parent`.
pub fn send_listener(listener: &OwnedFd, to_parent: RawFd) -> Result<(), String> {
    let fds = [listener.as_raw_fd()];
    sendmsg::<()>(
        to_parent,
        &[IoSlice::new(b"L")],
        &[ControlMessage::ScmRights(&fds)],
        MsgFlags::empty(),
        None,
    )
    .map_err(|e| format!("passing the seccomp listener: {e}"))?;
    Ok(())
}

/// In the watcher: the listener the filtered process sent, `None` if it
/// died (or closed its end) first.
pub fn receive_listener(sock: &OwnedFd) -> Option<OwnedFd> {
    let mut byte = [0u8; 1];
    let mut iov = [std::io::IoSliceMut::new(&mut byte)];
    let mut space = nix::cmsg_space!([RawFd; 1]);
    let msg = recvmsg::<()>(
        sock.as_raw_fd(),
        &mut iov,
        Some(&mut space),
        MsgFlags::MSG_CMSG_CLOEXEC,
    )
    .ok()?;
    for c in msg.cmsgs().ok()? {
        if let ControlMessageOwned::ScmRights(fds) = c {
            // SAFETY: the kernel installed these fds for us; each is owned once.
            return fds.first().map(|&fd| unsafe { OwnedFd::from_raw_fd(fd) });
        }
    }
    None
}

/// Serve requests until no filtered process is left (the listener hangs
/// up); `answer` says what each request gets back.
pub fn serve(listener: &OwnedFd, mut answer: impl FnMut(&libc::seccomp_notif) -> Reply) {
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
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
                let reply = answer(&req);
                respond(listener.as_fd(), req.id, reply);
            }
        } else if ev.intersects(PollFlags::POLLHUP | PollFlags::POLLERR | PollFlags::POLLNVAL) {
            return;
        }
    }
}

/// What a notified call gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reply {
    /// Run the call as the caller made it (observation only: the caller
    /// may change its memory between our read and the kernel's).
    Continue,
    /// The call returns 0: it was done for the caller.
    Done,
    /// The call fails with this errno.
    Fail(i32),
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

fn respond(fd: BorrowedFd<'_>, id: u64, reply: Reply) {
    let (error, flags) = match reply {
        Reply::Continue => (0, libc::SECCOMP_USER_NOTIF_FLAG_CONTINUE as u32),
        Reply::Done => (0, 0),
        Reply::Fail(errno) => (-errno, 0),
    };
    let mut resp = libc::seccomp_notif_resp {
        id,
        val: 0,
        error,
        flags,
    };
    // SAFETY: the ioctl reads one seccomp_notif_resp from `resp`, which
    // lives for the call; an id no longer valid gets ENOENT, ignored.
    unsafe { libc::ioctl(fd.as_raw_fd(), libc::SECCOMP_IOCTL_NOTIF_SEND, &mut resp) };
}

/// Whether request `id` is still pending: the caller has not died and its
/// pid not been reused since it was received, so what was read from "its"
/// memory and fds really was its own.
pub fn still_valid(listener: BorrowedFd<'_>, id: u64) -> bool {
    let mut id = id;
    // SAFETY: the ioctl reads one u64 from `id`, which lives for the call.
    unsafe {
        libc::ioctl(
            listener.as_raw_fd(),
            libc::SECCOMP_IOCTL_NOTIF_ID_VALID,
            &mut id,
        ) == 0
    }
}

pub fn read_mem(pid: Pid, addr: u64, buf: &mut [u8]) -> Option<usize> {
    let remote = [RemoteIoVec {
        base: addr as usize,
        len: buf.len(),
    }];
    process_vm_readv(pid, &mut [std::io::IoSliceMut::new(buf)], &remote).ok()
}

/// Exactly `buf.len()` bytes at `addr`.
pub fn read_exact(pid: Pid, addr: u64, buf: &mut [u8]) -> Option<()> {
    (read_mem(pid, addr, buf)? == buf.len()).then_some(())
}

/// A NUL-terminated string, read page by page so that a string ending
/// just before an unmapped page still reads.
pub fn read_cstr(pid: Pid, addr: u64) -> Option<String> {
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

pub fn read_u64(pid: Pid, addr: u64) -> Option<u64> {
    let mut b = [0u8; 8];
    read_exact(pid, addr, &mut b).map(|()| u64::from_ne_bytes(b))
}

/// A copy of the caller's fd `fd` (pidfd_getfd: the same ptrace right
/// process_vm_readv needs, which a parent has over its child).
pub fn copy_fd(pid: Pid, fd: i32) -> Option<OwnedFd> {
    let pidfd = crate::supervisor::pidfd::Pidfd::open(pid).ok()?;
    // SAFETY: pidfd_getfd returns a new fd or -1; a returned fd is owned
    // exactly once below.
    let copy = unsafe { libc::syscall(libc::SYS_pidfd_getfd, pidfd.as_fd().as_raw_fd(), fd, 0) };
    // SAFETY: see above.
    (copy >= 0).then(|| unsafe { OwnedFd::from_raw_fd(copy as i32) })
}
