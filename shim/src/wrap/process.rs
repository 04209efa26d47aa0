//! Processes of the unprivileged wrap: the watchdog that stays outside the
//! sandbox, the relays in between (namespaces tier), and the last step
//! before the command: rlimits, no_new_privs, Landlock, seccomp, fd sweep,
//! `execve`, with 126/127 when that fails.
//!
//! Every process in the chain runs [`supervise`]: it waits for its child,
//! reaps whatever else is reparented to it, forwards termination signals,
//! and exits with the child's status (128+N for signal N). The outermost one
//! (the watchdog) is also the child subreaper, so nothing the command forks
//! can leave the tree, and at the deadline, or when the command has exited,
//! every descendant is SIGKILLed: the command's tree ends with it, as a
//! container's does with its pid namespace.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::sys::signal::{kill, sigprocmask, SigSet, SigmaskHow, Signal};
use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
use nix::unistd::Pid;
use sandboy_confine::Confinement;

/// Signals a supervisor handles synchronously (blocked, then waited for).
pub fn handled_signals() -> SigSet {
    let mut s = SigSet::empty();
    for sig in [
        Signal::SIGCHLD,
        Signal::SIGTERM,
        Signal::SIGHUP,
        Signal::SIGINT,
        Signal::SIGQUIT,
    ] {
        s.add(sig);
    }
    s
}

/// Terminal job-control stops the supervisor must never obey: a step that
/// takes the terminal's foreground (and sets TOSTOP) would otherwise stop
/// the watchdog with the first log line it writes, and with it the timeout
/// and the restore of held files.
const JOB_CONTROL_STOPS: [Signal; 2] = [Signal::SIGTTOU, Signal::SIGTTIN];

/// Block the handled signals (before forking, so none is lost) and ignore
/// terminal job-control stops; `reset_signals` undoes both in the child.
pub fn block_signals() -> nix::Result<()> {
    use nix::sys::signal::{signal, SigHandler};
    for sig in JOB_CONTROL_STOPS {
        // SAFETY: SIG_IGN installs no handler code.
        unsafe { signal(sig, SigHandler::SigIgn) }?;
    }
    sigprocmask(SigmaskHow::SIG_BLOCK, Some(&handled_signals()), None)
}

/// The command starts with an empty signal mask and default SIGPIPE (Rust
/// ignores it, and an ignored signal stays ignored across execve), SIGTTOU
/// and SIGTTIN.
pub fn reset_signals() -> nix::Result<()> {
    use nix::sys::signal::{signal, SigHandler};
    sigprocmask(SigmaskHow::SIG_SETMASK, Some(&SigSet::empty()), None)?;
    for sig in std::iter::once(Signal::SIGPIPE).chain(JOB_CONTROL_STOPS) {
        // SAFETY: restoring the default disposition installs no handler code.
        unsafe { signal(sig, SigHandler::SigDfl) }?;
    }
    Ok(())
}

/// What ended the supervision.
pub enum Outcome {
    /// The child's exit status (128+N for signal N).
    Exited(i32),
    /// The deadline passed; the tree was killed.
    TimedOut,
}

/// Wait for `child` (signals already blocked), reaping everything else that
/// ends up as our child, forwarding SIGTERM/SIGHUP (and SIGINT/SIGQUIT sent
/// by `kill`, not by the terminal, which reaches the whole group itself) to
/// it. With `deadline`, kill the tree when it passes. With `kill_tree`, the
/// rest of the tree is killed once the child has exited.
pub fn supervise(child: Pid, deadline: Option<Instant>, kill_tree: bool) -> Outcome {
    let set = handled_signals();
    let mut status = None;
    loop {
        while let Ok(ws) = waitpid(None, Some(WaitPidFlag::WNOHANG)) {
            match ws {
                WaitStatus::StillAlive => break,
                WaitStatus::Exited(pid, code) if pid == child => status = Some(code),
                WaitStatus::Signaled(pid, sig, _) if pid == child => {
                    status = Some(128 + sig as i32)
                }
                _ => {}
            }
        }
        if let Some(code) = status {
            if kill_tree {
                kill_descendants();
            }
            return Outcome::Exited(code);
        }
        let wait = match deadline {
            Some(d) => match d.checked_duration_since(Instant::now()) {
                Some(left) if !left.is_zero() => Some(left),
                _ => {
                    kill_descendants();
                    return Outcome::TimedOut;
                }
            },
            None => None,
        };
        if let Some(sig) = wait_signal(&set, wait) {
            if matches!(sig.0, Signal::SIGTERM | Signal::SIGHUP)
                || (matches!(sig.0, Signal::SIGINT | Signal::SIGQUIT) && sig.1)
            {
                let _ = kill(child, sig.0);
            }
        }
    }
}

/// `sigtimedwait` for one of `set`: the signal and whether a process sent
/// it (`SI_USER`/`SI_QUEUE`) rather than the kernel or a terminal.
fn wait_signal(set: &SigSet, timeout: Option<Duration>) -> Option<(Signal, bool)> {
    // SAFETY: all-zero is a valid siginfo_t; it is only written by the call.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    let ts = timeout.map(|t| libc::timespec {
        tv_sec: t.as_secs().min(i64::MAX as u64) as libc::time_t,
        tv_nsec: t.subsec_nanos() as libc::c_long,
    });
    let ts_ptr = ts.as_ref().map_or(std::ptr::null(), |t| t as *const _);
    // SAFETY: set is a valid sigset_t, info and ts (or NULL) outlive the call.
    let rc = unsafe { libc::sigtimedwait(set.as_ref(), &mut info, ts_ptr) };
    if rc < 0 {
        return None;
    }
    let sent = info.si_code == libc::SI_USER || info.si_code == libc::SI_QUEUE;
    Signal::try_from(rc).ok().map(|s| (s, sent))
}

/// SIGKILL every descendant of this process and reap them, until none is
/// left. Descendants are found by parent pid in /proc; as subreaper we
/// inherit the orphans of killed ones, so repeated rounds catch processes
/// forked during a round.
pub fn kill_descendants() {
    let me = std::process::id() as i32;
    // Every living descendant of a subreaper is a child of it or below
    // one: with no child left there is nothing to find (and the /proc scan
    // is not paid on the common path, a command that left nothing behind).
    let reap = || loop {
        match waitpid(None, Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::StillAlive) => return true,
            Ok(_) => continue,
            Err(Errno::ECHILD) => return false,
            Err(_) => return true,
        }
    };
    while reap() {
        let tree = descendants(me);
        for &pid in &tree {
            let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
        }
        if !reap() {
            return;
        }
        if tree.is_empty() {
            // Children not yet visible in /proc: give them a moment.
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

/// Pids whose ancestry in /proc leads to `root`.
fn descendants(root: i32) -> Vec<i32> {
    let mut parent = std::collections::HashMap::new();
    if let Ok(dir) = std::fs::read_dir("/proc") {
        for e in dir.flatten() {
            let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
                continue;
            };
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                continue;
            };
            // "pid (comm) state ppid ...": comm may contain spaces and ')'.
            let ppid = stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse::<i32>().ok());
            if let Some(ppid) = ppid {
                parent.insert(pid, ppid);
            }
        }
    }
    let mut out: Vec<i32> = Vec::new();
    for &pid in parent.keys() {
        let mut p = pid;
        for _ in 0..4096 {
            match parent.get(&p) {
                Some(&pp) if pp == root => {
                    out.push(pid);
                    break;
                }
                Some(&pp) if pp > 1 => p = pp,
                _ => break,
            }
        }
    }
    out
}

/// Resource limits for the command (see the module doc of `wrap::direct`
/// for what `pids` counts).
#[derive(Debug, Clone, Default)]
pub struct Rlimits {
    pub nofile: Option<u64>,
    pub nproc: Option<u64>,
    pub address_space: Option<u64>,
}

impl Rlimits {
    fn apply(&self) -> nix::Result<()> {
        use nix::sys::resource::{setrlimit, Resource};
        for (res, v) in [
            (Resource::RLIMIT_NOFILE, self.nofile),
            (Resource::RLIMIT_NPROC, self.nproc),
            (Resource::RLIMIT_AS, self.address_space),
        ] {
            if let Some(v) = v {
                setrlimit(res, v, v)?;
            }
        }
        Ok(())
    }
}

/// How many tasks (threads included) the caller runs now, as
/// `RLIMIT_NPROC` counts them on the host: the landlock tier has no user
/// namespace of its own, so a limit of `pids` would leave a user who runs
/// more than `pids` tasks elsewhere unable to fork at all (a workstation
/// runs hundreds). The tier sets the limit to this count plus `pids`
/// instead: the step may add `pids` tasks to what the user ran when it
/// started. The kernel keeps one count for the user, so the step's share
/// moves with the user's other processes: fewer tasks if they grow
/// meanwhile, more if they end (at most as many as the user ran at start).
///
/// Two `stat`s a process, no reads (reading `status` cost about 15 µs a
/// process). Processes are picked by the owner of their /proc directory,
/// the effective uid of a dumpable process, where the kernel counts real
/// uids: a process of the user's that is not dumpable (`ssh-agent`) or
/// runs setuid is missed (the step gets fewer tasks), one that another
/// user runs setuid to this user is counted (more).
pub fn user_tasks() -> u64 {
    use std::os::unix::fs::MetadataExt;
    let uid = nix::unistd::getuid().as_raw();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return 0;
    };
    let mut tasks = 0u64;
    for entry in dir.flatten() {
        let name = entry.file_name();
        if !name.as_encoded_bytes().iter().all(u8::is_ascii_digit)
            || !entry.metadata().is_ok_and(|m| m.uid() == uid)
        {
            continue;
        }
        // The kernel gives /proc/PID/task a link count of its threads + 2.
        let task = std::path::Path::new("/proc").join(&name).join("task");
        let threads = std::fs::metadata(task).map_or(1, |m| m.nlink().saturating_sub(2));
        tasks += threads.max(1);
    }
    tasks
}

/// What the last process needs to become the command.
pub struct Exec {
    pub program: std::path::PathBuf,
    pub argv: Vec<CString>,
    pub env: Vec<CString>,
    pub cwd: std::path::PathBuf,
    pub rlimits: Rlimits,
}

/// Start the landlock tier's command: a child that runs
/// [`confine_and_exec`] in this process's memory while this thread waits
/// for its `execve` (`CLONE_VM | CLONE_VFORK`, as `posix_spawn` does),
/// instead of a fork that copies the runtime's page tables only for the
/// child to throw them away at its exec (measured in docs/performance.md).
/// Its pid; `before_exec` runs first in the child.
///
/// The child owns `confinement` from here (it is moved out of the shared
/// memory, so nothing of it is freed twice), and it never returns: it
/// execs or `_exit`s. What it allocates stays allocated in this process.
pub fn spawn_confined(
    exec: &Exec,
    confinement: Confinement,
    listener_to: Option<std::os::fd::RawFd>,
    before_exec: fn(),
) -> nix::Result<Pid> {
    let mut confinement = Some(confinement);
    let mut stack = vec![0u8; 1 << 20];
    let child = Box::new(|| -> isize {
        before_exec();
        match confinement.take() {
            Some(c) => confine_and_exec(exec, c, listener_to),
            // SAFETY: ending the child without unwinding; never reached
            // (the closure runs once).
            None => unsafe { libc::_exit(1) },
        }
    });
    // SAFETY: this process is single-threaded here (the watchdog starts its
    // threads after the command exists) and CLONE_VFORK suspends it until
    // the child has exec'd or exited, so the two never run on the shared
    // memory at once and no lock can be held by anyone else; the child
    // runs on its own stack, never returns into this frame, and its
    // process-wide state (credentials, Landlock domain, seccomp filter,
    // rlimits, fd table, signal handlers, cwd) is its own, since neither
    // CLONE_THREAD, CLONE_FILES, CLONE_FS nor CLONE_SIGHAND is given.
    unsafe {
        nix::sched::clone(
            child,
            &mut stack,
            nix::sched::CloneFlags::CLONE_VM | nix::sched::CloneFlags::CLONE_VFORK,
            Some(libc::SIGCHLD),
        )
    }
}

/// In the forked child: confine and execve. Never returns; the exit status
/// on failure is 126 (refused), 127 (not found) or 1 (confinement failed).
/// The filter's user-notification listener, when it has one, goes to the
/// parent over `listener_to` (fail closed: none there, no command).
pub fn confine_and_exec(
    exec: &Exec,
    confinement: Confinement,
    listener_to: Option<std::os::fd::RawFd>,
) -> ! {
    let fail = |code: i32, msg: String| -> ! {
        crate::error::print_line(&format!("sandboy: {msg}"));
        // SAFETY: _exit ends the process without running Rust destructors
        // the parent still owns (the ruleset fd, buffers); always sound.
        unsafe { libc::_exit(code) }
    };
    if let Err(e) = reset_signals() {
        fail(1, format!("error: resetting signals: {e}"));
    }
    if let Err(e) = nix::unistd::chdir(&exec.cwd) {
        fail(
            1,
            format!(
                "error: cannot enter the working directory {}: {e}",
                exec.cwd.display()
            ),
        );
    }
    if let Err(e) = exec.rlimits.apply() {
        fail(1, format!("error: setting resource limits: {e}"));
    }
    if let Err(e) = nix::sys::prctl::set_no_new_privs() {
        fail(1, format!("error: prctl(PR_SET_NO_NEW_PRIVS): {e}"));
    }
    // Whether the program is executable without the policy: tells a refusal
    // by Landlock from an ordinary permission problem.
    let runnable = nix::unistd::access(&exec.program, nix::unistd::AccessFlags::X_OK).is_ok();
    let listener = match confinement.apply() {
        Ok(l) => l,
        Err(e) => fail(
            1,
            format!("error: confinement could not be applied; not running the command: {e}"),
        ),
    };
    match (listener, listener_to) {
        (None, None) => {}
        (Some(l), Some(to)) => {
            if let Err(e) = crate::supervisor::unotify::send_listener(&l, to) {
                fail(
                    1,
                    format!("error: metadata guard: {e}; not running the command"),
                );
            }
        }
        (Some(_), None) => fail(
            1,
            "error: the filter notifies, but nothing serves it; not running the command".into(),
        ),
        (None, Some(_)) => fail(
            1,
            "error: metadata guard: the filter gave no listener; not running the command".into(),
        ),
    }
    let path = match CString::new(exec.program.as_os_str().as_bytes()) {
        Ok(p) => p,
        Err(_) => fail(127, format!("{}: invalid path", exec.program.display())),
    };
    let err = nix::unistd::execve(&path, &exec.argv, &exec.env).unwrap_err();
    let (code, msg) = exec_failure(&exec.program, err, runnable);
    fail(code, msg)
}

/// The exit status and message for a failed execve, as a shell reports it
/// (126 cannot execute, 127 not found), naming the policy key to change.
pub fn exec_failure(program: &Path, err: Errno, runnable: bool) -> (i32, String) {
    let p = program.display();
    match err {
        Errno::ENOENT | Errno::ENOTDIR => (
            127,
            format!("{p}: no such file (or its interpreter is missing)"),
        ),
        Errno::EACCES | Errno::EPERM if runnable => (
            126,
            format!("{p}: not executable under the policy; add it (or its directory) to [fs] exec"),
        ),
        e => (126, format!("{p}: cannot execute: {}", e.desc())),
    }
}

/// The message for a program that is not there (exit status 127).
pub fn not_found(name: &str) {
    crate::error::print_line(&format!(
        "sandboy: {name}: command not found (looked in the PATH of the command's environment)"
    ));
}

/// Look `name` up like `execvp`: as given when it has a '/', else in the
/// `PATH` directories. `None` when nothing is found.
pub fn find_program(name: &str, path: Option<&str>, cwd: &Path) -> Option<std::path::PathBuf> {
    if name.contains('/') {
        let p = cwd.join(name);
        return p.exists().then_some(p);
    }
    let path = path.unwrap_or("/usr/local/bin:/usr/bin:/bin");
    path.split(':')
        .map(|d| if d.is_empty() { "." } else { d })
        .map(|d| cwd.join(d).join(name))
        .find(|p| p.is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exec_failures_map_to_shell_statuses() {
        let p = Path::new("/usr/bin/make");
        let (c, m) = exec_failure(p, Errno::EACCES, true);
        assert_eq!(c, 126);
        assert!(
            m.contains("[fs] exec") && m.contains("/usr/bin/make"),
            "{m}"
        );
        assert_eq!(exec_failure(p, Errno::ENOENT, true).0, 127);
        assert_eq!(exec_failure(p, Errno::EACCES, false).0, 126);
    }

    #[test]
    fn programs_are_found_like_execvp() {
        let cwd = Path::new("/");
        assert!(find_program("sh", Some("/nonexistent:/bin"), cwd).is_some());
        assert!(find_program("no-such-program-x", Some("/bin"), cwd).is_none());
        assert_eq!(
            find_program("/bin/sh", None, cwd),
            Some(std::path::PathBuf::from("/bin/sh"))
        );
    }
}
