//! `sandboy wrap` as root: confine one command on the host's own
//! filesystem as a container. The host `/` becomes a read-only rootfs (bound in a
//! private mount namespace of this process, so the host mount table never
//! changes), the policy's host write paths are staged copy-on-write on
//! capped storage (`stage`) and committed when the step exits 0, and the
//! container is removed afterwards whatever happened to the command. The
//! step runs as the identity `identity` chooses, never host root unless the
//! policy says `user = "0:0"`. The exit status is the command's.

use std::ffi::CString;
use std::fs;
use std::path::{Path, PathBuf};

use nix::mount::{mount, umount2, MntFlags, MsFlags};
use nix::sched::{unshare, CloneFlags};
use sandboy_spec_gen::policy::{BindMount, Policy};
use sandboy_spec_gen::render::{self, RenderOptions};

use super::identity;
use super::stage::{self, Staging};
use crate::container::{validate_id, CreateOptions, Ran, RunMode, Runtime};
use crate::error::{Failure, Result};

/// What the root path needs besides the policy.
pub struct Request {
    pub command: Vec<String>,
    /// The program `command[0]` resolves to.
    pub program: PathBuf,
    pub report: Option<PathBuf>,
    /// Discard the staged writes whatever the exit status.
    pub dry_run: bool,
}

/// Run `command` under `policy` as a container on the host's root.
pub fn run(rt: &Runtime, mut policy: Policy, id: &str, req: Request) -> Result<Ran> {
    let id = id.to_string();
    validate_id(&id)?;
    reap_orphans(rt);
    if rt.exists(&id) {
        return Err(Failure::runtime(format!("container with id exists: {id}")));
    }
    // /dev, /proc and /sys are the container's own (devices are created by
    // the runtime); everything else writable comes from the host.
    let own = |w: &str| {
        ["/dev", "/proc", "/sys"]
            .iter()
            .any(|d| w == *d || w.starts_with(&format!("{d}/")))
    };
    let host_writes: Vec<String> = policy
        .write
        .iter()
        .filter(|w| *w != "/" && !own(w))
        .cloned()
        .collect();
    for w in &host_writes {
        if !Path::new(w).exists() {
            return Err(Failure::config(format!(
                "{}: write path {w} does not exist on this host; create it or remove it from [fs] write",
                policy.file
            )));
        }
    }
    let who = identity::from_env(&policy);
    let writes: Vec<&Path> = host_writes.iter().map(Path::new).collect();
    identity::check_reach(
        &policy,
        who,
        &identity::needs(&writes, Path::new(&policy.cwd), &req.program),
    )?;
    tracing::debug!(%id, identity = %who, "wrap: the step's identity");
    policy.uid = who.uid;
    policy.gid = who.gid;
    policy.args = req.command;

    let work = rt.root.join(crate::container::WRAP_DIR).join(&id);
    let rootfs = work.join("rootfs");
    let staging = Staging::plan(&policy, &work, &host_writes)?;
    for s in &staging.paths {
        policy.mounts.push(BindMount {
            source: s.merged.clone(),
            destination: s.host.display().to_string(),
            options: vec!["rbind".into(), "rw".into()],
        });
    }
    fs::create_dir_all(&rootfs)?;
    fs::write(
        work.join(OWNER_FILE),
        crate::container::identity::this_process(),
    )?;
    let result = (|| {
        let mut spec = render::render(
            &policy,
            &RenderOptions {
                rootfs: Some(rootfs.clone()),
                base: None,
            },
        )
        .map_err(|e| Failure::config(e.to_string()))?;
        private_daemon_dirs(&mut spec, &policy, Path::new(&policy.cwd));
        let json = render::to_json(&spec).map_err(|e| Failure::config(e.to_string()))?;
        fs::write(work.join("config.json"), json)?;
        bind_host_root(&rootfs)?;
        staging.mount(&policy)?;
        rt.run(
            &id,
            &CreateOptions {
                bundle: work.clone(),
                die_with_caller: true,
                ..CreateOptions::default()
            },
            RunMode {
                report: req.report,
                ..RunMode::default()
            },
        )
    })();
    remove_container(rt, &id);
    let result = result.and_then(|ran| settle(&staging, &policy, &id, ran, req.dry_run));
    staging.release();
    cleanup(&work, &rootfs);
    result
}

/// Commit or discard the staged writes once every process of the step is
/// gone: committed only when it exited 0 and this is no dry run.
fn settle(staging: &Staging, policy: &Policy, id: &str, ran: Ran, dry_run: bool) -> Result<Ran> {
    if staging.paths.is_empty()
        || !stage::decide(id, policy, &staging.at_cap(), ran.status, dry_run)
    {
        return Ok(ran);
    }
    let c = staging.commit()?;
    tracing::info!(
        %id,
        written = c.written,
        dirs = c.dirs,
        removed = c.removed,
        skipped = c.skipped,
        "wrap: staged writes committed"
    );
    Ok(ran)
}

/// Host daemon sockets (containerd, podman, docker, systemd under `/run`)
/// must not answer the step (issue #14): `/run`, `/var/run` and `/tmp` are
/// the container's own tmpfs unless the policy lists them in `[fs] write`.
/// They go before the first bind mount, so write paths below them are
/// bound on top. A symlink (Debian's `/var/run -> /run`) is left alone: the
/// mount would land on its target. The caller's working directory and the
/// policy's read and exec paths stay reachable when one of them would hide
/// them (a checkout under /tmp): they are bound read-only, and what the
/// step may do there is Landlock's to say.
fn private_daemon_dirs(spec: &mut oci_spec::runtime::Spec, policy: &Policy, cwd: &Path) {
    let write = &policy.write;
    let mut mounts = spec.mounts().clone().unwrap_or_default();
    let at = mounts
        .iter()
        .position(|m| m.typ().as_deref() == Some("bind"))
        .unwrap_or(mounts.len());
    let private = ["/run", "/var/run", "/tmp"]
        .into_iter()
        .filter(|d| !write.iter().any(|w| w == d || w == "/"))
        .filter(|d| fs::symlink_metadata(d).is_ok_and(|m| m.is_dir()))
        .collect::<Vec<_>>();
    // What a private directory would hide but the step is meant to reach:
    // the working directory and read/exec paths below it, not under a
    // write path (those are bound writable anyway).
    let mut hidden: Vec<PathBuf> = std::iter::once(cwd.to_path_buf())
        .chain(policy.read.iter().chain(&policy.exec).map(PathBuf::from))
        .filter(|p| private.iter().any(|d| p.starts_with(d)))
        .filter(|p| !policy.write.iter().any(|w| p.starts_with(w)))
        .filter(|p| p.exists())
        .collect();
    let tmpfs = private.into_iter().map(|d| {
        let mut m = oci_spec::runtime::Mount::default();
        m.set_destination(PathBuf::from(d))
            .set_typ(Some("tmpfs".into()))
            .set_source(Some(PathBuf::from("tmpfs")))
            .set_options(Some(
                ["nosuid", "nodev", "mode=1777"].map(String::from).to_vec(),
            ));
        m
    });
    // They go right after them, parents first (component order), before
    // every policy bind: a write path below one must stay on top, writable.
    // Read-only all the way down: a host mount nested in the checkout stays
    // writable below a top-only `ro` (a red team's step chmodded its files).
    hidden.sort();
    hidden.dedup();
    let ro_binds = hidden
        .into_iter()
        .map(|p| render::bind_mount(&p, p.clone(), &["rbind", "ro"]));
    mounts.splice(at..at, tmpfs.chain(ro_binds));
    spec.set_mounts(Some(mounts));
}

/// Private mount namespace for this process, host `/` bound recursively and
/// read-only at `rootfs`. The container's mount namespace is cloned from it.
fn bind_host_root(rootfs: &Path) -> Result<()> {
    let err = |what: &str, e: nix::Error| Failure::runtime(format!("wrap: {what}: {e}"));
    unshare(CloneFlags::CLONE_NEWNS).map_err(|e| err("unshare(CLONE_NEWNS)", e))?;
    make_private().map_err(|e| err("making / private", e))?;
    mount(
        Some("/"),
        rootfs,
        None::<&str>,
        MsFlags::MS_BIND | MsFlags::MS_REC,
        None::<&str>,
    )
    .map_err(|e| err("binding / at the rootfs", e))?;
    set_recursive_readonly(rootfs)
}

/// Every mount of this (new) mount namespace private, so nothing done
/// here propagates to the host's.
pub(super) fn make_private() -> nix::Result<()> {
    mount(
        None::<&str>,
        "/",
        None::<&str>,
        MsFlags::MS_REC | MsFlags::MS_PRIVATE,
        None::<&str>,
    )
}

/// `mount_setattr(AT_RECURSIVE, MOUNT_ATTR_RDONLY)`: every submount of the
/// host tree read-only at once, not just the top one.
pub(super) fn set_recursive_readonly(path: &Path) -> Result<()> {
    set_recursive_attrs(path, MOUNT_ATTR_RDONLY, "read-only")
}

/// `mount_setattr(2)` attributes.
pub(super) const MOUNT_ATTR_RDONLY: u64 = 0x1;
pub(super) const MOUNT_ATTR_NOSUID: u64 = 0x2;
pub(super) const MOUNT_ATTR_NODEV: u64 = 0x4;
pub(super) const MOUNT_ATTR_NOEXEC: u64 = 0x8;

/// Set `attrs` on the mount at `path` and every mount below it (`what`
/// names them in the error).
pub(super) fn set_recursive_attrs(path: &Path, attrs: u64, what: &str) -> Result<()> {
    #[repr(C)]
    struct MountAttr {
        attr_set: u64,
        attr_clr: u64,
        propagation: u64,
        userns_fd: u64,
    }
    const AT_RECURSIVE: libc::c_uint = 0x8000;
    let c = CString::new(path.as_os_str().as_encoded_bytes())
        .map_err(|_| Failure::runtime("wrap: rootfs path contains NUL"))?;
    let attr = MountAttr {
        attr_set: attrs,
        attr_clr: 0,
        propagation: 0,
        userns_fd: 0,
    };
    // SAFETY: a valid NUL-terminated path and a properly sized mount_attr
    // that outlives the call.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            libc::AT_FDCWD,
            c.as_ptr(),
            AT_RECURSIVE,
            &attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        )
    };
    if rc != 0 {
        return Err(Failure::runtime(format!(
            "wrap: mount_setattr({what}) on {}: {}",
            path.display(),
            std::io::Error::last_os_error()
        )));
    }
    Ok(())
}

/// Remove the container, whatever happened to the command.
/// In a wrap's temporary bundle: the wrap process (pid and start time)
/// that owns it.
const OWNER_FILE: &str = "owner";

/// The containers of root wraps that were killed before they could clean
/// up (their step died with them: `die_with_caller`): state, cgroups and
/// temporary bundle, removed by the next root wrap. A bundle whose owner
/// process is gone (or whose pid now names another process) is an
/// orphan. Its directory is removed only when nothing is mounted below it
/// (its mounts lived in the dead wrap's private mount namespace).
fn reap_orphans(rt: &Runtime) {
    let dir = rt.root.join(crate::container::WRAP_DIR);
    let Ok(entries) = fs::read_dir(&dir) else {
        return;
    };
    let mounts = fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    for e in entries.flatten() {
        let work = e.path();
        let Ok(owner) = fs::read_to_string(work.join(OWNER_FILE)) else {
            continue;
        };
        if crate::container::identity::alive(owner.trim()) {
            continue;
        }
        let id = e.file_name().to_string_lossy().into_owned();
        if validate_id(&id).is_err() {
            continue;
        }
        tracing::info!(%id, "wrap: removing the leftovers of a killed wrap");
        remove_container(rt, &id);
        let (at, below) = (work.display().to_string(), format!("{}/", work.display()));
        let busy = mounts
            .lines()
            .filter_map(|l| l.split(' ').nth(4))
            .any(|m| m == at || m.starts_with(&below));
        if !busy {
            let _ = fs::remove_dir_all(&work);
        }
    }
}

fn remove_container(rt: &Runtime, id: &str) {
    if rt.exists(id) {
        if let Ok(mut c) = rt.load(id) {
            let _ = rt.destroy(&mut c, true);
        }
    }
    rt.remove_leftovers(id);
}

/// Remove the temporary bundle. The rootfs is unmounted first and then
/// removed with `remove_dir` (never recursively): it holds the host's own
/// tree while mounted.
fn cleanup(work: &Path, rootfs: &Path) {
    let _ = umount2(rootfs, MntFlags::MNT_DETACH);
    if let Err(e) = fs::remove_dir(rootfs) {
        if rootfs.exists() {
            tracing::warn!(path = %rootfs.display(), error = %e, "wrap: could not remove the temporary rootfs");
            return;
        }
    }
    let _ = fs::remove_file(work.join("config.json"));
    let _ = fs::remove_file(work.join(OWNER_FILE));
    let _ = fs::remove_dir(work);
}
