//! `vm.memfd_noexec` from `linux.sysctl`, applied by the runtime (issue 14).
//!
//! The sysctl is per pid namespace (kernel >= 6.3): a write sets the value
//! of the *writer's* pid namespace, and a namespace can never go below its
//! parent's. libcontainer 0.7 refuses every `vm.*` key ("not in a separate
//! kernel namespace"), and inside the init the capabilities are gone and
//! `/proc/sys` is read-only by the time the executor runs. So the runtime
//! strips the key from what libcontainer sees and writes it from outside,
//! from a grandchild whose pid namespace is the container's, before
//! `start`. Inside, the step has no CAP_SYS_ADMIN and a read-only
//! `/proc/sys`, so it cannot lower it; namespaces it could make (clone is
//! guarded anyway) inherit it.

use std::ffi::CString;
use std::fs::File;
use std::os::fd::AsRawFd;

use oci_spec::runtime::Spec;

use crate::error::{Failure, Result};

/// The key, as OCI writes it.
pub const MEMFD_NOEXEC: &str = "vm.memfd_noexec";

/// The value asked for, checked (0, 1 or 2).
pub fn memfd_noexec(spec: &Spec) -> Result<Option<u8>> {
    let Some(v) = spec
        .linux()
        .as_ref()
        .and_then(|l| l.sysctl().as_ref())
        .and_then(|s| s.get(MEMFD_NOEXEC))
    else {
        return Ok(None);
    };
    let value = match v.trim() {
        "0" => 0,
        "1" => 1,
        "2" => 2,
        other => {
            return Err(Failure::config(format!(
                "linux.sysctl {MEMFD_NOEXEC} = {other:?}: use \"0\", \"1\" or \"2\" (2: no memfd may be executed)"
            )))
        }
    };
    // Written in the host's pid namespace, the value would be the host's,
    // and it can never be lowered again: a spec sharing the host's pid
    // namespace would raise it for good. runc refuses a namespaced sysctl
    // in the host's namespace the same way; a namespace joined by path (a
    // pod's) is the pod's to tighten.
    if in_host_pid_namespace(spec) {
        return Err(Failure::config(format!(
            "linux.sysctl {MEMFD_NOEXEC}: the container shares the host's pid namespace, so this would set the host's for good; add {{\"type\": \"pid\"}} to linux.namespaces, or remove the key"
        )));
    }
    Ok(Some(value))
}

/// Whether the container's pid namespace is the host's: none in the spec,
/// or a path naming the runtime's own.
fn in_host_pid_namespace(spec: &Spec) -> bool {
    use std::os::unix::fs::MetadataExt;
    match super::pid_namespace(spec) {
        None => true,
        Some(n) => n.path().as_ref().is_some_and(|p| {
            let ino = |p: &std::path::Path| std::fs::metadata(p).map(|m| (m.dev(), m.ino()));
            // Unreadable: as the host's (fail closed).
            match (ino(p), ino(std::path::Path::new("/proc/self/ns/pid"))) {
                (Ok(a), Ok(b)) => a == b,
                _ => true,
            }
        }),
    }
}

/// The spec without the key (what libcontainer is given).
pub fn strip(spec: &mut Spec) {
    if let Some(mut linux) = spec.linux().clone() {
        if let Some(mut s) = linux.sysctl().clone() {
            s.remove(MEMFD_NOEXEC);
            linux.set_sysctl(Some(s));
            spec.set_linux(Some(linux));
        }
    }
}

/// Write `value` to `vm.memfd_noexec` in the pid namespace of `pid`.
pub fn apply(pid: i32, value: u8) -> Result<()> {
    let err = |what: &str, e: std::io::Error| {
        Failure::runtime(format!(
            "setting {MEMFD_NOEXEC} in the container's pid namespace: {what}: {e}"
        ))
    };
    let ns = File::open(format!("/proc/{pid}/ns/pid")).map_err(|e| err("open its pid ns", e))?;
    let path = CString::new("/proc/sys/vm/memfd_noexec").expect("no NUL");
    let text = [b'0' + value];
    // SAFETY: the child only makes async-signal-safe calls (setns, fork,
    // open, write, waitpid, _exit) on data prepared before the fork.
    let child = unsafe { libc::fork() };
    if child < 0 {
        return Err(err("fork", std::io::Error::last_os_error()));
    }
    if child == 0 {
        // SAFETY: see above; setns(CLONE_NEWPID) places only our children
        // in the container's pid namespace, hence the second fork.
        unsafe {
            if libc::setns(ns.as_raw_fd(), libc::CLONE_NEWPID) != 0 {
                libc::_exit(*libc::__errno_location());
            }
            let grand = libc::fork();
            if grand == 0 {
                let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
                if fd < 0 || libc::write(fd, text.as_ptr().cast(), 1) != 1 {
                    libc::_exit(*libc::__errno_location());
                }
                libc::_exit(0);
            }
            let mut st = 0;
            if grand < 0 || libc::waitpid(grand, &mut st, 0) != grand || !libc::WIFEXITED(st) {
                libc::_exit(libc::ECHILD);
            }
            libc::_exit(libc::WEXITSTATUS(st));
        }
    }
    let mut st = 0;
    // SAFETY: waiting for the child forked above.
    if unsafe { libc::waitpid(child, &mut st, 0) } != child {
        return Err(err("waitpid", std::io::Error::last_os_error()));
    }
    match libc::WIFEXITED(st).then(|| libc::WEXITSTATUS(st)) {
        Some(0) => Ok(()),
        Some(errno) => Err(err("write", std::io::Error::from_raw_os_error(errno))),
        None => Err(err("child", std::io::Error::other("killed"))),
    }
}
