//! Resource limits for one WebAssembly run (SPEC §4 `[wasm]`), decoded from
//! the `dev.sandboy.wasm.limits` annotation over the defaults. The runtime
//! checks them at create time; the host enforces them.

use std::collections::HashMap;
use std::fmt;
use std::time::Duration;

use sandboy_spec_gen::annotations::{WasmLimits, WASM_LIMITS};

/// A `dev.sandboy.wasm.limits` value that cannot be used (exit 2).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct BadLimits(pub String);

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
    pub fn from_wasm_limits(w: &WasmLimits) -> Result<Limits, BadLimits> {
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
            return Err(BadLimits(format!(
                "annotation {WASM_LIMITS}: {name} must be greater than zero"
            )));
        }
        Ok(l)
    }

    /// Limits from an annotation value (`{}` gives the defaults).
    pub fn from_value(value: &str) -> Result<Limits, BadLimits> {
        let w = WasmLimits::decode(value).map_err(|e| BadLimits(e.to_string()))?;
        Limits::from_wasm_limits(&w)
    }

    /// Limits from the container's annotations (defaults when absent).
    pub fn from_annotations(annotations: &HashMap<String, String>) -> Result<Limits, BadLimits> {
        match annotations.get(WASM_LIMITS) {
            None => Ok(Limits::default()),
            Some(v) => Limits::from_value(v),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_overrides() {
        let l = Limits::from_annotations(&HashMap::new()).unwrap();
        assert_eq!(l, Limits::default());
        assert_eq!(Limits::from_value("{}").unwrap(), Limits::default());
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
        assert!(Limits::from_annotations(&a).is_err());
        a.insert(WASM_LIMITS.to_string(), r#"{"fuel":0}"#.to_string());
        assert!(Limits::from_annotations(&a)
            .unwrap_err()
            .0
            .contains("fuel must be greater than zero"));
    }
}
