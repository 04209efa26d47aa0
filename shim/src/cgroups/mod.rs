//! Everything sandboy does with cgroups itself, beside libcgroups: the
//! deny-all device default (v1 rules, v2 eBPF program), priming the kernel's
//! attach wait, one-pass removal on delete, `events --stats` readers, and the
//! OOM settings and report. Nothing here knows about the CLI or containers'
//! lifecycle; it takes a libcontainer `Container` or a cgroup path.

pub mod devices;
pub mod oom;
pub mod prime;
pub mod remove;
pub mod stats;

use std::path::{Path, PathBuf};

use libcontainer::container::Container;

use crate::error::{Failure, Result};

/// Whether this host runs cgroup v2 only (no v1 controllers mounted).
pub fn unified_host() -> bool {
    matches!(
        libcgroups::common::get_cgroup_setup(),
        Ok(libcgroups::common::CgroupSetup::Unified)
    )
}

/// The cgroup manager of a container (cgroup path and manager kind as
/// recorded at create time).
pub fn cgroup_manager(c: &Container) -> Result<libcgroups::common::AnyCgroupManager> {
    libcgroups::common::create_cgroup_manager(libcgroups::common::CgroupConfig {
        cgroup_path: c.spec()?.cgroup_path,
        systemd_cgroup: c.systemd(),
        container_name: c.id().to_owned(),
    })
    .map_err(|e| Failure::runtime(format!("cgroup of {}: {e}", c.id())))
}

/// The container's cgroup directory under `root` (a v1 controller's mount
/// point or the unified hierarchy's), refusing a recorded path with `..`.
pub fn cgroup_dir(c: &Container, root: &str) -> Result<PathBuf> {
    let rel = c
        .spec()
        .map_err(|e| Failure::runtime(format!("cgroup of {}: {e}", c.id())))?
        .cgroup_path;
    if rel
        .components()
        .any(|p| p == std::path::Component::ParentDir)
    {
        return Err(Failure::runtime(format!(
            "cgroup path {} of {} leaves the cgroup root",
            rel.display(),
            c.id()
        )));
    }
    Ok(Path::new(root).join(rel.strip_prefix("/").unwrap_or(&rel)))
}
