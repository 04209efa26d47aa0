//! The one wasmtime [`Config`]/[`Engine`] sandboy uses, its fingerprint for
//! the compile cache, and the epoch watchdog that enforces the deadline.
//!
//! Compilation is single-threaded (no `parallel-compilation` feature): the
//! runtime may compile before libcontainer clones the process, and a clone
//! must not inherit a half-used thread pool.

use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::Duration;

use sha2::{Digest, Sha256};
use wasmtime::{Config, Engine, OptLevel};

use crate::error::WasmError;

/// Guest stack cap (the host thread's stack is far larger).
const MAX_WASM_STACK: usize = 1 << 20;

/// The configuration every sandboy engine uses: fuel metering, epoch
/// interruption, the component model, Cranelift at `speed`.
pub fn config() -> Config {
    let mut c = Config::new();
    c.consume_fuel(true)
        .epoch_interruption(true)
        .wasm_component_model(true)
        .cranelift_opt_level(OptLevel::Speed)
        .max_wasm_stack(MAX_WASM_STACK);
    c
}

/// A new engine with [`config`].
pub fn new_engine() -> Result<Engine, WasmError> {
    Engine::new(&config())
        .map_err(|e| WasmError::Runtime(format!("cannot create the wasm engine: {e:#}")))
}

/// Feeds `Hash` output into SHA-256 so the fingerprint is stable across
/// processes (std's hashers are randomly seeded).
struct ShaHasher(Sha256);

impl std::hash::Hasher for ShaHasher {
    fn finish(&self) -> u64 {
        0 // unused: the digest is read from the inner state
    }
    fn write(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }
}

/// SHA-256 over everything that makes compiled code compatible with an
/// engine: wasmtime's own compatibility hash (version, target, tunables,
/// features) plus sandboy's crate version.
pub fn fingerprint(engine: &Engine) -> [u8; 32] {
    use std::hash::Hash;
    let mut h = ShaHasher(Sha256::new());
    engine.precompile_compatibility_hash().hash(&mut h);
    h.0.update(b"sandboy-wasm ");
    h.0.update(env!("CARGO_PKG_VERSION").as_bytes());
    h.0.finalize().into()
}

/// Increments the engine's epoch once `deadline` passes, which traps every
/// store whose epoch deadline is 1. Dropping the watchdog stops it.
pub struct Watchdog {
    stop: Option<Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Watchdog {
    /// Starts the watchdog thread (only call inside the container, at run time).
    pub fn start(engine: &Engine, deadline: Duration) -> Result<Watchdog, WasmError> {
        let (tx, rx) = mpsc::channel::<()>();
        let engine = engine.clone();
        let thread = std::thread::Builder::new()
            .name("wasm-deadline".into())
            .spawn(move || {
                if let Err(RecvTimeoutError::Timeout) = rx.recv_timeout(deadline) {
                    tracing::debug!(?deadline, "wasm deadline passed, interrupting");
                    engine.increment_epoch();
                    // A guest waiting in a host call (poll_oneoff's sleep,
                    // a blocking read) runs no code the epoch could trap:
                    // a red team's guest slept 600 s past a 2 s deadline.
                    // It gets a moment to trap, then the process ends.
                    if let Err(RecvTimeoutError::Timeout) = rx.recv_timeout(GRACE) {
                        stop_blocked_guest(deadline);
                    }
                }
            })
            .map_err(|e| WasmError::Runtime(format!("cannot start the deadline watchdog: {e}")))?;
        Ok(Watchdog {
            stop: Some(tx),
            thread: Some(thread),
        })
    }
}

/// How long a guest past its deadline has to trap before the process is
/// ended from the watchdog.
const GRACE: Duration = Duration::from_millis(500);

/// Ends the process with the deadline's exit status and message, as a
/// trapped guest would have (the guest is stuck in a host call).
fn stop_blocked_guest(deadline: Duration) -> ! {
    use std::io::Write;
    let e = WasmError::Limit {
        limit: sandboy_wasm_contract::LimitKind::Deadline,
        detail: format!(
            "wall-clock deadline of {deadline:?} passed while the guest waited in a host call; raise [wasm] deadline if the program is legitimate"
        ),
    };
    tracing::warn!(
        limit = "deadline",
        "wasm payload stopped by its deadline limit: {e}"
    );
    let _ = writeln!(std::io::stderr(), "sandboy: {e}");
    // SAFETY: _exit is always sound; the guest's other threads and
    // destructors are abandoned on purpose.
    unsafe { libc::_exit(e.exit_code()) }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
