//! Arming a store with the limits (fuel, epoch deadline) and turning a
//! failed run into an error that names the limit that stopped it.

use wasmtime::{Engine, Store, Trap};

use crate::engine::Watchdog;
use crate::error::WasmError;
use crate::limits::{LimitKind, Limits};

/// Gives the store its fuel and a one-tick epoch deadline that traps, and
/// starts the watchdog that ticks once `limits.deadline` has passed. Keep the
/// returned watchdog alive for the duration of the run.
pub fn arm_store<T>(
    store: &mut Store<T>,
    engine: &Engine,
    limits: &Limits,
) -> Result<Watchdog, WasmError> {
    store
        .set_fuel(limits.fuel)
        .map_err(|e| WasmError::Runtime(format!("cannot set fuel: {e:#}")))?;
    store.set_epoch_deadline(1);
    store.epoch_deadline_trap();
    Watchdog::start(engine, limits.deadline)
}

/// Maps a wasmtime error to a [`WasmError`]: fuel and epoch traps name their
/// limit; any other failure after the memory limiter refused a grow is
/// reported as the memory limit (a Rust guest aborts with `unreachable`
/// when its allocator cannot grow).
pub fn classify(err: wasmtime::Error, memory_refused: Option<&str>) -> WasmError {
    match err.downcast_ref::<Trap>() {
        Some(Trap::OutOfFuel) => {
            return WasmError::Limit {
                limit: LimitKind::Fuel,
                detail: "all fuel consumed; raise [wasm] fuel if the program is legitimate".into(),
            }
        }
        Some(Trap::Interrupt) => {
            return WasmError::Limit {
                limit: LimitKind::Deadline,
                detail:
                    "wall-clock deadline passed; raise [wasm] deadline if the program is legitimate"
                        .into(),
            }
        }
        _ => {}
    }
    if let Some(refused) = memory_refused {
        return WasmError::Limit {
            limit: LimitKind::Memory,
            detail: format!(
                "{refused}; the guest then failed: {err:#}; raise [wasm] memory if legitimate"
            ),
        };
    }
    WasmError::Runtime(format!("{err:#}"))
}
