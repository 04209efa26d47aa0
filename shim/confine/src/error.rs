//! The one error type of the crate.

use std::io;

/// Why a confinement could not be prepared or applied.
///
/// [`ConfineError::is_config`] tells configuration errors (exit status 2 at
/// `create`: bad annotation JSON, unknown right name, a seccomp profile that
/// cannot be expressed) from runtime failures (exit status 1: the kernel
/// refused, a path is missing, privileges are lacking).
#[derive(Debug, thiserror::Error)]
pub enum ConfineError {
    /// The `dev.sandboy.landlock` annotation is malformed or names an unknown right.
    #[error("annotation {key}: {message}; {fix}")]
    Annotation {
        key: &'static str,
        message: String,
        fix: String,
    },

    /// `linux.seccomp` asks for something sandboy cannot express.
    #[error("config.json linux.seccomp{location}: {message}; {fix}")]
    SeccompConfig {
        /// e.g. `.syscalls[3]` or `.flags`; empty for the profile as a whole.
        location: String,
        message: String,
        fix: String,
    },

    /// Landlock `enforce` mode, but this kernel cannot enforce what the
    /// annotation asks for.
    #[error("annotation dev.sandboy.landlock (mode \"enforce\"): {message}; use a kernel with Landlock ABI {required_abi} or newer (this kernel offers ABI {kernel_abi}), or set mode \"best-effort\"")]
    LandlockUnsupported {
        message: String,
        required_abi: String,
        kernel_abi: i32,
    },

    /// A path of a Landlock fs rule cannot be opened inside the container.
    #[error("annotation dev.sandboy.landlock fs[{index}]: cannot open {path:?} inside the container: {source}; create it in the rootfs, remove the rule, or use mode \"best-effort\"")]
    LandlockPath {
        index: usize,
        path: String,
        #[source]
        source: io::Error,
    },

    /// Installing Landlock or seccomp needs `no_new_privs` or `CAP_SYS_ADMIN`.
    #[error("cannot install {what}: the process has neither no_new_privs nor CAP_SYS_ADMIN; set process.noNewPrivileges to true in config.json (or grant CAP_SYS_ADMIN)")]
    Privilege { what: &'static str },

    /// A serialised seccomp program (a cache entry) is not one sandboy wrote.
    #[error("cached seccomp program: {message}")]
    SeccompCache { message: String },

    /// A kernel call failed.
    #[error("{what}: {source}")]
    Kernel {
        what: String,
        #[source]
        source: io::Error,
    },
}

impl ConfineError {
    /// Whether this is a configuration error (bad annotation or profile:
    /// exit 2 at `create`) rather than a runtime failure (exit 1).
    pub fn is_config(&self) -> bool {
        matches!(
            self,
            ConfineError::Annotation { .. } | ConfineError::SeccompConfig { .. }
        )
    }

    pub(crate) fn kernel(what: impl Into<String>, source: io::Error) -> Self {
        ConfineError::Kernel {
            what: what.into(),
            source,
        }
    }

    pub(crate) fn seccomp(
        location: impl Into<String>,
        message: impl Into<String>,
        fix: impl Into<String>,
    ) -> Self {
        ConfineError::SeccompConfig {
            location: location.into(),
            message: message.into(),
            fix: fix.into(),
        }
    }
}
