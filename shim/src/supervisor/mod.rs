//! The per-container supervisor: one small process per container that
//! outlives the runtime command which started it (`create` of a detached
//! container too), holds a pidfd of the container's init — so a recycled pid
//! cannot fool it — and exits as soon as the init does.
//!
//! It is spawned once, at the end of a successful `create`, and only when
//! the container has a duty for it ([`Duties`]): the wall-clock deadline
//! (`dev.sandboy.timeout`), the denial reports ([`denials`], from the
//! kernel's audit records), the egress gateway ([`egress`]) and the
//! learn-mode notifier ([`learn`], `run --learn`): one process per
//! container, whatever its duties.
//!
//! The supervisor knows nothing of libcontainer or of the CLI: the container
//! layer tells it what to watch ([`Target`]) and hands it the action to take
//! at the deadline.

pub mod audit;
pub mod denials;
pub mod egress;
pub mod learn;
pub mod pidfd;
pub mod unotify;

use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::unistd::{fork, setsid, ForkResult, Pid};

use crate::error::{Failure, Result};
use pidfd::Pidfd;

/// In the state directory: the supervisor as `"PID START-TIME"`, so
/// `delete` can wait for it (written by the container layer).
pub const PID_FILE: &str = "supervisor";

/// Marker left in the state directory when the deadline fired.
pub const TIMED_OUT_MARKER: &str = "timed-out";

/// What one container's supervisor does.
#[derive(Debug, Default)]
pub struct Duties {
    /// Kill the whole container this long after create.
    pub timeout: Option<Duration>,
    /// Collect the container's refusals from the kernel's audit records.
    pub denials: Option<denials::Duty>,
    /// Serve the egress gateway's sockets (made before the payload runs).
    pub egress: Option<egress::Duty>,
    /// Observe the container through its learning filter and write the
    /// policy it needs (`run --learn`).
    pub learn: Option<learn::Duty>,
}

impl Duties {
    /// Whether there is anything to supervise (no process otherwise).
    pub fn is_empty(&self) -> bool {
        self.timeout.is_none()
            && self.denials.is_none()
            && self.egress.is_none()
            && self.learn.is_none()
    }
}

/// After the init exited, the longest wait for the supervisor's own mark
/// (see [`drain`]); the kernel's audit thread delivers records
/// asynchronously, usually within a millisecond.
const MARK_WAIT: Duration = Duration::from_secs(1);
/// Without a mark (auditing off: only seccomp kill records come), read
/// until the socket has been quiet this long.
const QUIET: Duration = Duration::from_millis(30);
/// While records stream in, the pause between reads, in ms (see `supervise`).
const BATCH_MS: u8 = 2;
/// The most records, and the longest time, one wakeup reads before the
/// deadline is looked at again (see `read_ready`).
const DRAIN_SLICE: (usize, Duration) = (4096, Duration::from_millis(20));

/// The container a supervisor watches.
#[derive(Debug, Clone)]
pub struct Target {
    pub id: String,
    /// The container's state directory (for markers and reports).
    pub state_dir: PathBuf,
    /// Keep the caller's stderr (a foreground `run`, which waits for the
    /// supervisor anyway) instead of /dev/null.
    pub keep_stderr: bool,
    pub init: Pid,
    /// The container has no pid namespace of its own (the host's, or one
    /// joined by path): its other processes outlive the init, and the
    /// supervisor with them (see [`spawn`]'s `remaining`).
    pub shares_pids: bool,
}

/// While the init is gone but the container's processes are not (a shared
/// pid namespace), how often the supervisor looks again.
const LINGER_POLL: Duration = Duration::from_millis(100);

/// Start the supervisor for `target`, detached from the caller (its own
/// session, stdio on /dev/null), and return once
/// it runs; its pid (`None`: no duty, no process). `kill_all` is what the deadline does: SIGKILL to every process
/// of the container.
///
/// `remaining` says whether any process of the container is left; asked
/// only when it [`Target::shares_pids`], once the init exited: the
/// deadline and the reports hold until the last one is gone (a red team's
/// init exited at once in a joined pid namespace and its child ran past
/// the timeout).
pub fn spawn(
    target: Target,
    duties: Duties,
    kill_all: impl FnOnce(&str) -> Result<()>,
    remaining: impl Fn(&str) -> bool,
) -> Result<Option<Pid>> {
    if duties.is_empty() {
        return Ok(None);
    }
    let pidfd = Pidfd::open(target.init)
        .map_err(|e| Failure::runtime(format!("pidfd_open({}): {e}", target.init)))?;

    // One fork, not a daemon's two: a caller that exits (`create`) leaves
    // the supervisor to its subreaper just as an exited intermediate would,
    // and a foreground `run` reaps every child anyway; setsid keeps the
    // terminal's SIGINT and SIGHUP, meant for the payload, away from it.
    // SAFETY: the runtime is single-threaded (libcontainer forbids threads
    // before cloning, and none are started after), so the child is a
    // fresh single-threaded copy that runs only `supervise`.
    match unsafe { fork() }? {
        ForkResult::Parent { child } => {
            drop(pidfd);
            Ok(Some(child))
        }
        ForkResult::Child => {
            let _ = setsid();
            detach_stdio(target.keep_stderr);
            let code = supervise(&target, duties, &pidfd, kill_all, remaining);
            std::process::exit(code);
        }
    }
}

/// Stdio to /dev/null, so the supervisor keeps no pipe of the caller open:
/// engines (conmon, containerd's shim) wait for EOF on the runtime's output.
/// The log file stays open: the supervisor's warnings go there.
fn detach_stdio(keep_stderr: bool) {
    if let Ok(null) = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/null")
    {
        for target in 0..if keep_stderr { 2 } else { 3 } {
            let _ = nix::unistd::dup2(null.as_raw_fd(), target);
        }
    }
}

fn supervise(
    target: &Target,
    mut duties: Duties,
    pidfd: &Pidfd,
    kill_all: impl FnOnce(&str) -> Result<()>,
    remaining: impl Fn(&str) -> bool,
) -> i32 {
    let started = Instant::now();
    let init = target.init.as_raw();
    // First, while this process has no thread and no report file open:
    // the gateway's own, de-privileged process (`egress::child`).
    let mut gateway = duties.egress.take().and_then(|duty| {
        egress::child::spawn(
            duty.rules,
            duty.listeners,
            egress::child::Identity::Nobody,
        )
            .map_err(|e| {
                tracing::warn!(id = %target.id, error = %e, "egress gateway: its process could not be started; the container's connections through it are refused");
            })
            .ok()
    });
    let mut kill_all = Some(kill_all);
    // One report for the audit records and the gateway's refusals.
    let mut report = (duties.denials.is_some() || gateway.is_some()).then(|| {
        denials::Collector::new(
            &target.id,
            &target.state_dir,
            target.init.as_raw(),
            duties
                .denials
                .as_ref()
                .map_or_else(Default::default, |d| d.policy.clone()),
        )
        .with_session(duties.denials.as_ref().and_then(|d| d.session))
    });
    // After the gateway's fork: learning observes on a thread.
    let mut learning = match duties.learn.take().map(|d| learn::start(&target.id, d)) {
        Some(Ok(l)) => Some(l),
        Some(Err(e)) => {
            tracing::warn!(id = %target.id, error = %e.message, "learn: not observing");
            None
        }
        None => None,
    };
    let socket = duties.denials.as_ref().map(|d| &d.socket);
    let mut buf = vec![0u8; 16 * 1024];
    let mut code = 0;
    let mut init_gone = false;
    loop {
        let deadline = duties
            .timeout
            .filter(|_| kill_all.is_some())
            .map(|t| t.saturating_sub(started.elapsed()));
        // With a report, wake now and then to write it.
        let wait = match (deadline, report.is_some()) {
            (Some(d), true) => Some(d.min(Duration::from_millis(250))),
            (Some(d), false) => Some(d),
            (None, true) => Some(Duration::from_millis(250)),
            (None, false) => None,
        };
        let exited = if init_gone {
            // The pidfd stays readable now: wait by time instead.
            std::thread::sleep(wait.map_or(LINGER_POLL, |w| w.min(LINGER_POLL)));
            !remaining(&target.id)
        } else {
            match wait_any(pidfd, socket, gateway.as_ref().and_then(|g| g.fd()), wait) {
                Ok(w) => w,
                Err(_) => return 1,
            }
        };
        // The deadline first, measured now (not before the wait): reading
        // the reports costs time the container can make long (a flood of
        // refusals, each with a client lookup, fired the kill 5.6 s late).
        if !exited && due(duties.timeout, started) {
            if let (Some(kill), Some(span)) = (kill_all.take(), duties.timeout) {
                code = on_timeout(target, span, kill, pidfd);
            }
        }
        if let Some(c) = report.as_mut() {
            if let Some(s) = socket {
                if read_ready(s, c, &mut buf) > 0 {
                    // A stream of refusals: let records gather in the
                    // socket's 1 MiB queue instead of waking per record
                    // (10,000 a second would be as many context switches);
                    // the init's exit still ends the pause at once.
                    let mut fds = [PollFd::new(pidfd.as_fd(), PollFlags::POLLIN)];
                    let _ = poll(&mut fds, PollTimeout::from(BATCH_MS));
                }
            }
            if let Some(g) = gateway.as_mut() {
                g.pump(&target.id, init, |d| c.record(d));
            }
            c.tick();
        }
        if exited && !init_gone && target.shares_pids && remaining(&target.id) {
            init_gone = true;
            continue;
        }
        if exited {
            if let Some(l) = learning.take() {
                l.finish(&target.id, &target.state_dir);
            }
            if let Some(c) = report.as_mut() {
                if let Some(duty) = duties.denials.as_ref() {
                    drain(duty, c, &mut buf, &target.id);
                }
                if let Some(g) = gateway.take() {
                    g.stop(&target.id, init, |d| c.record(d));
                }
                c.finish(duties.denials.as_ref().and_then(|d| d.lost_before));
            }
            return code;
        }
    }
}

/// Whether the container's `timeout` has passed since `started`.
fn due(timeout: Option<Duration>, started: Instant) -> bool {
    timeout.is_some_and(|t| started.elapsed() >= t)
}

/// Poll the init's pidfd, the audit socket and the gateway's channel;
/// whether the init exited.
fn wait_any(
    pidfd: &Pidfd,
    socket: Option<&audit::Socket>,
    gateway: Option<BorrowedFd<'_>>,
    wait: Option<Duration>,
) -> std::io::Result<bool> {
    let ms = wait.map_or(-1, |w| w.as_millis().min(i32::MAX as u128) as i32);
    let timeout = PollTimeout::try_from(ms).unwrap_or(PollTimeout::MAX);
    let mut fds = vec![PollFd::new(pidfd.as_fd(), PollFlags::POLLIN)];
    if let Some(s) = socket {
        fds.push(PollFd::new(s.as_fd(), PollFlags::POLLIN));
    }
    if let Some(g) = gateway {
        fds.push(PollFd::new(g, PollFlags::POLLIN));
    }
    match poll(&mut fds, timeout) {
        Ok(_) => Ok(fds[0].revents().is_some_and(|r| !r.is_empty())),
        Err(nix::errno::Errno::EINTR) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// Records already queued on the socket, without blocking; how many. At
/// most [`DRAIN_SLICE`] of them or of time per wakeup: another user's flood
/// of audit records would otherwise keep the loop here and postpone the
/// deadline check (the timeout kill) for as long as it lasts.
fn read_ready(socket: &audit::Socket, c: &mut denials::Collector, buf: &mut [u8]) -> usize {
    let mut read = 0;
    let until = Instant::now() + DRAIN_SLICE.1;
    loop {
        if read >= DRAIN_SLICE.0 || Instant::now() >= until {
            return read;
        }
        match socket.try_record(buf) {
            Ok(Some(r)) => {
                c.feed(&r);
                read += 1;
            }
            Ok(None) => return read,
            // ENOBUFS: the queue overflowed and records were lost; go on.
            Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => {}
            Err(_) => return read,
        }
    }
}

/// After the init's exit, the records still in the kernel's queue: up to
/// our own mark when auditing is on (the kernel delivers records in order,
/// so nothing of the container's comes after it), else until the socket
/// stays quiet for [`QUIET`].
fn drain(duty: &denials::Duty, c: &mut denials::Collector, buf: &mut [u8], id: &str) {
    let mark = format!("sandboy-drain id={id} pid={}", std::process::id());
    let marked = duty.landlock && audit::Socket::control().and_then(|s| s.mark(&mark)).is_ok();
    let limit = Instant::now() + if marked { MARK_WAIT } else { QUIET };
    loop {
        let left = limit.saturating_duration_since(Instant::now());
        let wait = if marked { left } else { left.min(QUIET) };
        let ms = wait.as_millis().min(i32::MAX as u128) as i32;
        let mut fds = [PollFd::new(duty.socket.as_fd(), PollFlags::POLLIN)];
        if left.is_zero()
            || !matches!(poll(&mut fds, PollTimeout::try_from(ms).unwrap_or(PollTimeout::ZERO)), Ok(n) if n > 0)
        {
            return;
        }
        match duty.socket.record(buf) {
            Ok(Some(r)) if r.kind == audit::AUDIT_TRUSTED_APP && r.text.contains(&mark) => return,
            Ok(Some(r)) => c.feed(&r),
            _ => {}
        }
    }
}

fn on_timeout(
    target: &Target,
    span: Duration,
    kill_all: impl FnOnce(&str) -> Result<()>,
    pidfd: &Pidfd,
) -> i32 {
    let id = target.id.as_str();
    tracing::warn!(
        id,
        timeout_ms = span.as_millis() as u64,
        "container exceeded its timeout (dev.sandboy.timeout); killing it"
    );
    let _ = std::fs::write(target.state_dir.join(TIMED_OUT_MARKER), b"");
    match kill_all(id) {
        Ok(()) => 0,
        // Without a cgroup to kill through (a rootless container), the
        // init itself: its pid namespace dies with it (a red team's rootless
        // step ran its whole 20 s past a 3 s timeout).
        Err(e) => match pidfd.kill() {
            Ok(()) if !target.shares_pids => {
                tracing::debug!(id, error = %e.message, "killed the init instead");
                0
            }
            other => {
                tracing::warn!(id, error = %e.message, init = ?other.err(), "timeout kill failed");
                1
            }
        },
    }
}
