//! The small tables: `version`, `name`, `[landlock]`, `[context]`.

use super::super::diags::Diags;
use super::super::reader::{as_int, Table};
use super::super::VERSION;
use super::values::choice_key;
use crate::annotations::LandlockMode;

pub(super) fn version(root: &mut Table, d: &mut Diags) {
    let value = root.get("version");
    match value.and_then(|v| as_int(d, v, "version")) {
        Some(v) if *v.get_ref() == VERSION => {}
        Some(v) => d.error(
            v.span(),
            "version",
            format!("unsupported policy version {}", v.get_ref()),
            "set `version = 1`; this sandboy understands only version 1",
        ),
        // A wrong type was reported by the reader already.
        None if value.is_some() => {}
        None => d.error(
            0..0,
            "version",
            "missing required key \"version\"",
            "start the file with `version = 1`",
        ),
    }
}

/// `name`, or `default` (the file's stem) when absent.
pub(super) fn name(root: &mut Table, d: &mut Diags, default: &str) -> String {
    let Some(v) = root.str(d, "name") else {
        return default.to_string();
    };
    let name = *v.get_ref();
    let ok = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphanumeric())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if !ok {
        d.error(
            v.span(),
            "name",
            format!("invalid policy name {name:?}"),
            "use letters, digits, '-', '_' and '.', starting with a letter or digit",
        );
    }
    name.to_string()
}

pub(super) fn landlock(mut t: Table, d: &mut Diags) -> LandlockMode {
    let mode = choice_key(
        &mut t,
        d,
        "mode",
        "Landlock mode",
        &[
            ("enforce", LandlockMode::Enforce),
            ("best-effort", LandlockMode::BestEffort),
            ("off", LandlockMode::Off),
        ],
        LandlockMode::Enforce,
    );
    t.finish(d);
    mode
}

pub(super) fn context(mut t: Table, d: &mut Diags) -> Vec<String> {
    let mut ignore = Vec::new();
    for pat in t
        .strs(d, "ignore")
        .map(toml::Spanned::into_inner)
        .unwrap_or_default()
    {
        let p = *pat.get_ref();
        if p.trim().is_empty() || p.contains(char::is_control) {
            d.error(
                pat.span(),
                "context.ignore",
                format!("invalid ignore pattern {p:?}"),
                "use one non-empty gitignore pattern per entry",
            );
        } else {
            ignore.push(p.to_string());
        }
    }
    t.finish(d);
    ignore
}
