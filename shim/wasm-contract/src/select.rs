//! Whether a container runs in OCI-wasm mode (SPEC §5).

use std::collections::HashMap;

use sandboy_spec_gen::annotations::{OCI_HANDLER, WASM_VARIANT};

/// True when the annotations select OCI-wasm mode for a process whose
/// `args[0]` is `args0`: `run.oci.handler=wasm`, or
/// `module.wasm.image/variant` = `compat` (always) / `compat-smart` (only when
/// `args0` ends in `.wasm`).
pub fn wasm_selected(annotations: &HashMap<String, String>, args0: &str) -> bool {
    if annotations.get(OCI_HANDLER).map(|v| v.trim()) == Some("wasm") {
        return true;
    }
    match annotations.get(WASM_VARIANT).map(|v| v.trim()) {
        Some("compat") => true,
        Some("compat-smart") => args0.ends_with(".wasm"),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ann(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn selection() {
        assert!(!wasm_selected(&ann(&[]), "/x.wasm"));
        assert!(wasm_selected(&ann(&[(OCI_HANDLER, "wasm")]), "/bin/sh"));
        assert!(!wasm_selected(&ann(&[(OCI_HANDLER, "krun")]), "/x.wasm"));
        assert!(wasm_selected(&ann(&[(WASM_VARIANT, "compat")]), "/bin/sh"));
        assert!(wasm_selected(
            &ann(&[(WASM_VARIANT, "compat-smart")]),
            "/a/x.wasm"
        ));
        assert!(!wasm_selected(
            &ann(&[(WASM_VARIANT, "compat-smart")]),
            "/bin/sh"
        ));
        assert!(!wasm_selected(&ann(&[(WASM_VARIANT, "other")]), "/x.wasm"));
    }
}
