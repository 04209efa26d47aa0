//! Shared helpers: payloads built from WAT / wit-component, the built
//! components, temporary directories.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use sandboy_wasm::{Limits, Prepared, WasmError};

/// The built components directory: `$SANDBOY_COMPONENTS` or
/// `<target dir>/components`; `None` (after printing SKIPPED) if absent.
pub fn components() -> Option<PathBuf> {
    let dir = sandboy_tests::components_dir();
    if dir.join("passthrough.wasm").is_file() && dir.join("infersharp.wasm").is_file() {
        Some(dir)
    } else {
        sandboy_tests::skip(
            "wasm component tests",
            "components not built (make components)",
        );
        None
    }
}

pub fn testdata(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../components/testdata")
        .join(name)
}

pub fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

pub fn wat_file(dir: &Path, name: &str, wat: &str) -> PathBuf {
    write(dir, name, &wat::parse_str(wat).unwrap())
}

#[allow(unused_imports)]
pub use sandboy_tests::adapters::{adapter_component, adapter_core, component_from_core};

pub fn prepare(path: &Path, limits: Limits) -> Result<Prepared, WasmError> {
    Prepared::prepare_with_limits(path, limits, None)
}

/// A WAT adapter (see [`adapter_component`]) written as `dir/name` and
/// prepared under `limits`.
pub fn prepared_adapter(
    dir: &Path,
    name: &str,
    (output, err, body): (&[u8], bool, &str),
    limits: Limits,
) -> Prepared {
    let wasm = write(dir, name, &adapter_component(output, err, body));
    prepare(&wasm, limits).unwrap()
}

pub fn args(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// Runs an adapter with `flags`, returning the SARIF it wrote.
pub fn run_adapter(
    p: &Prepared,
    flags: &[&str],
    cwd: &Path,
) -> Result<serde_json::Value, WasmError> {
    let mut argv = vec!["/adapter.wasm"];
    argv.extend_from_slice(flags);
    let mut out = Vec::new();
    let code = p.run_with_output(&args(&argv), &[], cwd, &mut out)?;
    assert_eq!(code, 0);
    Ok(serde_json::from_slice(&out).expect("adapter output is JSON"))
}
