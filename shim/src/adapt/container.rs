//! `adapt` as root: an OCI-wasm container built on the fly from the adapter
//! policy. The temporary bundle (under the state root) holds a copy of the
//! component at `/adapters/` (the runtime compiles it, through the state
//! root's compile cache, before the container exists) and empty mount
//! points under `/in/` where the inputs are bound read-only (nosuid, nodev,
//! noexec). No network, a read-only rootfs and the policy's limits come
//! from the policy itself. The container and the bundle are removed
//! afterwards whatever happened.

use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use sandboy_spec_gen::policy::Policy;
use sandboy_spec_gen::render::{self, RenderOptions};

use super::{with_stdout_to, Job};
use crate::container::{CreateOptions, RunMode, Runtime};
use crate::error::{Failure, Result};

/// Directory (under the state root) of adapt's temporary bundles.
const ADAPT_DIR: &str = ".adapt";

/// Runs `job` in a container; the SARIF goes to `out`. The exit status.
pub fn run(rt: &Runtime, mut policy: Policy, job: &Job, out: &File) -> Result<i32> {
    static SEQ: AtomicU32 = AtomicU32::new(0);
    let id = format!(
        "adapt-{}-{}-{}",
        job.tool,
        std::process::id(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    );
    crate::container::validate_id(&id)?;
    let work = rt.root.join(ADAPT_DIR).join(&id);
    let result = (|| {
        let rootfs = work.join("rootfs");
        for d in ["adapters", "in", "dev", "proc", "sys", "tmp"] {
            fs::create_dir_all(rootfs.join(d))?;
        }
        let name = component_name(&job.component);
        fs::copy(&job.component, rootfs.join("adapters").join(&name))?;
        let mut args = vec![
            format!("/adapters/{name}"),
            "--tool".into(),
            job.tool.clone(),
        ];
        policy.mounts.clear();
        for (n, input) in job.inputs.iter().enumerate() {
            let inside = PathBuf::from(format!("/in/{n}"));
            // A copy, from a descriptor opened race-free (`super::input`),
            // not a bind of the path: a bind resolves the path again.
            let mut from = super::input::open(&input.path).map_err(|e| {
                Failure::usage(format!("adapt: {}: {}", input.path.display(), e.message))
            })?;
            let mut to = File::create(rootfs.join(format!("in/{n}")))?;
            std::io::copy(&mut from, &mut to)?;
            args.extend(input.words(&inside));
        }
        policy.args = args;
        let spec = render::render(
            &policy,
            &RenderOptions {
                rootfs: Some(rootfs),
                base: None,
            },
        )
        .map_err(|e| Failure::config(e.to_string()))?;
        let json = render::to_json(&spec).map_err(|e| Failure::config(e.to_string()))?;
        fs::write(work.join("config.json"), json)?;
        let opts = CreateOptions {
            bundle: work.clone(),
            ..CreateOptions::default()
        };
        with_stdout_to(out, || rt.run(&id, &opts, RunMode::default()))?
    })();
    cleanup(rt, &id, &work);
    result.map(|ran| ran.status)
}

/// The component's name inside the bundle; OCI-wasm mode wants `.wasm`.
fn component_name(path: &Path) -> String {
    let name = path
        .file_name()
        .map_or_else(|| "adapter".into(), |n| n.to_string_lossy().into_owned());
    if name.ends_with(".wasm") {
        name
    } else {
        format!("{name}.wasm")
    }
}

/// The container, its leftovers and the bundle. The bundle holds no mounts
/// (the inputs are bound in the container's own mount namespace).
fn cleanup(rt: &Runtime, id: &str, work: &Path) {
    if rt.exists(id) {
        if let Ok(mut c) = rt.load(id) {
            let _ = rt.destroy(&mut c, true);
        }
    }
    rt.remove_leftovers(id);
    if let Err(e) = fs::remove_dir_all(work) {
        if work.exists() {
            tracing::warn!(%id, path = %work.display(), error = %e, "adapt: could not remove the temporary bundle");
        }
    }
}
