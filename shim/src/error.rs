//! The one place where failures become exit codes (SPEC §3): 2 for usage,
//! configuration and policy errors, 1 for runtime failures; and where
//! their lines are written ([`print_line`]).

use std::fmt;

use libcontainer::error::LibcontainerError;

/// What kind of failure, which decides the exit status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Bad flags or arguments.
    Usage,
    /// Invalid config.json, annotations or policy.
    Config,
    /// Unknown container, wrong state, a kernel call failed.
    Runtime,
}

/// A failure the CLI reports: what happened, with context, and its kind.
#[derive(Debug)]
pub struct Failure {
    pub kind: Kind,
    pub message: String,
}

impl Failure {
    pub fn usage(message: impl Into<String>) -> Self {
        Self {
            kind: Kind::Usage,
            message: message.into(),
        }
    }

    pub fn config(message: impl Into<String>) -> Self {
        Self {
            kind: Kind::Config,
            message: message.into(),
        }
    }

    pub fn runtime(message: impl Into<String>) -> Self {
        Self {
            kind: Kind::Runtime,
            message: message.into(),
        }
    }

    /// Prefix the message with what was being done.
    pub fn context(mut self, what: impl fmt::Display) -> Self {
        self.message = format!("{what}: {}", self.message);
        self
    }

    pub fn exit_code(&self) -> i32 {
        match self.kind {
            Kind::Usage | Kind::Config => 2,
            Kind::Runtime => 1,
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl From<LibcontainerError> for Failure {
    fn from(err: LibcontainerError) -> Self {
        let kind = match &err {
            LibcontainerError::InvalidID(_)
            | LibcontainerError::MissingSpec(_)
            | LibcontainerError::InvalidSpec(_)
            | LibcontainerError::Spec(_)
            | LibcontainerError::InvalidInput(_) => Kind::Config,
            _ => Kind::Runtime,
        };
        // libcontainer wraps the init's error in two fixed phrases that
        // say nothing the caller does not know.
        let message = chain(&err)
            .replace("failed to create container: ", "")
            .replace(
                "exec process failed with error error in executing process : ",
                "",
            );
        Failure { kind, message }
    }
}

impl From<std::io::Error> for Failure {
    fn from(err: std::io::Error) -> Self {
        Failure::runtime(err.to_string())
    }
}

impl From<nix::Error> for Failure {
    fn from(err: nix::Error) -> Self {
        Failure::runtime(err.to_string())
    }
}

/// Render an error with its sources, the way runc prints wrapped errors.
pub fn chain(err: &dyn std::error::Error) -> String {
    let mut out = err.to_string();
    let mut source = err.source();
    while let Some(s) = source {
        let text = s.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = s.source();
    }
    out
}

pub type Result<T> = std::result::Result<T, Failure>;

/// Write `line` on stderr with its control and invisible characters
/// escaped (`printable`): the one way a failure or a refusal reaches the
/// user's terminal (`cli::output::error_line`, and `wrap`'s watchdog and
/// namespaces pid 1, which report without returning here). Messages carry
/// names others chose: a step named a hook
/// `x\r\e[2K\e[1A\e[2Ksandboy: step passed…`, and the refusal naming it
/// erased itself. A closed stderr is not a failure.
pub fn print_line(line: &str) {
    use std::io::Write as _;
    let line = sandboy_spec_gen::printable::printable(line);
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}
