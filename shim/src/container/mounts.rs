//! Mount destinations resolved inside the rootfs, checked before anything
//! is created (issue 14, the CVE-2025-52881 class): an image symlink such as
//! `/evil -> /proc/sys/kernel` must not turn a bind at `/evil` into a mount
//! over procfs or sysfs.
//!
//! Each destination is walked component by component on the host's view of
//! the rootfs; a symlink's target is read (never followed by the host's
//! resolver) and resolved against the rootfs root, so an absolute or `..`
//! target can never leave the rootfs. What remains after the first missing
//! component is taken literally (libcontainer creates it).
//!
//! A policy container's binds are also restricted below their source
//! ([`restrict_recursively`]): libcontainer applies `ro` and friends to a
//! bind's top mount only.

use std::ffi::OsString;
use std::fs;
use std::path::{Component, Path, PathBuf};

use oci_spec::runtime::Mount;

use crate::error::{Failure, Result};

/// Symlinks followed for one destination before giving up (the kernel's
/// MAXSYMLINKS).
const MAX_LINKS: usize = 40;

/// Files under /proc that runc lets a bind cover (lxcfs and friends).
const PROC_ALLOWED: &[&str] = &[
    "/proc/cpuinfo",
    "/proc/diskstats",
    "/proc/meminfo",
    "/proc/stat",
    "/proc/swaps",
    "/proc/uptime",
    "/proc/loadavg",
    "/proc/slabinfo",
    "/proc/net/dev",
    "/proc/sys/kernel/ns_last_pid",
];

/// `dest` (absolute, inside the container) with every symlink in the
/// rootfs resolved, as a container path.
pub fn resolve(rootfs: &Path, dest: &Path) -> std::io::Result<PathBuf> {
    resolve_through(rootfs, dest, &[])
}

/// [`resolve`] with the binds mounted before (container destination, host
/// source): below a bind's destination the links are read in its source,
/// as the container will see them. A volume holding `x ->
/// /proc/sys/kernel`, bound at `/a`, took a tmpfs at `/a/x` onto the
/// container's `/proc/sys/kernel` past a check of the bare rootfs (a red
/// team).
pub fn resolve_through(
    rootfs: &Path,
    dest: &Path,
    binds: &[(PathBuf, PathBuf)],
) -> std::io::Result<PathBuf> {
    let mut todo: Vec<OsString> = components(dest);
    todo.reverse(); // a stack: next component last
    let mut cur: Vec<OsString> = Vec::new();
    let mut links = 0;
    while let Some(name) = todo.pop() {
        if name == ".." {
            cur.pop();
            continue;
        }
        cur.push(name);
        let path = cur.iter().fold(PathBuf::from("/"), |p, c| p.join(c));
        // A bind's destination is its mount point, whatever is beneath.
        if binds.iter().any(|(d, _)| *d == path) {
            continue;
        }
        let host = match binds
            .iter()
            .filter(|(d, _)| path.starts_with(d))
            .max_by_key(|(d, _)| d.components().count())
        {
            Some((d, src)) => src.join(path.strip_prefix(d).unwrap_or(&path)),
            None => cur.iter().fold(rootfs.to_path_buf(), |p, c| p.join(c)),
        };
        let meta = match fs::symlink_metadata(&host) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                // The rest does not exist yet: taken literally.
                while let Some(rest) = todo.pop() {
                    if rest == ".." {
                        cur.pop();
                    } else {
                        cur.push(rest);
                    }
                }
                break;
            }
            Err(e) => return Err(e),
        };
        if !meta.file_type().is_symlink() {
            continue;
        }
        links += 1;
        if links > MAX_LINKS {
            return Err(std::io::Error::from_raw_os_error(libc::ELOOP));
        }
        let target = fs::read_link(&host)?;
        cur.pop();
        if target.is_absolute() {
            cur.clear();
        }
        let mut more = components(&target);
        more.reverse();
        todo.extend(more);
    }
    Ok(cur.iter().fold(PathBuf::from("/"), |p, c| p.join(c)))
}

/// Normal and `..` components of a path, `.` and the root dropped (`..`
/// kept: a link may stand before it).
pub fn components(p: &Path) -> Vec<OsString> {
    p.components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n.to_os_string()),
            Component::ParentDir => Some(OsString::from("..")),
            _ => None,
        })
        .collect()
}

/// Whether a mount may sit at its resolved destination: procfs and sysfs
/// only at /proc and /sys, cgroup filesystems under /sys/fs/cgroup, binds
/// only over runc's few /proc files, and nothing reached through a symlink
/// into /proc or /sys.
fn allowed(m: &Mount, literal: &Path, resolved: &Path) -> bool {
    let typ = m.typ().as_deref().unwrap_or_default();
    let redirected = literal != resolved;
    if resolved.starts_with("/proc") {
        return (typ == "proc" && resolved == Path::new("/proc"))
            || (!redirected && PROC_ALLOWED.iter().any(|p| resolved == Path::new(p)));
    }
    if resolved.starts_with("/sys") {
        return !redirected
            && (resolved == Path::new("/sys")
                || resolved.starts_with("/sys/fs/cgroup")
                || typ != "sysfs");
    }
    true
}

/// Refuses the spec if a mount destination resolves into /proc or /sys
/// where it may not (config error: the bundle is at fault, nothing exists
/// yet). runc 1.1.5 refuses the /proc cases from its init, as a runtime
/// failure after create began.
pub fn check(mounts: &[Mount], rootfs: &Path, at: &str) -> Result<()> {
    for (i, m) in mounts.iter().enumerate() {
        let dest = m.destination();
        let literal = normalize(dest);
        let binds: Vec<(PathBuf, PathBuf)> = mounts[..i]
            .iter()
            .filter(|b| is_bind(b))
            .filter_map(|b| Some((normalize(b.destination()), b.source().clone()?)))
            .collect();
        let resolved = resolve_through(rootfs, dest, &binds).map_err(|e| {
            Failure::config(format!(
                "{at}: mounts[{i}].destination {}: cannot resolve it inside the rootfs: {e}; fix the rootfs's symlinks",
                dest.display()
            ))
        })?;
        if !allowed(m, &literal, &resolved) {
            let how = if literal == resolved {
                String::new()
            } else {
                format!(
                    " (through a symlink in the rootfs or an earlier bind's source, to {})",
                    resolved.display()
                )
            };
            return Err(Failure::config(format!(
                "{at}: mounts[{i}].destination {} resolves into {}{how}, where mounts are refused (they could cover procfs or sysfs files); mount it elsewhere or remove the symlink from the image or volume",
                dest.display(),
                if resolved.starts_with("/proc") { "/proc" } else { "/sys" },
            )));
        }
    }
    Ok(())
}

/// Whether a mount binds a host path.
pub(super) fn is_bind(m: &Mount) -> bool {
    m.typ().as_deref() == Some("bind")
        || m.options()
            .iter()
            .flatten()
            .any(|o| o == "bind" || o == "rbind")
}

/// Binds nested in an earlier bind, as spec-gen renders a write subpath
/// of a read-only `[[mount]]` (source `P/sub` at `D/sub` after `P` at
/// `D`): the part below `P` lies in a directory the container (or the
/// repository it was checked out from) may write, so a symlink planted
/// there (`sub -> /root`) would bind any host directory read-write. Such a
/// source must resolve to exactly `P` and the same names, no link below
/// `P` (a red team bound a root-only host directory this way). Checked at
/// `create`, before anything is mounted.
pub fn check_nested_sources(mounts: &[Mount], at: &str) -> Result<()> {
    for (i, m) in mounts.iter().enumerate() {
        let Some(source) = m.source().as_deref().filter(|_| is_bind(m)) else {
            continue;
        };
        let dest = normalize(m.destination());
        let parent = mounts[..i].iter().enumerate().rev().find_map(|(j, p)| {
            let psrc = p.source().as_deref().filter(|_| is_bind(p))?;
            let below = source.strip_prefix(psrc).ok()?;
            let pdest = normalize(p.destination());
            (!below.as_os_str().is_empty() && dest == pdest.join(below)).then_some((j, psrc, below))
        });
        let Some((j, psrc, below)) = parent else {
            continue;
        };
        let (Ok(real), Ok(preal)) = (fs::canonicalize(source), fs::canonicalize(psrc)) else {
            continue; // a missing source gets libcontainer's own error
        };
        if real != preal.join(below) {
            return Err(Failure::config(format!(
                "{at}: mounts[{i}].source {} goes through a symlink below mounts[{j}].source {} (to {}): a container or repository that wrote there could bind any host directory; remove the link or bind the real directory",
                source.display(),
                psrc.display(),
                real.display()
            )));
        }
    }
    Ok(())
}

/// A policy container's binds restricted all the way down: `ro`,
/// `nosuid`, `nodev` and `noexec` also as `rro`, `rnosuid`, `rnodev`,
/// `rnoexec` ([`recursive_restrictions`]), as spec-gen renders them, so a
/// hand-written config.json or an engine's spec under a node policy gets
/// the same guarantee. libcontainer applies the plain flags to a bind's
/// top mount only: a host mount nested below a read-only bind's source
/// stayed writable, and container root (host root without a user
/// namespace) chmodded host files there, which Landlock does not govern.
///
/// The recursive flags hold only for the mounts there are when they are
/// applied, so the container's mounts are also made private
/// (`rootfsPropagation`, whatever the spec asked): under libcontainer's
/// default (`rslave`, as runc's) a host mount made below a shared source
/// after `create` arrived with the host's own flags, and a red team's
/// container root chmodded the files of a tmpfs mounted there later.
/// True if the spec changed.
///
/// [`recursive_restrictions`]: sandboy_spec_gen::render::recursive_restrictions
pub fn restrict_recursively(spec: &mut oci_spec::runtime::Spec) -> bool {
    let mut changed = no_propagation(spec);
    let Some(mut mounts) = spec.mounts().clone() else {
        return changed;
    };
    for m in mounts.iter_mut().filter(|m| is_bind(m)) {
        let mut options = m.options().clone().unwrap_or_default();
        if sandboy_spec_gen::render::recursive_restrictions(&mut options) {
            m.set_options(Some(options));
            changed = true;
        }
    }
    if changed {
        spec.set_mounts(Some(mounts));
    }
    changed
}

/// The container's mount tree private: no host mount event reaches it
/// after create. libcontainer's name for `MS_PRIVATE | MS_REC` is
/// `private` (it applies every propagation recursively; see `compat`).
fn no_propagation(spec: &mut oci_spec::runtime::Spec) -> bool {
    let Some(mut linux) = spec.linux().clone() else {
        return false;
    };
    if linux.rootfs_propagation().as_deref() == Some("private") {
        return false;
    }
    linux.set_rootfs_propagation(Some("private".to_owned()));
    spec.set_linux(Some(linux));
    true
}

/// The directories between a writable bind and a path it hides
/// (`linux.maskedPaths` below it), outermost first, to be pinned: each
/// becomes a bind of itself, a mount point, which `rename(2)` and
/// `rmdir(2)` refuse (EBUSY). A hidden file's mask is a mount at its path
/// made at create; a red team's step renamed the masked file's parent
/// directory in the shared checkout, and the next container, masking a
/// path that no longer existed, read the secret at the new name. A link
/// among those directories is refused (the error names it): the mask
/// follows it, the pins would not, and a red team renamed the directory
/// it pointed to and read the secret there. Missing directories are not
/// planned (the mask then covers nothing). The pins are made by the rootfs hook, from one fd
/// each (`rootfs_hook`): handed to libcontainer as binds by path, a
/// sibling container swapping a directory there with a link between this
/// check and the mount got a host directory of its choice bound read-write
/// (a red team).
pub fn hidden_ancestor_pins(spec: &oci_spec::runtime::Spec, rootfs: &Path) -> Result<Vec<PathBuf>> {
    let masked = spec
        .linux()
        .as_ref()
        .and_then(|l| l.masked_paths().clone())
        .unwrap_or_default();
    let Some(mounts) = spec.mounts().clone() else {
        return Ok(Vec::new());
    };
    let mut pins: Vec<(usize, PathBuf)> = Vec::new();
    let binds: Vec<(PathBuf, PathBuf)> = mounts
        .iter()
        .filter(|b| is_bind(b))
        .filter_map(|b| Some((normalize(b.destination()), b.source().clone()?)))
        .collect();
    let writable = |p: &Path| {
        mounts.iter().any(|m| {
            let d = normalize(m.destination());
            is_bind(m)
                && !m.options().iter().flatten().any(|o| o == "ro")
                && p.starts_with(&d)
                && p != d
        })
    };
    for hidden in masked.iter().map(|h| normalize(Path::new(h))) {
        // Where the mask will land, through the image's links and every
        // bind's: a link in a read-only bind or in the image pointing into
        // a writable bind left the real directory unpinned (a red team
        // renamed it and read the secret).
        let resolved = resolve_through(rootfs, &hidden, &binds).map_err(|e| {
            Failure::config(format!(
                "hidden path {}: cannot resolve it through the rootfs and its binds: {e}; fix the links on the way",
                hidden.display()
            ))
        })?;
        if resolved != hidden && writable(&resolved) {
            return Err(Failure::config(format!(
                "hidden path {} goes through a link (to {}), into a directory containers may write: the mask follows it, and that directory could be renamed from under the mask; name the real path in [fs] hide (linux.maskedPaths)",
                hidden.display(),
                resolved.display()
            )));
        }
        // The innermost writable bind holding the hidden path.
        let Some((i, bind)) = mounts.iter().enumerate().rev().find(|(_, m)| {
            let d = normalize(m.destination());
            is_bind(m)
                && !m.options().iter().flatten().any(|o| o == "ro")
                && hidden.starts_with(&d)
                && hidden != d
        }) else {
            continue;
        };
        let (Some(src), dest) = (bind.source().clone(), normalize(bind.destination())) else {
            continue;
        };
        let Ok(rel) = hidden.strip_prefix(&dest) else {
            continue;
        };
        let mut below = PathBuf::new();
        for c in rel.parent().into_iter().flat_map(Path::components) {
            below.push(c);
            let host = src.join(&below);
            let real = fs::canonicalize(&host).ok();
            let is_real_dir = real.as_deref().is_some_and(|r| {
                fs::canonicalize(&src).is_ok_and(|s| r == s.join(&below)) && r.is_dir()
            });
            let at = dest.join(&below);
            if fs::symlink_metadata(&host).is_ok_and(|m| m.file_type().is_symlink()) {
                return Err(Failure::config(format!(
                    "hidden path {} goes through a link ({} in the bind of {}): the mask follows it, and the directory it points to could be renamed from under the mask; name the real path in [fs] hide (linux.maskedPaths)",
                    hidden.display(),
                    at.display(),
                    host.display()
                )));
            }
            if !is_real_dir || pins.iter().any(|(_, p)| p == &at) {
                continue;
            }
            pins.push((i, at));
        }
    }
    // By their bind's place in the mount order, outer before inner.
    pins.sort_by_key(|(i, p)| (*i, p.components().count()));
    Ok(pins.into_iter().map(|(_, p)| p).collect())
}

/// A container path without `.`/`..` (lexically; `..` at the root stays).
pub fn normalize(p: &Path) -> PathBuf {
    let mut out: Vec<OsString> = Vec::new();
    for c in components(p) {
        if c == ".." {
            out.pop();
        } else {
            out.push(c);
        }
    }
    out.iter().fold(PathBuf::from("/"), |p, c| p.join(c))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    /// A fresh directory of this test's own (tests run in parallel threads
    /// of one process), removed when the test ends.
    fn tmp(test: &str) -> crate::test_support::TempDir {
        let d = crate::test_support::TempDir::new(&format!("mounts-{test}"));
        fs::create_dir_all(d.path().join("data/sub")).unwrap();
        d
    }

    /// Below an earlier bind, the links are the source's: a volume's
    /// `x -> /proc/sys/kernel` bound at `/a` sends `/a/x` into /proc, and
    /// `check` refuses a tmpfs there; the same name as a directory is
    /// allowed.
    #[test]
    fn links_below_an_earlier_bind_resolve_in_its_source() {
        let r_dir = tmp("through-binds");
        let r = r_dir.path().to_path_buf();
        let vol = r.join("vol");
        fs::create_dir_all(vol.join("d")).unwrap();
        symlink("/proc/sys/kernel", vol.join("x")).unwrap();
        let binds = [(PathBuf::from("/a"), vol.clone())];
        assert_eq!(
            resolve_through(&r, Path::new("/a/x/y"), &binds).unwrap(),
            Path::new("/proc/sys/kernel/y")
        );
        let mount = |dest: &str, typ: &str, src: &Path| {
            let mut m = Mount::default();
            m.set_destination(dest.into())
                .set_typ(Some(typ.into()))
                .set_source(Some(src.to_path_buf()));
            if typ == "bind" {
                m.set_options(Some(vec!["rbind".into()]));
            }
            m
        };
        let refused = check(
            &[
                mount("/a", "bind", &vol),
                mount("/a/x", "tmpfs", Path::new("tmpfs")),
            ],
            &r,
            "config.json",
        )
        .unwrap_err();
        assert!(
            refused.message.contains("resolves into /proc"),
            "{}",
            refused.message
        );
        check(
            &[
                mount("/a", "bind", &vol),
                mount("/a/d", "tmpfs", Path::new("tmpfs")),
            ],
            &r,
            "config.json",
        )
        .unwrap();
    }

    #[test]
    fn symlinks_resolve_inside_the_rootfs() {
        let r_dir = tmp("resolve");
        let r = r_dir.path().to_path_buf();
        symlink("/proc/sys/kernel", r.join("evil")).unwrap();
        symlink("../../../../proc", r.join("data/up")).unwrap();
        symlink("sub", r.join("data/rel")).unwrap();
        symlink("loop2", r.join("loop1")).unwrap();
        symlink("loop1", r.join("loop2")).unwrap();
        assert_eq!(
            resolve(&r, Path::new("/evil")).unwrap(),
            Path::new("/proc/sys/kernel")
        );
        assert_eq!(
            resolve(&r, Path::new("/evil/x")).unwrap(),
            Path::new("/proc/sys/kernel/x")
        );
        // `..` past the root stays at the root, never the host's parent.
        assert_eq!(
            resolve(&r, Path::new("/data/up")).unwrap(),
            Path::new("/proc")
        );
        assert_eq!(
            resolve(&r, Path::new("/data/rel/new")).unwrap(),
            Path::new("/data/sub/new")
        );
        assert_eq!(resolve(&r, Path::new("/work")).unwrap(), Path::new("/work"));
        assert!(resolve(&r, Path::new("/loop1")).is_err());
        let _ = fs::remove_dir_all(&r);
    }

    #[test]
    fn a_policy_containers_binds_are_restricted_all_the_way_down() {
        let m = |typ: &str, opts: &[&str]| {
            let mut m = Mount::default();
            m.set_destination("/x".into())
                .set_typ(Some(typ.into()))
                .set_source(Some("/src".into()))
                .set_options(Some(opts.iter().map(|o| o.to_string()).collect()));
            m
        };
        let mut spec = oci_spec::runtime::Spec::default();
        spec.set_mounts(Some(vec![
            m("bind", &["rbind", "ro"]),
            // A recursive form undoing the restriction goes.
            m("none", &["rbind", "ro", "rrw", "nosuid", "nodev", "noexec"]),
            m("bind", &["rbind", "rw"]),
            // Not a bind: a fresh tmpfs has nothing nested below it.
            m("tmpfs", &["nosuid", "ro"]),
        ]));
        assert!(restrict_recursively(&mut spec));
        let opts: Vec<Vec<String>> = spec
            .mounts()
            .iter()
            .flatten()
            .map(|m| m.options().clone().unwrap())
            .collect();
        assert_eq!(
            opts,
            [
                vec!["rbind", "ro", "rro"],
                vec![
                    "rbind", "ro", "nosuid", "nodev", "noexec", "rro", "rnosuid", "rnodev",
                    "rnoexec"
                ],
                vec!["rbind", "rw"],
                vec!["nosuid", "ro"],
            ]
        );
        // No host mount event reaches the container after create.
        let propagation = spec
            .linux()
            .as_ref()
            .and_then(|l| l.rootfs_propagation().clone());
        assert_eq!(propagation.as_deref(), Some("private"));
        // Already recursive and private: nothing to change.
        assert!(!restrict_recursively(&mut spec));
    }

    #[test]
    fn the_directories_above_a_hidden_path_are_planned_as_pins() {
        let host_dir = tmp("pin");
        let host = host_dir.path().to_path_buf();
        fs::create_dir_all(host.join("config/deep")).unwrap();
        symlink("config", host.join("link")).unwrap();
        let bind = |dest: &str, src: &Path, opts: &[&str]| {
            let mut m = Mount::default();
            m.set_destination(dest.into())
                .set_typ(Some("bind".into()))
                .set_source(Some(src.to_path_buf()))
                .set_options(Some(opts.iter().map(|o| o.to_string()).collect()));
            m
        };
        let mut spec = oci_spec::runtime::Spec::default();
        spec.set_mounts(Some(vec![
            bind("/work", &host, &["rbind", "rw"]),
            bind(
                "/work/config/deep/out",
                &host.join("config/deep"),
                &["rbind", "rw"],
            ),
        ]));
        let mut linux = spec.linux().clone().unwrap_or_default();
        linux.set_masked_paths(Some(vec![
            "/work/config/deep/.env".into(),
            "/work/missing/.env".into(),
            "/proc/kcore".into(),
        ]));
        spec.set_linux(Some(linux.clone()));
        // The real directories above each hidden path, outer first; a
        // missing one is not pinned; the spec is left as it was.
        assert_eq!(
            hidden_ancestor_pins(&spec, &host).unwrap(),
            [
                PathBuf::from("/work/config"),
                PathBuf::from("/work/config/deep")
            ]
        );
        assert_eq!(spec.mounts().as_ref().map(Vec::len), Some(2));
        // Through a link: refused, naming it (a red team renamed the
        // directory it pointed to from under the mask).
        linux.set_masked_paths(Some(vec!["/work/link/.env".into()]));
        spec.set_linux(Some(linux));
        let e = hidden_ancestor_pins(&spec, &host).unwrap_err();
        assert!(e.message.contains("goes through a link"), "{}", e.message);
        // A link in a later read-only bind, and one in the image, each
        // pointing into the writable bind: refused the same (a red team
        // renamed the real directory and read the secret from the next
        // container).
        let ro_dir = tmp("pin-ro");
        let ro = ro_dir.path().to_path_buf();
        symlink("/work/config", ro.join("lnk")).unwrap();
        let rootfs_dir = tmp("pin-rootfs");
        let rootfs = rootfs_dir.path().to_path_buf();
        symlink("/work/config", rootfs.join("hid")).unwrap();
        let mut ro_bind = bind("/work/ro", &ro, &["rbind", "ro"]);
        ro_bind.set_options(Some(vec!["rbind".into(), "ro".into()]));
        spec.set_mounts(Some(vec![bind("/work", &host, &["rbind", "rw"]), ro_bind]));
        for (hidden, root) in [("/work/ro/lnk/.env", &host), ("/hid/.env", &rootfs)] {
            let mut linux = spec.linux().clone().unwrap_or_default();
            linux.set_masked_paths(Some(vec![hidden.into()]));
            spec.set_linux(Some(linux));
            let e = hidden_ancestor_pins(&spec, root).unwrap_err();
            assert!(
                e.message.contains("goes through a link"),
                "{hidden}: {}",
                e.message
            );
        }
    }
}
