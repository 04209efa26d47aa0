//! `spec`: write a default config.json, refusing to overwrite one.

use std::fs::OpenOptions;
use std::io::{ErrorKind, Write};
use std::path::PathBuf;

use oci_spec::runtime::{
    LinuxBuilder, LinuxIdMappingBuilder, LinuxNamespaceBuilder, LinuxNamespaceType, Spec,
};

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

fn rootless(spec: &mut Spec) -> Result<()> {
    let bad = |e: oci_spec::OciSpecError| Failure::runtime(e.to_string());
    let mut namespaces: Vec<_> = oci_spec::runtime::get_default_namespaces()
        .into_iter()
        .filter(|ns| {
            !matches!(
                ns.typ(),
                LinuxNamespaceType::Network | LinuxNamespaceType::User
            )
        })
        .collect();
    namespaces.push(
        LinuxNamespaceBuilder::default()
            .typ(LinuxNamespaceType::User)
            .build()
            .map_err(bad)?,
    );
    let map = |id: u32| {
        LinuxIdMappingBuilder::default()
            .host_id(id)
            .container_id(0u32)
            .size(1u32)
            .build()
    };
    let linux = LinuxBuilder::default()
        .namespaces(namespaces)
        .uid_mappings(vec![map(nix::unistd::geteuid().as_raw()).map_err(bad)?])
        .gid_mappings(vec![map(nix::unistd::getegid().as_raw()).map_err(bad)?])
        .build()
        .map_err(bad)?;
    spec.set_linux(Some(linux));
    Ok(())
}
