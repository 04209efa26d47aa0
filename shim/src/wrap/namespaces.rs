//! The namespaces tier's sandbox, built without privileges inside a user
//! namespace that maps the caller's uid/gid to themselves.
//!
//! Order matters: the user namespace first (it grants the capabilities the
//! rest needs), its uid/gid maps (setgroups denied first, as the kernel
//! requires of an unprivileged writer), then mount/pid/ipc/uts (and net)
//! namespaces. The pid namespace takes effect for the next child, which
//! becomes its pid 1 and builds the root:
//!
//! 1. a tmpfs on `/tmp` is the staging root; pivot into it, the host tree
//!    stays reachable at `/oldroot`;
//! 2. host `/` is bound recursively at `/newroot` and made read-only with
//!    `mount_setattr(AT_RECURSIVE)`;
//! 3. own `/proc`, a minimal `/dev` (null, zero, full, random, urandom, tty
//!    bound from the host), a private `/tmp` unless `/tmp` is a write path;
//! 4. the write paths bound read-write — a directory staged on a capped
//!    overlay over the host's (committed by pid 1 when the command exits
//!    0, see `direct`), a file from the host — and read/exec paths that a
//!    private `/tmp` or `/dev` would hide bound read-only;
//! 5. `pivot_root(".", ".")` in `/newroot` and detach the old root.
//!
//! Landlock and seccomp are applied after this, by the command's process.

use std::fs;
use std::path::{Path, PathBuf};

use nix::mount::{mount, umount2, MntFlags, MsFlags};
use nix::sched::{unshare, CloneFlags};
use nix::unistd::{chdir, pivot_root};
use sandboy_spec_gen::policy::{NetNamespace, Policy};

use super::stage::{self, Held};

/// A setup step that failed, with what it was.
#[derive(Debug, thiserror::Error)]
#[error("namespaces tier: {what}: {source}")]
pub struct SetupError {
    what: String,
    source: std::io::Error,
}

fn ctx<T, E: Into<std::io::Error>>(
    r: std::result::Result<T, E>,
    what: impl FnOnce() -> String,
) -> Result<T, SetupError> {
    r.map_err(|e| SetupError {
        what: what(),
        source: e.into(),
    })
}

fn nix_io(e: nix::Error) -> std::io::Error {
    std::io::Error::from_raw_os_error(e as i32)
}

/// Whether unprivileged user namespaces work here: a throwaway child tries
/// `unshare(CLONE_NEWUSER)` (this process must not change namespaces).
pub fn available() -> bool {
    // SAFETY: the child only calls unshare and _exit (async-signal-safe),
    // and the process is single-threaded at this point.
    match unsafe { nix::unistd::fork() } {
        Ok(nix::unistd::ForkResult::Child) => {
            let ok = unshare(CloneFlags::CLONE_NEWUSER).is_ok();
            // SAFETY: _exit is always sound.
            unsafe { libc::_exit(if ok { 0 } else { 1 }) }
        }
        Ok(nix::unistd::ForkResult::Parent { child }) => matches!(
            nix::sys::wait::waitpid(child, None),
            Ok(nix::sys::wait::WaitStatus::Exited(_, 0))
        ),
        Err(_) => false,
    }
}

/// In the first child: user namespace with the caller's ids mapped to
/// themselves, then the other namespaces; loopback up in a new netns.
pub fn enter(net: NetNamespace) -> Result<(), SetupError> {
    let (uid, gid) = (nix::unistd::getuid(), nix::unistd::getgid());
    ctx(unshare(CloneFlags::CLONE_NEWUSER).map_err(nix_io), || {
        "unshare(CLONE_NEWUSER)".into()
    })?;
    ctx(fs::write("/proc/self/setgroups", "deny"), || {
        "writing /proc/self/setgroups".into()
    })?;
    ctx(
        fs::write("/proc/self/uid_map", format!("{uid} {uid} 1")),
        || "writing /proc/self/uid_map".into(),
    )?;
    ctx(
        fs::write("/proc/self/gid_map", format!("{gid} {gid} 1")),
        || "writing /proc/self/gid_map".into(),
    )?;
    let mut flags = CloneFlags::CLONE_NEWNS
        | CloneFlags::CLONE_NEWPID
        | CloneFlags::CLONE_NEWIPC
        | CloneFlags::CLONE_NEWUTS;
    if net == NetNamespace::None {
        flags |= CloneFlags::CLONE_NEWNET;
    }
    ctx(unshare(flags).map_err(nix_io), || {
        format!("unshare({flags:?})")
    })?;
    if net == NetNamespace::None {
        crate::container::loopback::bring_up(std::process::id() as i32).map_err(|e| {
            SetupError {
                what: "loopback".into(),
                source: std::io::Error::other(e.message),
            }
        })?;
    }
    Ok(())
}

fn bind(src: &Path, dst: &Path, what: &str) -> Result<(), SetupError> {
    ctx(
        mount(
            Some(src),
            dst,
            None::<&str>,
            MsFlags::MS_BIND | MsFlags::MS_REC,
            None::<&str>,
        )
        .map_err(nix_io),
        || format!("binding {what} {} at {}", src.display(), dst.display()),
    )
}

/// `[fs] hide`, as OCI masked paths are made (runc, and root `wrap`): an
/// empty read-only tmpfs over a directory, the host's `/dev/null` over a
/// file, on top of every bind (a hidden path inside a write path is masked
/// in its staged overlay too). A path that does not exist has nothing to
/// hide.
fn mask_hidden(policy: &Policy, old: &Path, new: &Path) -> Result<(), SetupError> {
    for h in &policy.hide {
        let dst = new.join(h.trim_start_matches('/'));
        let Ok(meta) = fs::symlink_metadata(&dst) else {
            continue;
        };
        if meta.is_dir() {
            ctx(
                mount(
                    Some("tmpfs"),
                    &dst,
                    Some("tmpfs"),
                    MsFlags::MS_NOSUID
                        | MsFlags::MS_NODEV
                        | MsFlags::MS_NOEXEC
                        | MsFlags::MS_RDONLY,
                    Some("size=0,mode=0555"),
                )
                .map_err(nix_io),
                || format!("masking [fs] hide {h}"),
            )?;
        } else {
            bind(&old.join("dev/null"), &dst, "[fs] hide mask")?;
        }
    }
    Ok(())
}

fn tmpfs(dst: &Path, opts: &str) -> Result<(), SetupError> {
    ctx(
        mount(
            Some("tmpfs"),
            dst,
            Some("tmpfs"),
            MsFlags::MS_NOSUID | MsFlags::MS_NODEV,
            Some(opts),
        )
        .map_err(nix_io),
        || format!("tmpfs at {}", dst.display()),
    )
}

/// A mount point at `dst` of the same kind (directory or file) as `src`.
fn mount_point(src: &Path, dst: &Path) -> Result<(), SetupError> {
    if dst.exists() {
        return Ok(());
    }
    if src.is_dir() {
        ctx(fs::create_dir_all(dst), || {
            format!("mkdir {}", dst.display())
        })
    } else {
        if let Some(parent) = dst.parent() {
            ctx(fs::create_dir_all(parent), || {
                format!("mkdir {}", parent.display())
            })?;
        }
        ctx(fs::File::create(dst).map(drop), || {
            format!("creating {}", dst.display())
        })
    }
}

/// In pid 1 of the new namespaces: build the root and pivot into it.
/// `cwd` (the caller's directory) stays reachable even under a private
/// `/tmp`; what it may be used for is Landlock's to say. Write paths that
/// are directories are staged (`super::stage`): what the commit needs is
/// returned, since the host root is gone once this returns.
pub fn build_root(policy: &Policy, cwd: &Path) -> Result<Vec<Held>, SetupError> {
    // While host paths still resolve: what the commits must not change.
    let protected = super::commit::Protected::find(&policy.write);
    ctx(super::container::make_private().map_err(nix_io), || {
        "making / private".into()
    })?;
    let stage = Path::new("/tmp");
    tmpfs(stage, "mode=0700")?;
    for d in ["newroot", "oldroot"] {
        ctx(fs::create_dir(stage.join(d)), || format!("mkdir stage {d}"))?;
    }
    ctx(chdir(stage).map_err(nix_io), || "chdir stage".into())?;
    ctx(pivot_root(".", "oldroot").map_err(nix_io), || {
        "pivot_root into the stage".into()
    })?;
    ctx(chdir("/").map_err(nix_io), || "chdir /".into())?;
    let old = Path::new("/oldroot");
    let new = Path::new("/newroot");
    bind(old, new, "host /")?;
    super::container::set_recursive_readonly(new).map_err(|e| SetupError {
        what: "read-only host /".into(),
        source: std::io::Error::other(e.message),
    })?;

    ctx(
        mount(
            Some("proc"),
            &new.join("proc"),
            Some("proc"),
            MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC,
            None::<&str>,
        )
        .map_err(nix_io),
        || "mounting /proc".into(),
    )?;
    tmpfs(&new.join("dev"), "mode=0755")?;
    for dev in ["null", "zero", "full", "random", "urandom", "tty"] {
        let src = old.join("dev").join(dev);
        let dst = new.join("dev").join(dev);
        if src.exists() {
            mount_point(&src, &dst)?;
            bind(&src, &dst, "device")?;
        }
    }
    for (link, target) in [
        ("fd", "/proc/self/fd"),
        ("stdin", "/proc/self/fd/0"),
        ("stdout", "/proc/self/fd/1"),
        ("stderr", "/proc/self/fd/2"),
    ] {
        let _ = std::os::unix::fs::symlink(target, new.join("dev").join(link));
    }
    let private = |p: &str| {
        let under = |d: &str| p == d || p.starts_with(&format!("{d}/"));
        under("/dev") || (under("/tmp") && !policy.write.iter().any(|w| w == "/tmp"))
    };
    if !policy.write.iter().any(|w| w == "/tmp") {
        // The step's own /tmp, writable (see `direct::confinement_spec`)
        // and capped as a staged write path is.
        let opts = format!(
            "mode=1777,size={},nr_inodes={}",
            policy.disk_cap().0,
            policy.inode_cap()
        );
        tmpfs(&new.join("tmp"), &opts)?;
    }
    // Write paths read-write; paths a private /tmp or /dev hides, as listed.
    let mut binds: Vec<(&String, bool)> = policy
        .write
        .iter()
        .filter(|w| *w != "/" && !w.starts_with("/proc") && !w.starts_with("/sys"))
        .map(|w| (w, true))
        .collect();
    binds.extend(
        policy
            .read
            .iter()
            .chain(&policy.exec)
            .filter(|p| private(p) && !policy.write.contains(p))
            .map(|p| (p, false)),
    );
    let cwd = cwd.display().to_string();
    if private(&cwd) && !policy.write.contains(&cwd) {
        binds.push((&cwd, false));
    }
    // Parents before children, so a nested path is bound on top.
    binds.sort_by_key(|(p, _)| p.len());
    let mut held = Vec::new();
    for (p, rw) in binds {
        let rel = p.trim_start_matches('/');
        let mut src = old.join(rel);
        if !src.exists() || is_bound_dev(p) {
            continue;
        }
        let dst: PathBuf = new.join(rel);
        mount_point(&src, &dst)?;
        if rw && src.is_dir() {
            let at = Path::new("/stage").join(held.len().to_string());
            let (merged, h) = ctx(
                stage::stage_in_userns(policy, Path::new(p), &src, &at, &protected),
                || format!("staging write path {p}"),
            )?;
            held.push(h);
            src = merged;
        }
        bind(&src, &dst, "policy path")?;
        if !rw {
            super::container::set_recursive_readonly(&dst).map_err(|e| SetupError {
                what: format!("read-only {p}"),
                source: std::io::Error::other(e.message),
            })?;
        } else {
            // As spec-gen renders them for containers: nothing planted in a
            // write path runs (not even through the loader, which maps it
            // PROT_EXEC) unless the policy also lists it in `exec`.
            super::container::set_recursive_attrs(
                &dst,
                write_attrs(policy, p),
                "nosuid,nodev,noexec",
            )
            .map_err(|e| SetupError {
                what: format!("write path {p}"),
                source: std::io::Error::other(e.message),
            })?;
        }
    }
    mask_hidden(policy, old, new)?;
    if policy.egress.is_active() {
        resolver_files(new)?;
    }

    ctx(chdir(new).map_err(nix_io), || "chdir newroot".into())?;
    ctx(pivot_root(".", ".").map_err(nix_io), || {
        "pivot_root into the new root".into()
    })?;
    ctx(umount2(".", MntFlags::MNT_DETACH).map_err(nix_io), || {
        "detaching the old root".into()
    })?;
    ctx(chdir("/").map_err(nix_io), || "chdir /".into())?;
    Ok(held)
}

/// The egress gateway's resolver files (the stub, `use-vc`; localhost
/// only in hosts), as a container gets them: written in the stage (this
/// user's tmpfs) and bound read-only over `/etc/resolv.conf` and
/// `/etc/hosts` of the new root, on top of any write path. Without them
/// the host's resolver would point where the step has no route, so a
/// destination that is missing is an error. A symlink (systemd-resolved's
/// `/etc/resolv.conf`) is followed inside the new root.
fn resolver_files(new: &Path) -> Result<(), SetupError> {
    let dir = Path::new("/gateway");
    ctx(fs::create_dir(dir), || "mkdir stage gateway".into())?;
    for (file, dest, text) in crate::container::egress::FILES {
        let src = dir.join(file);
        ctx(fs::write(&src, text), || {
            format!("writing {}", src.display())
        })?;
        let mut dst = new.join(dest.trim_start_matches('/'));
        if let Ok(target) = fs::read_link(&dst) {
            dst = match target.strip_prefix("/") {
                Ok(abs) => new.join(abs),
                Err(_) => dst.parent().unwrap_or(new).join(target),
            };
        }
        if !dst.exists() {
            return Err(SetupError {
                what: format!("the egress gateway's {dest}"),
                source: std::io::Error::from_raw_os_error(libc::ENOENT),
            });
        }
        bind(&src, &dst, "resolver file")?;
        super::container::set_recursive_readonly(&dst).map_err(|e| SetupError {
            what: format!("read-only {dest}"),
            source: std::io::Error::other(e.message),
        })?;
    }
    Ok(())
}

/// nosuid and nodev on every write path; noexec unless an `exec` entry is
/// the path, holds it or lies in it.
fn write_attrs(policy: &Policy, path: &str) -> u64 {
    use super::container::{MOUNT_ATTR_NODEV, MOUNT_ATTR_NOEXEC, MOUNT_ATTR_NOSUID};
    let under =
        |a: &str, b: &str| a == b || a.starts_with(&format!("{}/", b.trim_end_matches('/')));
    let runs = policy.exec.iter().any(|e| under(e, path) || under(path, e));
    MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | if runs { 0 } else { MOUNT_ATTR_NOEXEC }
}

/// Devices the minimal /dev already binds.
fn is_bound_dev(p: &str) -> bool {
    ["null", "zero", "full", "random", "urandom", "tty"]
        .iter()
        .any(|d| p == format!("/dev/{d}"))
}
