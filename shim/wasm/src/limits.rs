//! The [`wasmtime::ResourceLimiter`] that enforces the memory cap of the
//! limits (decoded in `sandboy-wasm-contract`) and records which limit
//! fired, so errors can name it.

pub use sandboy_wasm_contract::limits::{LimitKind, Limits};

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
    fn limiter_records() {
        use wasmtime::ResourceLimiter;
        let mut m = MemoryLimiter::new(100);
        assert!(m.memory_growing(0, 60, None).unwrap());
        assert!(!m.memory_growing(60, 120, None).unwrap());
        assert!(m.refused().unwrap().contains("linear memory"));
    }
}
