//! `adapt` as an ordinary user: no container, no state root. The component
//! is validated and compiled first, as the caller, by the wasm host binary
//! (`sandboy-wasm prepare`, beside `sandboy`) through the per-user compile
//! cache ([`user_cache`]), so refusals come before anything runs and the
//! confined host only loads; a warm start recalls that answer instead
//! (`wasm_host::memo`).
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

use sandboy_wasm_contract::seal::{self, CacheKey};

use super::{keyring, with_stdout_to, Job};
use crate::error::Result;
use crate::wasm_host::{self, CacheRef, Program};

/// The per-user compile cache: its directory and the key sealing it.
pub struct UserCache {
    pub dir: PathBuf,
    pub key: Option<CacheKey>,
}

/// The per-user compile cache: in `$XDG_RUNTIME_DIR` when the session has
/// one of its own, else under `~/.cache`, sealed with the user's key from
/// the kernel keyring (`seal` says why: compiled code is native code the
/// host loads, and a red team's step granted `write = ["~/.cache"]`, an
/// ordinary grant for build tools, swapped one adapter's compiled code for
/// another's there). Without a keyring (`keyctl` refused, as in many
/// containers) only the private runtime directory is used, unsealed: it is
/// rarely granted and `suggest`/`learn` never grant it; with neither there
/// is no cache, and every run compiles.
pub fn user_cache() -> Option<UserCache> {
    let key = keyring::cache_key()
        .map_err(
            |e| tracing::debug!(error = %e, "adapt: no compile cache key in the kernel keyring"),
        )
        .ok();
    match (private_runtime_cache(), key) {
        (Some(dir), key) => Some(UserCache { dir, key }),
        (None, Some(key)) => home_cache().map(|dir| UserCache {
            dir,
            key: Some(key),
        }),
        (None, None) => {
            tracing::warn!(
                "adapt: no compile cache (the kernel keyring holds no key for it and \
                 XDG_RUNTIME_DIR is not a private directory); every run compiles"
            );
            None
        }
    }
}

fn var(k: &str) -> Option<PathBuf> {
    std::env::var_os(k)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

/// `$XDG_RUNTIME_DIR/sandboy/.wasm-cache` when that directory is the
/// user's own and private.
fn private_runtime_cache() -> Option<PathBuf> {
    use std::os::unix::fs::MetadataExt;
    let dir = var("XDG_RUNTIME_DIR").filter(|d| {
        std::fs::metadata(d).is_ok_and(|m| {
            m.is_dir() && m.uid() == rustix::process::geteuid().as_raw() && m.mode() & 0o077 == 0
        })
    })?;
    // The user's state root, whose dot-directories are the runtime's own
    // (ids may not start with a dot), as root's `.wasm-cache`.
    Some(dir.join("sandboy/.wasm-cache"))
}

/// `$XDG_CACHE_HOME/sandboy/wasm`, else `~/.cache/sandboy/wasm`.
fn home_cache() -> Option<PathBuf> {
    var("XDG_CACHE_HOME")
        .or_else(|| var("HOME").map(|h| h.join(".cache")))
        .map(|d| d.join("sandboy/wasm"))
}

/// Runs `job` confined, the SARIF to `out`; the exit status.
pub fn run(mut policy: Policy, job: &Job, out: &File) -> Result<i32> {
    let exe = wasm_host::path()?;
    let user = user_cache();
    let cache_ref = user.as_ref().map(|u| CacheRef {
        dir: &u.dir,
        key: u.key.as_ref(),
    });
    let (limits, report) = super::prepare_component(&policy, job, Program::Path(&exe), cache_ref)?;
    // Only a cache the host could use (it warned otherwise).
    let cache = cache_ref
        .filter(|_| report.cache_file.is_some())
        .map(|c| c.dir.to_path_buf());
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
    // `run_confined` clears the caller's environment; the key goes in the
    // host's, never on its command line.
    if let Some(key) = cache_ref.and_then(|c| c.key) {
        policy.env.push(format!("{}={}", seal::ENV, key.to_env()));
    }
    let id = format!("adapt-{}-{}", job.tool, std::process::id());
    with_stdout_to(out, || crate::wrap::run_confined(policy, &id, &command))?
}
