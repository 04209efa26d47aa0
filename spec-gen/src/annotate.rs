//! A policy's annotations written out for the places they are pasted into:
//! `podman --annotation` (which splits its value as CSV, so a value with
//! `"` or `,` must be CSV-quoted) and a Kubernetes manifest (YAML).

use std::collections::BTreeMap;

use crate::Policy;

/// What of `policy` is not applied onto an engine's container from its
/// annotations (as for a node policy without `allow_mounts`): one line
/// each.
pub fn not_carried(policy: &Policy) -> Vec<String> {
    let mut out = Vec::new();
    if !policy.mounts.is_empty() {
        out.push("[[mount]] (the engine's mounts stand)".to_string());
    }
    if policy.disk.is_some() || policy.inodes.is_some() {
        out.push("[limits] disk and inodes (the engine's mounts keep their sizes)".to_string());
    }
    out
}

/// `--annotation` arguments, one per line, ready for a shell: each
/// `key=value` CSV-quoted when podman would split it, then single-quoted.
pub fn podman(annotations: &BTreeMap<String, String>) -> String {
    annotations
        .iter()
        .map(|(k, v)| {
            format!(
                "--annotation {}",
                shell_quote(&csv_field(&format!("{k}={v}")))
            )
        })
        .collect::<Vec<_>>()
        .join(" \\\n")
        + "\n"
}

/// A `metadata.annotations` block (single-quoted YAML scalars).
pub fn yaml(annotations: &BTreeMap<String, String>) -> String {
    let mut out = String::from("metadata:\n  annotations:\n");
    for (k, v) in annotations {
        out.push_str(&format!("    {k}: '{}'\n", v.replace('\'', "''")));
    }
    out
}

/// One CSV field: quoted (inner quotes doubled) when it holds `"`, `,`,
/// or a line break, as Go's encoding/csv (podman's parser) requires.
pub fn csv_field(s: &str) -> String {
    if s.contains(['"', ',', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_and_yaml() {
        assert_eq!(csv_field("a=600s"), "a=600s");
        assert_eq!(csv_field(r#"a={"x":1,"y":2}"#), r#""a={""x"":1,""y"":2}""#);
        let mut m = BTreeMap::new();
        m.insert("k".to_string(), r#"{"p":"it's"}"#.to_string());
        assert_eq!(
            podman(&m),
            "--annotation '\"k={\"\"p\"\":\"\"it'\\''s\"\"}\"'\n"
        );
        assert_eq!(
            yaml(&m),
            "metadata:\n  annotations:\n    k: '{\"p\":\"it''s\"}'\n"
        );
    }
}
