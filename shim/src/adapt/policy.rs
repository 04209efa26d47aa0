//! The policy an adapter runs under: `policies/ownaudit-adapter.toml`
//! (built in), or another adapter policy given with `--policy`. Its
//! `[[mount]]` tables describe the example bundle's input; `adapt` binds
//! the real inputs itself, so they are dropped before the policy is read.

use std::path::Path;

use sandboy_spec_gen::policy::Policy;
use sandboy_wasm_contract::Limits;

use crate::error::{Failure, Result};

const BUILT_IN: &str = include_str!("../../../policies/ownaudit-adapter.toml");

/// The adapter policy, without its `[[mount]]` tables.
pub fn load(file: Option<&Path>) -> Result<Policy> {
    let (src, name) = match file {
        Some(f) => (
            sandboy_spec_gen::input::read_text(f, sandboy_spec_gen::input::TEXT_MAX)
                .map_err(|e| Failure::usage(format!("adapt: --policy {}: {e}", f.display())))?,
            f.display().to_string(),
        ),
        None => (BUILT_IN.to_string(), "ownaudit-adapter.toml".to_string()),
    };
    let policy = Policy::parse(
        &sandboy_spec_gen::policy::without_mounts(&src),
        &name,
        Path::new("/"),
    )
    .map_err(|e| Failure::config(e.to_string()))?;
    if !policy.is_wasm() {
        return Err(Failure::config(format!(
            "{name}: not an adapter policy: its [process] args[0] is not a .wasm component"
        )));
    }
    Ok(policy)
}

/// The policy's `[wasm]` limits over the defaults.
pub fn limits(policy: &Policy) -> Result<Limits> {
    policy
        .wasm
        .as_ref()
        .map_or(Ok(Limits::default()), Limits::from_wasm_limits)
        .map_err(|e| Failure::config(format!("{}: {e}", policy.file)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_in_policy_loads_without_its_example_mount() {
        let p = load(None).unwrap();
        assert!(p.mounts.is_empty());
        assert_eq!(p.read, ["/adapters", "/in"]);
        let l = limits(&p).unwrap();
        assert_eq!(l.max_input, 64 << 20);
        assert_eq!(l.max_results, 10_000);
    }

    /// In wrap's landlock tier the adapter host's profile kills `socket`
    /// (no network namespace there); `socketpair`, which reaches nothing,
    /// and `read` stay allowed, and the namespaces tier's policy is left
    /// alone.
    #[test]
    fn the_landlock_tiers_adapter_host_gets_no_socket() {
        let verdict = |p: &Policy, name: &str| {
            sandboy_spec_gen::render::seccomp(p)
                .syscalls()
                .clone()
                .unwrap_or_default()
                .into_iter()
                .find(|r| r.names().iter().any(|n| n == name) && r.args().is_none())
                .map(|r| r.action())
        };
        let before = load(None).unwrap();
        assert_eq!(verdict(&before, "socket"), None);
        let mut p = before.clone();
        crate::wrap::no_sockets_on_the_host(&mut p);
        assert_eq!(
            verdict(&p, "socket"),
            Some(oci_spec::runtime::LinuxSeccompAction::ScmpActKillProcess)
        );
        assert_eq!(verdict(&p, "socketpair"), None);
        assert_eq!(verdict(&p, "read"), None);
        assert!(p.deny.windows(2).all(|w| w[0] < w[1]), "deny stays sorted");
    }
}
