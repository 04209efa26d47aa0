//! The SARIF 2.1.0 schema's constraints that serde_sarif's typed model does
//! not encode: serde drops unknown properties (the schema has
//! `additionalProperties: false` everywhere but property bags), integer
//! fields are plain `i64` without the schema's `minimum`/`maximum`, some
//! enums are untyped `serde_json::Value`s, and `anyOf` alternatives (a
//! message's `text` or `id`) are not modelled. A red team's adapter
//! returned `startLine: 0`, `rank: 500`, `message: {}` and unknown keys;
//! all were stamped and written as validated SARIF.
//!
//! Errors name the JSON path (`runs[0].results[3].rank`) and the fix.

use serde_json::{Map, Value};

/// Refuses a property of `original` that is gone from `kept` (`original`
/// deserialized into the typed model and serialized again): the model has
/// every property the schema allows, so a key it dropped is one the schema
/// forbids, or a `null` it read as absent. Keys the model adds are fine.
pub fn lost_properties(original: &Value, kept: &Value) -> Result<(), String> {
    let mut path = String::new();
    match lost(original, kept, &mut path) {
        None => Ok(()),
        Some(Value::Null) => Err(format!(
            "{path} is null: SARIF 2.1.0 allows no null there; omit the property instead"
        )),
        Some(_) => Err(format!(
            "{path} is not a SARIF 2.1.0 property (the schema allows no others there): \
             remove it, or move it into that object's \"properties\" bag"
        )),
    }
}

/// The first key (its path in `path`) of `original` missing from `kept`.
fn lost<'a>(original: &'a Value, kept: &Value, path: &mut String) -> Option<&'a Value> {
    let at = path.len();
    match (original, kept) {
        (Value::Object(o), Value::Object(k)) => {
            for (key, v) in o {
                push_key(path, key);
                let Some(kv) = k.get(key) else {
                    return Some(v);
                };
                if let Some(found) = lost(v, kv, path) {
                    return Some(found);
                }
                path.truncate(at);
            }
        }
        (Value::Array(o), Value::Array(k)) => {
            for (i, (v, kv)) in o.iter().zip(k).enumerate() {
                path.push_str(&format!("[{i}]"));
                if let Some(found) = lost(v, kv, path) {
                    return Some(found);
                }
                path.truncate(at);
            }
        }
        _ => {}
    }
    None
}

/// Appends `.key`, or `["key"]` (escaped) when it is not a plain name.
fn push_key(path: &mut String, key: &str) {
    let plain = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_$".contains(c));
    match (plain, path.is_empty()) {
        (true, true) => path.push_str(&short(key)),
        (true, false) => {
            path.push('.');
            path.push_str(&short(key));
        }
        (false, _) => path.push_str(&format!("[{:?}]", short(key))),
    }
}

/// At most [`SHOWN`] characters of untrusted text, for a message: a key or
/// value may be megabytes long.
fn short(s: &str) -> std::borrow::Cow<'_, str> {
    match s.char_indices().nth(SHOWN) {
        Some((end, _)) => format!("{}…", &s[..end]).into(),
        None => s.into(),
    }
}

const SHOWN: usize = 64;

/// Numeric ranges, by property name (the tables here are read off the
/// OASIS sarif-schema-2.1.0.json that serde-sarif 0.8 is generated from):
/// each of these names has the same `minimum`/`maximum` in every
/// definition where it is a number (`id` is an integer only in `location`,
/// `target` only in `locationRelationship`); `length` differs, apart.
const RANGES: &[(&str, f64, f64)] = &[
    ("startLine", 1.0, f64::MAX),
    ("startColumn", 1.0, f64::MAX),
    ("endLine", 1.0, f64::MAX),
    ("endColumn", 1.0, f64::MAX),
    ("charOffset", -1.0, f64::MAX),
    ("byteOffset", -1.0, f64::MAX),
    ("charLength", 0.0, f64::MAX),
    ("byteLength", 0.0, f64::MAX),
    ("rank", -1.0, 100.0),
    ("occurrenceCount", 1.0, f64::MAX),
    ("index", -1.0, f64::MAX),
    ("ruleIndex", -1.0, f64::MAX),
    ("parentIndex", -1.0, f64::MAX),
    ("invocationIndex", -1.0, f64::MAX),
    ("executionOrder", -1.0, f64::MAX),
    ("nestingLevel", 0.0, f64::MAX),
    ("absoluteAddress", -1.0, f64::MAX),
    ("itemCount", -1.0, f64::MAX),
    ("resultGraphIndex", -1.0, f64::MAX),
    ("runGraphIndex", -1.0, f64::MAX),
    ("stepOverEdgeCount", 0.0, f64::MAX),
    ("offset", 0.0, f64::MAX),
    ("id", -1.0, f64::MAX),
    ("target", 0.0, f64::MAX),
];

const LEVELS: &[&str] = &["none", "note", "warning", "error"];

/// Enums the typed model leaves as `serde_json::Value`: (property, the
/// context it must sit in or "" for any, allowed values). `level` is the
/// same enum in result, notification and reportingConfiguration.
const ENUMS: &[(&str, &str, &[&str])] = &[
    ("level", "", LEVELS),
    (
        "baselineState",
        "",
        &["new", "unchanged", "updated", "absent"],
    ),
    ("columnKind", "", &["utf16CodeUnits", "unicodeCodePoints"]),
    ("importance", "", &["important", "essential", "unimportant"]),
    ("kind", "suppressions", &["inSource", "external"]),
    (
        "status",
        "suppressions",
        &["accepted", "underReview", "rejected"],
    ),
    ("version", "inlineExternalProperties", &["2.1.0"]),
    ("contents", "", &["localizedData", "nonLocalizedData"]),
    (
        "roles",
        "",
        &[
            "analysisTarget",
            "attachment",
            "responseFile",
            "resultFile",
            "standardStream",
            "tracedFile",
            "unmodified",
            "modified",
            "added",
            "deleted",
            "renamed",
            "uncontrolled",
            "driver",
            "extension",
            "translation",
            "taxonomy",
            "policy",
            "referencedOnCommandLine",
            "memoryContents",
            "directory",
            "userSpecifiedConfiguration",
            "toolSpecifiedConfiguration",
            "debugOutputFile",
        ],
    ),
];

/// Objects that must have one of some properties (`anyOf` of `required`),
/// by the property name they sit under.
const ANY_OF: &[(&[&str], &[&str])] = &[
    (&["message", "description", "label"], &["text", "id"]),
    (
        &["physicalLocation", "conversionSources"],
        &["artifactLocation", "address"],
    ),
    (
        &["rule", "associatedRule", "descriptor", "taxa", "target"],
        &["index", "guid", "id"],
    ),
    (&["externalPropertyFileReference"], &["location", "guid"]),
];

/// Maps whose keys are names, not properties: their values' context.
const MAPS: &[(&str, &str)] = &[
    ("originalUriBaseIds", "artifactLocation"),
    ("globalMessageStrings", ""),
    ("messageStrings", ""),
    ("initialState", ""),
    ("immutableState", ""),
    ("state", ""),
    ("finalState", ""),
    ("fingerprints", ""),
    ("partialFingerprints", ""),
    ("hashes", ""),
    ("environmentVariables", ""),
    ("headers", ""),
];

/// Checks the ranges, enums and required alternatives above everywhere in
/// `doc` (already of the typed model's shapes) but inside property bags.
pub fn constraints(doc: &Value) -> Result<(), String> {
    let mut path = String::new();
    walk(doc, "", &mut path)
}

/// `v` sits under the property `ctx` (array elements under their array's).
fn walk(v: &Value, ctx: &str, path: &mut String) -> Result<(), String> {
    match v {
        Value::Array(items) => {
            let at = path.len();
            for (i, item) in items.iter().enumerate() {
                path.push_str(&format!("[{i}]"));
                walk(item, ctx, path)?;
                path.truncate(at);
            }
            Ok(())
        }
        Value::Object(o) => object(o, ctx, path),
        _ => Ok(()),
    }
}

fn object(o: &Map<String, Value>, ctx: &str, path: &mut String) -> Result<(), String> {
    any_of(o, ctx, path)?;
    let at = path.len();
    for (key, v) in o {
        push_key(path, key);
        field(key, v, ctx, path)?;
        path.truncate(at);
    }
    Ok(())
}

fn field(key: &str, v: &Value, ctx: &str, path: &mut String) -> Result<(), String> {
    if free_form(key, ctx) {
        return Ok(());
    }
    if let Some((_, vctx)) = MAPS.iter().find(|(m, _)| *m == key) {
        return map_values(v, vctx, path);
    }
    if let Some((_, _, allowed)) = ENUMS
        .iter()
        .find(|(k, c, _)| *k == key && (c.is_empty() || *c == ctx))
    {
        return one_enum(v, allowed, path);
    }
    if let Some(n) = v.as_f64() {
        return range(key, n, ctx, path);
    }
    // An externalPropertyFileReferences object holds only references.
    let child = if ctx == "externalPropertyFileReferences" {
        "externalPropertyFileReference"
    } else {
        key
    };
    walk(v, child, path)
}

/// Property bags hold anything: `properties` everywhere, an
/// externalProperties' `externalizedProperties`, a reportingConfiguration's
/// `parameters` (elsewhere `parameters` holds only strings).
fn free_form(key: &str, ctx: &str) -> bool {
    key == "properties"
        || key == "parameters"
        || (key == "externalizedProperties" && ctx == "inlineExternalProperties")
}

fn map_values(v: &Value, ctx: &str, path: &mut String) -> Result<(), String> {
    let at = path.len();
    for (name, item) in v.as_object().into_iter().flatten() {
        push_key(path, name);
        walk(item, ctx, path)?;
        path.truncate(at);
    }
    Ok(())
}

fn range(key: &str, n: f64, ctx: &str, path: &str) -> Result<(), String> {
    // An artifact's length may be -1 (unknown); an address's is any integer.
    let (min, max) = match RANGES.iter().find(|(k, _, _)| *k == key) {
        Some(&(_, min, max)) => (min, max),
        None if key == "length" && ctx == "artifacts" => (-1.0, f64::MAX),
        None => return Ok(()),
    };
    if (min..=max).contains(&n) {
        return Ok(());
    }
    let allowed = if max == f64::MAX {
        format!("at least {min}")
    } else {
        format!("{min} to {max}")
    };
    Err(format!(
        "{path} is {n}: SARIF 2.1.0 requires {allowed}; emit a value in range or omit the property"
    ))
}

fn one_enum(v: &Value, allowed: &[&str], path: &mut String) -> Result<(), String> {
    match v {
        // artifact.contents is an object (artifactContent), not this enum.
        Value::Object(_) => walk(v, "", path),
        Value::Array(items) => {
            let at = path.len();
            for (i, item) in items.iter().enumerate() {
                path.push_str(&format!("[{i}]"));
                one_enum(item, allowed, path)?;
                path.truncate(at);
            }
            Ok(())
        }
        Value::String(s) if allowed.contains(&s.as_str()) => Ok(()),
        _ => Err(format!(
            "{path} is {}: SARIF 2.1.0 allows only {}; use one of those or omit the property",
            short(&v.to_string()),
            allowed.join(", ")
        )),
    }
}

fn any_of(o: &Map<String, Value>, ctx: &str, path: &str) -> Result<(), String> {
    for (under, need) in ANY_OF {
        if under.contains(&ctx) && !need.iter().any(|k| o.contains_key(*k)) {
            let need: Vec<String> = need.iter().map(|k| format!("{k:?}")).collect();
            return Err(format!(
                "{path} has none of {}: SARIF 2.1.0 requires one of them; add one",
                need.join(", ")
            ));
        }
    }
    graph_traversal(o, ctx, path)
}

/// A graphTraversal names exactly one graph (`oneOf`).
fn graph_traversal(o: &Map<String, Value>, ctx: &str, path: &str) -> Result<(), String> {
    let both = ["runGraphIndex", "resultGraphIndex"].map(|k| o.contains_key(k));
    if ctx == "graphTraversals" && both[0] == both[1] {
        return Err(format!(
            "{path} needs exactly one of \"runGraphIndex\", \"resultGraphIndex\" (SARIF 2.1.0); \
             keep the graph it traverses"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::adapter::{check_sarif, Provenance};
    use crate::limits::Limits;

    /// `check_sarif` on a one-run log: `run` is the run's JSON after the tool.
    fn check(run: &str) -> Result<(), String> {
        let doc = format!(
            r#"{{"version":"2.1.0","runs":[{{"tool":{{"driver":{{"name":"t"}}}}{run}}}]}}"#
        );
        let prov = Provenance {
            component_sha256: "ab".into(),
            tool: "t".into(),
            runtime_version: "0".into(),
        };
        check_sarif(doc.as_bytes(), &Limits::default(), &prov)
            .map(drop)
            .map_err(|e| e.to_string())
    }

    fn results(r: &str) -> String {
        format!(r#","results":[{{"message":{{"text":"m"}}}},{r}]"#)
    }

    /// Each case: (allowed, refused, what the refusal names).
    fn pairs(cases: &[(&str, &str, &str)]) {
        for (ok, bad, names) in cases {
            check(ok).unwrap_or_else(|e| panic!("{ok} refused: {e}"));
            let e = check(bad).expect_err(bad);
            assert!(
                e.contains(names) && e.contains("not SARIF 2.1.0"),
                "{bad}: {e}"
            );
        }
    }

    #[test]
    fn unknown_properties_are_refused_by_path() {
        let region = |r: &str| {
            results(&format!(
                r#"{{"message":{{"text":"m"}},"locations":[{{"physicalLocation":{{"artifactLocation":{{"uri":"a"}},"region":{r}}}}}]}}"#
            ))
        };
        pairs(&[
            (
                &region(r#"{"startLine":1,"properties":{"bogus":1}}"#),
                &region(r#"{"startLine":1,"bogus":1}"#),
                "runs[0].results[1].locations[0].physicalLocation.region.bogus is not a SARIF 2.1.0 property",
            ),
            (
                r#","properties":{"x":{"y":[{"z":null}]}}"#,
                r#","bogusRunKey":true"#,
                "runs[0].bogusRunKey",
            ),
            (
                r#","results":[{"message":{"text":"m"}}]"#,
                r#","results":null"#,
                "runs[0].results is null",
            ),
            (
                r#","originalUriBaseIds":{"SRC ROOT":{"uri":"file:///s/"}}"#,
                r#","originalUriBaseIds":{"SRC ROOT":{"uri":"file:///s/","x":1}}"#,
                r#"runs[0].originalUriBaseIds["SRC ROOT"].x"#,
            ),
        ]);
        // A driver key, as the red team sent it (the later "tool" wins).
        let e = check(r#","tool":{"driver":{"name":"x","bogusDriverKey":true}}"#).unwrap_err();
        assert!(
            e.contains("runs[0].tool.driver.bogusDriverKey is not a SARIF 2.1.0 property"),
            "{e}"
        );
    }

    #[test]
    fn numbers_out_of_the_schema_range_are_refused() {
        let region = |r: &str| {
            results(&format!(
                r#"{{"message":{{"text":"m"}},"locations":[{{"physicalLocation":{{"artifactLocation":{{"uri":"a","index":-1}},"region":{r}}}}}]}}"#
            ))
        };
        let result = |r: &str| results(&format!(r#"{{"message":{{"text":"m"}},{r}}}"#));
        pairs(&[
            (
                &region(r#"{"startLine":1}"#),
                &region(r#"{"startLine":0}"#),
                "region.startLine is 0: SARIF 2.1.0 requires at least 1",
            ),
            (
                &region(r#"{"startColumn":1,"endColumn":2}"#),
                &region(r#"{"startColumn":-3}"#),
                "region.startColumn is -3",
            ),
            (
                &region(r#"{"endLine":7}"#),
                &region(r#"{"endLine":0}"#),
                "region.endLine",
            ),
            (
                &region(r#"{"charOffset":-1,"charLength":0}"#),
                &region(r#"{"charLength":-1}"#),
                "region.charLength is -1",
            ),
            (
                &region(r#"{"byteOffset":0,"byteLength":3}"#),
                &region(r#"{"byteOffset":-2}"#),
                "region.byteOffset is -2",
            ),
            (
                &result(r#""rank":100"#),
                &result(r#""rank":500"#),
                "runs[0].results[1].rank is 500: SARIF 2.1.0 requires -1 to 100",
            ),
            (
                &result(r#""rank":-1.0"#),
                &result(r#""rank":-1.5"#),
                "rank is -1.5",
            ),
            (
                &result(r#""ruleIndex":-1"#),
                &result(r#""ruleIndex":-7"#),
                "runs[0].results[1].ruleIndex is -7",
            ),
            (
                &result(r#""occurrenceCount":1"#),
                &result(r#""occurrenceCount":0"#),
                "occurrenceCount is 0",
            ),
            (
                &result(r#""rule":{"index":0}"#),
                &result(r#""rule":{"index":-2}"#),
                "rule.index is -2",
            ),
            (
                r#","artifacts":[{"length":-1}],"addresses":[{"length":-5}]"#,
                r#","artifacts":[{"length":-2}]"#,
                "runs[0].artifacts[0].length is -2",
            ),
        ]);
        // Numbers inside property bags are the producer's own.
        check(&result(r#""properties":{"startLine":0,"rank":500}"#)).unwrap();
    }

    #[test]
    fn required_alternatives_and_untyped_enums_are_checked() {
        let result = |r: &str| results(&format!(r#"{{"message":{{"text":"m"}},{r}}}"#));
        pairs(&[
            (&results(r#"{"message":{"id":"m1"}}"#), &results(r#"{"message":{}}"#), "runs[0].results[1].message has none of \"text\", \"id\""),
            (
                &result(r#""locations":[{"message":{"text":"here"}}]"#),
                &result(r#""locations":[{"message":{"arguments":["a"]}}]"#),
                "locations[0].message has none",
            ),
            (
                &result(r#""locations":[{"physicalLocation":{"artifactLocation":{"uri":"a"}}}]"#),
                &result(r#""locations":[{"physicalLocation":{"region":{"startLine":1}}}]"#),
                "physicalLocation has none of \"artifactLocation\", \"address\"",
            ),
            (&result(r#""rule":{"id":"R1"}"#), &result(r#""rule":{}"#), "rule has none of \"index\", \"guid\", \"id\""),
            (
                r#","tool":{"driver":{"name":"t","rules":[{"id":"R","defaultConfiguration":{"level":"note"}}]}}"#,
                r#","tool":{"driver":{"name":"t","rules":[{"id":"R","defaultConfiguration":{"level":"critical"}}]}}"#,
                "defaultConfiguration.level is \"critical\": SARIF 2.1.0 allows only none, note, warning, error",
            ),
            (
                &result(r#""suppressions":[{"kind":"inSource","status":"rejected"}]"#),
                &result(r#""suppressions":[{"kind":"inComment"}]"#),
                "suppressions[0].kind",
            ),
            (r#","artifacts":[{"roles":["analysisTarget"]}]"#, r#","artifacts":[{"roles":["target"]}]"#, "roles[0]"),
            (r#","columnKind":"utf16CodeUnits""#, r#","columnKind":7"#, "runs[0].columnKind is 7"),
        ]);
    }
    #[test]
    fn messages_bound_untrusted_names_and_values() {
        let long = "k".repeat(10_000);
        let e = check(&format!(r#","{long}":1"#)).unwrap_err();
        assert!(
            e.len() < 400 && e.contains("runs[0].kkkk") && e.contains('…'),
            "{e}"
        );
        let e = check(&format!(r#","columnKind":"{long}""#)).unwrap_err();
        assert!(
            e.len() < 400 && e.contains("runs[0].columnKind is \"kkkk"),
            "{e}"
        );
    }
}
