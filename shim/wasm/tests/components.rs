//! The real adapter components (`make components`) on the real host:
//! happy paths and adversarial inputs. Skipped (with a SKIPPED line) when
//! the components are not built.

mod common;

use std::collections::HashMap;

use common::*;
use sandboy_wasm::{Kind, Limits, Prepared, WasmError};
use serde_json::Value;

fn load(name: &str) -> Option<Prepared> {
    let dir = components()?;
    let p = Prepared::prepare(&dir.join(format!("{name}.wasm")), &HashMap::new(), None).unwrap();
    assert_eq!(
        p.kind(),
        Kind::Adapter,
        "{name} is an adapter with zero imports"
    );
    Some(p)
}

fn results(v: &Value) -> &Vec<Value> {
    v["runs"][0]["results"].as_array().unwrap()
}

#[test]
fn infersharp_happy_path() {
    let Some(p) = load("infersharp") else { return };
    let report = testdata("infersharp-report.json");
    let dir = tempfile::tempdir().unwrap();
    let flag = format!("report.json={}", report.display());
    let v = run_adapter(
        &p,
        &["--tool", "infersharp", "--artifact", &flag],
        dir.path(),
    )
    .unwrap();
    assert_eq!(v["version"], "2.1.0");
    let rules = v["runs"][0]["tool"]["driver"]["rules"].as_array().unwrap();
    assert_eq!(rules.len(), 3, "NULL_DEREFERENCE appears twice, one rule");
    let r = results(&v);
    assert_eq!(r.len(), 4);
    let first = &r[0];
    assert_eq!(first["ruleId"], "NULL_DEREFERENCE");
    assert_eq!(first["level"], "error");
    let loc = &first["locations"][0]["physicalLocation"];
    assert_eq!(
        loc["artifactLocation"]["uri"],
        "src/WebApp/Controllers/AccountController.cs"
    );
    assert_eq!(loc["region"]["startLine"], 43);
    assert!(first["message"]["text"]
        .as_str()
        .unwrap()
        .contains("could be null"));
    assert_eq!(r[2]["level"], "warning");
    assert_eq!(
        r[2]["locations"][0]["physicalLocation"]["region"]["startColumn"],
        13
    );
    let stamp = &v["runs"][0]["properties"]["sandboy"];
    assert_eq!(stamp["tool"], "infersharp");
    assert_eq!(stamp["component_sha256"], p.sha256_hex().as_str());
}

#[test]
fn passthrough_happy_path_roslyn_and_codeql() {
    let Some(p) = load("passthrough") else { return };
    let dir = tempfile::tempdir().unwrap();
    for (tool, file, n) in [("roslyn", "roslyn.sarif", 2), ("codeql", "codeql.sarif", 1)] {
        let flag = format!("report.sarif={}", testdata(file).display());
        let v = run_adapter(&p, &["--tool", tool, "--artifact", &flag], dir.path()).unwrap();
        assert_eq!(v["version"], "2.1.0");
        assert_eq!(
            v["$schema"],
            "https://json.schemastore.org/sarif-2.1.0.json"
        );
        assert_eq!(results(&v).len(), n, "{file}");
        assert_eq!(v["runs"][0]["properties"]["sandboy"]["tool"], tool);
    }
    // CodeQL's own run properties survive next to the stamp.
    let flag = format!("r.sarif={}", testdata("codeql.sarif").display());
    let v = run_adapter(&p, &["--tool", "codeql", "--artifact", &flag], dir.path()).unwrap();
    assert_eq!(
        v["runs"][0]["properties"]["semmle.formatSpecifier"],
        "sarifv2.1.0"
    );
}

/// Runs `component` on `bytes` as its artifact.
fn convert(p: &Prepared, name: &str, bytes: &[u8]) -> Result<Value, WasmError> {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), name, bytes);
    let flag = format!("{name}={name}");
    run_adapter(p, &["--tool", "t", "--artifact", &flag], dir.path())
}

fn adapter_error(r: Result<Value, WasmError>) -> String {
    match r {
        Err(WasmError::Adapter { message, .. }) => message,
        other => panic!("expected Err(String) from the component, got {other:?}"),
    }
}

#[test]
fn adversarial_inputs_are_errors_not_traps() {
    let (Some(inf), Some(pass)) = (load("infersharp"), load("passthrough")) else {
        return;
    };
    let malformed = std::fs::read(testdata("malformed.json")).unwrap();
    let non_utf8 = std::fs::read(testdata("non-utf8.json")).unwrap();
    let deep = "[".repeat(100_000).into_bytes();
    let deep_obj = "{\"a\":".repeat(50_000).into_bytes();
    for p in [&inf, &pass] {
        for (what, bytes) in [
            ("malformed", &malformed[..]),
            ("non-utf8", &non_utf8[..]),
            ("deep", &deep[..]),
            ("deep object", &deep_obj[..]),
            ("empty", b""),
            ("binary", &[0u8, 0xff, 0x13, 0x37][..]),
        ] {
            let msg = adapter_error(convert(p, "report.json", bytes));
            assert!(!msg.is_empty(), "{what}");
        }
    }
    assert!(adapter_error(convert(&pass, "report.json", &malformed)).contains("JSON"));
    let v1 = std::fs::read(testdata("roslyn-sarif-v1.json")).unwrap();
    assert!(adapter_error(convert(&pass, "r.sarif", &v1)).contains("version=2.1"));
    assert!(
        adapter_error(convert(&inf, "report.json", b"{\"not\":\"an array\"}")).contains("array")
    );
    assert!(adapter_error(convert(
        &inf,
        "report.json",
        b"[{\"qualifier\":\"no bug_type\"}]"
    ))
    .contains("[0]"));
}

#[test]
fn infersharp_ten_thousand_duplicate_rules_deduplicated() {
    let Some(p) = load("infersharp") else { return };
    let one = r#"{"bug_type":"NULL_DEREFERENCE","qualifier":"q","severity":"ERROR","line":3,"column":-1,"procedure":"P","file":"a.cs","key":"k","hash":"h","bug_type_hum":"Null Dereference"}"#;
    let input = format!("[{}]", vec![one; 10_000].join(","));
    let v = convert(&p, "report.json", input.as_bytes()).unwrap();
    assert_eq!(
        v["runs"][0]["tool"]["driver"]["rules"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    assert_eq!(results(&v).len(), 10_000);
    // One more is past max_results: refused, not truncated.
    let input = format!("[{}]", vec![one; 10_001].join(","));
    let e = convert(&p, "report.json", input.as_bytes()).unwrap_err();
    assert!(
        matches!(e, WasmError::TooManyResults { count: 10_001, .. }),
        "{e}"
    );
}

#[test]
fn input_past_max_input_refused_before_the_component_runs() {
    let Some(dir) = components() else { return };
    let p = Prepared::prepare_with_limits(
        &dir.join("infersharp.wasm"),
        Limits {
            max_input: 4096,
            ..Limits::default()
        },
        None,
    )
    .unwrap();
    let e = convert(&p, "report.json", &vec![b' '; 4097]).unwrap_err();
    assert!(
        matches!(e, WasmError::InputTooLarge { max: 4096, .. }),
        "{e}"
    );
}
