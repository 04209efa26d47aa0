//! The payload side of the container's init: libcontainer calls `validate`
//! at create time (after pivot_root, before waiting for `start`) and `exec`
//! after `start`. Everything that can fail is checked in `validate`, because
//! a failure in `exec` only shows after `start` already returned 0.

use libcontainer::workload::default::DefaultExecutor;
use libcontainer::workload::{Executor, ExecutorError, ExecutorValidationError};
use oci_spec::runtime::Spec;

/// Native payloads: confine, then execve.
#[derive(Clone)]
pub struct SandboyExecutor {
    preserve_fds: u32,
}

impl SandboyExecutor {
    pub fn new(preserve_fds: i32) -> Self {
        Self { preserve_fds: preserve_fds.max(0) as u32 }
    }
}

impl Executor for SandboyExecutor {
    fn validate(&self, spec: &Spec) -> Result<(), ExecutorValidationError> {
        let _ = self.preserve_fds;
        DefaultExecutor {}.validate(spec)
    }

    fn exec(&self, spec: &Spec) -> Result<(), ExecutorError> {
        DefaultExecutor {}.exec(spec)
    }
}
