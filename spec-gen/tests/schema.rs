//! The JSON Schema, the parser and `docs/policy.md` describe the same keys:
//! every schema key is known to the parser (and no other), and every schema
//! key path is documented, so none of the three can drift.

use std::collections::BTreeSet;
use std::path::Path;

use sandboy_spec_gen::policy::DOC_SECTIONS;
use sandboy_spec_gen::{schema_json, Policy};
use serde_json::Value;

/// The definition a property refers to (through `anyOf`, `items` or
/// directly), if it is a table with properties of its own.
fn table_def<'s>(schema: &'s Value, prop: &Value) -> Option<&'s Value> {
    let reference = [
        prop.pointer("/$ref"),
        prop.pointer("/anyOf/0/$ref"),
        prop.pointer("/items/$ref"),
    ]
    .into_iter()
    .flatten()
    .next()?
    .as_str()?;
    let name = reference.strip_prefix("#/$defs/")?;
    let def = &schema["$defs"][name];
    def.get("properties").map(|_| def)
}

fn keys(v: &Value) -> BTreeSet<String> {
    v["properties"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect()
}

/// Top-level keys, and each table's keys.
fn vocabulary() -> (BTreeSet<String>, Vec<(String, BTreeSet<String>)>) {
    let schema: Value = serde_json::from_str(&schema_json()).unwrap();
    let top = keys(&schema);
    let tables = top
        .iter()
        .filter_map(|k| {
            let def = table_def(&schema, &schema["properties"][k])?;
            Some((k.clone(), keys(def)))
        })
        .collect();
    (top, tables)
}

/// The "use one of: a, b" list of the unknown-key diagnostic for `zzz`.
fn offered(src: &str) -> BTreeSet<String> {
    let err = Policy::parse(src, "vocab.toml", Path::new("/")).unwrap_err();
    let unknown: Vec<_> = err
        .diagnostics()
        .iter()
        .filter(|d| d.message.starts_with("unknown key"))
        .collect();
    assert_eq!(unknown.len(), 1, "only zzz is unknown:\n{err}");
    assert!(unknown[0].message.contains("\"zzz\""), "{err}");
    let list = unknown[0]
        .hint
        .strip_prefix("remove the key or use one of: ")
        .unwrap()
        .split(';')
        .next()
        .unwrap();
    list.split(", ").map(str::to_string).collect()
}

#[test]
fn parser_knows_exactly_the_schema_keys() {
    let (top, tables) = vocabulary();
    assert_eq!(offered("version = 1\nzzz = 1\n"), top);
    for (table, want) in tables {
        // A datetime is the one value no key takes: each schema key then
        // gets a type error, never "unknown key".
        let header = if table == "mount" {
            "[[mount]]".to_string()
        } else {
            format!("[{table}]")
        };
        let body: String = want
            .iter()
            .map(|k| format!("{k} = 1979-05-27T07:32:00Z\n"))
            .collect();
        let src = format!("version = 1\n{header}\n{body}zzz = 1\n");
        assert_eq!(offered(&src), want, "[{table}]");
    }
}

#[test]
fn docs_cover_every_schema_key() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/policy.md");
    let doc = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let headings: BTreeSet<&str> = doc
        .lines()
        .filter_map(|l| l.strip_prefix("## "))
        .map(str::trim)
        .collect();
    for section in DOC_SECTIONS {
        assert!(
            headings.contains(section),
            "docs/policy.md needs a `## {section}` heading (anchor #{section} of the hints)"
        );
    }
    let (top, tables) = vocabulary();
    let mut missing: Vec<String> = top
        .iter()
        .filter(|k| !headings.contains(k.as_str()) && !doc.contains(&format!("`{k}`")))
        .cloned()
        .collect();
    for (table, ks) in tables {
        for k in ks {
            let dotted = format!("{table}.{k}");
            if !doc.contains(&format!("`{dotted}`")) {
                missing.push(dotted);
            }
        }
    }
    assert!(
        missing.is_empty(),
        "undocumented in docs/policy.md: {missing:?}"
    );
}
