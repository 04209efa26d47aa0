//! The payload side of the container's init: libcontainer calls `validate`
//! at create time (after pivot_root, before waiting for `start`) and `exec`
//! after `start`, on the same object in the same process. Everything that
//! can fail is prepared in `validate`, because a failure in `exec` only
//! shows after `start` already returned 0.

use std::cell::RefCell;

use libcontainer::workload::default::DefaultExecutor;
use libcontainer::workload::{Executor, ExecutorError, ExecutorValidationError};
use oci_spec::runtime::Spec;
use sandboy_confine::Confinement;

/// Native payloads: Landlock, then seccomp, then the fd sweep, then execve.
#[derive(Clone)]
pub struct SandboyExecutor {
    preserve_fds: u32,
    prepared: RefCell<Option<Confinement>>,
}

impl SandboyExecutor {
    pub fn new(preserve_fds: i32) -> Self {
        Self { preserve_fds: preserve_fds.max(0) as u32, prepared: RefCell::new(None) }
    }
}

impl Executor for SandboyExecutor {
    fn validate(&self, spec: &Spec) -> Result<(), ExecutorValidationError> {
        DefaultExecutor {}.validate(spec)?;
        let confinement = Confinement::prepare(spec, self.preserve_fds).map_err(|e| {
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
            None => Confinement::prepare(spec, self.preserve_fds)
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
