//! The one error type of the crate and its mapping to container exit codes.

use std::path::PathBuf;

use sandboy_wasm_contract::{BadLimits, LimitKind};

/// Exit status for a run stopped by a limit: 128 + SIGKILL, like an OOM kill.
pub const EXIT_LIMIT: i32 = 137;

/// Everything that can go wrong preparing or running a WebAssembly payload.
#[derive(Debug, thiserror::Error)]
pub enum WasmError {
    /// Bad adapter command line (exit 2).
    #[error("adapter usage: {0}\nusage: ADAPTER.wasm --tool NAME --artifact NAME=PATH [--artifact …] [--stdout FILE] [--stderr FILE] [--options FILE]")]
    Usage(String),

    /// The `dev.sandboy.wasm.limits` annotation is invalid (exit 2).
    #[error("{0}")]
    BadLimits(String),

    /// A file could not be read.
    #[error("{}: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    /// The payload is not a WebAssembly binary at all.
    #[error("{}: not a WebAssembly module or component (bad magic/version header)", path.display())]
    NotWasm { path: PathBuf },

    /// Compilation (validation) failed.
    #[error("{}: cannot compile: {message}", path.display())]
    Compile { path: PathBuf, message: String },

    /// An adapter component that imports anything is refused (SPEC §6).
    #[error("{}: refused: an ownaudit:adapter component must have zero imports, it imports {imports:?}; build it for wasm32-unknown-unknown (not wasm32-wasip2)", path.display())]
    HasImports { path: PathBuf, imports: Vec<String> },

    /// A component that is neither an adapter nor a WASI command, or a core
    /// module that is not a WASI preview-1 command.
    #[error("{}: unsupported payload: {reason}", path.display())]
    Unsupported { path: PathBuf, reason: String },

    /// An adapter input exceeds `max_input`.
    #[error("adapter input {name} exceeds max_input ({max} bytes); raise [wasm] max_input or shrink the input")]
    InputTooLarge { name: String, max: u64 },

    /// The component returned more than `max_output` bytes.
    #[error("adapter output refused: {size} bytes exceeds max_output ({max} bytes)")]
    OutputTooLarge { size: u64, max: u64 },

    /// The component returned more than `max_results` SARIF results.
    #[error("adapter output refused: {count} SARIF results exceed max_results ({max})")]
    TooManyResults { count: u64, max: u64 },

    /// The component's output is not SARIF 2.1.x.
    #[error("adapter output refused: not SARIF 2.1.x: {0}")]
    NotSarif(String),

    /// The component returned `Err(message)`.
    #[error("adapter {tool} failed: {message}")]
    Adapter { tool: String, message: String },

    /// Fuel, deadline or memory stopped the guest.
    #[error("wasm {limit} limit reached: {detail}")]
    Limit { limit: LimitKind, detail: String },

    /// Any other trap or host failure while running.
    #[error("wasm runtime error: {0}")]
    Runtime(String),

    /// Writing the result failed.
    #[error("writing adapter output: {0}")]
    Output(#[source] std::io::Error),

    /// The compile cache directory is unusable.
    #[error("compile cache {}: {reason}", dir.display())]
    Cache { dir: PathBuf, reason: String },
}

impl From<BadLimits> for WasmError {
    fn from(e: BadLimits) -> Self {
        WasmError::BadLimits(e.0)
    }
}

impl WasmError {
    /// Usage and configuration errors (exit 2 per SPEC §3).
    pub fn is_usage(&self) -> bool {
        matches!(self, WasmError::Usage(_) | WasmError::BadLimits(_))
    }

    /// The limit that stopped the run, if any (the runtime logs a `warn`
    /// naming it: "fuel", "deadline" or "memory").
    pub fn limit(&self) -> Option<LimitKind> {
        match self {
            WasmError::Limit { limit, .. } => Some(*limit),
            _ => None,
        }
    }

    /// Exit status for the container: 2 usage/configuration, 137 when a
    /// limit stopped the guest, 1 for everything else.
    pub fn exit_code(&self) -> i32 {
        if self.is_usage() {
            2
        } else if self.limit().is_some() {
            EXIT_LIMIT
        } else {
            1
        }
    }
}
