//! `infersharp` adapter: Infer# `report.json` (an array of Infer issues:
//! `bug_type`, `qualifier`, `severity`, `line`, `column`, `procedure`,
//! `file`, `key`, `hash`, `bug_type_hum`, …) → SARIF 2.1.0.
//!
//! Rules are de-duplicated by `bug_type` with a set; each result carries
//! file, line, column, message, `ruleId`/`ruleIndex` and level. Malformed
//! input is an `Err(String)`, never a trap.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::{json, Value};

#[cfg(target_arch = "wasm32")]
mod bindings {
    wit_bindgen::generate!({ path: "../../wit", world: "adapter" });

    use exports::ownaudit::adapter::convert::{Guest, RawInput};

    struct InferSharp;

    impl Guest for InferSharp {
        fn to_sarif(input: RawInput) -> Result<Vec<u8>, String> {
            let artifacts = sandboy_adapter_input::views(&input.artifacts, |a| {
                (a.name.as_str(), a.bytes.as_slice())
            });
            super::convert(&artifacts, &input.stdout)
        }
    }

    export!(InferSharp);
}

/// The SARIF 2.1.0 schema URI.
pub const SCHEMA: &str = "https://json.schemastore.org/sarif-2.1.0.json";

/// One Infer issue; fields the converter does not use are ignored.
#[derive(Deserialize)]
struct Issue {
    bug_type: String,
    #[serde(default)]
    qualifier: String,
    #[serde(default)]
    severity: Option<String>,
    #[serde(default)]
    line: Option<i64>,
    #[serde(default)]
    column: Option<i64>,
    #[serde(default)]
    procedure: Option<String>,
    file: String,
    #[serde(default)]
    key: Option<String>,
    #[serde(default)]
    hash: Option<String>,
    #[serde(default)]
    bug_type_hum: Option<String>,
}

fn level(severity: Option<&str>) -> &'static str {
    match severity {
        Some("ERROR") => "error",
        Some("WARNING") => "warning",
        _ => "note", // INFO, ADVICE, LIKE, missing
    }
}

/// Converts one Infer# report to a SARIF 2.1.0 log.
pub fn convert(artifacts: &[(&str, &[u8])], stdout: &[u8]) -> Result<Vec<u8>, String> {
    let (name, bytes) = sandboy_adapter_input::pick(
        artifacts,
        stdout,
        |n| n == "report.json" || n.ends_with("/report.json"),
        "no input: pass Infer#'s output as --artifact report.json=PATH",
    )?;
    let text = std::str::from_utf8(bytes)
        .map_err(|e| format!("{name}: not UTF-8 ({e}); Infer# writes report.json in UTF-8"))?;
    let raw: Value =
        serde_json::from_str(text).map_err(|e| format!("{name}: not valid JSON: {e}"))?;
    let Value::Array(items) = raw else {
        return Err(format!(
            "{name}: not an Infer report: the top level must be an array of issues"
        ));
    };

    // bug_type -> human name; a BTreeMap is the set that de-duplicates rules
    // (and makes their order stable).
    let mut rules: BTreeMap<String, String> = BTreeMap::new();
    let mut issues = Vec::with_capacity(items.len());
    for (i, item) in items.into_iter().enumerate() {
        let issue: Issue = serde_json::from_value(item)
            .map_err(|e| format!("{name}: issue [{i}]: {e} (needs bug_type and file)"))?;
        let hum = issue
            .bug_type_hum
            .clone()
            .unwrap_or_else(|| issue.bug_type.clone());
        rules.entry(issue.bug_type.clone()).or_insert(hum);
        issues.push(issue);
    }
    let index: BTreeMap<&str, usize> = rules
        .keys()
        .enumerate()
        .map(|(i, k)| (k.as_str(), i))
        .collect();

    let rules_json: Vec<Value> = rules
        .iter()
        .map(|(id, hum)| json!({"id": id, "name": hum, "shortDescription": {"text": hum}}))
        .collect();
    let results: Vec<Value> = issues
        .iter()
        .map(|is| {
            let mut region = serde_json::Map::new();
            if let Some(l) = is.line.filter(|l| *l >= 1) {
                region.insert("startLine".into(), l.into());
                if let Some(c) = is.column.filter(|c| *c >= 1) {
                    region.insert("startColumn".into(), c.into());
                }
            }
            let mut phys = json!({"artifactLocation": {"uri": is.file}});
            if !region.is_empty() {
                phys["region"] = Value::Object(region);
            }
            let mut loc = json!({"physicalLocation": phys});
            if let Some(p) = &is.procedure {
                loc["logicalLocations"] = json!([{"fullyQualifiedName": p, "kind": "function"}]);
            }
            let text = if is.qualifier.is_empty() {
                is.bug_type.clone()
            } else {
                is.qualifier.clone()
            };
            let mut r = json!({
                "ruleId": is.bug_type,
                "ruleIndex": index.get(is.bug_type.as_str()).copied().unwrap_or(0),
                "level": level(is.severity.as_deref()),
                "message": {"text": text},
                "locations": [loc],
            });
            if let Some(h) = &is.hash {
                r["partialFingerprints"] = json!({"inferHash/v1": h});
            }
            if let Some(k) = &is.key {
                r["properties"] = json!({"inferKey": k});
            }
            r
        })
        .collect();
    let doc = json!({
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "Infer#",
                "informationUri": "https://github.com/microsoft/infersharp",
                "rules": rules_json,
            }},
            "results": results,
        }],
    });
    serde_json::to_vec(&doc).map_err(|e| format!("cannot serialise SARIF: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn converts_and_dedups() {
        let one = r#"{"bug_type":"NULL_DEREFERENCE","qualifier":"q","severity":"ERROR","line":3,"column":-1,"procedure":"P","file":"a.cs","key":"k","hash":"h","bug_type_hum":"Null Dereference"}"#;
        let input = format!("[{}]", vec![one; 10_000].join(","));
        let out = convert(&[("report.json", input.as_bytes())], b"").unwrap();
        let v: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(
            v["runs"][0]["tool"]["driver"]["rules"]
                .as_array()
                .unwrap()
                .len(),
            1
        );
        assert_eq!(v["runs"][0]["results"].as_array().unwrap().len(), 10_000);
        assert_eq!(v["runs"][0]["results"][0]["level"], "error");
        assert_eq!(
            v["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["region"]["startLine"],
            3
        );
    }

    #[test]
    fn refuses_bad_input() {
        for bad in [
            &b"{"[..],
            b"{}",
            b"[{\"file\":\"x\"}]",
            b"\xff",
            &b"[".repeat(100_000),
        ] {
            assert!(convert(&[("report.json", bad)], b"").is_err());
        }
    }
}
