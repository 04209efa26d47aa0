//! `linux.namespaces` checked at load: one entry per type, and a joined
//! namespace's `path` a namespace file.
//!
//! Two entries of one type let the last win: under a node policy that
//! requires a new network namespace, a spec with a new one followed by the
//! host's (by path) ran on the host's network (runc: "duplicated ns"). A
//! path that is not a namespace file reaches libcontainer's `open`, which
//! blocks forever on a FIFO with the state dir and cgroups already made.

use std::collections::HashSet;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use nix::fcntl::OFlag;
use nix::sys::statfs::{fstatfs, NSFS_MAGIC};
use oci_spec::runtime::Spec;

use crate::error::{Failure, Result};

/// Refuse duplicate types and paths that are not namespace files; `at`
/// names the config.json.
pub fn check(spec: &Spec, at: &str) -> Result<()> {
    let Some(namespaces) = spec.linux().as_ref().and_then(|l| l.namespaces().as_ref()) else {
        return Ok(());
    };
    let mut seen = HashSet::new();
    for (i, ns) in namespaces.iter().enumerate() {
        if !seen.insert(ns.typ()) {
            return Err(Failure::config(format!(
                "{at}: linux.namespaces[{i}]: duplicated ns {:?}: each type may appear once (a new one, or one joined by path); remove the extra entry",
                ns.typ().to_string()
            )));
        }
        if let Some(path) = ns.path() {
            namespace_file(path).map_err(|why| {
                Failure::config(format!(
                    "{at}: linux.namespaces[{i}].path {:?} {why}; give a namespace file such as /proc/<pid>/ns/{} or a bind mount of one, or leave path out for a new namespace",
                    path.display().to_string(),
                    ns.typ()
                ))
            })?;
        }
    }
    Ok(())
}

/// Whether `path` is a file of the kernel's namespace filesystem, opened
/// without blocking (a FIFO would wait for a writer; std adds O_CLOEXEC)
/// and closed again.
fn namespace_file(path: &Path) -> std::result::Result<(), String> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(OFlag::O_NONBLOCK.bits())
        .open(path)
        .map_err(|e| format!("cannot be opened ({e})"))?;
    let fs = fstatfs(&file).map_err(|e| format!("cannot be examined ({e})"))?;
    if fs.filesystem_type() != NSFS_MAGIC {
        return Err("is not a namespace file (not on nsfs)".to_owned());
    }
    Ok(())
}
