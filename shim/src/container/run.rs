//! `run`: create + start, then (unless detached) wait for the init process,
//! forwarding signals to it as runc does, and delete the container after.

use std::path::PathBuf;
use std::time::Duration;

use nix::sys::signal::{kill, Signal};
use nix::sys::signalfd::SigSet;
use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
use nix::unistd::Pid;

use super::{CreateOptions, Runtime};
use crate::error::{Failure, Result};
use crate::supervisor::denials::{self, Denial};
use crate::supervisor::pidfd::Pidfd;

/// How `run` treats the started container.
#[derive(Debug, Clone, Default)]
pub struct RunMode {
    /// Return once it runs (`--detach`).
    pub detach: bool,
    /// Keep it after it exits (`--keep`).
    pub keep: bool,
    /// Copy the denial report here when it exits (`--report`).
    pub report: Option<PathBuf>,
}

/// What a foreground `run` ended with.
#[derive(Debug, Clone, Default)]
pub struct Ran {
    /// The container's exit status (0 once started when detached).
    pub status: i32,
    /// Its refusals, from the supervisor's report.
    pub refusals: Vec<Denial>,
}

impl Ran {
    /// A status with nothing refused (or nothing known of refusals).
    pub fn status(status: i32) -> Ran {
        Ran {
            status,
            refusals: Vec::new(),
        }
    }
}

/// Longest wait for the supervisor's last report after the init exited
/// (it drains records for a moment, see `supervisor::MARK_WAIT`).
const REPORT_WAIT: Duration = Duration::from_secs(3);

/// Longest wait for a learning container's supervisor to write the policy
/// (it waits up to 10 s for the observed processes to be gone).
const LEARN_WAIT: Duration = Duration::from_secs(12);

/// Exit status for a reaped process, shell style: 128+N for a signal.
pub fn exit_status(status: WaitStatus) -> i32 {
    match status {
        WaitStatus::Exited(_, code) => code,
        WaitStatus::Signaled(_, sig, _) => 128 + sig as i32,
        _ => 0,
    }
}

/// The exit status of a process the kernel killed with SIGSYS (seccomp's
/// kill action).
pub const SIGSYS_STATUS: i32 = 128 + libc::SIGSYS;

/// A `warn` event with the container id when the payload was killed by
/// seccomp (exit 159), whether or not denial reports are collected
/// (issue 14): otherwise nothing in `--log` says why it died.
pub fn report_kill(id: &str, status: i32) {
    if status == SIGSYS_STATUS {
        tracing::warn!(
            %id,
            status,
            "seccomp: the payload was killed by SIGSYS: it made a system call the policy denies with [syscalls] action = \"kill\""
        );
    }
}

impl Runtime {
    /// runc's `run`: the container's exit status in the foreground, 0 once
    /// started when detached.
    pub fn run(&self, id: &str, opts: &CreateOptions, mode: RunMode) -> Result<Ran> {
        // Block signals before the container exists, so that an init that
        // exits at once cannot have its SIGCHLD discarded before we wait.
        let signals = SigSet::all();
        if !mode.detach {
            // nix wraps pthread_sigmask; no threads exist yet.
            signals.thread_block()?;
            become_subreaper()?;
        }
        let mut container = self.create(id, opts, mode.detach)?;
        if let Err(e) = container.start() {
            // As delete leaves it: a failed start (a poststart hook's
            // failure among them) keeps nothing of the id, its lock included.
            let _ = container.delete(true);
            self.remove_leftovers(id);
            self.remove_lock(id);
            return Err(Failure::from(e).context("starting container"));
        }
        if mode.detach {
            return Ok(Ran::default());
        }
        let pid = container
            .pid()
            .ok_or_else(|| Failure::runtime("container has no init pid after start"))?;
        let status = foreground(pid, &signals);
        if let Ok(code) = &status {
            report_kill(id, *code);
        }
        crate::cgroups::oom::report(&container);
        if opts.learn.is_some() {
            // The supervisor writes the learned policy once every observed
            // process is gone, then exits.
            wait_exit(
                super::delete::supervisor_of(&self.dir(id)).as_ref(),
                LEARN_WAIT,
            );
        }
        let learned = opts
            .learn
            .as_ref()
            .map_or(Ok(()), |_| crate::supervisor::learn::result(&self.dir(id)));
        let report = |supervisor: Option<&Pidfd>| {
            self.collect_report(id, mode.report.as_deref(), supervisor)
        };
        let refusals = if mode.keep {
            report(super::delete::supervisor_of(&self.dir(id)).as_ref())?
        } else {
            // The init is reaped: record it stopped, so that the delete
            // takes the stopped container's path (no libcgroups manager,
            // whose construction reads mountinfo once per v1 hierarchy).
            let _ = container.refresh_status();
            // The report is read inside the delete, once the cgroups are
            // gone: the supervisor's last drain overlaps that work.
            let (refusals, deleted) = self.destroy_with(&mut container, true, report);
            if let Err(e) = deleted {
                tracing::warn!(id, error = %e, "delete after run failed");
                self.remove_leftovers(id);
            }
            refusals?
        };
        learned?;
        Ok(Ran {
            status: status?,
            refusals,
        })
    }

    /// The container's final denial report, copied to `--report` (written
    /// even when empty, so a script can rely on the file), once its
    /// `supervisor` has written it and exited.
    fn collect_report(
        &self,
        id: &str,
        to: Option<&std::path::Path>,
        supervisor: Option<&Pidfd>,
    ) -> Result<Vec<Denial>> {
        let dir = self.dir(id);
        wait_exit(supervisor, REPORT_WAIT);
        let path = dir.join(denials::REPORT_FILE);
        if let Some(to) = to {
            let text = std::fs::read(&path).unwrap_or_default();
            crate::host::output::replace(to, &text, 0o600)
                .map_err(|e| Failure::runtime(format!("--report {}: {e}", to.display())))?;
        }
        Ok(denials::read_report(&path))
    }
}

/// Wait until the container's supervisor has exited, at most `limit`: its
/// last report (or the learned policy) is written by then. It is this
/// process's child, and a pidfd wakes the moment it exits; no thread (a
/// thread blocked on the report's lock cost a foreground run 0.3–0.4 ms).
fn wait_exit(supervisor: Option<&Pidfd>, limit: Duration) {
    if let Some(supervisor) = supervisor {
        let _ = supervisor.wait_exit(limit);
    }
}

/// The init is our grandchild (libcontainer double-forks); as a subreaper we
/// are the one who sees it exit.
fn become_subreaper() -> Result<()> {
    nix::sys::prctl::set_child_subreaper(true)
        .map_err(|e| Failure::runtime(format!("prctl(PR_SET_CHILD_SUBREAPER): {e}")))
}

fn foreground(init: Pid, signals: &SigSet) -> Result<i32> {
    loop {
        if let Some(code) = reap(init)? {
            return Ok(code);
        }
        match signals.wait()? {
            Signal::SIGCHLD => continue,
            // Go's runtime preemption signal in runc; never meant for the payload.
            Signal::SIGURG => continue,
            sig => {
                if let Err(e) = kill(init, sig) {
                    tracing::warn!(?sig, error = %e, "failed to forward signal to container init");
                }
            }
        }
    }
}

/// Reap every exited child; the init's status once it is among them.
fn reap(init: Pid) -> Result<Option<i32>> {
    loop {
        match waitpid(None, Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::StillAlive) => return Ok(None),
            Ok(status) if status.pid() == Some(init) => return Ok(Some(exit_status(status))),
            Ok(_) => continue,
            Err(nix::errno::Errno::ECHILD) => return Ok(None),
            Err(e) => return Err(e.into()),
        }
    }
}
