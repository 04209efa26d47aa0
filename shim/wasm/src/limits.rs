//! Resource limits for one WebAssembly run (SPEC §4 `[wasm]`) and the
//! [`ResourceLimiter`] that enforces the memory cap and records which limit
//! fired, so errors can name it.

use std::collections::HashMap;
use std::fmt;
use std::time::Duration;

use sandboy_spec_gen::annotations::{WasmLimits, WASM_LIMITS};

use crate::error::WasmError;

/// Effective limits; every field has the SPEC §4 default.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Fuel units (roughly instructions); exhaustion traps.
    pub fuel: u64,
    /// Wall-clock deadline (epoch interruption).
    pub deadline: Duration,
    /// Linear memory plus tables, bytes, summed over the store.
    pub memory: u64,
    /// Total bytes an adapter may read as input.
    pub max_input: u64,
    /// Bytes an adapter may return.
    pub max_output: u64,
    /// SARIF results an adapter may return.
    pub max_results: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            fuel: 5_000_000_000,
            deadline: Duration::from_secs(30),
            memory: 256 << 20,
            max_input: 64 << 20,
            max_output: 16 << 20,
            max_results: 10_000,
        }
    }
}

impl Limits {
    /// Applies a decoded `dev.sandboy.wasm.limits` value over the defaults.
    /// Zero values are configuration errors (a zero cap would refuse every run).
    pub fn from_wasm_limits(w: &WasmLimits) -> Result<Limits, WasmError> {
        let d = Limits::default();
        let l = Limits {
            fuel: w.fuel.unwrap_or(d.fuel),
            deadline: w.deadline.map(|s| s.0).unwrap_or(d.deadline),
            memory: w.memory.map(|b| b.0).unwrap_or(d.memory),
            max_input: w.max_input.map(|b| b.0).unwrap_or(d.max_input),
            max_output: w.max_output.map(|b| b.0).unwrap_or(d.max_output),
            max_results: w.max_results.unwrap_or(d.max_results),
        };
        let zero = [
            ("fuel", l.fuel == 0),
            ("deadline", l.deadline.is_zero()),
            ("memory", l.memory == 0),
            ("max_input", l.max_input == 0),
            ("max_output", l.max_output == 0),
        ];
        if let Some((name, _)) = zero.iter().find(|(_, z)| *z) {
            return Err(WasmError::BadLimits(format!(
                "annotation {WASM_LIMITS}: {name} must be greater than zero"
            )));
        }
        Ok(l)
    }

    /// Limits from the container's annotations (defaults when absent).
    pub fn from_annotations(annotations: &HashMap<String, String>) -> Result<Limits, WasmError> {
        match annotations.get(WASM_LIMITS) {
            None => Ok(Limits::default()),
            Some(v) => {
                let w = WasmLimits::decode(v).map_err(|e| WasmError::BadLimits(e.to_string()))?;
                Limits::from_wasm_limits(&w)
            }
        }
    }
}

/// Which limit stopped a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimitKind {
    Fuel,
    Deadline,
    Memory,
}

impl fmt::Display for LimitKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            LimitKind::Fuel => "fuel",
            LimitKind::Deadline => "deadline",
            LimitKind::Memory => "memory",
        })
    }
}

/// Bytes charged per table element (a funcref/externref slot).
const TABLE_ELEMENT_BYTES: u64 = 16;

/// Caps linear memories and tables of one store against one byte budget,
/// and remembers a refusal.
#[derive(Debug)]
pub struct MemoryLimiter {
    cap: u64,
    used: u64,
    refused: Option<String>,
}

impl MemoryLimiter {
    pub fn new(cap: u64) -> Self {
        MemoryLimiter {
            cap,
            used: 0,
            refused: None,
        }
    }

    /// The refused request, if the cap ever fired.
    pub fn refused(&self) -> Option<&str> {
        self.refused.as_deref()
    }

    /// Bytes currently charged.
    pub fn used(&self) -> u64 {
        self.used
    }

    fn charge(&mut self, what: &str, extra: u64) -> bool {
        let want = self.used.saturating_add(extra);
        if want > self.cap {
            tracing::debug!(
                what,
                want,
                cap = self.cap,
                "wasm memory limit refused a grow"
            );
            self.refused = Some(format!(
                "{what} growth to {want} bytes refused (cap {} bytes)",
                self.cap
            ));
            false
        } else {
            self.used = want;
            true
        }
    }
}

impl wasmtime::ResourceLimiter for MemoryLimiter {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(self.charge("linear memory", desired.saturating_sub(current) as u64))
    }

    fn table_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let extra = (desired.saturating_sub(current) as u64).saturating_mul(TABLE_ELEMENT_BYTES);
        Ok(self.charge("table", extra))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_overrides() {
        let l = Limits::from_annotations(&HashMap::new()).unwrap();
        assert_eq!(l, Limits::default());
        let mut a = HashMap::new();
        a.insert(
            WASM_LIMITS.to_string(),
            r#"{"fuel":10,"memory":"64MiB","deadline":"1s"}"#.to_string(),
        );
        let l = Limits::from_annotations(&a).unwrap();
        assert_eq!(
            (l.fuel, l.memory, l.deadline),
            (10, 64 << 20, Duration::from_secs(1))
        );
        a.insert(WASM_LIMITS.to_string(), r#"{"fule":10}"#.to_string());
        assert!(Limits::from_annotations(&a).unwrap_err().is_usage());
        a.insert(WASM_LIMITS.to_string(), r#"{"fuel":0}"#.to_string());
        assert!(Limits::from_annotations(&a).unwrap_err().is_usage());
    }

    #[test]
    fn limiter_records() {
        use wasmtime::ResourceLimiter;
        let mut m = MemoryLimiter::new(100);
        assert!(m.memory_growing(0, 60, None).unwrap());
        assert!(!m.memory_growing(60, 120, None).unwrap());
        assert!(m.refused().unwrap().contains("linear memory"));
    }
}
