//! `spec`: write a default config.json, refusing to overwrite one.

use std::fs::OpenOptions;
use std::io::{ErrorKind, Write};
use std::path::PathBuf;

use oci_spec::runtime::Spec;

use super::args::SpecCmd;
use crate::error::{Failure, Result};

pub fn run(args: SpecCmd) -> Result<i32> {
    let mut spec = Spec::default();
    if args.rootless {
        rootless(&mut spec)?;
    }
    let path = args
        .bundle
        .unwrap_or_else(|| PathBuf::from("."))
        .join("config.json");
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&path)
        .map_err(|e| {
            if e.kind() == ErrorKind::AlreadyExists {
                Failure::runtime(format!("File {} exists. Remove it first.", path.display()))
            } else {
                Failure::runtime(format!("{}: {e}", path.display()))
            }
        })?;
    let json = serde_json::to_string_pretty(&spec).map_err(|e| Failure::runtime(e.to_string()))?;
    file.write_all(json.as_bytes())?;
    Ok(0)
}

/// runc's `spec --rootless`: the caller's own uid and gid as container
/// root, no network namespace, no cgroup resources (see
/// `sandboy_spec_gen::rootless` for what else changes and why).
fn rootless(spec: &mut Spec) -> Result<()> {
    let uid = nix::unistd::geteuid().as_raw();
    let gid = nix::unistd::getegid().as_raw();
    sandboy_spec_gen::rootless::apply(spec, uid, gid, false)
        .map_err(|e| Failure::runtime(e.to_string()))
}
