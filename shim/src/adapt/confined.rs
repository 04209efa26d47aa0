//! `adapt` as an ordinary user: no container, no state root. The component
//! is validated and compiled first, as the caller, through the per-user
//! compile cache (`$XDG_CACHE_HOME/sandboy/wasm`, else
//! `~/.cache/sandboy/wasm`), so refusals come before anything runs and the
//! confined host only loads. Then the runtime re-executes itself as the
//! wasm host (`adapt --inner-host`, hidden) through the unprivileged wrap
//! tiers: Landlock allows reading the component, the inputs and the cache,
//! nothing else (the runtime binary and its loader are added by wrap);
//! the policy's seccomp profile applies; in the namespaces tier it also
//! gets no network, a read-only host root and its own /tmp. The policy's
//! `[limits] memory` is not applied as `RLIMIT_AS` here: wasmtime reserves
//! address space for every linear memory far beyond what it uses, and the
//! guest's memory is capped by `[wasm] memory` either way; `[limits] cpus`
//! needs a cgroup and is not applied either (the deadline and fuel bound
//! the time).

use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};

use sandboy_spec_gen::annotations::WASM_LIMITS;
use sandboy_spec_gen::policy::Policy;
use sandboy_spec_gen::render;
use sandboy_wasm::{Cache, Kind, Limits, Prepared, WasmError};

use super::registry::EXE_ENV;
use super::{with_stdout_to, Job};
use crate::error::{Failure, Result};

/// The per-user compile cache directory.
pub fn user_cache_dir() -> Option<PathBuf> {
    let var = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    var("XDG_CACHE_HOME")
        .or_else(|| var("HOME").map(|h| h.join(".cache")))
        .map(|d| d.join("sandboy/wasm"))
}

/// Validates and compiles `component` as an adapter (warming `cache`).
pub fn prepare(component: &Path, limits: &Limits, cache: Option<&Cache>) -> Result<Prepared> {
    let p = Prepared::prepare_with_limits(component, *limits, cache).map_err(|e| match e {
        WasmError::Read { .. } | WasmError::Cache { .. } | WasmError::Runtime(_) => {
            Failure::runtime(format!("adapt: {e}"))
        }
        _ => Failure::usage(format!("adapt: {e}")),
    })?;
    if p.kind() != Kind::Adapter {
        return Err(Failure::usage(format!(
            "adapt: {}: not an ownaudit:adapter component (it is a {:?} payload); run it with `sandboy run` instead",
            component.display(),
            p.kind()
        )));
    }
    Ok(p)
}

/// Runs `job` confined, the SARIF to `out`; the exit status.
pub fn run(mut policy: Policy, job: &Job, limits: &Limits, out: &File) -> Result<i32> {
    let cache = user_cache_dir().and_then(|d| match Cache::new(&d) {
        Ok(c) => Some(c),
        Err(e) => {
            tracing::warn!(id = %job.tool, error = %e, "adapt: no compile cache; every run compiles");
            None
        }
    });
    prepare(&job.component, limits, cache.as_ref())?;
    let exe = std::env::var_os(EXE_ENV)
        .map(PathBuf::from)
        .or_else(|| std::env::current_exe().ok())
        .ok_or_else(|| Failure::runtime("adapt: cannot tell where the sandboy binary is"))?;
    let limits_json = render::annotations(&policy)
        .get(WASM_LIMITS)
        .cloned()
        .unwrap_or_else(|| "{}".into());
    let show = |p: &Path| p.display().to_string();
    let mut command = vec![
        show(&exe),
        "adapt".into(),
        "--inner-host".into(),
        "--limits".into(),
        limits_json,
    ];
    if let Some(c) = &cache {
        command.extend(["--cache".into(), show(c.dir())]);
    }
    command.extend([
        "--component".into(),
        show(&job.component),
        "--tool".into(),
        job.tool.clone(),
    ]);
    for i in &job.inputs {
        command.extend(i.words(&i.path));
    }
    policy.read = std::iter::once(show(&job.component))
        .chain(job.inputs.iter().map(|i| show(&i.path)))
        .chain(cache.as_ref().map(|c| show(c.dir())))
        .collect();
    policy.write.clear();
    policy.exec = vec![show(&exe)];
    policy.mounts.clear();
    policy.memory = None;
    policy.cpus = None;
    policy.cwd = "/".into();
    let id = format!("adapt-{}-{}", job.tool, std::process::id());
    with_stdout_to(out, || crate::wrap::run_confined(policy, &id, &command))?
}

/// `adapt --inner-host`: the wasm host, already confined by the caller.
/// `adapter_args` are the adapter's flags (`--tool …`). The exit status
/// and, on failure, the line to print (as a container's would be).
pub fn inner_host(
    component: &Path,
    cache: Option<&Path>,
    limits_json: &str,
    adapter_args: &[String],
) -> (i32, Option<String>) {
    let annotations = HashMap::from([(WASM_LIMITS.to_string(), limits_json.to_string())]);
    let result = Limits::from_annotations(&annotations).and_then(|limits| {
        let cache = cache.and_then(|d| Cache::new(d).ok());
        let p = Prepared::prepare_with_limits(component, limits, cache.as_ref())?;
        let mut argv = vec![component.display().to_string()];
        argv.extend_from_slice(adapter_args);
        p.run_with_output(&argv, &[], Path::new("/"), &mut std::io::stdout().lock())
    });
    match result {
        Ok(code) => (code, None),
        Err(e) => {
            match e.limit() {
                Some(limit) => {
                    tracing::warn!(id = %component.display(), %limit, "wasm payload stopped by its {limit} limit: {e}")
                }
                None => tracing::error!(id = %component.display(), "wasm payload failed: {e}"),
            }
            (e.exit_code(), Some(format!("sandboy: {e}")))
        }
    }
}
