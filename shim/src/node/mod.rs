//! Policies on the node (docs/node.md): the node configuration (`config`),
//! the directory of named policies (`policies`), and what `create` does with
//! them: a container naming `dev.sandboy.policy=<name>` (or none, with a
//! `default_policy`) gets that policy applied onto its engine's spec, with
//! spec-gen's [`onto`](sandboy_spec_gen::onto): Landlock and timeout
//! replaced, resources the stricter, hide paths masked, and the policy's
//! seccomp profile installed as a second filter after the engine's.

pub mod config;
pub mod policies;

use std::path::Path;

use oci_spec::runtime::{LinuxSeccomp, Spec};
use sandboy_spec_gen::annotations;

pub use config::Config;

use crate::error::{Failure, Result};

/// Set by containerd's CRI on every container; `sandbox` marks the pod's
/// pause container, the engine's own infrastructure, which node policies
/// leave alone (a CI policy would not let it run `/pause`).
pub const CRI_CONTAINER_TYPE: &str = "io.kubernetes.cri.container-type";

/// In a shadow bundle: the applied policy's seccomp profile, so that `exec`
/// installs the same second filter as the init.
pub const SECCOMP_FILE: &str = "node-seccomp.json";

/// A node policy applied onto a container's spec.
pub struct Applied {
    /// The policy's profile, as written to [`SECCOMP_FILE`].
    pub profile: LinuxSeccomp,
    /// The same, compiled (installed after the engine's filter).
    pub seccomp: sandboy_confine::CompiledSeccomp,
}

/// Apply the node's policy for this container onto `spec`, if it has one;
/// refuse it (exit 2, before anything exists) when the node configuration
/// says so. `at` names the config.json in messages.
pub fn apply(
    id: &str,
    config: &Config,
    spec: &mut Spec,
    at: &Path,
    seccomp_cache: &Path,
) -> Result<Option<Applied>> {
    let ann = spec.annotations().clone().unwrap_or_default();
    // Checked before the sandbox exemption below: claiming to be a pod's
    // sandbox never lets a container bring raw rules (a red team's did).
    if !config.allow_annotations {
        let mut raw: Vec<&str> = ann
            .keys()
            .map(String::as_str)
            .filter(|k| k.starts_with("dev.sandboy.") && *k != annotations::POLICY)
            .collect();
        if !raw.is_empty() {
            raw.sort_unstable();
            return Err(Failure::config(format!(
                "{}: annotation {} refused: the node configuration {} sets allow_annotations = false, so containers name a policy instead; use the annotation {}=<name> (sandboy policy list)",
                at.display(),
                raw.join(", "),
                config.label(),
                annotations::POLICY
            )));
        }
    }
    if ann.get(CRI_CONTAINER_TYPE).is_some_and(|t| t == "sandbox") {
        tracing::debug!(%id, "pod sandbox container: node policies do not apply");
        return Ok(None);
    }
    let name = match (ann.get(annotations::POLICY), &config.default_policy) {
        (Some(n), _) => n.clone(),
        (None, Some(d)) => d.clone(),
        (None, None) if config.require_policy => {
            return Err(Failure::config(format!(
                "container {id} names no policy and the node requires one ({}: require_policy = true); add the annotation {}=<name> (sandboy policy list shows the names) or set default_policy",
                config.label(),
                annotations::POLICY
            )))
        }
        (None, None) => {
            let applied = annotated(&ann, spec, at, seccomp_cache)?;
            pod_egress_stays_outside(spec, at, config)?;
            return Ok(applied);
        }
    };
    let loaded = policies::load(&config.policy_dir, &name)?;
    if !loaded.policy.mounts.is_empty() && !config.allow_mounts {
        tracing::warn!(%id, policy = %name, "the policy's [[mount]] binds are not added: the node configuration does not set allow_mounts = true");
    }
    let allow = sandboy_spec_gen::onto::Allow {
        mounts: config.allow_mounts,
    };
    let profile = sandboy_spec_gen::onto::apply(&loaded.policy, spec, allow)
        .map_err(|e| Failure::config(format!("policy {name}: {e}")))?;
    let mut ann = spec.annotations().clone().unwrap_or_default();
    ann.insert(annotations::POLICY.to_string(), name.clone());
    spec.set_annotations(Some(ann));
    // The ruleset is the policy's and valid by construction; checked
    // anyway, as the engine's was, so the init only meets kernel failures.
    if let Some(v) = spec
        .annotations()
        .as_ref()
        .and_then(|a| a.get(annotations::LANDLOCK))
    {
        let rs = annotations::LandlockRuleset::decode(v)
            .map_err(|e| Failure::config(format!("policy {name}: {e}")))?;
        sandboy_confine::landlock::rule_bits(&rs)
            .map_err(|e| Failure::config(format!("policy {name}: {e}")))?;
    }
    let seccomp = sandboy_confine::seccomp::compile_cached(&profile, seccomp_cache)
        .map_err(|e| Failure::config(format!("policy {name}: seccomp: {e}")))?;
    tracing::info!(%id, policy = %name, sha256 = %loaded.policy.sha256, file = %loaded.path.display(), "node policy applied");
    Ok(Some(Applied { profile, seccomp }))
}

/// Egress rules the container brings itself (a raw `dev.sandboy.egress`,
/// or its `dev.sandboy.policy.text`) reach no internal address under a
/// node configuration: the gateway connects from the host's network, and a
/// red team's pod with `allow_cidr = ["127.0.0.0/8:8099"]` reached a
/// service on the host's loopback from its own network namespace (the
/// kubelet, etcd and the metadata address are as near). A node policy's
/// rules are the operator's and may.
fn pod_egress_stays_outside(spec: &mut Spec, at: &Path, config: &Config) -> Result<()> {
    use sandboy_spec_gen::policy::{Egress, EgressWire};
    // Without a node configuration file, the bundle's author is whoever
    // runs sandboy, whose own rules are trusted as before.
    if config.file.is_none() {
        return Ok(());
    }
    let mut ann = spec.annotations().clone().unwrap_or_default();
    let Some(value) = ann.get(annotations::EGRESS) else {
        return Ok(());
    };
    // A malformed value is refused, located, when the bundle is loaded.
    let Some((mut wire, rules)) = EgressWire::decode(value)
        .ok()
        .and_then(|w| Egress::from_wire(&w).ok().map(|r| (w, r)))
    else {
        return Ok(());
    };
    let own = crate::supervisor::egress::upstream::own_addresses();
    let reaches = |c: &&sandboy_spec_gen::policy::CidrRule| {
        c.reaches_internal() || (c.prefix > 0 && own.iter().any(|a| c.matches(*a, c.port)))
    };
    if let Some(c) = rules.allow_cidr.iter().find(reaches) {
        return Err(Failure::config(format!(
            "{}: annotation {}: allow_cidr {c} reaches this host or its networks (loopback, private, link-local or metadata addresses), which a container's own rules may not under the node configuration {}; name a node policy that lists it ({}=<name>)",
            at.display(),
            annotations::EGRESS,
            config.label(),
            annotations::POLICY
        )));
    }
    // What passed here is checked against the host's addresses as they
    // are now; the gateway checks again at each dial (an address the host
    // acquires later), for these rules only: a node policy's may name it.
    wire.outside_only = true;
    ann.insert(annotations::EGRESS.to_string(), wire.encode());
    spec.set_annotations(Some(ann));
    Ok(())
}

/// A policy given by annotations (`annotate`'s
/// [`POLICY_TEXT`](annotations::POLICY_TEXT)), applied onto `spec` as a
/// node policy is (without its mounts): Landlock, seccomp as a second
/// filter, hide paths, the stricter resources, user and open files. A
/// policy only ever takes away from the engine's spec, so a bundle's own
/// is taken as it is. Without it, `None`.
fn annotated(
    ann: &std::collections::HashMap<String, String>,
    spec: &mut Spec,
    at: &Path,
    seccomp_cache: &Path,
) -> Result<Option<Applied>> {
    let Some(json) = ann.get(annotations::POLICY_TEXT) else {
        return Ok(None);
    };
    let name = format!("{} (annotation {})", at.display(), annotations::POLICY_TEXT);
    let bad = |e: &dyn std::fmt::Display| {
        Failure::config(format!(
            "{name}: {e}; use the value `sandboy-spec-gen annotate` prints"
        ))
    };
    let text: String = serde_json::from_str(json).map_err(|e| bad(&e))?;
    let policy = sandboy_spec_gen::Policy::parse(
        &sandboy_spec_gen::policy::without_mounts(&text),
        &name,
        Path::new("/"),
    )
    .map_err(|e| Failure::config(e.to_string()))?;
    let allow = sandboy_spec_gen::onto::Allow { mounts: false };
    let profile = sandboy_spec_gen::onto::apply(&policy, spec, allow).map_err(|e| bad(&e))?;
    let seccomp =
        sandboy_confine::seccomp::compile_cached(&profile, seccomp_cache).map_err(|e| bad(&e))?;
    tracing::info!(sha256 = %policy.sha256, "annotated policy applied");
    Ok(Some(Applied { profile, seccomp }))
}

impl Applied {
    /// The text of [`SECCOMP_FILE`], which `create` keeps in the
    /// container's shadow bundle.
    pub fn profile_json(&self) -> Result<Vec<u8>> {
        serde_json::to_vec(&self.profile)
            .map_err(|e| Failure::runtime(format!("node seccomp profile: {e}")))
    }
}

/// The node policy's profile of a container, from its (shadow) bundle.
pub fn read_seccomp(bundle: &Path) -> Result<Option<LinuxSeccomp>> {
    match std::fs::read(bundle.join(SECCOMP_FILE)) {
        Ok(bytes) => serde_json::from_slice(&bytes).map(Some).map_err(|e| {
            Failure::runtime(format!(
                "{}: {e}; the container's node policy cannot be read back",
                bundle.join(SECCOMP_FILE).display()
            ))
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Failure::runtime(format!(
            "{}: {e}",
            bundle.join(SECCOMP_FILE).display()
        ))),
    }
}
