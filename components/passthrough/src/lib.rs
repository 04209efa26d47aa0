//! `passthrough` adapter: SARIF in (Roslyn `/errorlog:…;version=2.1`, CodeQL
//! `--format=sarifv2.1.0`, …), validated canonical SARIF 2.1.0 out.
//!
//! The input is the artifact named `*.sarif`/`*.json` (the first one if
//! several), else the tool's captured stdout. Malformed input is an
//! `Err(String)`, never a trap: no panics on any path, and `serde_json`'s
//! recursion limit (128) turns hostile nesting into an error.

use serde_json::{Map, Value};

#[cfg(target_arch = "wasm32")]
mod bindings {
    wit_bindgen::generate!({ path: "../../wit", world: "adapter" });

    use exports::ownaudit::adapter::convert::{Guest, RawInput};

    struct Passthrough;

    impl Guest for Passthrough {
        fn to_sarif(input: RawInput) -> Result<Vec<u8>, String> {
            let artifacts = sandboy_adapter_input::views(&input.artifacts, |a| {
                (a.name.as_str(), a.bytes.as_slice())
            });
            super::convert(&input.tool, &artifacts, &input.stdout)
        }
    }

    export!(Passthrough);
}

/// The SARIF 2.1.0 schema URI written into every document.
pub const SCHEMA: &str = "https://json.schemastore.org/sarif-2.1.0.json";

/// Picks the SARIF input: a `.sarif`/`.json` artifact, any artifact, stdout.
fn pick<'a>(
    artifacts: &[(&'a str, &'a [u8])],
    stdout: &'a [u8],
) -> Result<(&'a str, &'a [u8]), String> {
    sandboy_adapter_input::pick(
        artifacts,
        stdout,
        |n| n.ends_with(".sarif") || n.ends_with(".json"),
        "no input: pass the SARIF file as --artifact NAME=PATH or --stdout FILE",
    )
}

/// Converts (validates and canonicalises) one SARIF document.
pub fn convert(tool: &str, artifacts: &[(&str, &[u8])], stdout: &[u8]) -> Result<Vec<u8>, String> {
    let (name, bytes) = pick(artifacts, stdout)?;
    let text = std::str::from_utf8(bytes)
        .map_err(|e| format!("{name}: not UTF-8 ({e}); SARIF is JSON text in UTF-8"))?;
    let mut doc: Value =
        serde_json::from_str(text).map_err(|e| format!("{name}: not valid JSON: {e}"))?;
    canonicalize(&mut doc).map_err(|e| format!("{name} ({tool}): {e}"))?;
    serde_json::to_vec(&doc).map_err(|e| format!("{name}: cannot serialise: {e}"))
}

fn canonicalize(doc: &mut Value) -> Result<(), String> {
    let obj = doc
        .as_object_mut()
        .ok_or("not a SARIF log: the top level must be a JSON object")?;
    match obj.get("version").and_then(Value::as_str) {
        Some(v) if v.starts_with("2.1.") => {}
        Some(v) => {
            return Err(format!(
                "SARIF version {v:?} is not supported; emit SARIF 2.1.0 (Roslyn: /errorlog:FILE;version=2.1)"
            ))
        }
        None => return Err("not a SARIF log: \"version\" (a string) is missing".into()),
    }
    obj.insert("version".into(), Value::String("2.1.0".into()));
    obj.insert("$schema".into(), Value::String(SCHEMA.into()));
    let runs = obj
        .get_mut("runs")
        .and_then(Value::as_array_mut)
        .ok_or("not a SARIF log: \"runs\" (an array) is missing")?;
    for (i, run) in runs.iter_mut().enumerate() {
        check_run(i, run)?;
    }
    Ok(())
}

fn check_run(i: usize, run: &mut Value) -> Result<(), String> {
    let run = run
        .as_object_mut()
        .ok_or_else(|| format!("runs[{i}] is not an object"))?;
    let driver = run
        .get("tool")
        .and_then(|t| t.get("driver"))
        .and_then(Value::as_object)
        .ok_or_else(|| format!("runs[{i}].tool.driver (an object) is missing"))?;
    if !driver.get("name").is_some_and(Value::is_string) {
        return Err(format!("runs[{i}].tool.driver.name (a string) is missing"));
    }
    match run.get("results") {
        None | Some(Value::Null) => {
            run.remove("results");
        }
        Some(Value::Array(results)) => {
            for (j, r) in results.iter().enumerate() {
                check_result(i, j, r)?;
            }
        }
        Some(_) => return Err(format!("runs[{i}].results is not an array")),
    }
    if let Some(p) = run.get("properties") {
        if !p.is_object() {
            return Err(format!("runs[{i}].properties is not an object"));
        }
    }
    Ok(())
}

fn check_result(i: usize, j: usize, r: &Value) -> Result<(), String> {
    let r: &Map<String, Value> = r
        .as_object()
        .ok_or_else(|| format!("runs[{i}].results[{j}] is not an object"))?;
    let msg = r
        .get("message")
        .and_then(Value::as_object)
        .ok_or_else(|| format!("runs[{i}].results[{j}].message (an object) is missing"))?;
    if !(msg.get("text").is_some_and(Value::is_string)
        || msg.get("id").is_some_and(Value::is_string))
    {
        return Err(format!(
            "runs[{i}].results[{j}].message needs \"text\" or \"id\""
        ));
    }
    if let Some(level) = r.get("level") {
        match level.as_str() {
            Some("none" | "note" | "warning" | "error") => {}
            _ => {
                return Err(format!(
                    "runs[{i}].results[{j}].level must be none|note|warning|error"
                ))
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(input: &str) -> Result<Value, String> {
        convert("codeql", &[("x.sarif", input.as_bytes())], b"")
            .map(|b| serde_json::from_slice(&b).unwrap())
    }

    #[test]
    fn canonicalises() {
        let v = run(r#"{"version":"2.1.1","runs":[{"tool":{"driver":{"name":"CodeQL"}},"results":[{"message":{"text":"x"},"level":"error"}]}]}"#).unwrap();
        assert_eq!(v["version"], "2.1.0");
        assert_eq!(v["$schema"], SCHEMA);
    }

    #[test]
    fn refuses_bad_input() {
        assert!(run("{").is_err());
        assert!(run(r#"{"version":"1.0.0","runs":[]}"#)
            .unwrap_err()
            .contains("version=2.1"));
        assert!(run(r#"{"version":"2.1.0"}"#).is_err());
        assert!(run(&"[".repeat(100_000)).is_err());
        assert!(convert("t", &[("x.sarif", b"\xff\xfe")], b"").is_err());
        assert!(convert("t", &[], b"").is_err());
    }
}
