//! Fixtures shared by the unit tests of several modules.

use oci_spec::runtime::Spec;

/// A minimal spec whose `linux.resources` is `resources`.
pub fn spec_with_resources(resources: serde_json::Value) -> Spec {
    serde_json::from_value(serde_json::json!({
        "ociVersion": "1.0.2",
        "root": {"path": "rootfs"},
        "linux": {"resources": resources}
    }))
    .expect("a valid minimal spec")
}
