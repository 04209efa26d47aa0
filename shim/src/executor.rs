//! The payload side of the container's init: libcontainer calls `validate`
//! at create time (after pivot_root, before waiting for `start`) and `exec`
//! after `start`, on the same object in the same process. Everything that
//! can fail is prepared in `validate`, because a failure in `exec` only
//! shows after `start` already returned 0.

use std::cell::RefCell;

use libcontainer::workload::default::DefaultExecutor;
use libcontainer::workload::{Executor, ExecutorError, ExecutorValidationError};
use oci_spec::runtime::{LinuxSeccomp, Spec};
use sandboy_confine::Confinement;

/// Native payloads: Landlock, then seccomp, then the fd sweep, then execve.
#[derive(Clone)]
pub struct SandboyExecutor {
    preserve_fds: u32,
    /// For `exec`: the container's own seccomp profile. libcontainer builds
    /// a tenant's spec with a fresh `linux` section that drops it, and an
    /// exec'd process must be exactly as confined as the init.
    inherited_seccomp: Option<LinuxSeccomp>,
    prepared: RefCell<Option<Confinement>>,
}

impl SandboyExecutor {
    pub fn new(preserve_fds: i32) -> Self {
        Self {
            preserve_fds: preserve_fds.max(0) as u32,
            inherited_seccomp: None,
            prepared: RefCell::new(None),
        }
    }

    /// An executor for a process joining a container whose spec is `init`.
    pub fn for_tenant(preserve_fds: i32, init: &Spec) -> Self {
        let mut e = Self::new(preserve_fds);
        e.inherited_seccomp = init.linux().as_ref().and_then(|l| l.seccomp().clone());
        e
    }

    fn prepare(&self, spec: &Spec) -> Result<Confinement, sandboy_confine::ConfineError> {
        match (&self.inherited_seccomp, spec.linux().as_ref()) {
            (Some(profile), Some(linux)) if linux.seccomp().is_none() => {
                let mut spec = spec.clone();
                let mut linux = linux.clone();
                linux.set_seccomp(Some(profile.clone()));
                spec.set_linux(Some(linux));
                Confinement::prepare(&spec, self.preserve_fds)
            }
            _ => Confinement::prepare(spec, self.preserve_fds),
        }
    }
}

impl Executor for SandboyExecutor {
    fn validate(&self, spec: &Spec) -> Result<(), ExecutorValidationError> {
        DefaultExecutor {}.validate(spec)?;
        let confinement = self.prepare(spec).map_err(|e| {
            ExecutorValidationError::ArgValidationError(format!("confinement: {e}"))
        })?;
        *self.prepared.borrow_mut() = Some(confinement);
        Ok(())
    }

    fn exec(&self, spec: &Spec) -> Result<(), ExecutorError> {
        // validate always ran first in this process; preparing again keeps
        // exec fail-closed should that ever change.
        let confinement = match self.prepared.borrow_mut().take() {
            Some(c) => c,
            None => self
                .prepare(spec)
                .map_err(|e| ExecutorError::Other(format!("confinement: {e}")))?,
        };
        reset_signals()?;
        if let Err(e) = confinement.apply() {
            tracing::warn!(error = %e, "confinement could not be applied; not starting the payload");
            return Err(ExecutorError::Other(format!("confinement: {e}")));
        }
        DefaultExecutor {}.exec(spec)
    }
}

/// The payload starts with an empty signal mask and default SIGPIPE: the
/// runtime blocks signals while it waits in `run`, and Rust ignores SIGPIPE;
/// neither is the container's business.
fn reset_signals() -> Result<(), ExecutorError> {
    use nix::sys::signal::{signal, SigHandler, Signal};
    use nix::sys::signalfd::SigSet;
    SigSet::empty()
        .thread_set_mask()
        .map_err(|e| ExecutorError::Other(format!("resetting the signal mask: {e}")))?;
    // SAFETY: restoring the default disposition installs no handler code.
    unsafe { signal(Signal::SIGPIPE, SigHandler::SigDfl) }
        .map_err(|e| ExecutorError::Other(format!("resetting SIGPIPE: {e}")))?;
    Ok(())
}
