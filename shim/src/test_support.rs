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

/// A fresh directory under the system's temporary directory, removed on
/// drop (with everything in it).
pub struct TempDir(std::path::PathBuf);

impl TempDir {
    pub fn new(name: &str) -> TempDir {
        let p = std::env::temp_dir().join(format!("sandboy-unit-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).expect("a temporary directory");
        TempDir(p)
    }

    pub fn path(&self) -> &std::path::Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
