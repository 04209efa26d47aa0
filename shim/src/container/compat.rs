//! Spec constructs runc runs and libcontainer 0.7 refuses or applies
//! differently, rewritten (in the shadow bundle, see `create`) onto ones
//! libcontainer applies with runc's outcome:
//!
//! * `linux.rootfsPropagation`: libcontainer knows only `shared`, `private`,
//!   `slave` and `unbindable`, always applies them recursively, and makes
//!   `/` shared after `pivot_root` for `shared`. runc applies the flag as
//!   given (`private` is not recursive), then makes the mount holding the
//!   rootfs private if it is shared and bind-mounts the rootfs; so what the
//!   container's `/` ends up with depends only on that mount's propagation,
//!   which is computed here from the host's mountinfo and handed to
//!   libcontainer as `private` or `slave`.
//! * a non-bind mount without `source` (`{"destination": "/proc", "type":
//!   "proc"}`): libcontainer refuses it (`NoSource`); runc passes an empty
//!   source to mount(2), which is what the container then sees.

use std::path::Path;

use oci_spec::runtime::Spec;

use crate::error::{Failure, Result};

/// Rewrites `spec` in place; true if anything changed.
pub fn rewrite(spec: &mut Spec, rootfs: &Path, at: &Path) -> Result<bool> {
    let mut changed = default_mount_sources(spec);
    let Some(mut linux) = spec.linux().clone() else {
        return Ok(changed);
    };
    if let Some(value) = linux.rootfs_propagation().clone() {
        let flag = Flag::parse(&value).ok_or_else(|| {
            Failure::config(format!(
                "{}: linux.rootfsPropagation {value:?} is not one of private, rprivate, slave, rslave, shared, rshared, unbindable, runbindable",
                at.display()
            ))
        })?;
        let mountinfo = std::fs::read_to_string("/proc/self/mountinfo")?;
        let parent = parent_mount(&mountinfo, rootfs).ok_or_else(|| {
            Failure::runtime(format!("no mount holds the rootfs {}", rootfs.display()))
        })?;
        let applied = match parent.after(flag) {
            Propagation::Unbindable => {
                // runc's bind mount of the rootfs fails with EINVAL here.
                return Err(Failure::runtime(format!(
                    "rootfsPropagation {value:?}: the mount {} holding the rootfs would be unbindable, so the rootfs cannot be bind-mounted (EINVAL, as under runc); use private, slave or their r- forms",
                    parent.mount_point
                )));
            }
            // Made private by the runtime before the bind (runc and
            // libcontainer alike), so `/` ends up private.
            Propagation::Shared { .. } | Propagation::Private => "private",
            Propagation::Slave => "slave",
        };
        if applied != value {
            linux.set_rootfs_propagation(Some(applied.to_owned()));
            spec.set_linux(Some(linux));
            changed = true;
        }
    }
    Ok(changed)
}

/// runc's default for a non-bind mount without a source: empty.
fn default_mount_sources(spec: &mut Spec) -> bool {
    let Some(mut mounts) = spec.mounts().clone() else {
        return false;
    };
    let mut changed = false;
    for m in mounts.iter_mut() {
        let bind = m
            .options()
            .as_ref()
            .is_some_and(|o| o.iter().any(|o| o == "bind" || o == "rbind"));
        if m.source().is_none() && !bind {
            m.set_source(Some(std::path::PathBuf::new()));
            changed = true;
        }
    }
    if changed {
        spec.set_mounts(Some(mounts));
    }
    changed
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Private,
    Slave,
    Shared,
    Unbindable,
}

/// A `rootfsPropagation` value: the propagation type and whether it applies
/// to the whole tree under `/` (the `r` forms) or to `/` alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Flag {
    kind: Kind,
    recursive: bool,
}

impl Flag {
    fn parse(v: &str) -> Option<Self> {
        let (recursive, base) = match v.strip_prefix('r') {
            Some(b) if !b.is_empty() => (true, b),
            _ => (false, v),
        };
        let kind = match base {
            "private" => Kind::Private,
            "slave" => Kind::Slave,
            "shared" => Kind::Shared,
            "unbindable" => Kind::Unbindable,
            _ => return None,
        };
        Some(Flag { kind, recursive })
    }
}

/// A mount's propagation as mountinfo's optional fields say it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Propagation {
    Private,
    Slave,
    Shared { slave: bool },
    Unbindable,
}

impl Propagation {
    fn from_fields(fields: &[&str]) -> Self {
        let shared = fields.iter().any(|f| f.starts_with("shared:"));
        let slave = fields.iter().any(|f| f.starts_with("master:"));
        if fields.contains(&"unbindable") {
            Propagation::Unbindable
        } else if shared {
            Propagation::Shared { slave }
        } else if slave {
            Propagation::Slave
        } else {
            Propagation::Private
        }
    }

    /// mount(2)'s change of propagation type (see the kernel's
    /// sharedsubtree.rst): making a shared slave shared keeps it a slave,
    /// making a shared mount a slave keeps no peer group.
    fn with(self, kind: Kind) -> Self {
        match (kind, self) {
            (Kind::Private, _) => Propagation::Private,
            (Kind::Unbindable, _) => Propagation::Unbindable,
            (Kind::Slave, Propagation::Shared { .. } | Propagation::Slave) => Propagation::Slave,
            (Kind::Slave, p) => p,
            (Kind::Shared, Propagation::Slave | Propagation::Shared { slave: true }) => {
                Propagation::Shared { slave: true }
            }
            (Kind::Shared, _) => Propagation::Shared { slave: false },
        }
    }
}

/// The mount holding the rootfs, in the host's mount namespace.
#[derive(Debug)]
struct ParentMount {
    mount_point: String,
    propagation: Propagation,
}

impl ParentMount {
    /// Its propagation once runc's first `mount("", "/", flag)` is done: a
    /// flag without `r` changes `/` only.
    fn after(&self, flag: Flag) -> Propagation {
        if flag.recursive || self.mount_point == "/" {
            self.propagation.with(flag.kind)
        } else {
            self.propagation
        }
    }
}

/// The last-mounted entry whose mount point is the longest prefix of
/// `rootfs` (canonical).
fn parent_mount(mountinfo: &str, rootfs: &Path) -> Option<ParentMount> {
    let mut best: Option<ParentMount> = None;
    for line in mountinfo.lines() {
        let Some((left, _)) = line.split_once(" - ") else {
            continue;
        };
        let fields: Vec<&str> = left.split(' ').collect();
        let Some(mount_point) = fields.get(4).map(|f| crate::cgroups::remove::unescape(f)) else {
            continue;
        };
        if !rootfs.starts_with(&mount_point) {
            continue;
        }
        let longer = best
            .as_ref()
            .is_none_or(|b| mount_point.len() >= b.mount_point.len());
        if longer {
            best = Some(ParentMount {
                propagation: Propagation::from_fields(fields.get(6..).unwrap_or(&[])),
                mount_point,
            });
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    const INFO: &str = "27 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw\n\
                        40 27 0:50 / /srv rw master:7 - tmpfs tmpfs rw\n\
                        41 27 0:51 / /srv/x\\040y rw - tmpfs tmpfs rw\n";

    #[test]
    fn parent_is_the_longest_prefix() {
        let p = parent_mount(INFO, Path::new("/srv/b/rootfs")).unwrap();
        assert_eq!(
            (p.mount_point.as_str(), p.propagation),
            ("/srv", Propagation::Slave)
        );
        let p = parent_mount(INFO, Path::new("/srv/x y/rootfs")).unwrap();
        assert_eq!(p.propagation, Propagation::Private);
        let p = parent_mount(INFO, Path::new("/home/rootfs")).unwrap();
        assert_eq!(p.propagation, Propagation::Shared { slave: false });
    }

    #[test]
    fn non_recursive_flags_leave_submounts() {
        let slave = ParentMount {
            mount_point: "/srv".into(),
            propagation: Propagation::Slave,
        };
        assert_eq!(
            slave.after(Flag::parse("private").unwrap()),
            Propagation::Slave
        );
        assert_eq!(
            slave.after(Flag::parse("rprivate").unwrap()),
            Propagation::Private
        );
        assert!(Flag::parse("r").is_none() && Flag::parse("rfoo").is_none());
    }
}
