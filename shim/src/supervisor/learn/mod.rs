//! Learn mode: processes run observed rather than confined, and the policy
//! under which they would run is written. One seccomp filter sends their
//! path and port syscalls (open*, exec*, connect, bind, unlink*, rename*,
//! mkdir*, …) to a watcher as user notifications ([`notify`]); each call's
//! path or address is read from the caller's memory and the call proceeds
//! unchanged. When every observed process has exited the listener hangs
//! up, and the accesses become a policy ([`observed`], [`write_policy`]).
//!
//! Two watchers use it: `wrap --learn` (the command is the watcher's
//! child, paths are the host's) and, for `run --learn` of a bundle, the
//! container's supervisor ([`Duty`], started by [`start`]): the init
//! installs the filter right before its execve and sends the listener over
//! a socket made before the container existed; paths are the container's,
//! looked up in its root ([`notify::Root::Caller`]).

pub mod notify;
pub mod observed;

use std::os::fd::OwnedFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

pub use notify::Root;
use observed::Observed;

use crate::error::{Failure, Result};

/// What `--learn` was asked.
#[derive(Debug, Clone)]
pub struct Learn {
    /// Where the learned policy goes.
    pub out: PathBuf,
    /// Path components kept (`--collapse DEPTH`; 0 keeps whole paths).
    pub depth: usize,
}

/// How a policy was learned, for its header.
#[derive(Debug, Clone)]
pub struct Origin {
    /// The command that learned it (`sandboy wrap --learn`).
    pub how: &'static str,
    /// What ran (the command, or the bundle and its process).
    pub what: String,
    /// The exit status, when the watcher saw it.
    pub status: Option<i32>,
    /// Where paths live.
    pub root: Root,
    /// Paths never granted beyond the protected ones (a spec's masked
    /// paths).
    pub hidden: Vec<String>,
}

/// The base policy's text, checked: a located config error (exit 2) when
/// it does not load.
pub fn base_text(base: Option<&Path>) -> Result<Option<String>> {
    base.map(|b| {
        sandboy_spec_gen::Policy::load(b).map_err(|e| Failure::config(e.to_string()))?;
        sandboy_spec_gen::input::read_text(b, sandboy_spec_gen::input::TEXT_MAX)
            .map_err(|e| Failure::config(format!("{}: {e}", b.display())))
    })
    .transpose()
}

/// The learned policy: `base` (or a minimal policy) with what `seen`
/// needs, under a header saying how it was learned; checked to load, then
/// written to `learn.out`.
pub fn write_policy(
    learn: &Learn,
    base: Option<&str>,
    origin: &Origin,
    seen: &Observed,
) -> Result<()> {
    let exists = |p: &str| match origin.root {
        // The host is still there: what exists now, as it was observed.
        // Observed paths are recorded as they resolved, so one that now
        // resolves elsewhere was made a link after the call (a red team's
        // step read a missing name, then linked it to `/`): never granted.
        Root::Host => match sandboy_spec_gen::suggest::protect::resolved_elsewhere(p) {
            Some(real) => {
                tracing::warn!(policy = %learn.out.display(), path = p, now = %real, "learn: not granted: the path resolves elsewhere than when it was observed (a link made meanwhile)");
                false
            }
            None => Path::new(p).exists(),
        },
        Root::Caller => seen.existed(p),
    };
    let (edits, notes) = seen.edits(learn.depth, &origin.hidden, &exists);
    for n in &notes {
        tracing::warn!(policy = %learn.out.display(), "learn: {n}");
    }
    let when = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let exited = match origin.status {
        Some(s) => format!("exited {s}; "),
        None => "ran; ".into(),
    };
    let seen_as = match origin.root {
        Root::Host => "",
        Root::Caller => " (as the container sees them)",
    };
    let header = format!(
        "# Learned by `{}` at {when} from: {}\n\
         # It {exited}{} calls observed; paths{seen_as} cut to {} components;\n\
         # protected paths never granted; the default deny list kept. Learning\n\
         # observes, it does not judge: review before use.\n",
        origin.how, origin.what, seen.calls, learn.depth,
    );
    let text = observed::policy_text(base, &edits, &header);
    // Never hand out a policy that does not load.
    let dir = learn.out.parent().unwrap_or(Path::new("."));
    sandboy_spec_gen::Policy::parse(&text, &learn.out.display().to_string(), dir).map_err(|e| {
        Failure::runtime(format!("learn: the learned policy is invalid (a bug): {e}"))
    })?;
    // As root (`run --learn`) the path may lie in a bind the container
    // wrote: never through a link it planted there.
    crate::host::output::replace(&learn.out, text.as_bytes(), 0o644)
        .map_err(|e| Failure::runtime(format!("learn: writing {}: {e}", learn.out.display())))?;
    Ok(())
}

/// A command on one comment line: an argument with white space, quotes
/// or control characters is written as a quoted, escaped string (a
/// newline in `sh -c` would otherwise end the comment and break the TOML).
pub fn quoted(command: &[String]) -> String {
    command
        .iter()
        .map(|a| {
            if a.is_empty()
                || a.chars()
                    .any(|c| c.is_whitespace() || c.is_control() || c == '"')
            {
                format!("{a:?}")
            } else {
                a.clone()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

// ---------------------------------------------------------------------------
// The container supervisor's duty

/// Marker the supervisor leaves in the state directory once the learned
/// policy is written (empty), or the reason it is not (its text).
pub const RESULT_FILE: &str = "learned";
/// Marker of a container being learned, in its state directory (an exec
/// into it is refused: its filter's listener would have no watcher).
pub const LEARNING_FILE: &str = "learning";

/// Learning a container: where its listener arrives and what to write.
pub struct Duty {
    pub learn: Learn,
    pub base: Option<String>,
    pub origin: Origin,
    /// The supervisor's end of the socket the init sends its listener on.
    pub socket: OwnedFd,
}

impl std::fmt::Debug for Duty {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Duty")
            .field("learn", &self.learn)
            .field("origin", &self.origin)
            .finish_non_exhaustive()
    }
}

/// A duty being served, on a thread of the supervisor.
pub struct Running {
    duty: Duty,
    seen: Arc<Mutex<Observed>>,
    arrived: Arc<AtomicBool>,
    /// Stop waiting for a listener that will never come.
    stop: Arc<AtomicBool>,
    done: mpsc::Receiver<()>,
}

/// How often the listener wait looks at `stop`.
const POLL: Duration = Duration::from_millis(100);
/// After the init exited, the longest wait for the listener to hang up
/// (every observed process gone).
const HANGUP_WAIT: Duration = Duration::from_secs(10);

/// Serve `duty` on a thread: wait for the init's listener, then observe
/// until it hangs up.
pub fn start(id: &str, duty: Duty) -> Result<Running> {
    let socket = duty
        .socket
        .try_clone()
        .map_err(|e| Failure::runtime(format!("learn: {e}")))?;
    let seen = Arc::new(Mutex::new(Observed::default()));
    let arrived = Arc::new(AtomicBool::new(false));
    let stop = Arc::new(AtomicBool::new(false));
    let (tx, done) = mpsc::channel();
    let root = duty.origin.root;
    let (s, a, st, id) = (seen.clone(), arrived.clone(), stop.clone(), id.to_owned());
    std::thread::spawn(move || {
        if let Some(listener) = wait_listener(&socket, &st) {
            a.store(true, Ordering::SeqCst);
            tracing::debug!(id, "learn: observing the container");
            notify::serve(&listener, root, &s);
        }
        let _ = tx.send(());
    });
    Ok(Running {
        duty,
        seen,
        arrived,
        stop,
        done,
    })
}

/// The listener, once the init sent it; `None` once `stop` is set.
fn wait_listener(socket: &OwnedFd, stop: &AtomicBool) -> Option<OwnedFd> {
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
    use std::os::fd::AsFd;
    let timeout = PollTimeout::try_from(POLL.as_millis() as i32).unwrap_or(PollTimeout::MAX);
    while !stop.load(Ordering::SeqCst) {
        let mut fds = [PollFd::new(socket.as_fd(), PollFlags::POLLIN)];
        if matches!(poll(&mut fds, timeout), Ok(n) if n > 0) {
            return super::unotify::receive_listener(socket);
        }
    }
    None
}

impl Running {
    /// After the init exited: wait for the observation to end, write the
    /// policy, and leave [`RESULT_FILE`] saying how it went.
    pub fn finish(self, id: &str, state_dir: &Path) {
        self.stop.store(true, Ordering::SeqCst);
        if self.done.recv_timeout(HANGUP_WAIT).is_err() {
            tracing::warn!(
                id,
                "learn: observed processes still running {}s after the init exited; writing what was seen",
                HANGUP_WAIT.as_secs()
            );
        }
        let written = if self.arrived.load(Ordering::SeqCst) {
            let seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
            write_policy(
                &self.duty.learn,
                self.duty.base.as_deref(),
                &self.duty.origin,
                &seen,
            )
        } else {
            Err(Failure::runtime(
                "learn: the container's seccomp listener never arrived (its init exited before its execve); nothing was learned",
            ))
        };
        let text = match &written {
            Ok(()) => String::new(),
            Err(e) => {
                tracing::warn!(id, error = %e.message, "learn: no policy written");
                e.message.clone()
            }
        };
        let result = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(state_dir.join(RESULT_FILE))
            .and_then(|mut f| std::io::Write::write_all(&mut f, text.as_bytes()));
        if let Err(e) = result {
            tracing::warn!(id, error = %e, "learn: the result marker was not written");
        }
    }
}

/// What `run --learn` reads back: `Ok` once the policy is written, the
/// supervisor's reason otherwise.
pub fn result(state_dir: &Path) -> Result<()> {
    match std::fs::read_to_string(state_dir.join(RESULT_FILE)) {
        Ok(t) if t.is_empty() => Ok(()),
        Ok(t) => Err(Failure::runtime(t)),
        Err(e) => Err(Failure::runtime(format!(
            "learn: the container's supervisor left no result ({e}); nothing was learned"
        ))),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_multi_line_argument_stays_on_the_comment_line() {
        let cmd = ["python3", "-c", "import x\nprint(1)"].map(String::from);
        let line = super::quoted(&cmd);
        assert_eq!(line, r#"python3 -c "import x\nprint(1)""#);
        assert!(!line.contains('\n'));
    }
}
