//! A checked [`Policy`] applied onto a spec someone else wrote (a container
//! engine's), as the runtime does for a node's named policies: where
//! [`render`](crate::render::render) builds a whole config.json from the
//! policy, this only tightens what the engine asked for.
//!
//! * the Landlock, timeout and policy-digest annotations become the policy's
//!   (whatever the engine's spec said);
//! * resources become the stricter of both (memory, pids, cpu quota);
//! * `[fs] hide` paths join `linux.maskedPaths`;
//! * `[[mount]]` binds are added only when the caller allows them (a node
//!   operator decides whether a policy may bring host paths in);
//! * the policy's seccomp profile is returned, not merged: the runtime
//!   installs it as a second filter after the engine's, so the kernel's
//!   strictest verdict of both wins.
//!
//! Process, user, namespaces, root and the engine's own mounts are the
//! engine's and stay as they are.

use oci_spec::runtime::{LinuxPids, LinuxResources, LinuxSeccomp, Spec};

use crate::annotations;
use crate::error::Error;
use crate::policy::Policy;
use crate::render::{self, CPU_PERIOD_US};

/// What [`apply`] is allowed to do beyond tightening.
#[derive(Debug, Clone, Copy, Default)]
pub struct Allow {
    /// Add the policy's `[[mount]]` binds to the spec's mounts.
    pub mounts: bool,
}

/// The annotations a node policy owns when applied (see [`apply`]).
pub const OWNED: &[&str] = &[
    annotations::LANDLOCK,
    annotations::TIMEOUT,
    annotations::POLICY_SHA256,
    annotations::EGRESS,
    annotations::WASM_LIMITS,
    annotations::POLICY_TEXT,
];

/// Apply `policy` onto `spec` (see the module docs); returns the policy's
/// seccomp profile, to be installed in addition to the spec's own.
pub fn apply(policy: &Policy, spec: &mut Spec, allow: Allow) -> Result<LinuxSeccomp, Error> {
    render::check_renderable(policy, Some(spec))?;
    own_network_or_refuse(policy, spec)?;
    // Every annotation that confines (or, for egress and wasm limits, opens
    // a way out or raises a cap) is the policy's: an engine's or bundle
    // author's own value is dropped, not merged, so a raw
    // `dev.sandboy.egress` cannot add a gateway the policy does not have
    // and the policy's `[net] allow` is served.
    let mut ann = spec.annotations().clone().unwrap_or_default();
    for key in OWNED {
        ann.remove(*key);
    }
    for (k, v) in render::annotations(policy) {
        if OWNED.contains(&k.as_str()) {
            ann.insert(k, v);
        }
    }
    spec.set_annotations(Some(ann));
    // A policy's process never gains privileges by execve (docs/policy.md),
    // whatever the engine asked: Kubernetes' default left it false, and a
    // step reached uid 0 through a setuid file of its image (a red team).
    // Its identity and open-file limit too (they were dropped without a
    // word: a policy's `user = "65534:65534"` container ran as uid 0).
    if let Some(mut process) = spec.process().clone() {
        process.set_no_new_privileges(Some(true));
        if policy.user_set {
            only_narrows_the_user(policy, process.user())?;
            let mut user = process.user().clone();
            user.set_uid(policy.uid)
                .set_gid(policy.gid)
                .set_additional_gids(None);
            process.set_user(user);
        }
        if let Some(n) = policy.nofile {
            let engine = process.rlimits().iter().flatten().find_map(|r| {
                (r.typ() == oci_spec::runtime::PosixRlimitType::RlimitNofile).then_some(r.hard())
            });
            render::set_nofile(&mut process, engine.map_or(n, |e| e.min(n)))?;
        }
        spec.set_process(Some(process));
    }
    // An engine's mounts are its own: their storage is not resized.
    if policy.disk.is_some() || policy.inodes.is_some() {
        tracing::warn!(policy = %policy.file, "[limits] disk and inodes are not applied onto an engine's spec: its mounts keep their own sizes");
    }

    if allow.mounts && !policy.mounts.is_empty() {
        let mut mounts = spec.mounts().clone().unwrap_or_default();
        for b in &policy.mounts {
            mounts.extend(render::policy_binds(policy, b));
        }
        spec.set_mounts(Some(mounts));
    }

    let mut linux = spec.linux().clone().unwrap_or_default();
    let mut masked = linux.masked_paths().clone().unwrap_or_default();
    for h in &policy.hide {
        if !masked.contains(h) {
            masked.push(h.clone());
        }
    }
    linux.set_masked_paths(Some(masked));
    let mut res = linux.resources().clone().unwrap_or_default();
    stricter_resources(policy, &mut res)?;
    linux.set_resources(Some(res));
    spec.set_linux(Some(linux));
    Ok(render::seccomp(policy))
}

/// A policy that keeps the step off the host's network (`namespace =
/// "none"`, or an egress gateway for `[net] allow`) cannot be applied onto
/// a spec on the host's network (no network namespace at all: podman
/// `--network host`, `hostNetwork: true`): its TCP port rules would then
/// reach every host address, and a gateway would guard nothing. Refused
/// rather than applied weaker. A joined namespace (a path: a CRI pod's)
/// is the pod's network, not the host's, for `namespace = "none"`; the
/// gateway needs a namespace of the container's own, as for a bundle's
/// own egress annotation.
/// A policy's `[process] user` only ever takes away: from the engine's
/// root to anyone, else to the engine's own user. A pod's
/// `dev.sandboy.policy.text` saying `user = "0:0"` ran a container the
/// engine started as uid 1000 (`runAsNonRoot`) as root with root's
/// capabilities (a red team); another non-root user would reach that
/// user's files.
fn only_narrows_the_user(policy: &Policy, engine: &oci_spec::runtime::User) -> Result<(), Error> {
    let (uid, gid) = (engine.uid(), engine.gid());
    if uid == 0 || (uid, gid) == (policy.uid, policy.gid) {
        return Ok(());
    }
    Err(Error::Spec(format!(
        "{}: [process] user = \"{}:{}\" would change the engine's user {uid}:{gid}; a policy applied onto an engine's spec may only narrow it (from root, or to the same user): drop [process] user from the policy or set the user in the engine (podman --user, Kubernetes runAsUser)",
        policy.file, policy.uid, policy.gid
    )))
}

fn own_network_or_refuse(policy: &Policy, spec: &Spec) -> Result<(), Error> {
    use crate::policy::NetNamespace;
    use oci_spec::runtime::LinuxNamespaceType;
    let egress = policy.egress.is_active();
    if policy.net_namespace != NetNamespace::None && !egress {
        return Ok(());
    }
    // The one network entry decides (the runtime refuses a spec with two,
    // as runc; with `any`, a new one listed before a joined one passed
    // while the last, the joined one, won). A joined namespace is taken as
    // a pod's, except for the egress gateway, which needs its own.
    let entry = spec
        .linux()
        .as_ref()
        .and_then(|l| l.namespaces().as_ref())
        .and_then(|ns| ns.iter().find(|n| n.typ() == LinuxNamespaceType::Network));
    let own = match entry.map(|n| n.path().as_ref()) {
        None => false,
        Some(None) => true,
        Some(Some(_)) => !egress,
    };
    if own {
        return Ok(());
    }
    let why = if policy.egress.is_active() {
        "[net] allow needs the container's own network namespace for its egress gateway"
    } else {
        "[net] namespace = \"none\" keeps the step off the host's network"
    };
    Err(Error::Spec(format!(
        "{}: {why}, but the container joins the host's network (linux.namespaces has no new network namespace); run it without host networking (podman: not --network host; Kubernetes: hostNetwork: false), or name a policy with [net] namespace = \"host\"",
        policy.file
    )))
}

/// A positive limit; zero and negative values mean "unlimited" in the spec.
fn limited(v: Option<i64>) -> Option<i64> {
    v.filter(|v| *v > 0)
}

fn stricter(engine: Option<i64>, policy: i64) -> i64 {
    limited(engine).map_or(policy, |e| e.min(policy))
}

fn stricter_resources(policy: &Policy, res: &mut LinuxResources) -> Result<(), Error> {
    if let Some(m) = policy.memory {
        let m = i64::try_from(m.0).map_err(|e| Error::Spec(e.to_string()))?;
        let mut mem = res.memory().unwrap_or_default();
        mem.set_limit(Some(stricter(mem.limit(), m)));
        // TCP buffers charged on cgroup v1 too (see `render`).
        mem.set_kernel_tcp(Some(stricter(mem.kernel_tcp(), m)));
        res.set_memory(Some(mem));
    }
    if let Some(p) = policy.pids {
        let engine = res.pids().map(|p| p.limit());
        let mut pids = LinuxPids::default();
        pids.set_limit(stricter(engine, p));
        res.set_pids(Some(pids));
    }
    if let Some(c) = policy.cpus {
        let mut cpu = res.cpu().clone().unwrap_or_default();
        let quota = (c * CPU_PERIOD_US as f64).round() as i64;
        // Compared as a share of one CPU: quota / period.
        let engine_share = match (limited(cpu.quota()), cpu.period().filter(|p| *p > 0)) {
            (Some(q), Some(p)) => Some(q as f64 / p as f64),
            (Some(q), None) => Some(q as f64 / CPU_PERIOD_US as f64),
            _ => None,
        };
        if engine_share.is_none_or(|share| c < share) {
            cpu.set_period(Some(CPU_PERIOD_US));
            cpu.set_quota(Some(quota));
        }
        res.set_cpu(Some(cpu));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use oci_spec::runtime::{LinuxCpu, LinuxMemory};
    use std::path::Path;

    fn policy(extra: &str) -> Policy {
        let src = format!("version = 1\n[fs]\nread = [\"/\"]\nwrite = [\"/tmp\"]\nhide = [\"/etc/shadow\"]\n{extra}");
        Policy::parse(&src, "p.toml", Path::new("/")).unwrap()
    }

    fn engine() -> Spec {
        let mut spec = Spec::default();
        let mut ann = std::collections::HashMap::new();
        ann.insert(annotations::LANDLOCK.to_string(), "{}".to_string());
        ann.insert("other".to_string(), "kept".to_string());
        spec.set_annotations(Some(ann));
        spec
    }

    #[test]
    fn annotations_replaced_and_hide_masked() {
        let p = policy("[limits]\ntimeout = \"60s\"\n");
        let mut spec = engine();
        let seccomp = apply(&p, &mut spec, Allow::default()).unwrap();
        let ann = spec.annotations().clone().unwrap();
        assert_eq!(ann["other"], "kept");
        assert_ne!(ann[annotations::LANDLOCK], "{}");
        assert_eq!(ann[annotations::TIMEOUT], "60s");
        assert_eq!(ann[annotations::POLICY_SHA256], p.sha256);
        let masked = spec
            .linux()
            .as_ref()
            .unwrap()
            .masked_paths()
            .clone()
            .unwrap();
        assert!(masked.contains(&"/etc/shadow".to_string()));
        assert!(!seccomp.syscalls().clone().unwrap_or_default().is_empty());
    }

    /// A policy's user narrows the engine's (from root, or the same
    /// user) and never raises it: a pod's annotation said `user = "0:0"`
    /// for a container the engine ran as 1000 (a red team).
    #[test]
    fn the_policys_user_only_narrows_the_engines() {
        let with_user = |uid: u32, gid: u32| {
            let mut spec = engine();
            let mut process = oci_spec::runtime::Process::default();
            let mut user = process.user().clone();
            user.set_uid(uid).set_gid(gid);
            process.set_user(user);
            spec.set_process(Some(process));
            spec
        };
        let user_of = |spec: &Spec| {
            let u = spec.process().as_ref().unwrap().user().clone();
            (u.uid(), u.gid())
        };
        for (policy_user, engine, allowed) in [
            ((0, 0), (1000, 1000), false),
            ((65534, 65534), (1000, 1000), false),
            ((1000, 0), (1000, 1000), false),
            ((1000, 1000), (1000, 1000), true),
            ((65534, 65534), (0, 0), true),
            ((0, 0), (0, 0), true),
        ] {
            let p = policy(&format!(
                "[process]\nuser = \"{}:{}\"\n",
                policy_user.0, policy_user.1
            ));
            let mut spec = with_user(engine.0, engine.1);
            let got = apply(&p, &mut spec, Allow::default());
            assert_eq!(
                got.is_ok(),
                allowed,
                "{policy_user:?} onto {engine:?}: {got:?}"
            );
            if allowed {
                assert_eq!(user_of(&spec), policy_user);
            } else {
                let e = got.unwrap_err().to_string();
                assert!(e.contains("may only narrow"), "{e}");
            }
        }
    }

    /// `[net] namespace = "none"` is met by the network entry: a new
    /// namespace, or one joined by path (a pod's); never by no entry.
    #[test]
    fn no_network_is_decided_by_the_network_entry() {
        use oci_spec::runtime::{LinuxNamespace, LinuxNamespaceType};
        let with = |entries: Vec<Option<&str>>| {
            let mut spec = engine();
            let ns = entries
                .into_iter()
                .map(|path| {
                    let mut ns = LinuxNamespace::default();
                    ns.set_typ(LinuxNamespaceType::Network)
                        .set_path(path.map(Into::into));
                    ns
                })
                .collect();
            let mut linux = oci_spec::runtime::Linux::default();
            linux.set_namespaces(Some(ns));
            spec.set_linux(Some(linux));
            spec
        };
        let none = policy("[net]\nnamespace = \"none\"\n");
        let egress = policy("[net]\nallow = [\"example.com:443\"]\n");
        for (p, entries, allowed) in [
            (&none, vec![None], true),
            (&none, vec![Some("/proc/1/ns/net")], true),
            (&none, vec![], false),
            (&egress, vec![None], true),
            (&egress, vec![Some("/proc/1/ns/net")], false),
        ] {
            let got = apply(p, &mut with(entries.clone()), Allow::default());
            assert_eq!(got.is_ok(), allowed, "{entries:?}: {got:?}");
        }
    }

    #[test]
    fn resources_are_the_stricter() {
        let p = policy("[limits]\nmemory = \"256MiB\"\npids = 100\ncpus = 0.5\n");
        let mut spec = engine();
        let mut res = LinuxResources::default();
        let mut mem = LinuxMemory::default();
        mem.set_limit(Some(128 << 20));
        res.set_memory(Some(mem));
        let mut pids = LinuxPids::default();
        pids.set_limit(1000);
        res.set_pids(Some(pids));
        let mut cpu = LinuxCpu::default();
        cpu.set_quota(Some(200_000)).set_period(Some(100_000));
        res.set_cpu(Some(cpu));
        let mut linux = oci_spec::runtime::Linux::default();
        linux.set_resources(Some(res));
        spec.set_linux(Some(linux));
        apply(&p, &mut spec, Allow::default()).unwrap();
        let res = spec.linux().as_ref().unwrap().resources().clone().unwrap();
        assert_eq!(
            res.memory().unwrap().limit(),
            Some(128 << 20),
            "engine's is stricter"
        );
        assert_eq!(res.pids().unwrap().limit(), 100);
        assert_eq!(res.cpu().clone().unwrap().quota(), Some(50_000));
    }
}
