//! The user namespace `generate` gives a bundle by default (issue 14), so
//! container root is not host root: uid and gid 0–65535 of the container
//! are host ids [`HOST_BASE`]`..+`[`SIZE`], which own nothing on the host.
//! A step that gets out of every other layer is then an unprivileged host
//! user, with capabilities only over its own namespaces.
//!
//! What a mapped root cannot do decides the default ([`choose`]): files on
//! the host keep their host owners, which the namespace does not map, so a
//! writable root filesystem or a writable bind of a host directory would
//! become unwritable (libcontainer 0.7 has no idmapped mounts to translate
//! them). Such a bundle keeps host ids unless the policy asks with
//! `[process] userns = true`, and `generate` says why.
//!
//! Every generated bundle gets the same range: the pid, IPC and mount
//! namespaces keep two containers apart, but files two containers write to
//! one shared host path have the same owner (docs/security.md).

use oci_spec::runtime::{LinuxIdMappingBuilder, LinuxNamespace, LinuxNamespaceType, Spec};

use crate::policy::Policy;
use crate::Error;

/// The first host uid and gid of the mapped range: above the ranges
/// `useradd` hands out in `/etc/subuid` (from 100000 up, 65536 each), so
/// the container's ids are nobody's on the host.
pub const HOST_BASE: u32 = 0x7000_0000;
/// How many ids are mapped: the 16-bit range images use.
pub const SIZE: u32 = 65536;

/// What [`choose`] decided.
#[derive(Debug, PartialEq, Eq)]
pub enum Choice {
    /// Map container ids into a user namespace.
    Mapped,
    /// Keep host ids (container root is host root), and why.
    HostIds(String),
    /// Keep host ids: the policy says `userns = false`.
    Refused,
    /// The base spec already has a user namespace: left as it is.
    Base,
}

/// The first directory on the way to `path` (itself included) that a
/// mapped root cannot search, with its mode: host directories are owned
/// by host ids, which the namespace does not map, so only their "other"
/// execute bit lets it through (a `mktemp -d` bundle is 0700). `None` when
/// every one can be searched, or `path` cannot be looked at.
pub fn unsearchable(path: &std::path::Path) -> Option<(std::path::PathBuf, u32)> {
    use std::os::unix::fs::PermissionsExt;
    // Not made yet (a bundle directory `generate` is about to create):
    // from the nearest existing ancestor.
    let path = path
        .ancestors()
        .find_map(|a| std::fs::canonicalize(a).ok())?;
    path.ancestors().find_map(|d| {
        let mode = std::fs::metadata(d).ok()?.permissions().mode();
        (mode & 0o001 == 0).then(|| (d.to_path_buf(), mode & 0o7777))
    })
}

/// Whether `spec` (rendered from `policy`) gets a user namespace, its
/// relative root resolved against `bundle` where that is known.
pub fn choose_in(policy: &Policy, spec: &Spec, bundle: Option<&std::path::Path>) -> Choice {
    let choice = choose(policy, spec);
    if choice != Choice::Mapped || policy.userns == Some(true) {
        return choice;
    }
    let root = spec.root().as_ref().map(|r| r.path().clone());
    let root = match (root, bundle) {
        (Some(r), _) if r.is_absolute() => Some(r),
        (Some(r), Some(b)) => Some(b.join(r)),
        _ => None,
    };
    match root.as_deref().and_then(unsearchable) {
        Some((dir, mode)) => Choice::HostIds(format!(
            "the rootfs is out of a mapped root's reach: {} is mode {mode:o} (chmod o+x it to map container root)",
            dir.display()
        )),
        None => Choice::Mapped,
    }
}

/// Whether `spec` (rendered from `policy`) gets a user namespace.
pub fn choose(policy: &Policy, spec: &Spec) -> Choice {
    let linux = spec.linux().as_ref();
    let namespaces = linux
        .and_then(|l| l.namespaces().as_deref())
        .unwrap_or_default();
    if namespaces
        .iter()
        .any(|n| n.typ() == LinuxNamespaceType::User)
    {
        return Choice::Base;
    }
    match policy.userns {
        Some(true) => return Choice::Mapped,
        Some(false) => return Choice::Refused,
        None => {}
    }
    let annotations = spec.annotations().as_ref();
    if annotations.is_some_and(|a| a.contains_key(crate::annotations::EGRESS)) {
        return Choice::HostIds(
            "the egress gateway ([net] allow) binds its resolver files from the runtime's private state directory, which a mapped root cannot reach".into(),
        );
    }
    if policy.uid >= SIZE || policy.gid >= SIZE {
        return Choice::HostIds(format!(
            "[process] user {}:{} is outside the {SIZE} ids a user namespace maps",
            policy.uid, policy.gid
        ));
    }
    if spec
        .root()
        .as_ref()
        .is_some_and(|r| r.readonly() != Some(true))
    {
        return Choice::HostIds(
            "the root filesystem is writable, and its host-owned files would not be to a mapped root"
                .into(),
        );
    }
    let host_bind = spec
        .mounts()
        .as_deref()
        .unwrap_or_default()
        .iter()
        .find(|m| {
            let opts = m.options().as_deref().unwrap_or_default();
            let bind = m.typ().as_deref() == Some("bind")
                || opts.iter().any(|o| o == "bind" || o == "rbind");
            bind && !opts.iter().any(|o| o == "ro")
        });
    if let Some(m) = host_bind {
        return Choice::HostIds(format!(
            "{} is a writable bind of a host directory, whose files belong to host ids the namespace does not map",
            m.destination().display()
        ));
    }
    Choice::Mapped
}

/// What `explain` says of the container's ids, from the policy alone
/// (a `--base` spec can still keep host ids at `generate`).
pub fn explain(policy: &Policy) -> String {
    let spec = crate::render::render(policy, &crate::render::RenderOptions::default());
    match spec.as_ref().map(|s| choose(policy, s)) {
        Ok(Choice::Mapped) | Ok(Choice::Base) => format!(
            "in a container, ids 0-{} are host ids {HOST_BASE}-{} (a user namespace): container root is not host root",
            SIZE - 1,
            HOST_BASE + (SIZE - 1)
        ),
        Ok(Choice::Refused) => "in a container with host ids (userns = false): container root is host root".into(),
        Ok(Choice::HostIds(why)) => format!("in a container with host ids, since {why}: container root is host root"),
        Err(_) => "in a container with host ids unless generate can map them".into(),
    }
}

/// Give `spec` the default user namespace when [`choose`] says so; the
/// reason when it keeps host ids.
pub fn apply(
    policy: &Policy,
    spec: &mut Spec,
    bundle: Option<&std::path::Path>,
) -> Result<Option<String>, Error> {
    match choose_in(policy, spec, bundle) {
        Choice::Base | Choice::Refused => Ok(None),
        Choice::HostIds(why) => Ok(Some(why)),
        Choice::Mapped => {
            let range = LinuxIdMappingBuilder::default()
                .container_id(0u32)
                .host_id(HOST_BASE)
                .size(SIZE)
                .build()
                .map_err(|e| Error::Spec(e.to_string()))?;
            let mut linux = spec.linux().clone().unwrap_or_default();
            let mut namespaces = linux.namespaces().clone().unwrap_or_default();
            let mut user = LinuxNamespace::default();
            user.set_typ(LinuxNamespaceType::User);
            namespaces.push(user);
            let host_net = !namespaces
                .iter()
                .any(|n| n.typ() == LinuxNamespaceType::Network);
            linux.set_namespaces(Some(namespaces));
            if host_net {
                // A fresh sysfs needs the network namespace's owner, which
                // a mapped root is not on the host's: bind the host's /sys
                // read-only instead, as a rootless bundle does.
                if let Some(mounts) = spec.mounts().clone() {
                    spec.set_mounts(Some(
                        mounts
                            .into_iter()
                            .map(crate::rootless::sysfs_bind)
                            .collect(),
                    ));
                }
            }
            linux.set_uid_mappings(Some(vec![range]));
            linux.set_gid_mappings(Some(vec![range]));
            spec.set_linux(Some(linux));
            Ok(None)
        }
    }
}
