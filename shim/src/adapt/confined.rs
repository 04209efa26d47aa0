//! `adapt` as an ordinary user: no container, no state root. The component
//! is validated and compiled first, as the caller, by the wasm host binary
//! (`sandboy-wasm prepare`, beside `sandboy`) through the per-user compile
//! cache (`$XDG_CACHE_HOME/sandboy/wasm`, else `~/.cache/sandboy/wasm`), so
//! refusals come before anything runs and the confined host only loads;
//! a warm start recalls that answer instead (`wasm_host::memo`).
//! Then `sandboy-wasm adapt` runs through the unprivileged wrap landlock
//! tier (`wrap::run_confined` says why not the namespaces tier):
//! Landlock allows reading the component, the inputs and the cache,
//! executing the host binary, nothing else (its loader is added by wrap);
//! the policy's seccomp profile applies, `socket` refused outright, and
//! `[limits] pids` becomes "threads only" (no new process; see
//! `wrap::run_confined`). The policy's
//! `[limits] memory` is not applied as `RLIMIT_AS` here: wasmtime reserves
//! address space for every linear memory far beyond what it uses, and the
//! guest's memory is capped by `[wasm] memory` either way; `[limits] cpus`
//! needs a cgroup and is not applied either (the deadline and fuel bound
//! the time).

use std::fs::File;
use std::path::{Path, PathBuf};

use sandboy_spec_gen::policy::Policy;
use sandboy_wasm_contract::host;

use super::{with_stdout_to, Job};
use crate::error::Result;
use crate::wasm_host::{self, Program};

/// The per-user compile cache directory: in `$XDG_RUNTIME_DIR` when the
/// session has one of its own, else under `~/.cache`. Compiled code is
/// native code the host loads, so where it lives must be out of the
/// user's confined steps' reach: `write = ["~/.cache"]` is an ordinary
/// grant for build tools, and a red team's step swapped one adapter's
/// compiled code for another's there. The runtime directory is rarely
/// granted, and `suggest`/`learn` never grant it (docs/adapt.md).
pub fn user_cache_dir() -> Option<PathBuf> {
    use std::os::unix::fs::MetadataExt;
    let var = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let private_runtime = var("XDG_RUNTIME_DIR").filter(|d| {
        std::fs::metadata(d).is_ok_and(|m| {
            m.is_dir() && m.uid() == rustix::process::geteuid().as_raw() && m.mode() & 0o077 == 0
        })
    });
    if let Some(d) = private_runtime {
        // The user's state root, whose dot-directories are the runtime's
        // own (ids may not start with a dot), as root's `.wasm-cache`.
        return Some(d.join("sandboy/.wasm-cache"));
    }
    var("XDG_CACHE_HOME")
        .or_else(|| var("HOME").map(|h| h.join(".cache")))
        .map(|d| d.join("sandboy/wasm"))
}

/// Runs `job` confined, the SARIF to `out`; the exit status.
pub fn run(mut policy: Policy, job: &Job, out: &File) -> Result<i32> {
    let exe = wasm_host::path()?;
    let cache = user_cache_dir();
    let (limits, report) =
        super::prepare_component(&policy, job, Program::Path(&exe), cache.as_deref())?;
    // Only a cache the host could use (it warned otherwise).
    let cache = cache.filter(|_| report.cache_file.is_some());
    let show = |p: &Path| p.display().to_string();
    let mut args = vec!["--tool".to_string(), job.tool.clone()];
    for i in &job.inputs {
        args.extend(i.words(&i.path));
    }
    let command = host::Command::Adapt(host::Adapt {
        component: job.component.clone(),
        cache: cache.clone(),
        limits,
        args,
    });
    let command: Vec<String> = std::iter::once(show(&exe))
        .chain(command.to_args())
        .collect();
    policy.read = std::iter::once(show(&job.component))
        .chain(job.inputs.iter().map(|i| show(&i.path)))
        .chain(cache.as_deref().map(show))
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
