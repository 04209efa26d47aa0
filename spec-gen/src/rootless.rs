//! Rootless bundles: the rewrite runc's `spec --rootless` makes (runc
//! libcontainer/specconv `ToRootless`), shared by `sandboy spec --rootless`
//! and `sandboy-spec-gen generate --rootless`, so a bundle runs as an
//! ordinary user under both sandboy and runc.
//!
//! What an ordinary user cannot have, and so the rewrite removes:
//! * ids other than its own: container uid/gid 0 is mapped to the caller
//!   (one id each), so `uid=`/`gid=` mount options naming any other id go
//!   (the default `gid=5` on /dev/pts: libcontainer refuses unmapped ids,
//!   "mount options require mapping valid uid inside the container");
//! * a fresh sysfs: mounting one needs the network namespace's owner, so
//!   /sys is bind-mounted read-only from the host instead;
//! * supplementary groups (CVE-2014-8989: setgroups is denied);
//! * `vm.memfd_noexec`: the runtime sets it from outside, where an
//!   ordinary user cannot reach the container's pid namespace;
//! * cgroup resources: without a delegated cgroup nothing can enforce them,
//!   so a rendered policy that sets limits is refused by `generate`
//!   ([`limits_refusal`]) rather than silently dropped.

use std::path::PathBuf;

use oci_spec::runtime::{
    LinuxIdMapping, LinuxIdMappingBuilder, LinuxNamespace, LinuxNamespaceType, Mount, Spec,
};

use crate::error::{Diagnostic, Location};
use crate::policy::{diagnostic, Policy};
use crate::Error;

/// The caller's effective uid and gid, read from the owner of
/// `/proc/self` (the kernel gives it the task's effective ids), so this
/// crate needs no libc binding for two numbers.
pub fn caller_ids() -> std::io::Result<(u32, u32)> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata("/proc/self")?;
    Ok((m.uid(), m.gid()))
}

/// Rewrite `spec` to run as host `uid`/`gid` in a user namespace where
/// they are container root. `keep_netns`: keep a network namespace the
/// spec asks for (a policy's `namespace = "none"`: loopback only, which an
/// ordinary user may create); runc's `spec --rootless` drops it.
pub fn apply(spec: &mut Spec, uid: u32, gid: u32, keep_netns: bool) -> Result<(), Error> {
    let one = |host: u32| -> Result<LinuxIdMapping, Error> {
        LinuxIdMappingBuilder::default()
            .container_id(0u32)
            .host_id(host)
            .size(1u32)
            .build()
            .map_err(|e| Error::Spec(e.to_string()))
    };
    let mut linux = spec.linux().clone().unwrap_or_default();
    let mut namespaces: Vec<LinuxNamespace> = linux
        .namespaces()
        .clone()
        .unwrap_or_default()
        .into_iter()
        .filter(|n| {
            n.typ() != LinuxNamespaceType::User
                && (keep_netns || n.typ() != LinuxNamespaceType::Network)
        })
        .collect();
    let mut user = LinuxNamespace::default();
    user.set_typ(LinuxNamespaceType::User);
    namespaces.push(user);
    linux.set_namespaces(Some(namespaces));
    linux.set_uid_mappings(Some(vec![one(uid)?]));
    linux.set_gid_mappings(Some(vec![one(gid)?]));
    linux.set_resources(None);
    // vm.memfd_noexec is set by the runtime from outside the container,
    // which an ordinary user cannot do (docs/rootless.md).
    if let Some(mut sysctl) = linux.sysctl().clone() {
        if sysctl.remove(crate::render::MEMFD_NOEXEC).is_some() {
            tracing::warn!(
                "--rootless: vm.memfd_noexec left out: an ordinary user's runtime cannot set it"
            );
        }
        linux.set_sysctl(Some(sysctl).filter(|s| !s.is_empty()));
    }
    spec.set_linux(Some(linux));

    if let Some(mounts) = spec.mounts().clone() {
        spec.set_mounts(Some(mounts.into_iter().map(rootless_mount).collect()));
    }
    if let Some(mut process) = spec.process().clone() {
        let mut user = process.user().clone();
        user.set_additional_gids(None);
        process.set_user(user);
        spec.set_process(Some(process));
    }
    Ok(())
}

/// A sysfs mount as a user namespace without its own network namespace
/// can have it: a read-only bind of the host's /sys (mounting a fresh one
/// needs the network namespace's owner), the host's mounts below it
/// (cgroup, debugfs, …) read-only too. Other mounts are returned as they
/// are.
pub fn sysfs_bind(mut m: Mount) -> Mount {
    if m.typ().as_deref() == Some("sysfs") {
        let mut options = ["rbind", "nosuid", "noexec", "nodev", "ro"]
            .map(String::from)
            .to_vec();
        crate::render::recursive_restrictions(&mut options);
        m.set_typ(Some("none".to_string()));
        m.set_source(Some(PathBuf::from("/sys")));
        m.set_options(Some(options));
    }
    m
}

/// One mount as an ordinary user can make it: sysfs becomes a read-only
/// bind of the host's /sys, and `uid=`/`gid=` options other than 0 (the
/// only ids mapped) are dropped.
fn rootless_mount(m: Mount) -> Mount {
    if m.typ().as_deref() == Some("sysfs") {
        return sysfs_bind(m);
    }
    let mut m = m;
    if let Some(opts) = m.options().clone() {
        let mapped = |o: &String| {
            o.strip_prefix("uid=")
                .or_else(|| o.strip_prefix("gid="))
                .is_none_or(|id| id == "0")
        };
        m.set_options(Some(opts.into_iter().filter(mapped).collect()));
    }
    m
}

/// What a policy asks for that a rootless bundle cannot give: cgroup
/// limits (nothing enforces them without a delegated cgroup, and a limit
/// silently dropped is a limit not kept) and a process uid/gid other than
/// 0 (only the caller's own id is mapped, as container root).
pub fn limits_refusal(policy: &Policy) -> Result<(), Error> {
    let mut diags: Vec<Diagnostic> = Vec::new();
    let mut refuse = |key: &str, what: &str, help: &str| {
        diags.push(diagnostic(
            &policy.file,
            Location::START,
            0..0,
            key,
            format!("--rootless: {what}"),
            None,
            help,
        ));
    };
    for (key, set) in [
        ("limits.memory", policy.memory.is_some()),
        ("limits.pids", policy.pids.is_some()),
        ("limits.cpus", policy.cpus.is_some()),
    ] {
        if set {
            refuse(
                key,
                &format!("{key} needs a cgroup, which an ordinary user has none of to give a rootless container"),
                "remove the limit for a rootless bundle, or generate without --rootless and run the container as root",
            );
        }
    }
    if policy.uid != 0 || policy.gid != 0 {
        refuse(
            "process.user",
            &format!(
                "the process runs as {}:{}, but a rootless bundle maps only your own uid and gid, as 0",
                policy.uid, policy.gid
            ),
            "set [process] user = \"0:0\" (it is your own uid outside the container)",
        );
    }
    if diags.is_empty() {
        Ok(())
    } else {
        Err(Error::Policy(diags))
    }
}
