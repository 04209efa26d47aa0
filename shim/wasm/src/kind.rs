//! What the payload is, from its bytes and its compiled type: a core module
//! (WASI preview-1 command) or a component, and for components an
//! `ownaudit:adapter` (exports `ownaudit:adapter/convert@0.1.0`) or a WASI
//! command (exports `wasi:cli/run`).

use wasmtime::component::Component;
use wasmtime::Engine;

pub use sandboy_wasm_contract::{encoding, Encoding};

/// What a payload is and therefore how it runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Core module run through WASI preview 1 (`_start`).
    WasiP1,
    /// Component exporting `wasi:cli/run`.
    WasiCommand,
    /// `ownaudit:adapter` component.
    Adapter,
}

/// The export that marks an adapter component.
pub const ADAPTER_EXPORT: &str = "ownaudit:adapter/convert@0.1.0";
/// Prefix of the export that marks a WASI command component.
pub const RUN_EXPORT_PREFIX: &str = "wasi:cli/run@";

/// Names of a component's top-level imports.
pub fn component_imports(engine: &Engine, component: &Component) -> Vec<String> {
    component
        .component_type()
        .imports(engine)
        .map(|(name, _)| name.to_string())
        .collect()
}

/// Classifies a component by its exports; `None` if it is neither.
pub fn component_kind(engine: &Engine, component: &Component) -> Option<Kind> {
    let exports: Vec<String> = component
        .component_type()
        .exports(engine)
        .map(|(name, _)| name.to_string())
        .collect();
    if exports.iter().any(|e| e == ADAPTER_EXPORT) {
        Some(Kind::Adapter)
    } else if exports.iter().any(|e| e.starts_with(RUN_EXPORT_PREFIX)) {
        Some(Kind::WasiCommand)
    } else {
        None
    }
}
