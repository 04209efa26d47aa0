//! Resource limits the cgroup layer would drop without a word are refused
//! before anything is created, as runc refuses them: a container never runs
//! without a limit its spec asked for.
//!
//! libcgroups 0.7 has no rdma controller at all, and its v1 manager ignores
//! `linux.resources.unified` (cgroup v2 key/value pairs such as
//! `pids.max`), where runc fails with "cannot use unified on cgroup v1".

use std::path::Path;

use oci_spec::runtime::Spec;

use crate::error::{Failure, Result};

/// Refuse limits that would not be applied on this host.
pub fn check(spec: &Spec, bundle: &Path, unified_host: bool) -> Result<()> {
    let Some(resources) = spec.linux().as_ref().and_then(|l| l.resources().as_ref()) else {
        return Ok(());
    };
    let refuse = |field: &str, why: &str, fix: &str| {
        Err(Failure::config(format!(
            "{}/config.json: linux.resources.{field}: {why}; {fix}",
            bundle.display()
        )))
    };
    if resources.rdma().as_ref().is_some_and(|r| !r.is_empty()) {
        return refuse(
            "rdma",
            "RDMA limits cannot be enforced by sandboy (libcgroups has no rdma controller)",
            "remove linux.resources.rdma",
        );
    }
    if !unified_host && resources.unified().as_ref().is_some_and(|u| !u.is_empty()) {
        return refuse(
            "unified",
            "cgroup v2 keys cannot be applied on this cgroup v1 (or hybrid) host",
            "use the v1 fields (memory, pids, cpu, blockIO, …) or remove linux.resources.unified",
        );
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
