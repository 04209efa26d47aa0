//! Containers created by an ordinary user (docs/rootless.md): what such a
//! caller can be given, checked before anything is created, so a refusal
//! leaves nothing behind and nothing runs with less than its spec asked.
//!
//! * The spec must carry a user namespace (the caller's ids as container
//!   root); without one the kernel refuses every namespace anyway.
//! * cgroups: libcontainer 0.7's v2 manager, told the caller is rootless,
//!   skips a cgroup it may not create (runc's rule); its v1 manager cannot
//!   skip, so on a host with v1 controllers a rootless container is refused
//!   with the reason instead of an EACCES from deep inside libcgroups.
//! * Resource limits are refused, never dropped: the v2 manager would skip
//!   the cgroup silently, and a delegated cgroup is not looked for yet.
//! * Device rules are not loaded: loading a cgroup device program needs
//!   CAP_SYS_ADMIN, and in a user namespace the container cannot mknod, so
//!   it reaches only device nodes bind-mounted from the host, opened with
//!   the caller's own rights (runc's rootless containers skip them too).
//! * A private network namespace keeps `lo` down: the runtime brings it up
//!   from outside (`loopback`), but the init's namespaces are out of an
//!   ordinary caller's reach (its memory belongs to the initial user
//!   namespace, where the caller has no CAP_SYS_PTRACE). The container has
//!   no network at all, which is more confined, not less.
//! * `vm.memfd_noexec` cannot be set for the same reason: refused when
//!   asked for (`generate --rootless` leaves it out, and says so).
//!
//! Landlock and seccomp are applied by the init exactly as for root.

use std::path::Path;

use oci_spec::runtime::{LinuxNamespaceType, LinuxResources, Spec};

use crate::error::{Failure, Result};

/// Whether the caller is an ordinary user, or root only inside a user
/// namespace of its own (rootless podman runs the runtime there): the test
/// libcontainer uses to go rootless.
pub fn active() -> bool {
    !nix::unistd::geteuid().is_root() || in_user_ns()
}

/// Whether this process is in a user namespace other than the initial one
/// (an unreadable uid_map counts as one: the stricter reading).
pub fn in_user_ns() -> bool {
    libcontainer::utils::is_in_new_userns().unwrap_or(true)
}

/// Refuse, for an ordinary caller, what a rootless container cannot have.
pub fn check(spec: &Spec, bundle: &Path, unified_host: bool) -> Result<()> {
    let config = bundle.join("config.json");
    let linux = spec.linux().as_ref();
    let user_ns = linux
        .and_then(|l| l.namespaces().as_ref())
        .is_some_and(|ns| ns.iter().any(|n| n.typ() == LinuxNamespaceType::User));
    if user_ns {
        check_id_mappers(spec, &config)?;
    }
    if !active() {
        return Ok(());
    }
    let uid = nix::unistd::geteuid();
    // Already in a user namespace (podman's), the spec needs no new one.
    if !user_ns && !in_user_ns() {
        return Err(Failure::config(format!(
            "{}: no user namespace, which uid {uid} needs to create a container; \
             write the bundle with `sandboy spec --rootless` or `sandboy-spec-gen generate --rootless`, \
             or add {{\"type\": \"user\"}} to linux.namespaces with uidMappings/gidMappings of your own ids",
            config.display()
        )));
    }
    if !unified_host {
        return Err(Failure::runtime(format!(
            "rootless container as uid {uid}: this host has cgroup v1 controllers, and libcontainer 0.7's \
             v1 cgroup manager must create /sys/fs/cgroup/<controller>/<path>, which an ordinary user cannot \
             (it cannot skip them as its v2 manager does); run it as root, or on a cgroup v2 host"
        )));
    }
    let sysctl = linux.and_then(|l| l.sysctl().as_ref());
    if sysctl.is_some_and(|s| s.contains_key(super::sysctl::MEMFD_NOEXEC)) {
        return Err(Failure::config(format!(
            "{}: linux.sysctl {}: the runtime sets it in the container's pid namespace from outside, \
             which uid {uid} cannot reach (the init's namespaces need CAP_SYS_PTRACE in the initial user namespace); \
             remove it for a rootless container (`generate --rootless` leaves it out)",
            config.display(),
            super::sysctl::MEMFD_NOEXEC
        )));
    }
    if let Some(field) = linux
        .and_then(|l| l.resources().as_ref())
        .and_then(limit_set)
    {
        return Err(Failure::config(format!(
            "{}: linux.resources.{field}: a rootless container has no cgroup of its own to enforce it \
             (uid {uid} may not create one); remove the limit, or run the container as root",
            config.display()
        )));
    }
    Ok(())
}

/// More than one uid or gid range is written by `newuidmap`/`newgidmap`
/// (package uidmap), looked up on PATH as libcontainer does; said up front
/// with the way out rather than by libcontainer's "could not be found in
/// path" (the caller's or root's alike).
fn check_id_mappers(spec: &Spec, config: &Path) -> Result<()> {
    let Some(linux) = spec.linux().as_ref() else {
        return Ok(());
    };
    let ranges = |m: &Option<Vec<_>>| m.as_ref().map_or(0, Vec::len);
    let (uids, gids) = (ranges(linux.uid_mappings()), ranges(linux.gid_mappings()));
    if uids <= 1 && gids <= 1 {
        return Ok(());
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    let missing: Vec<&str> = ["newuidmap", "newgidmap"]
        .into_iter()
        .filter(|bin| !std::env::split_paths(&path).any(|d| d.join(bin).is_file()))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    Err(Failure::runtime(format!(
        "{}: linux.uidMappings/gidMappings have {uids}/{gids} ranges, which only {} can write,          and it is not on PATH ({}); install the uidmap package (or add its directory to PATH),          or map a single range",
        config.display(),
        missing.join(" and "),
        path.to_string_lossy()
    )))
}

/// The first resource limit `r` sets (device rules aside, see the module
/// comment).
fn limit_set(r: &LinuxResources) -> Option<&'static str> {
    let memory = r
        .memory()
        .as_ref()
        .is_some_and(|m| m.limit().is_some() || m.reservation().is_some() || m.swap().is_some());
    let cpu = r
        .cpu()
        .as_ref()
        .is_some_and(|c| c.quota().is_some() || c.shares().is_some() || c.cpus().is_some());
    [
        ("memory", memory),
        ("pids", r.pids().is_some()),
        ("cpu", cpu),
        ("blockIO", r.block_io().is_some()),
        (
            "hugepageLimits",
            r.hugepage_limits().as_ref().is_some_and(|h| !h.is_empty()),
        ),
        (
            "unified",
            r.unified().as_ref().is_some_and(|u| !u.is_empty()),
        ),
    ]
    .into_iter()
    .find_map(|(f, set)| set.then_some(f))
}
