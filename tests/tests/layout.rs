//! The module tree in `docs/design.md` is the runtime's real one: every
//! `mod` declared under `shim/src` is listed there, and nothing else is.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Module paths declared from `file` (a crate root or `mod.rs`), recursively.
fn declared(file: &Path, prefix: &str, out: &mut BTreeSet<String>) {
    let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let dir = file.parent().unwrap();
    let own_dir: PathBuf = match file.file_name().and_then(|n| n.to_str()) {
        Some("main.rs" | "lib.rs" | "mod.rs") => dir.to_path_buf(),
        _ => dir.join(file.file_stem().unwrap()),
    };
    for line in text.lines() {
        let line = line.trim();
        let decl = line
            .strip_prefix("pub mod ")
            .or_else(|| line.strip_prefix("pub(crate) mod "))
            .or_else(|| line.strip_prefix("mod "));
        let Some(name) = decl.and_then(|d| d.strip_suffix(';')) else {
            continue;
        };
        let path = if prefix.is_empty() {
            name.to_owned()
        } else {
            format!("{prefix}::{name}")
        };
        let as_file = own_dir.join(format!("{name}.rs"));
        let as_dir = own_dir.join(name).join("mod.rs");
        let child = if as_file.exists() { as_file } else { as_dir };
        out.insert(path.clone());
        declared(&child, &path, out);
    }
}

fn documented(design: &str) -> BTreeSet<String> {
    let start = design
        .find("<!-- modules:begin -->")
        .expect("docs/design.md has a modules:begin marker");
    let end = design
        .find("<!-- modules:end -->")
        .expect("docs/design.md has a modules:end marker");
    design[start..end]
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|w| {
            w.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == ':')
        })
        .filter(|w| !w.is_empty())
        .map(String::from)
        .collect()
}

#[test]
fn design_doc_lists_every_runtime_module() {
    let repo = sandboy_tests::repo();
    let mut modules = BTreeSet::new();
    declared(&repo.join("shim/src/main.rs"), "", &mut modules);
    let design = std::fs::read_to_string(repo.join("docs/design.md")).unwrap();
    let docs = documented(&design);
    let missing: Vec<_> = modules.difference(&docs).collect();
    let stale: Vec<_> = docs.difference(&modules).collect();
    assert!(
        missing.is_empty() && stale.is_empty(),
        "docs/design.md module tree is out of date.\n  not documented: {missing:?}\n  documented but gone: {stale:?}"
    );
}
