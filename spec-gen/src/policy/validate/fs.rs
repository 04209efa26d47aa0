//! `[fs]`: granted and hidden paths.

use std::collections::HashSet;

use toml::Spanned;

use super::super::checked::{push_unique, Anchor, Grant, RelativePath};
use super::super::diags::Diags;
use super::super::reader::Table;
use super::super::{is_under, normalize};
use super::values::{absolute, clean};
use crate::policy::BindMount;

#[derive(Default)]
pub(super) struct Fs {
    pub read: Vec<String>,
    pub exec: Vec<String>,
    pub write: Vec<String>,
    pub hide: Vec<String>,
    pub relative: Vec<RelativePath>,
    /// Absolute write paths with their spans, for the mount cross-check.
    pub write_at: Vec<Spanned<String>>,
}

pub(super) fn check(mut t: Table, d: &mut Diags) -> Fs {
    let mut fs = Fs::default();
    let mut write_at = Vec::new();
    fs.read = granted(&mut t, d, Grant::Read, &mut fs.relative, None);
    fs.exec = granted(&mut t, d, Grant::Exec, &mut fs.relative, None);
    fs.write = granted(
        &mut t,
        d,
        Grant::Write,
        &mut fs.relative,
        Some(&mut write_at),
    );
    fs.write_at = write_at;
    let hides = t
        .strs(d, "hide")
        .map(Spanned::into_inner)
        .unwrap_or_default();
    fs.hide = hidden(d, &hides, [&fs.read, &fs.exec, &fs.write]);
    t.finish(d);
    fs
}

/// `hide`: absolute paths, none of them granted itself.
fn hidden(d: &mut Diags, hides: &[Spanned<&str>], lists: [&Vec<String>; 3]) -> Vec<String> {
    let mut out = Vec::new();
    if hides.is_empty() {
        return out;
    }
    let sets = lists.map(|l| l.iter().map(String::as_str).collect::<HashSet<&str>>());
    let mut seen = HashSet::new();
    for h in hides {
        let Some(p) = absolute(d, h, "fs.hide") else {
            continue;
        };
        for (set, grant) in sets.iter().zip([Grant::Read, Grant::Exec, Grant::Write]) {
            if set.contains(p.as_str()) {
                d.error(
                    h.span(),
                    "fs.hide",
                    format!("hidden path \"{p}\" is also granted by {}", grant.key()),
                    "hide a path inside an allowed tree, not the allowed path itself; remove one of the two",
                );
            }
        }
        push_unique(&mut out, &mut seen, p);
    }
    out
}

/// One of read/exec/write: absolute paths normalized and de-duplicated,
/// relative ones set aside for `sandboy wrap`.
fn granted(
    t: &mut Table,
    d: &mut Diags,
    grant: Grant,
    relative: &mut Vec<RelativePath>,
    mut spans: Option<&mut Vec<Spanned<String>>>,
) -> Vec<String> {
    let name = grant.name();
    let mut out = Vec::new();
    let mut seen = HashSet::new();
    for p in t.strs(d, name).map(Spanned::into_inner).unwrap_or_default() {
        if !p.get_ref().starts_with('/') {
            relative.extend(relative_path(d, &p, grant));
            continue;
        }
        let Some(n) = absolute(d, &p, grant.key()) else {
            continue;
        };
        if let Some(spans) = spans.as_deref_mut() {
            spans.push(Spanned::new(p.span(), n.clone()));
        }
        push_unique(&mut out, &mut seen, n);
    }
    out
}

/// `.`, `./x`, `x/y`, `~`, `~/x`: fine for wrap (SPEC §8), refused later by
/// generate.
fn relative_path(d: &mut Diags, p: &Spanned<&str>, grant: Grant) -> Option<RelativePath> {
    let s = *p.get_ref();
    let key = grant.key();
    if s.is_empty() {
        d.error(
            p.span(),
            key,
            "empty path",
            "write a path, e.g. \"/usr\" or \".\"",
        );
        return None;
    }
    if !clean(d, p, key) {
        return None;
    }
    let (anchor, rest) = match s.strip_prefix('~') {
        Some(rest) if rest.is_empty() || rest.starts_with('/') => (Anchor::Home, rest),
        Some(_) => {
            d.error(
                p.span(),
                key,
                format!("path \"{s}\" names another user's home"),
                "only \"~\" and \"~/…\" (the home of the user running sandboy wrap) are understood",
            );
            return None;
        }
        None => (Anchor::Cwd, s),
    };
    let rest = normalize(rest).trim_start_matches('/').to_string();
    Some(RelativePath {
        grant,
        anchor,
        written: s.to_string(),
        rest,
        location: d.locate(p.span().start),
        span: p.span(),
    })
}

/// Write paths must get writable storage: not under a read-only
/// `[[mount]]`, not under `/sys` (mounted read-only).
pub(super) fn check_writes(d: &mut Diags, writes: &[Spanned<String>], mounts: &[BindMount]) {
    for w in writes {
        let p = w.get_ref();
        let covering = mounts
            .iter()
            .filter(|m| is_under(p, &m.destination))
            .max_by_key(|m| m.destination.len());
        match covering {
            Some(m) if m.read_only() => d.error(
                w.span(),
                "fs.write",
                format!(
                    "write path \"{p}\" lies in read-only mount \"{}\"",
                    m.destination
                ),
                "add \"rw\" to that [[mount]]'s options, or drop the write path",
            ),
            None if is_under(p, "/sys") => d.error(
                w.span(),
                "fs.write",
                format!("write path \"{p}\" lies in /sys, which is mounted read-only"),
                "remove it; sysfs is never writable under a policy",
            ),
            _ => {}
        }
    }
}
