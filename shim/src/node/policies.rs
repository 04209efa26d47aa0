//! The node's policy directory: `<policy_dir>/<name>.toml`, trusted only
//! when root (or the runtime's own user) owns it and nobody else may write
//! it, because a policy decides what a container may do on the node.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use sandboy_spec_gen::Policy;

use crate::error::{Failure, Result};

/// A policy name: a plain file stem (letters, digits, `.`, `_`, `-`; not
/// starting with a dot), so that it can only name a file of the directory.
pub fn valid_name(name: &str) -> std::result::Result<(), String> {
    let plain = name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if name.is_empty() || name.len() > 128 || !plain || name.starts_with('.') {
        return Err(format!(
            "policy name {name:?} is not a plain name (letters, digits, '.', '_', '-'; no '/' or '..')"
        ));
    }
    Ok(())
}

/// The file of policy `name`.
pub fn path(dir: &Path, name: &str) -> PathBuf {
    dir.join(format!("{name}.toml"))
}

/// Refuse a file or directory others could change: it must belong to root
/// (or to the user running sandboy) and not be group- or world-writable.
pub fn check_trusted(path: &Path, dir: bool) -> Result<()> {
    let meta = std::fs::symlink_metadata(path).map_err(|e| {
        Failure::config(format!(
            "{}: {e}; {}",
            path.display(),
            if dir {
                "create the policy directory (root-owned, mode 0755) or set policy_dir in the node configuration"
            } else {
                "check the name (sandboy policy list shows the node's policies)"
            }
        ))
    })?;
    let euid = nix::unistd::geteuid().as_raw();
    let what = if dir { "directory" } else { "file" };
    if meta.file_type().is_symlink() {
        return Err(Failure::config(format!(
            "{}: the policy {what} is a symbolic link, which sandboy does not follow; put the real {what} there",
            path.display()
        )));
    }
    if meta.uid() != 0 && meta.uid() != euid {
        return Err(Failure::config(format!(
            "{}: owned by uid {}, not root: anyone who owns it can change what containers may do; fix with `chown root {}`",
            path.display(),
            meta.uid(),
            path.display()
        )));
    }
    if meta.mode() & 0o022 != 0 {
        return Err(Failure::config(format!(
            "{}: mode {:o} lets others than its owner write it; fix with `chmod go-w {}`",
            path.display(),
            meta.mode() & 0o7777,
            path.display()
        )));
    }
    Ok(())
}

/// A policy read from the node's directory: the checked policy and its text.
pub struct Loaded {
    pub path: PathBuf,
    pub text: String,
    pub policy: Policy,
}

/// Read policy `name` from `dir`, after the trust checks; a policy error
/// comes back as spec-gen's located diagnostics.
pub fn load(dir: &Path, name: &str) -> Result<Loaded> {
    let (path, text) = read(dir, name)?;
    let policy = Policy::parse(&text, &path.display().to_string(), dir)
        .map_err(|e| Failure::config(e.to_string()))?;
    Ok(Loaded { path, text, policy })
}

/// The path and text of policy `name` of `dir`, after the name and trust
/// checks (an unknown name gets a "did you mean").
pub fn read(dir: &Path, name: &str) -> Result<(PathBuf, String)> {
    valid_name(name).map_err(|why| {
        Failure::config(format!(
            "{why}; name a file of {} without its .toml suffix",
            dir.display()
        ))
    })?;
    check_trusted(dir, true)?;
    let path = path(dir, name);
    if !path.exists() {
        let known = list(dir).unwrap_or_default();
        let hint = match sandboy_spec_gen::closest(name, known.iter().map(String::as_str)) {
            Some(s) => format!("did you mean \"{s}\"?"),
            None if known.is_empty() => "the directory has no policies".to_string(),
            None => format!("known: {}", known.join(", ")),
        };
        return Err(Failure::config(format!(
            "unknown policy {name:?}: {} does not exist; {hint} (sandboy policy list)",
            path.display()
        )));
    }
    check_trusted(&path, false)?;
    let text = read_nofollow(&path)?;
    Ok((path, text))
}

/// The policy names of `dir`, sorted.
pub fn list(dir: &Path) -> Result<Vec<String>> {
    let entries =
        std::fs::read_dir(dir).map_err(|e| Failure::config(format!("{}: {e}", dir.display())))?;
    let mut names: Vec<String> = entries
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let stem = name.strip_suffix(".toml")?.to_string();
            valid_name(&stem).ok().map(|()| stem)
        })
        .collect();
    names.sort();
    Ok(names)
}

/// Read a file without following a symlink planted after the checks.
fn read_nofollow(path: &Path) -> Result<String> {
    use sandboy_spec_gen::input;
    let bytes = input::read_bytes(path, input::TEXT_MAX, libc::O_NOFOLLOW)
        .map_err(|e| Failure::config(format!("{}: {e}", path.display())))?;
    String::from_utf8(bytes)
        .map_err(|e| Failure::config(format!("{}: not UTF-8 text: {e}", path.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert!(valid_name("gate-step").is_ok());
        assert!(valid_name("v1.2_x").is_ok());
        for bad in ["", "../x", "a/b", ".hidden", "..", "a b"] {
            assert!(valid_name(bad).is_err(), "{bad}");
        }
    }
}
