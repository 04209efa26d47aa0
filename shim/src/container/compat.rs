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
//! * a hook without `env` run by the runtime (createRuntime, prestart,
//!   poststart): libcontainer clears its environment; runc (Go's exec with
//!   a nil Env) hands it the runtime's own. The runtime's environment is
//!   written into the hook (poststop hooks get the deleting command's, in
//!   `poststop::run`).
//! * a mount destination through a symlink of the rootfs that points at
//!   nothing yet: libcontainer opens it without following (ENOTDIR); runc
//!   resolves it inside the rootfs and creates the target. The destination
//!   is rewritten to its resolution (`mounts::resolve`, which never leaves
//!   the rootfs) when no earlier mount covers the path.
//! * `process.scheduler.flags` `SCHED_FLAG_RESET_ON_FORK` (the spec's name):
//!   oci-spec 0.10 spells it `SCHED_RESET_ON_FORK` and refuses the spec's;
//!   [`parse_spec`] renames it before parsing.
//! * a realtime `process.scheduler` (SCHED_FIFO, SCHED_RR) on a host with
//!   realtime group scheduling (the v1 cpu controller's cpu.rt_runtime_us):
//!   the container's cgroup has no realtime budget, so libcontainer's
//!   sched_setattr fails (EPERM); runc 1.1.5 ignores process.scheduler. It
//!   is dropped with a warning; other policies (and realtime ones on hosts
//!   without group budgets) are applied by libcontainer.
//!
//! Two are taken by sandboy's own `createContainer` hook
//! (`rootfs_hook`, which says why): a bind mount at `/dev`, and a
//! missing `process.cwd` below a mount.
//!
//! And three done on the rootfs itself before the build ([`prepare_rootfs`]),
//! both resolved inside the rootfs and skipped when a mount covers the path
//! (what runc then makes lands on that mount, after it is mounted; for the
//! cwd, the hook makes it there):
//! * a missing `process.cwd` is created, as runc does (libcontainer only
//!   chdirs, ENOENT);
//! * `linux.devices` outside /dev, which libcontainer refuses
//!   (InvalidDevicePath): made in the rootfs as runc makes them (mknod,
//!   fileMode, uid, gid; an existing entry is kept) and taken out of the
//!   spec libcontainer sees. Not with a user namespace (runc bind-mounts
//!   the host's node there; libcontainer still refuses). As under runc,
//!   opening one still needs a device rule: nothing about device access
//!   changes.
//! * with a user namespace, the mount points missing from the rootfs
//!   (directories, or empty files for binds of files), when root creates
//!   the container: libcontainer makes them from inside the namespace,
//!   where the mapped root cannot write the host-owned rootfs (EACCES,
//!   "create next directory component failed"); runc as root makes them
//!   too. A point on an earlier mount (a tmpfs the mapped root owns) is
//!   left to libcontainer.

use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use oci_spec::runtime::{Hook, LinuxDevice, LinuxDeviceType, LinuxNamespaceType, Spec};
use rustix::fs::{AtFlags, FileType, Mode, OFlags};

use crate::error::{Failure, Result};

/// Rewrites `spec` in place; true if anything changed.
pub fn rewrite(id: &str, spec: &mut Spec, rootfs: &Path, at: &Path) -> Result<bool> {
    let mut changed = default_mount_sources(spec);
    changed |= super::rootfs_hook::install(spec, rootfs)?;
    changed |= realtime_without_budget(id, spec);
    changed |= hook_environment(spec);
    changed |= resolved_destinations(spec, rootfs);
    changed |= drop_rootfs_devices(spec, rootfs);
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

/// Drops a realtime scheduler the container's cgroup cannot grant.
fn realtime_without_budget(id: &str, spec: &mut Spec) -> bool {
    use oci_spec::runtime::LinuxSchedulerPolicy as P;
    let Some(mut process) = spec.process().clone() else {
        return false;
    };
    let realtime = process
        .scheduler()
        .as_ref()
        .is_some_and(|s| matches!(s.policy(), P::SchedFifo | P::SchedRr));
    if !realtime || !rt_group_budgets() {
        return false;
    }
    tracing::warn!(
        id,
        "process.scheduler: a realtime policy cannot be granted here (the container's cgroup has no cpu.rt_runtime_us budget); ignored, as runc 1.1.5 ignores process.scheduler"
    );
    process.set_scheduler(None);
    spec.set_process(Some(process));
    true
}

/// Whether the host gives each cgroup its own realtime budget (0 for a new
/// one), i.e. the v1 cpu controller has cpu.rt_runtime_us.
fn rt_group_budgets() -> bool {
    use libcgroups::v1::{util::get_subsystem_mount_point, ControllerType};
    get_subsystem_mount_point(&ControllerType::Cpu)
        .is_ok_and(|m| m.join("cpu.rt_runtime_us").exists())
}

/// The runtime's environment for the runtime-side hooks without `env`.
fn hook_environment(spec: &mut Spec) -> bool {
    let Some(mut hooks) = spec.hooks().clone() else {
        return false;
    };
    let mut changed = false;
    let mut fill = |list: Option<Vec<Hook>>| {
        list.map(|mut list| {
            for h in list.iter_mut().filter(|h| h.env().is_none()) {
                h.set_env(Some(runtime_env()));
                changed = true;
            }
            list
        })
    };
    let create_runtime = fill(hooks.create_runtime().clone());
    hooks.set_create_runtime(create_runtime);
    #[allow(deprecated)]
    {
        let prestart = fill(hooks.prestart().clone());
        hooks.set_prestart(prestart);
    }
    let poststart = fill(hooks.poststart().clone());
    hooks.set_poststart(poststart);
    if changed {
        spec.set_hooks(Some(hooks));
    }
    changed
}

/// This process's environment as `KEY=value` strings (what runc's hooks
/// inherit); entries that are not UTF-8 cannot be written in config.json.
pub fn runtime_env() -> Vec<String> {
    std::env::vars_os()
        .filter_map(|(k, v)| {
            Some(format!(
                "{}={}",
                k.into_string().ok()?,
                v.into_string().ok()?
            ))
        })
        .collect()
}

/// Mount destinations through a rootfs symlink, rewritten to their
/// resolution inside the rootfs (as runc's securejoin does), unless an
/// earlier mount covers the path: then what it resolves to is only known
/// once that mount is made, and libcontainer is left to it.
fn resolved_destinations(spec: &mut Spec, rootfs: &Path) -> bool {
    let Some(mut mounts) = spec.mounts().clone() else {
        return false;
    };
    let mut changed = false;
    let mut earlier: Vec<PathBuf> = Vec::new();
    for m in mounts.iter_mut() {
        let literal = super::mounts::normalize(m.destination());
        let covered = |p: &Path| earlier.iter().any(|e| p.starts_with(e));
        if let Ok(resolved) = super::mounts::resolve(rootfs, m.destination()) {
            if resolved != literal && !covered(&literal) && !covered(&resolved) {
                m.set_destination(resolved);
                changed = true;
            }
        }
        earlier.push(literal);
    }
    if changed {
        spec.set_mounts(Some(mounts));
    }
    changed
}

/// oci-spec 0.10's name for the runtime-spec's `SCHED_FLAG_RESET_ON_FORK`.
const RESET_ON_FORK: (&str, &str) = ("\"SCHED_FLAG_RESET_ON_FORK\"", "\"SCHED_RESET_ON_FORK\"");

/// Parses config.json with the spec's scheduler flag name accepted: where
/// serde refuses it as an unknown variant (only the flags field is of that
/// type), that one token is renamed and the parse retried, so every other
/// error keeps its line and column.
pub fn parse_spec(text: &[u8]) -> serde_json::Result<Spec> {
    let mut text = text.to_vec();
    loop {
        let err = match serde_json::from_slice::<Spec>(&text) {
            Ok(spec) => return Ok(spec),
            Err(e) => e,
        };
        let unknown = err
            .to_string()
            .contains("unknown variant `SCHED_FLAG_RESET_ON_FORK`");
        match unknown
            .then(|| token_before(&text, &err, RESET_ON_FORK.0))
            .flatten()
        {
            Some(at) => {
                text.splice(at..at + RESET_ON_FORK.0.len(), RESET_ON_FORK.1.bytes());
            }
            None => return Err(err),
        }
    }
}

/// The byte offset of the last `token` ending at or before the error's
/// line and column.
fn token_before(text: &[u8], err: &serde_json::Error, token: &str) -> Option<usize> {
    let line_start = text
        .split_inclusive(|&b| b == b'\n')
        .take(err.line().checked_sub(1)?)
        .map(<[u8]>::len)
        .sum::<usize>();
    let end = (line_start + err.column()).min(text.len());
    let before = &text[line_start..end];
    before
        .windows(token.len())
        .rposition(|w| w == token.as_bytes())
        .map(|i| line_start + i)
}

/// Done on the rootfs before the build: a missing `process.cwd` created
/// (mode 0755, as runc's MkdirAll) and the devices outside /dev made.
pub fn prepare_rootfs(spec: &Spec, rootfs: &Path, at: &Path) -> Result<()> {
    let Some(process) = spec.process() else {
        return Ok(());
    };
    let cwd = process.cwd();
    let err = |e: std::io::Error| {
        Failure::config(format!(
            "{}: process.cwd {}: cannot create it inside the rootfs: {e}; create it in the image or pick an existing directory",
            at.display(),
            cwd.display()
        ))
    };
    let resolved = super::mounts::resolve(rootfs, cwd).map_err(err)?;
    if !super::rootfs_hook::covered_by_mount(spec, &resolved) {
        mkdir_all_in(rootfs, &resolved).map_err(err)?;
    }
    mount_points(spec, rootfs, at)?;
    for (dev, resolved) in rootfs_devices(spec, rootfs) {
        make_device(rootfs, &dev, &resolved).map_err(|e| {
            Failure::runtime(format!(
                "{}: linux.devices {}: cannot make it in the rootfs: {e}",
                at.display(),
                dev.path().display()
            ))
        })?;
    }
    Ok(())
}

/// The missing mount points of a user-namespaced container made by root
/// (module doc), each resolved inside the rootfs.
fn mount_points(spec: &Spec, rootfs: &Path, at: &Path) -> Result<()> {
    if !super::bundle::root_maps_a_user_namespace(spec) {
        return Ok(());
    }
    let mounts = spec.mounts().as_deref().unwrap_or_default();
    for (i, m) in mounts.iter().enumerate() {
        let earlier = &mounts[..i];
        let Ok(resolved) = super::mounts::resolve(rootfs, m.destination()) else {
            continue; // refused with its message by mounts::check
        };
        let on_earlier = earlier.iter().any(|e| {
            let d = super::mounts::normalize(e.destination());
            d != Path::new("/") && resolved.starts_with(&d)
        });
        if on_earlier || resolved == Path::new("/") {
            continue;
        }
        let file_source = m
            .source()
            .as_deref()
            .filter(|_| super::mounts::is_bind(m))
            .is_some_and(|s| std::fs::metadata(s).is_ok_and(|md| !md.is_dir()));
        let made = if file_source {
            file_in(rootfs, &resolved).map(drop)
        } else {
            mkdir_all_in(rootfs, &resolved).map(drop)
        };
        made.map_err(|e| {
            Failure::runtime(format!(
                "{}: mounts[{i}].destination {}: cannot make the mount point in the rootfs: {e}",
                at.display(),
                m.destination().display()
            ))
        })?;
    }
    Ok(())
}

/// The devices outside /dev sandboy makes in the rootfs, each with its path
/// resolved inside the rootfs.
fn rootfs_devices(spec: &Spec, rootfs: &Path) -> Vec<(LinuxDevice, PathBuf)> {
    let Some(linux) = spec.linux() else {
        return Vec::new();
    };
    let userns = linux
        .namespaces()
        .iter()
        .flatten()
        .any(|n| n.typ() == LinuxNamespaceType::User);
    if userns {
        return Vec::new();
    }
    linux
        .devices()
        .iter()
        .flatten()
        .filter(|d| !d.path().starts_with("/dev"))
        .filter_map(|d| {
            let resolved = super::mounts::resolve(rootfs, d.path()).ok()?;
            let made = resolved.parent().is_some()
                && !super::rootfs_hook::covered_by_mount(spec, &resolved);
            made.then(|| (d.clone(), resolved))
        })
        .collect()
}

/// The spec libcontainer sees without the devices `prepare_rootfs` makes.
fn drop_rootfs_devices(spec: &mut Spec, rootfs: &Path) -> bool {
    let made: Vec<PathBuf> = rootfs_devices(spec, rootfs)
        .into_iter()
        .map(|(d, _)| d.path().clone())
        .collect();
    let Some(mut linux) = spec.linux().clone().filter(|_| !made.is_empty()) else {
        return false;
    };
    let mut devices = linux.devices().clone().unwrap_or_default();
    devices.retain(|d| !made.contains(d.path()));
    linux.set_devices(Some(devices));
    spec.set_linux(Some(linux));
    true
}

/// runc's mknod of one device: type, major:minor, fileMode (0666 if
/// unset, no umask), uid and gid; an existing entry is left as it is.
fn make_device(rootfs: &Path, dev: &LinuxDevice, resolved: &Path) -> std::io::Result<()> {
    let (Some(parent), Some(name)) = (resolved.parent(), resolved.file_name()) else {
        return Err(std::io::Error::from_raw_os_error(libc::EINVAL));
    };
    let dir = mkdir_all_in(rootfs, parent)?;
    let typ = match dev.typ() {
        LinuxDeviceType::B => FileType::BlockDevice,
        LinuxDeviceType::P => FileType::Fifo,
        _ => FileType::CharacterDevice,
    };
    let number =
        |n: i64| u32::try_from(n).map_err(|_| std::io::Error::from_raw_os_error(libc::EINVAL));
    let rdev = rustix::fs::makedev(number(dev.major())?, number(dev.minor())?);
    let mode = Mode::from_raw_mode(dev.file_mode().unwrap_or(0o666) & 0o7777);
    // runc makes devices with umask 0; create is single-threaded here.
    let old = nix::sys::stat::umask(nix::sys::stat::Mode::empty());
    let made = rustix::fs::mknodat(&dir, name, typ, mode, rdev);
    nix::sys::stat::umask(old);
    match made {
        Ok(()) => {}
        Err(rustix::io::Errno::EXIST) => return Ok(()),
        Err(e) => return Err(e.into()),
    }
    // -1 is chown's "unchanged", as an unset one.
    let uid = dev
        .uid()
        .filter(|&u| u != u32::MAX)
        .map(rustix::fs::Uid::from_raw);
    let gid = dev
        .gid()
        .filter(|&g| g != u32::MAX)
        .map(rustix::fs::Gid::from_raw);
    rustix::fs::chownat(&dir, name, uid, gid, AtFlags::SYMLINK_NOFOLLOW)?;
    Ok(())
}

/// `path` (a resolved container path) made below `rootfs`, one directory at
/// a time without following a symlink: one swapped in since the path was
/// resolved fails (ENOTDIR: O_PATH with O_NOFOLLOW opens the link itself)
/// instead of leading out of the rootfs.
pub(super) fn mkdir_all_in(rootfs: &Path, path: &Path) -> std::io::Result<OwnedFd> {
    let flags = OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::PATH;
    let mut dir = rustix::fs::open(rootfs, flags, Mode::empty())?;
    for c in path.components().skip(1) {
        let name = c.as_os_str();
        dir = match rustix::fs::openat(&dir, name, flags, Mode::empty()) {
            Ok(d) => d,
            Err(rustix::io::Errno::NOENT) => {
                match rustix::fs::mkdirat(&dir, name, Mode::from_raw_mode(0o755)) {
                    Ok(()) | Err(rustix::io::Errno::EXIST) => {}
                    Err(e) => return Err(e.into()),
                }
                rustix::fs::openat(&dir, name, flags, Mode::empty())?
            }
            Err(e) => return Err(e.into()),
        };
    }
    Ok(dir)
}

/// `path` (a resolved container path) below `rootfs` as a file, its
/// parents made as [`mkdir_all_in`] makes them; an existing entry is kept.
pub(super) fn file_in(rootfs: &Path, path: &Path) -> std::io::Result<OwnedFd> {
    let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
        return Err(std::io::Error::other("not a file path"));
    };
    let dir = mkdir_all_in(rootfs, parent)?;
    // O_PATH: an existing device node is never opened for real.
    let path = OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    match rustix::fs::openat(&dir, name, path, Mode::empty()) {
        Err(rustix::io::Errno::NOENT) => {
            let create = OFlags::CREATE | OFlags::EXCL | OFlags::WRONLY | OFlags::CLOEXEC;
            drop(rustix::fs::openat(
                &dir,
                name,
                create,
                Mode::from_raw_mode(0o644),
            )?);
            Ok(rustix::fs::openat(&dir, name, path, Mode::empty())?)
        }
        r => Ok(r?),
    }
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
    fn the_specs_scheduler_flag_name_parses_and_other_errors_keep_their_place() {
        let mut v = serde_json::to_value(Spec::default()).unwrap();
        v["process"]["args"] = serde_json::json!(["SCHED_FLAG_RESET_ON_FORK"]);
        v["process"]["scheduler"] =
            serde_json::json!({"policy": "SCHED_OTHER", "flags": ["SCHED_FLAG_RESET_ON_FORK"]});
        let text = serde_json::to_vec_pretty(&v).unwrap();
        let spec = parse_spec(&text).unwrap();
        let p = spec.process().as_ref().unwrap();
        assert_eq!(
            p.scheduler().as_ref().unwrap().flags().as_deref(),
            Some(&[oci_spec::runtime::LinuxSchedulerFlag::SchedResetOnFork][..])
        );
        // Only the flags field is renamed.
        assert_eq!(
            p.args().as_deref(),
            Some(&["SCHED_FLAG_RESET_ON_FORK".to_owned()][..])
        );
        v["process"]["scheduler"]["flags"] = serde_json::json!(["SCHED_FLAG_NOPE"]);
        let text = serde_json::to_vec_pretty(&v).unwrap();
        let want = serde_json::from_slice::<Spec>(&text).unwrap_err();
        let got = parse_spec(&text).unwrap_err();
        assert_eq!((got.line(), got.column()), (want.line(), want.column()));
    }

    #[test]
    fn directories_are_made_inside_the_rootfs_only() {
        let r = std::env::temp_dir().join(format!("sandboy-compat-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&r);
        std::fs::create_dir_all(r.join("rootfs/a")).unwrap();
        std::fs::create_dir_all(r.join("host")).unwrap();
        let rootfs = r.join("rootfs");
        std::os::unix::fs::symlink(r.join("host"), rootfs.join("a/out")).unwrap();
        mkdir_all_in(&rootfs, Path::new("/a/b/c")).unwrap();
        assert!(rootfs.join("a/b/c").is_dir());
        // A symlink on the way is never followed (the resolver rewrote it).
        let e = mkdir_all_in(&rootfs, Path::new("/a/out/x")).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ENOTDIR));
        assert!(!r.join("host/x").exists());
        // Resolved first, it lands inside the rootfs.
        let resolved = super::super::mounts::resolve(&rootfs, Path::new("/a/out/x")).unwrap();
        mkdir_all_in(&rootfs, &resolved).unwrap();
        assert!(rootfs.join(resolved.strip_prefix("/").unwrap()).is_dir());
        assert!(!r.join("host/x").exists());
        let _ = std::fs::remove_dir_all(&r);
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
