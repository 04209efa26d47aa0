//! Rootfs steps runc takes after its mounts that libcontainer 0.7 cannot
//! be asked for, taken by sandboy in a `createContainer` hook of its own:
//! that hook runs in the container's mount namespace, after libcontainer's
//! mounts, devices and symlinks and before `pivot_root`, which is exactly
//! where runc takes them.
//!
//! * **A bind mount at `/dev`** (`{"destination": "/dev", "type": "bind",
//!   "source": "/dev", "options": ["rbind"]}`). runc then leaves /dev
//!   alone; libcontainer still writes its default symlinks, device nodes and
//!   ptmx into it, i.e. into the host's own /dev. libcontainer is given a
//!   small tmpfs at /dev instead (what it writes lands there), and the hook
//!   mounts the bind over it, followed by the spec's later mounts below
//!   /dev (a /dev/shm, /dev/pts after the bind), in the spec's order, with
//!   libcontainer's own mount code.
//! * **Pins above hidden paths** (`mounts::hidden_ancestor_pins`): each
//!   directory between a writable bind and a path it hides becomes a bind
//!   of itself. Both ends are one fd, opened inside the rootfs with no
//!   symlink allowed on the way (`openat2`), cloned with its submounts
//!   (`open_tree`) and moved onto itself (`move_mount`): a sibling
//!   container sharing the volume and swapping a link in gets a refused
//!   create, never a host directory bound.
//! * **A missing `process.cwd` below a mount** (a tmpfs at /tmp and cwd
//!   /tmp/work): runc makes it after its mounts; before the build it can
//!   only be made beneath the mount, where the container never sees it. The
//!   hook makes it on the mount, resolved inside the rootfs.
//!
//! The hook is `/proc/self/exe`, run by the container's init: the
//! protected copy of the runtime binary (CVE-2019-5736, `host::sealed_exe`),
//! never the host's file. Its plan travels in its arguments (the spec's own
//! mounts and paths, nothing secret), so it reads no file of the state
//! root, which a mapped root could not.

use std::io::Read;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

use oci_spec::runtime::{Hook, HookBuilder, Mount, MountBuilder, Spec};
use serde::{Deserialize, Serialize};

/// The hook's `argv[0]`: how `main` tells a hook run from a command line.
pub const ARG0: &str = "sandboy:rootfs-hook";

/// What the hook does, in order: the mounts, then the cwd.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    /// The rootfs as the runtime's mount namespace names it (before pivot).
    pub rootfs: PathBuf,
    /// Mounts taken from libcontainer's spec, made by the hook.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mounts: Vec<Mount>,
    /// Directories to pin, outermost first (container paths).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pins: Vec<PathBuf>,
    /// The container's cwd, made (0755, as runc's MkdirAll) if missing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<PathBuf>,
    /// `linux.mountLabel`, given to the mounts as libcontainer gives it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mount_label: Option<String>,
}

impl Plan {
    fn is_empty(&self) -> bool {
        self.mounts.is_empty() && self.pins.is_empty() && self.cwd.is_none()
    }
}

/// Plans the hook for `spec` (rewritten in place: a bind at /dev becomes the
/// decoy tmpfs, the mounts after it below /dev leave the spec) and installs
/// it as the first `createContainer` hook; false if there is nothing to do.
pub fn install(spec: &mut Spec, rootfs: &Path) -> crate::error::Result<bool> {
    let pins = super::mounts::hidden_ancestor_pins(spec, rootfs)?;
    let mut plan = Plan {
        rootfs: rootfs.to_path_buf(),
        mounts: take_bound_dev(spec, rootfs),
        pins,
        cwd: None,
        mount_label: spec.linux().as_ref().and_then(|l| l.mount_label().clone()),
    };
    if let Some(cwd) = spec.process().as_ref().map(|p| p.cwd().clone()) {
        if cwd_made_on_a_mount(spec, rootfs, &cwd) {
            plan.cwd = Some(cwd);
        }
    }
    if plan.is_empty() {
        return Ok(false);
    }
    let mut hooks = spec.hooks().clone().unwrap_or_default();
    let mut list = vec![plan.hook()];
    list.extend(hooks.create_container().clone().unwrap_or_default());
    hooks.set_create_container(Some(list));
    spec.set_hooks(Some(hooks));
    Ok(true)
}

impl Plan {
    fn hook(&self) -> Hook {
        let json = serde_json::to_string(self).expect("a plan serializes");
        HookBuilder::default()
            .path("/proc/self/exe")
            .args(vec![ARG0.to_string(), json])
            .env(Vec::<String>::new())
            .build()
            .expect("all fields set")
    }
}

/// Whether a mount's (other than `/`) destination is or holds `path`.
pub fn covered_by_mount(spec: &Spec, path: &Path) -> bool {
    last_cover(spec, path).is_some()
}

fn last_cover<'a>(spec: &'a Spec, path: &Path) -> Option<&'a Mount> {
    spec.mounts().iter().flatten().rev().find(|m| {
        let d = super::mounts::normalize(m.destination());
        d != Path::new("/") && path.starts_with(&d)
    })
}

/// A cwd below a mount that is not known to exist there: a fresh
/// filesystem (tmpfs, …), or a bind whose source lacks it. A bind whose
/// source has it (the common `-v $PWD:/work -w /work`) needs no hook.
fn cwd_made_on_a_mount(spec: &Spec, rootfs: &Path, cwd: &Path) -> bool {
    let resolved =
        super::mounts::resolve(rootfs, cwd).unwrap_or_else(|_| super::mounts::normalize(cwd));
    let Some(m) = last_cover(spec, &resolved) else {
        return false;
    };
    let dest = super::mounts::normalize(m.destination());
    let below = resolved.strip_prefix(&dest).unwrap_or(Path::new(""));
    if below.as_os_str().is_empty() {
        // The mount point itself: libcontainer makes it.
        return false;
    }
    if !libcontainer::rootfs::utils::is_bind(m) {
        return true;
    }
    !m.source()
        .as_deref()
        .is_some_and(|s| s.join(below).is_dir())
}

/// The first bind mount at /dev and every later mount below /dev, taken
/// out of `spec` (the bind replaced by the decoy tmpfs); empty if none.
fn take_bound_dev(spec: &mut Spec, rootfs: &Path) -> Vec<Mount> {
    let Some(mut mounts) = spec.mounts().clone() else {
        return Vec::new();
    };
    let dest = |m: &Mount| {
        super::mounts::resolve(rootfs, m.destination())
            .unwrap_or_else(|_| super::mounts::normalize(m.destination()))
    };
    let dev = Path::new("/dev");
    let Some(at) = mounts
        .iter()
        .position(|m| libcontainer::rootfs::utils::is_bind(m) && dest(m) == dev)
    else {
        return Vec::new();
    };
    let mut taken = vec![std::mem::replace(&mut mounts[at], decoy())];
    let mut kept = mounts[..=at].to_vec();
    for m in mounts.drain(at + 1..) {
        if dest(&m).starts_with(dev) {
            taken.push(m);
        } else {
            kept.push(m);
        }
    }
    spec.set_mounts(Some(kept));
    taken
}

/// Where libcontainer writes its /dev defaults before the bind covers them.
fn decoy() -> Mount {
    MountBuilder::default()
        .destination("/dev")
        .typ("tmpfs")
        .source("tmpfs")
        .options(vec![
            "nosuid".into(),
            "noexec".into(),
            "mode=755".into(),
            "size=64k".into(),
        ])
        .build()
        .expect("all fields set")
}

/// The hook's process: `argv[1]` is the plan. Exits 0 when done; any
/// failure is one line on stderr (the init's, which reaches `create`'s
/// caller) and exit 1, which fails the create.
pub fn main() -> ! {
    // The container's state on stdin: read it, so libcontainer's write
    // cannot fail on a closed pipe.
    let _ = std::io::stdin().read_to_end(&mut Vec::new());
    let code = match std::env::args()
        .nth(1)
        .map(|a| serde_json::from_str::<Plan>(&a))
    {
        Some(Ok(plan)) => match run(&plan) {
            Ok(()) => 0,
            Err(e) => {
                crate::cli::output::error_line(&format!("sandboy: rootfs hook: {e}"));
                1
            }
        },
        _ => {
            crate::cli::output::error_line("sandboy: rootfs hook: no plan in the arguments");
            2
        }
    };
    std::process::exit(code)
}

fn run(plan: &Plan) -> Result<(), String> {
    for m in &plan.mounts {
        mount(plan, m).map_err(|e| {
            format!(
                "mount {} at {}: {e}",
                m.source().as_deref().unwrap_or(Path::new("")).display(),
                m.destination().display()
            )
        })?;
    }
    for dest in &plan.pins {
        pin(&plan.rootfs, dest).map_err(|e| {
            format!(
                "pin {} (above a hidden path): {e}; it is no longer the directory create checked (a link or something else was put there since), so the container is not started",
                dest.display()
            )
        })?;
    }
    if let Some(cwd) = &plan.cwd {
        let resolved = super::mounts::resolve(&plan.rootfs, cwd)
            .map_err(|e| format!("process.cwd {}: {e}", cwd.display()))?;
        super::compat::mkdir_all_in(&plan.rootfs, &resolved)
            .map_err(|e| format!("process.cwd {}: cannot create it: {e}", cwd.display()))?;
    }
    Ok(())
}

/// `dest` bound onto itself with its submounts, source and target one fd
/// resolved inside `rootfs` without following any symlink.
fn pin(rootfs: &Path, dest: &Path) -> std::io::Result<()> {
    use rustix::fs::{Mode, OFlags, ResolveFlags};
    use rustix::mount::{MoveMountFlags, OpenTreeFlags};
    let path = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let root = rustix::fs::open(rootfs, path, Mode::empty())?;
    let rel = dest.strip_prefix("/").unwrap_or(dest);
    let dir = rustix::fs::openat2(
        &root,
        rel,
        path | OFlags::NOFOLLOW,
        Mode::empty(),
        ResolveFlags::IN_ROOT | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS,
    )?;
    let tree = rustix::mount::open_tree(
        &dir,
        "",
        OpenTreeFlags::OPEN_TREE_CLONE
            | OpenTreeFlags::OPEN_TREE_CLOEXEC
            | OpenTreeFlags::AT_EMPTY_PATH
            | OpenTreeFlags::AT_RECURSIVE,
    )?;
    rustix::mount::move_mount(
        &tree,
        "",
        &dir,
        "",
        MoveMountFlags::MOVE_MOUNT_F_EMPTY_PATH | MoveMountFlags::MOVE_MOUNT_T_EMPTY_PATH,
    )?;
    Ok(())
}

/// One mount as libcontainer makes it (options parsed by its own parser):
/// the mount point resolved and made inside the rootfs, then mounted through
/// its `/proc/self/fd` link, so a symlink swapped in cannot redirect it; a
/// bind's other flags by a remount, the propagation by a last call.
fn mount(plan: &Plan, m: &Mount) -> std::io::Result<()> {
    use nix::mount::MsFlags;
    let config = libcontainer::rootfs::utils::parse_mount(m).map_err(std::io::Error::other)?;
    if config.rec_attr.is_some() {
        return Err(std::io::Error::other(
            "recursive mount attributes (rro, rnosuid, …) are not supported on a bind at /dev",
        ));
    }
    let dest = super::mounts::resolve(&plan.rootfs, m.destination())?;
    let source = m.source().clone().unwrap_or_default();
    let bind = config.flags.contains(MsFlags::MS_BIND);
    let target = if bind && !source.is_dir() {
        super::compat::file_in(&plan.rootfs, &dest)?
    } else {
        super::compat::mkdir_all_in(&plan.rootfs, &dest)?
    };
    let target = PathBuf::from(format!("/proc/self/fd/{}", target.as_raw_fd()));
    let propagation =
        MsFlags::MS_SHARED | MsFlags::MS_SLAVE | MsFlags::MS_PRIVATE | MsFlags::MS_UNBINDABLE;
    let flags = config.flags - propagation;
    let mut data = config.data;
    // As libcontainer labels its own mounts (SELinux hosts only).
    if let Some(label) = plan.mount_label.as_deref() {
        if !bind && Path::new("/sys/fs/selinux").exists() {
            data.push(format!("context={label}"));
        }
    }
    let data = data.join(",");
    let data = (!data.is_empty()).then_some(data.as_str());
    let no: Option<&str> = None;
    if bind {
        nix::mount::mount(
            Some(&source),
            &target,
            no,
            flags & (MsFlags::MS_BIND | MsFlags::MS_REC),
            no,
        )?;
        let rest = flags - (MsFlags::MS_BIND | MsFlags::MS_REC | MsFlags::MS_REMOUNT);
        if !rest.is_empty() {
            nix::mount::mount(
                no,
                &target,
                no,
                rest | MsFlags::MS_BIND | MsFlags::MS_REMOUNT,
                no,
            )?;
        }
    } else {
        nix::mount::mount(Some(&source), &target, m.typ().as_deref(), flags, data)?;
    }
    if config.flags.intersects(propagation) {
        let rec = config.flags & MsFlags::MS_REC;
        nix::mount::mount(no, &target, no, (config.flags & propagation) | rec, no)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use oci_spec::runtime::SpecBuilder;

    fn spec(mounts: Vec<Mount>, cwd: &str) -> Spec {
        let mut process = oci_spec::runtime::Process::default();
        process.set_cwd(cwd.into());
        SpecBuilder::default()
            .mounts(mounts)
            .process(process)
            .build()
            .unwrap()
    }

    fn mount(dest: &str, typ: &str, source: &str, options: &[&str]) -> Mount {
        MountBuilder::default()
            .destination(dest)
            .typ(typ)
            .source(source)
            .options(options.iter().map(|s| s.to_string()).collect::<Vec<_>>())
            .build()
            .unwrap()
    }

    #[test]
    fn a_bound_dev_and_later_dev_mounts_go_to_the_hook() {
        let rootfs = Path::new("/nonexistent-rootfs");
        let mut s = spec(
            vec![
                mount("/proc", "proc", "proc", &[]),
                mount("/dev", "bind", "/dev", &["rbind"]),
                mount("/dev/shm", "tmpfs", "shm", &[]),
                mount("/sys", "sysfs", "sysfs", &[]),
            ],
            "/",
        );
        assert!(install(&mut s, rootfs).unwrap());
        let kept: Vec<_> = s
            .mounts()
            .iter()
            .flatten()
            .map(|m| m.destination().clone())
            .collect();
        assert_eq!(kept, ["/proc", "/dev", "/sys"].map(PathBuf::from));
        assert_eq!(
            s.mounts().as_ref().unwrap()[1].typ().as_deref(),
            Some("tmpfs")
        );
        let hook = &s
            .hooks()
            .as_ref()
            .unwrap()
            .create_container()
            .as_ref()
            .unwrap()[0];
        let args = hook.args().as_ref().unwrap();
        assert_eq!(args[0], ARG0);
        let plan: Plan = serde_json::from_str(&args[1]).unwrap();
        let taken: Vec<_> = plan
            .mounts
            .iter()
            .map(|m| m.destination().clone())
            .collect();
        assert_eq!(taken, ["/dev", "/dev/shm"].map(PathBuf::from));
        assert_eq!(plan.cwd, None);
    }

    #[test]
    fn a_cwd_is_planned_only_where_a_mount_may_lack_it() {
        let rootfs = Path::new("/nonexistent-rootfs");
        let tmpfs = || mount("/tmp", "tmpfs", "tmpfs", &[]);
        let mut s = spec(vec![tmpfs()], "/tmp/work");
        assert!(install(&mut s, rootfs).unwrap());
        // Not below a mount: made before the build instead.
        assert!(!install(&mut spec(vec![tmpfs()], "/work"), rootfs).unwrap());
        // The mount point itself.
        assert!(!install(&mut spec(vec![tmpfs()], "/tmp"), rootfs).unwrap());
        // A bind whose source has it.
        let bind = mount("/src", "bind", "/", &["rbind"]);
        assert!(!install(&mut spec(vec![bind.clone()], "/src/usr"), rootfs).unwrap());
        assert!(install(&mut spec(vec![bind], "/src/no/such/dir"), rootfs).unwrap());
    }
}
