//! A new network namespace starts with `lo` down; runc brings it up, and a
//! policy's `net.namespace = "none"` promises loopback. libcontainer 0.7 does
//! not, and inside the init capabilities are gone by the time the executor
//! runs, so the runtime does it from outside: enter the container's netns,
//! set IFF_UP on `lo`, return to its own.

use std::fs::File;
use std::os::fd::AsRawFd;

use nix::sched::{setns, CloneFlags};
use oci_spec::runtime::{LinuxNamespaceType, Spec};

use crate::error::{Failure, Result};

/// Whether the spec asks for a fresh network namespace (no `path`).
pub fn wants_new_netns(spec: &Spec) -> bool {
    spec.linux()
        .as_ref()
        .and_then(|l| l.namespaces().as_ref())
        .is_some_and(|ns| {
            ns.iter()
                .any(|n| n.typ() == LinuxNamespaceType::Network && n.path().is_none())
        })
}

/// Bring `lo` up in the network namespace of `pid`.
pub fn bring_up(pid: i32) -> Result<()> {
    within(pid, "bringing up loopback", "SIOCSIFFLAGS lo", set_lo_up)
}

/// Run `f` inside the network namespace of `pid` and return to our own
/// (sockets made there keep that namespace: the egress gateway's are).
/// `what` and `step` name the work in errors.
pub fn within<T>(
    pid: i32,
    what: &str,
    step: &str,
    f: impl FnOnce() -> std::io::Result<T>,
) -> Result<T> {
    let err = |at: &str, e: &dyn std::fmt::Display| {
        Failure::runtime(format!("{what} in the container's netns: {at}: {e}"))
    };
    let ours = File::open("/proc/self/ns/net").map_err(|e| err("open own netns", &e))?;
    let theirs =
        File::open(format!("/proc/{pid}/ns/net")).map_err(|e| err("open container netns", &e))?;
    setns(&theirs, CloneFlags::CLONE_NEWNET).map_err(|e| err("setns", &e))?;
    let done = f();
    // Always return to our own namespace, even if `f` failed.
    setns(&ours, CloneFlags::CLONE_NEWNET).map_err(|e| err("setns back", &e))?;
    done.map_err(|e| err(step, &e))
}

fn set_lo_up() -> std::io::Result<()> {
    // SAFETY: plain socket(2); the fd is wrapped at once so it is closed.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: fd was just returned by socket(2) and is owned here only.
    let sock = unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) };
    // SAFETY: ifreq is plain data; all-zero is a valid value.
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    for (dst, src) in req.ifr_name.iter_mut().zip(b"lo\0") {
        *dst = *src as libc::c_char;
    }
    // SAFETY: SIOCGIFFLAGS/SIOCSIFFLAGS read and write the ifreq we own.
    unsafe {
        if libc::ioctl(sock.as_raw_fd(), libc::SIOCGIFFLAGS, &mut req) < 0 {
            return Err(std::io::Error::last_os_error());
        }
        req.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short;
        if libc::ioctl(sock.as_raw_fd(), libc::SIOCSIFFLAGS, &req) < 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}
