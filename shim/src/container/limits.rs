//! Resource limits the cgroup layer would drop without a word are refused
//! before anything is created, as runc refuses them: a container never runs
//! without a limit its spec asked for.
//!
//! libcgroups 0.7 has no rdma controller at all, and its v1 manager ignores
//! `linux.resources.unified` (cgroup v2 key/value pairs such as
//! `pids.max`), where runc fails with "cannot use unified on cgroup v1".

use std::path::Path;

use oci_spec::runtime::{LinuxResources, Spec};

use crate::error::{Failure, Result};

/// Refuse limits that would not be applied on this host.
pub fn check(spec: &Spec, bundle: &Path, unified_host: bool) -> Result<()> {
    let Some(resources) = spec.linux().as_ref().and_then(|l| l.resources().as_ref()) else {
        return Ok(());
    };
    unapplied(resources, unified_host)
        .map_err(|r| r.at(&format!("{}/config.json", bundle.display())))
}

/// `update -r FILE`'s resources (named `at`): what create refuses, and
/// devices, which runc's update does not change either: libcgroups would
/// replace the container's device rules with the file's (a red team's
/// `{"allow": true}` opened every device to a container with CAP_MKNOD).
pub fn check_update(resources: &LinuxResources, unified_host: bool, at: &str) -> Result<()> {
    if resources.devices().as_ref().is_some_and(|d| !d.is_empty()) {
        return Err(Failure::config(format!(
            "{at}: linux.resources.devices: update cannot change linux.resources.devices; runc does not either; remove \"devices\" from the file (the device rules are set at create)"
        )));
    }
    unapplied(resources, unified_host).map_err(|r| r.at(at))
}

/// A field that would not be applied: which, why, and the fix.
struct Unapplied(&'static str, &'static str, &'static str);

impl Unapplied {
    fn at(self, at: &str) -> Failure {
        let Unapplied(field, why, fix) = self;
        Failure::config(format!("{at}: linux.resources.{field}: {why}; {fix}"))
    }
}

fn unapplied(resources: &LinuxResources, unified_host: bool) -> std::result::Result<(), Unapplied> {
    if resources.rdma().as_ref().is_some_and(|r| !r.is_empty()) {
        return Err(Unapplied(
            "rdma",
            "RDMA limits cannot be enforced by sandboy (libcgroups has no rdma controller)",
            "remove linux.resources.rdma",
        ));
    }
    if !unified_host && resources.unified().as_ref().is_some_and(|u| !u.is_empty()) {
        return Err(Unapplied(
            "unified",
            "cgroup v2 keys cannot be applied on this cgroup v1 (or hybrid) host",
            "use the v1 fields (memory, pids, cpu, blockIO, …) or remove linux.resources.unified",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rdma_is_refused_everywhere() {
        let s = crate::test_support::spec_with_resources(
            serde_json::json!({"rdma": {"mlx5_1": {"hcaHandles": 3}}}),
        );
        for unified in [false, true] {
            let e = check(&s, Path::new("/b"), unified).unwrap_err();
            assert_eq!(e.exit_code(), 2);
            assert!(
                e.message
                    .starts_with("/b/config.json: linux.resources.rdma: "),
                "{}",
                e.message
            );
        }
        assert!(check(
            &crate::test_support::spec_with_resources(serde_json::json!({"rdma": {}})),
            Path::new("/b"),
            false
        )
        .is_ok());
    }

    #[test]
    fn unified_keys_are_refused_off_cgroup_v2_only() {
        let s = crate::test_support::spec_with_resources(
            serde_json::json!({"unified": {"pids.max": "5"}}),
        );
        let e = check(&s, Path::new("/b"), false).unwrap_err();
        assert!(
            e.message
                .contains("linux.resources.unified: cgroup v2 keys"),
            "{}",
            e.message
        );
        assert!(check(&s, Path::new("/b"), true).is_ok());
        assert!(check(
            &crate::test_support::spec_with_resources(serde_json::json!({})),
            Path::new("/b"),
            false
        )
        .is_ok());
    }
}
