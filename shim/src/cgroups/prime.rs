//! Start the kernel's cgroup-attach grace period early, off the critical path.
//!
//! Every write to a `cgroup.procs` file takes the kernel's global
//! `cgroup_threadgroup_rwsem` for writing. That percpu rwsem has to switch
//! its readers to the slow path first, which waits for a full RCU grace
//! period (measured here: ~7 ms median, up to ~20 ms on an idle machine) —
//! unless another writer did so within the last grace period. Creating a
//! container attaches its intermediate process to the container's cgroups,
//! so that wait used to sit in the middle of `create`, `run` and `exec`:
//! it was the largest single cost of `create`, for runc and crun too.
//!
//! [`start`] forks a throwaway child, first thing in `main`, that re-attaches
//! itself to the cgroup it is already in (a no-op move that still takes the
//! lock). Its grace period then elapses while this process re-executes from
//! the sealed binary and reads the bundle, and the container's own attach a
//! few milliseconds later finds the lock already switched. A child process
//! rather than a thread: a thread blocked in the kernel would delay the
//! sealed re-exec (`execve` waits for every other thread to die), and an
//! extra thread with unblocked signals would steal the signals `run`
//! forwards. The child's pid survives the re-exec in an environment variable
//! so that [`finish`] reaps it: the runtime never exits leaving it behind.
//! Best effort throughout: any failure only loses the head start.

use std::ffi::CString;
use std::sync::atomic::{AtomicI32, Ordering};

/// Carries the child's pid across the sealed re-exec.
const PRIMER_ENV: &str = "_SANDBOY_CGROUP_PRIMER";

static PRIMER: AtomicI32 = AtomicI32::new(0);

/// Fork the child that warms the attach lock (or adopt the one the process
/// forked before it re-executed); returns at once.
pub fn start() {
    if let Some(pid) = std::env::var_os(PRIMER_ENV) {
        std::env::remove_var(PRIMER_ENV);
        if let Some(pid) = pid.to_str().and_then(|p| p.parse().ok()) {
            PRIMER.store(pid, Ordering::Relaxed);
        }
        return;
    }
    let candidates = procs_files(&std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default());
    if candidates.is_empty() {
        return;
    }
    // SAFETY: called first thing in `main`, before any thread exists; the
    // child only makes async-signal-safe calls (prctl, close_range, open,
    // write, _exit) on buffers allocated before the fork, and never returns
    // into Rust code.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        // SAFETY: as above; `_exit` skips every Rust and libc exit handler.
        unsafe {
            // It runs from the host binary, not the sealed copy: like runc's
            // init, keep /proc/<pid>/exe out of reach of other processes.
            libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0);
            // Hold none of the caller's fds (stdio pipes, --preserve-fds):
            // an engine waiting for EOF must not wait for this child.
            libc::syscall(libc::SYS_close_range, 0, libc::c_uint::MAX, 0);
            for path in &candidates {
                let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
                if fd >= 0 {
                    // "0" is the writing process itself.
                    libc::write(fd, c"0".as_ptr().cast(), 1);
                    libc::_exit(0);
                }
            }
            libc::_exit(0);
        }
    }
    if pid > 0 {
        PRIMER.store(pid, Ordering::Relaxed);
        std::env::set_var(PRIMER_ENV, pid.to_string());
    }
}

/// Reap the child. Once the container's own processes are attached it is
/// already gone (they waited behind its lock), so this costs nothing there;
/// on an early error it waits out the rest of its grace period. Bounded: the
/// pid comes from the environment, so it is never trusted to exit at all.
pub fn finish() {
    std::env::remove_var(PRIMER_ENV);
    let pid = PRIMER.swap(0, Ordering::Relaxed);
    if pid <= 0 {
        return;
    }
    for _ in 0..200 {
        // SAFETY: non-blocking waitpid with a null status pointer; an error
        // (not our child, or already reaped by `run`'s reaper) ends the wait.
        if unsafe { libc::waitpid(pid, std::ptr::null_mut(), libc::WNOHANG) } != 0 {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

/// `cgroup.procs` of this process's own cgroups, in the order to try: the
/// unified hierarchy (hybrid mount, then pure v2), then the v1 hierarchies.
fn procs_files(self_cgroup: &str) -> Vec<CString> {
    let (mut unified, mut v1) = (Vec::new(), Vec::new());
    for line in self_cgroup.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(_), Some(controllers), Some(path)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        let path = path.trim_end_matches('/');
        if controllers.is_empty() {
            unified.push(format!("/sys/fs/cgroup/unified{path}"));
            unified.push(format!("/sys/fs/cgroup{path}"));
        } else {
            let name = controllers.strip_prefix("name=").unwrap_or(controllers);
            v1.push(format!("/sys/fs/cgroup/{name}{path}"));
        }
    }
    unified
        .into_iter()
        .chain(v1)
        .filter_map(|dir| CString::new(format!("{dir}/cgroup.procs")).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    fn files(self_cgroup: &str) -> Vec<String> {
        super::procs_files(self_cgroup)
            .into_iter()
            .map(|c| c.into_string().unwrap())
            .collect()
    }

    #[test]
    fn unified_first_then_v1() {
        assert_eq!(
            files("3:pids:/a/b\n0::/x\n"),
            [
                "/sys/fs/cgroup/unified/x/cgroup.procs",
                "/sys/fs/cgroup/x/cgroup.procs",
                "/sys/fs/cgroup/pids/a/b/cgroup.procs",
            ]
        );
    }

    #[test]
    fn root_cgroup_and_named_hierarchies() {
        assert_eq!(
            files("1:name=systemd:/\n0::/\n"),
            [
                "/sys/fs/cgroup/unified/cgroup.procs",
                "/sys/fs/cgroup/cgroup.procs",
                "/sys/fs/cgroup/systemd/cgroup.procs",
            ]
        );
    }
}
