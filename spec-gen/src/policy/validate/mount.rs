//! `[[mount]]`: binds from the host.

use std::path::{Path, PathBuf};

use toml::Spanned;

use super::super::diags::Diags;
use super::super::reader::{as_str, Table};
use super::values::absolute;
use crate::error::closest;
use crate::policy::BindMount;

/// Bind mount options a policy may name.
const KNOWN: &[&str] = &[
    "bind",
    "rbind",
    "ro",
    "rw",
    "nosuid",
    "nodev",
    "noexec",
    "suid",
    "dev",
    "exec",
    "private",
    "rprivate",
    "slave",
    "rslave",
    "shared",
    "rshared",
    "relatime",
    "norelatime",
    "noatime",
    "strictatime",
    "nodiratime",
];

pub(super) fn check(tables: Vec<Table>, d: &mut Diags, base_dir: &Path) -> Vec<BindMount> {
    tables
        .into_iter()
        .filter_map(|t| one(t, d, base_dir))
        .collect()
}

fn one(mut t: Table, d: &mut Diags, base_dir: &Path) -> Option<BindMount> {
    let source =
        required(&mut t, d, "source").and_then(|s| source(d, &s, &t.key("source"), base_dir));
    let destination =
        required(&mut t, d, "destination").and_then(|s| destination(d, &s, &t.key("destination")));
    let options = options(&mut t, d);
    t.finish(d);
    Some(BindMount {
        source: source?,
        destination: destination?,
        options,
    })
}

fn required<'a>(
    t: &mut Table<'a, '_>,
    d: &mut Diags,
    name: &'static str,
) -> Option<Spanned<&'a str>> {
    let key = t.key(name);
    let Some(v) = t.get(name) else {
        d.error(
            t.span(),
            &key,
            format!("missing required key \"{name}\""),
            "every [[mount]] needs a source (host path) and a destination (container path)",
        );
        return None;
    };
    as_str(d, v, &key)
}

fn destination(d: &mut Diags, v: &Spanned<&str>, key: &str) -> Option<String> {
    let dest = absolute(d, v, key)?;
    if dest == "/" {
        d.error(
            v.span(),
            key,
            "cannot bind-mount over the container root \"/\"",
            "use --rootfs to choose the root filesystem; mount at a subdirectory such as /work",
        );
        return None;
    }
    Some(dest)
}

fn source(d: &mut Diags, v: &Spanned<&str>, key: &str, base_dir: &Path) -> Option<PathBuf> {
    let raw = *v.get_ref();
    if raw.is_empty() {
        d.error(
            v.span(),
            key,
            "empty mount source",
            "name a host directory, relative to the policy file",
        );
        return None;
    }
    let joined = base_dir.join(raw.strip_prefix("./").unwrap_or(raw));
    match joined.canonicalize() {
        Ok(p) => Some(p),
        Err(_) => {
            d.error(
                v.span(),
                key,
                format!("mount source \"{raw}\" does not exist (resolved to \"{}\")", joined.display()),
                "create it or fix the path; relative sources resolve against the policy file's directory",
            );
            None
        }
    }
}

/// Known options, de-duplicated; always a bind, read-only unless `rw`.
fn options(t: &mut Table, d: &mut Diags) -> Vec<String> {
    let key = t.key("options");
    let mut out: Vec<String> = Vec::new();
    if let Some(list) = t.strs(d, "options") {
        for o in list.get_ref() {
            let s = *o.get_ref();
            if KNOWN.contains(&s) {
                if !out.iter().any(|x| x == s) {
                    out.push(s.to_string());
                }
            } else {
                d.suggest(
                    o.span(),
                    &key,
                    format!("unknown bind mount option \"{s}\""),
                    closest(s, KNOWN.iter().copied()),
                    "use bind mount options such as rbind, ro, rw, nosuid, nodev, noexec",
                );
            }
        }
        if out.iter().any(|o| o == "ro") && out.iter().any(|o| o == "rw") {
            d.error(
                list.span(),
                &key,
                "mount options contain both \"ro\" and \"rw\"",
                "keep one of them",
            );
        }
    }
    if !out.iter().any(|o| o == "bind" || o == "rbind") {
        out.insert(0, "rbind".into());
    }
    if !out.iter().any(|o| o == "ro" || o == "rw") {
        out.push("ro".into());
    }
    out
}
