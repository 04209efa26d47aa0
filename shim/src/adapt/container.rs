//! `adapt` as root: an OCI-wasm container built on the fly from the adapter
//! policy. The temporary bundle (under the state root) holds a copy of the
//! component at `/adapters/` (the runtime compiles it, through the state
//! root's compile cache, before the container exists) and under `/in/` a
//! copy of each input, read from the descriptor `resolve` opened (never
//! the path again), `max_input` bytes in all. No network, a read-only rootfs and the policy's limits come
//! from the policy itself. The container and the bundle are removed
//! afterwards whatever happened.

use std::fs::{self, File};
use std::io::{Read, Seek as _};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use sandboy_spec_gen::policy::Policy;
use sandboy_spec_gen::render::{self, RenderOptions};
use sandboy_wasm_contract::MAX_WASM_FILE;

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
    // A zero-import adapter, or refused before any container exists (a
    // core module once ran as a WASI program and died of a panic, exit 101).
    let exe = crate::wasm_host::path()?;
    super::prepare_component(
        &policy,
        job,
        crate::wasm_host::Program::Path(&exe),
        Some(crate::wasm_host::CacheRef::unsealed(
            &rt.root.join(crate::wasm_host::CACHE_DIR),
        )),
    )?;
    let work = rt.root.join(ADAPT_DIR).join(&id);
    let result = (|| {
        let rootfs = work.join("rootfs");
        for d in ["adapters", "in", "dev", "proc", "sys", "tmp"] {
            fs::create_dir_all(rootfs.join(d))?;
        }
        let name = component_name(&job.component);
        let mut component = File::open(&job.component)?;
        copy_at_most(
            &mut component,
            &rootfs.join("adapters").join(&name),
            MAX_WASM_FILE,
            || format!("component {}", job.component.display()),
        )?;
        let mut args = vec![
            format!("/adapters/{name}"),
            "--tool".into(),
            job.tool.clone(),
        ];
        policy.mounts.clear();
        let mut left = job.max_input;
        for (n, input) in job.inputs.iter().enumerate() {
            let inside = PathBuf::from(format!("/in/{n}"));
            // A copy of the descriptor opened when the job was resolved
            // (`super::input`), not a bind of the path (a bind resolves the
            // path again), and no more than `max_input` in all: the file
            // may have grown since its size was checked.
            let Some(file) = input.file.as_deref() else {
                return Err(Failure::runtime(format!(
                    "adapt: {}: not opened",
                    input.path.display()
                )));
            };
            let mut from = file;
            from.seek(std::io::SeekFrom::Start(0))?;
            left -= copy_at_most(&mut from, &rootfs.join(format!("in/{n}")), left, || {
                format!("{} (the inputs, over max_input)", input.path.display())
            })?;
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

/// Copy `from` into a new file `to`, at most `limit` bytes; how many. One
/// byte more is a usage error naming `what`.
fn copy_at_most(
    from: &mut impl Read,
    to: &Path,
    limit: u64,
    what: impl FnOnce() -> String,
) -> Result<u64> {
    let mut into = File::create(to)?;
    let copied = std::io::copy(&mut from.take(limit.saturating_add(1)), &mut into)?;
    if copied > limit {
        return Err(Failure::usage(format!(
            "adapt: {}: larger than {limit} bytes",
            what()
        )));
    }
    Ok(copied)
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
