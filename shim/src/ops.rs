//! Container operations on libcontainer: locating state, creating with
//! sandboy's executor, and runc's wording for the common failures.

use std::fs;
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};

use libcontainer::config::YoukiConfig;
use libcontainer::container::builder::ContainerBuilder;
use libcontainer::container::{Container, ContainerStatus};
use libcontainer::syscall::syscall::SyscallType;
use oci_spec::runtime::LinuxNamespaceType;

use crate::bundle::Bundle;
use crate::cli::CreateOpts;
use crate::error::{Failure, Result};
use crate::executor::SandboyExecutor;

/// Where the runtime keeps state, and how it manages cgroups.
pub struct Runtime {
    pub root: PathBuf,
    pub systemd: bool,
}

/// Directory (under the state root) for rewritten bundles, see `create`.
const SHADOW_DIR: &str = ".bundles";
/// In a shadow bundle: the path of the bundle the caller gave.
const ORIGIN_FILE: &str = "origin";

impl Runtime {
    pub fn new(root: PathBuf, systemd: bool) -> Result<Self> {
        fs::create_dir_all(&root).map_err(|e| {
            Failure::runtime(format!("cannot create state root {}: {e}", root.display()))
        })?;
        let root = fs::canonicalize(&root)?;
        Ok(Self { root, systemd })
    }

    fn dir(&self, id: &str) -> PathBuf {
        self.root.join(id)
    }

    pub fn exists(&self, id: &str) -> bool {
        self.dir(id).join("state.json").exists()
    }

    /// Load a container with refreshed status.
    pub fn load(&self, id: &str) -> Result<Container> {
        validate_id(id)?;
        if !self.exists(id) {
            return Err(Failure::runtime("container does not exist"));
        }
        let mut c = Container::load(self.dir(id))
            .map_err(|e| Failure::from(e).context(format!("loading state of {id}")))?;
        c.refresh_status()?;
        Ok(c)
    }

    /// Create a container: checks, then libcontainer, then cleanup on failure
    /// so a failed create leaves no state, cgroup, mount or process.
    pub fn create(&self, id: &str, opts: &CreateOpts, detach: bool) -> Result<Container> {
        validate_id(id)?;
        if self.dir(id).exists() {
            return Err(Failure::runtime(format!("container with id exists: {id}")));
        }
        if self.systemd {
            return Err(Failure::usage(
                "--systemd-cgroup: the systemd cgroup manager is not built into sandboy; drop the flag (cgroupfs is used)",
            ));
        }
        let bundle = Bundle::load(&opts.bundle)?;
        let linux = bundle
            .spec
            .linux()
            .as_ref()
            .expect("checked by Bundle::load");
        // libcontainer 0.7 raises its "systemd" flag whenever a user
        // namespace is requested; libcgroups acts on it only for a relative
        // cgroupsPath on a unified host (the systemd manager, not built in).
        // Absolute paths, sandboy's default `/sandboy/<id>` included, stay
        // on cgroupfs v2.
        let unified = unified_host();
        let relative_path = linux.cgroups_path().as_ref().filter(|p| !p.is_absolute());
        if let Some(path) = relative_path.filter(|_| {
            unified
                && linux
                    .namespaces()
                    .as_ref()
                    .is_some_and(|ns| ns.iter().any(|n| n.typ() == LinuxNamespaceType::User))
        }) {
            return Err(Failure::config(format!(
                "{}/config.json: linux.cgroupsPath {:?} is relative, which with a user namespace on a cgroup v2 host means the systemd cgroup manager, not built into sandboy; give an absolute path (e.g. \"/sandboy/{id}\") or leave it out",
                bundle.dir.display(),
                path.display().to_string()
            )));
        }
        crate::limits::check(&bundle.spec, &bundle.dir, unified)?;
        // Loaded before anything exists: bad rules are a config error and a
        // kernel without cgroup BPF stops here, with nothing to clean up.
        let devices = crate::cgroup_devices::prepare(&bundle.spec, &bundle.dir, unified)?;
        let held = crate::privilege::to_hold(&bundle.spec);
        let build_dir = self.shadow_if_needed(id, &bundle, &held)?;
        let wasm = match self.precompile_wasm(&bundle) {
            Ok(w) => w,
            Err(e) => {
                self.remove_leftovers(id);
                return Err(e);
            }
        };

        let notify = match crate::seccomp_notify::Channel::open(&bundle.spec) {
            Ok(n) => n,
            Err(e) => {
                self.remove_leftovers(id);
                return Err(e);
            }
        };
        let result = ContainerBuilder::new(id.to_owned(), SyscallType::default())
            .with_executor(
                SandboyExecutor::new(id, opts.preserve_fds)
                    .with_wasm(wasm)
                    .with_seccomp(bundle.seccomp.clone())
                    .with_held(held)
                    .with_notify(
                        notify
                            .as_ref()
                            .map(|n| n.target(id, &bundle.dir, &bundle.spec)),
                    ),
            )
            .with_root_path(&self.root)
            .and_then(|b| b.with_pid_file(opts.pid_file.as_ref()))
            .map(|b| {
                b.with_console_socket(opts.console_socket.as_ref())
                    .with_preserved_fds(opts.preserve_fds)
                    .as_init(build_dir.as_ref().unwrap_or(&bundle.dir))
                    .with_systemd(false)
                    .with_detach(detach)
                    .with_no_pivot(opts.no_pivot)
            })
            .and_then(|b| b.build());
        // The container's processes are attached by now, so the lock warmer
        // is done; reap it before `run` starts reaping children of its own.
        crate::cgroup_prime::finish();

        let result = result.map_err(Failure::from).and_then(|c| {
            if crate::loopback::wants_new_netns(&bundle.spec) {
                let pid = c
                    .pid()
                    .ok_or_else(|| Failure::runtime("container has no init pid"))?;
                crate::loopback::bring_up(pid.as_raw())?;
            }
            Ok(c)
        });
        match result {
            Ok(mut container) => {
                // Before `start`: the container's own code never runs
                // without its device rules.
                let confined = devices
                    .as_ref()
                    .map_or(Ok(()), |d| d.attach(&container))
                    .and_then(|()| crate::oom::apply_disable(&container, &bundle.spec));
                if let Err(e) = confined {
                    let _ = container.delete(true);
                    self.remove_leftovers(id);
                    return Err(e);
                }
                Ok(container)
            }
            Err(err) => {
                if let Ok(mut c) = Container::load(self.dir(id)) {
                    let _ = c.delete(true);
                }
                self.remove_leftovers(id);
                Err(err)
            }
        }
    }

    /// libcontainer names cgroups `:youki:<id>` when the spec has no
    /// `cgroupsPath`, and reads the spec only from `<bundle>/config.json`; so
    /// such specs, specs whose init must hold capabilities to confine
    /// itself (`held`, see `privilege`), and specs whose device rules do not
    /// start from deny-all (see `cgroup_devices`) get a copy with
    /// `/sandboy/<id>`, the held capabilities and the deny-all rule filled
    /// in. The copy stays the
    /// container's bundle as libcontainer records it, because `exec` builds
    /// the new process from that config.json too (the caller's would put it
    /// in `:youki:<id>`, outside every limit); the caller's bundle path and
    /// the held list are kept next to it.
    fn shadow_if_needed(
        &self,
        id: &str,
        bundle: &Bundle,
        held: &[oci_spec::runtime::Capability],
    ) -> Result<Option<PathBuf>> {
        let linux = bundle
            .spec
            .linux()
            .as_ref()
            .expect("checked by Bundle::load");
        let deny_first = crate::cgroup_devices::needs_default_deny(&bundle.spec);
        if linux.cgroups_path().is_some() && held.is_empty() && !deny_first {
            return Ok(None);
        }
        let mut spec = bundle.spec.clone();
        if linux.cgroups_path().is_none() {
            let mut linux = linux.clone();
            linux.set_cgroups_path(Some(PathBuf::from(format!("/sandboy/{id}"))));
            spec.set_linux(Some(linux));
        }
        if deny_first {
            crate::cgroup_devices::with_default_deny(&mut spec);
        }
        crate::privilege::augment(&mut spec, held);
        if let Some(mut root) = spec.root().clone() {
            root.set_path(bundle.dir.join(root.path()));
            spec.set_root(Some(root));
        }
        let dir = self.root.join(SHADOW_DIR).join(id);
        fs::create_dir_all(&dir)?;
        fs::write(dir.join("config.json"), to_json(&spec)?)?;
        fs::write(
            dir.join(ORIGIN_FILE),
            bundle.dir.as_os_str().as_encoded_bytes(),
        )?;
        fs::write(dir.join(crate::privilege::HELD_FILE), to_json(&held)?)?;
        Ok(Some(dir))
    }

    /// For an OCI-wasm container, compile the payload now, through the
    /// compile cache under the state root, so that errors (imports, bad
    /// limits, not wasm) fail `create` with the right exit code and a warm
    /// start skips compilation. A payload that is not a plain file inside the
    /// rootfs (e.g. on a bind mount) is prepared inside the container.
    fn precompile_wasm(&self, bundle: &Bundle) -> Result<Option<sandboy_wasm::Prepared>> {
        let Some(args0) = crate::executor::wasm_payload(&bundle.spec) else {
            return Ok(None);
        };
        let rootfs = bundle
            .dir
            .join(bundle.spec.root().as_ref().expect("checked").path());
        let Ok(rootfs) = fs::canonicalize(rootfs) else {
            return Ok(None);
        };
        // Resolve symlinks, and only accept what stays inside the rootfs.
        let Ok(host) = fs::canonicalize(rootfs.join(args0.trim_start_matches('/'))) else {
            return Ok(None);
        };
        if !host.starts_with(&rootfs) || !host.is_file() {
            return Ok(None);
        }
        let cache = sandboy_wasm::Cache::new(self.root.join(".wasm-cache"))
            .map_err(|e| Failure::runtime(format!("wasm compile cache: {e}")))?;
        let annotations = bundle.spec.annotations().clone().unwrap_or_default();
        sandboy_wasm::Prepared::prepare(&host, &annotations, Some(&cache))
            .map(Some)
            // A payload that cannot be prepared (not wasm, imports, bad
            // limits) is a configuration problem of the bundle.
            .map_err(|e| Failure::config(format!("wasm payload {args0}: {e}")))
    }

    /// Delete a container (libcontainer's delete, our leftovers) and then
    /// run its poststop hooks, whose failures are only warnings.
    pub fn destroy(&self, c: &mut Container, force: bool) -> Result<()> {
        let config = YoukiConfig::load(&c.root).ok();
        let hooks = match config {
            Some(cfg) if delete_stopped(c, &cfg) => crate::poststop::of(&cfg),
            config => {
                let hooks = config
                    .map(|cfg| crate::poststop::take(c, cfg))
                    .unwrap_or_default();
                if let Err(e) = c.delete(force) {
                    if force && !c.root.exists() {
                        // Another delete removed it meanwhile (an engine's
                        // cleanup racing its own `delete`): gone is what
                        // --force asks for, and that delete ran the hooks.
                        tracing::debug!(id = c.id(), error = %e, "deleted concurrently");
                        self.remove_leftovers(c.id());
                        return Ok(());
                    }
                    crate::poststop::restore(c, hooks);
                    return Err(e.into());
                }
                hooks
            }
        };
        // Before the leftovers go: the hooks' state names the shadow bundle.
        crate::poststop::run(c, &hooks);
        self.remove_leftovers(c.id());
        Ok(())
    }

    /// Remove what a failed create or a delete may leave.
    pub fn remove_leftovers(&self, id: &str) {
        let _ = fs::remove_dir_all(self.root.join(SHADOW_DIR).join(id));
        let dir = self.dir(id);
        if dir.exists() {
            if let Err(e) = fs::remove_dir_all(&dir) {
                tracing::warn!(id, error = %e, "could not remove state directory");
            }
        }
    }

    /// Ids of all containers under the root.
    pub fn ids(&self) -> Result<Vec<String>> {
        let mut ids = Vec::new();
        for entry in fs::read_dir(&self.root)? {
            let entry = entry?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if !name.starts_with('.') && self.exists(&name) {
                ids.push(name);
            }
        }
        ids.sort();
        Ok(ids)
    }
}

/// libcontainer's delete for the common case — a stopped container on
/// cgroupfs v1 (hybrid or legacy) with empty cgroups and no Intel RDT —
/// without building a libcgroups manager (see `cgroup_remove`). Whether it
/// did the job; on `false` libcontainer's delete takes over from the same
/// state.
fn delete_stopped(c: &Container, cfg: &YoukiConfig) -> bool {
    use libcgroups::common::{get_cgroup_setup, CgroupSetup};
    if c.status() != ContainerStatus::Stopped
        || c.systemd()
        || c.intel_rdt_dir().is_some()
        || c.intel_rdt_monitoring_dir().is_some()
        || !matches!(
            get_cgroup_setup(),
            Ok(CgroupSetup::Hybrid | CgroupSetup::Legacy)
        )
    {
        return false;
    }
    if let Err(crate::cgroup_remove::NotHandled(why)) =
        crate::cgroup_remove::remove_empty(&cfg.cgroup_path)
    {
        tracing::debug!(id = c.id(), why, "cgroups left to libcontainer's delete");
        return false;
    }
    // The state directory goes with the rest of the leftovers.
    true
}

/// Whether this host runs cgroup v2 only (no v1 controllers mounted).
pub fn unified_host() -> bool {
    matches!(
        libcgroups::common::get_cgroup_setup(),
        Ok(libcgroups::common::CgroupSetup::Unified)
    )
}

/// The cgroup manager of a container (cgroup path and manager kind as
/// recorded at create time).
pub fn cgroup_manager(c: &Container) -> Result<libcgroups::common::AnyCgroupManager> {
    libcgroups::common::create_cgroup_manager(libcgroups::common::CgroupConfig {
        cgroup_path: c.spec()?.cgroup_path,
        systemd_cgroup: c.systemd(),
        container_name: c.id().to_owned(),
    })
    .map_err(|e| Failure::runtime(format!("cgroup of {}: {e}", c.id())))
}

/// The container's cgroup directory under `root` (a v1 controller's mount
/// point or the unified hierarchy's), refusing a recorded path with `..`.
pub fn cgroup_dir(c: &Container, root: &str) -> Result<PathBuf> {
    let rel = c
        .spec()
        .map_err(|e| Failure::runtime(format!("cgroup of {}: {e}", c.id())))?
        .cgroup_path;
    if rel
        .components()
        .any(|p| p == std::path::Component::ParentDir)
    {
        return Err(Failure::runtime(format!(
            "cgroup path {} of {} leaves the cgroup root",
            rel.display(),
            c.id()
        )));
    }
    Ok(Path::new(root).join(rel.strip_prefix("/").unwrap_or(&rel)))
}

/// runc's id rules, checked before any path is built from the id.
pub fn validate_id(id: &str) -> Result<()> {
    ContainerBuilder::new(id.to_owned(), SyscallType::default())
        .validate_id()
        .map(|_| ())
        .map_err(|e| Failure::usage(format!("invalid container id {id:?}: {e}")))
}

/// runc's wording when an operation needs a running container.
pub fn require(c: &Container, ok: bool, what: &str) -> Result<()> {
    if ok {
        return Ok(());
    }
    Err(Failure::runtime(match c.status() {
        ContainerStatus::Stopped if what == "start" => {
            "cannot start a container that has stopped".to_owned()
        }
        ContainerStatus::Running | ContainerStatus::Paused if what == "start" => {
            "cannot start an already running container".to_owned()
        }
        ContainerStatus::Paused if what == "pause" => "container already paused".to_owned(),
        _ if what == "resume" => "container not paused".to_owned(),
        ContainerStatus::Paused if what == "kill" => "container paused".to_owned(),
        _ => "container not running".to_owned(),
    }))
}

/// Serialise for a shadow bundle file.
fn to_json(v: &impl serde::Serialize) -> Result<Vec<u8>> {
    serde_json::to_vec(v).map_err(|e| Failure::runtime(e.to_string()))
}

/// The bundle the caller gave at create (what runc reports), even when
/// libcontainer runs the container from a shadow copy.
pub fn bundle_of(c: &Container) -> PathBuf {
    match fs::read(c.bundle().join(ORIGIN_FILE)) {
        Ok(bytes) => PathBuf::from(std::ffi::OsString::from_vec(bytes)),
        Err(_) => c.bundle().clone(),
    }
}

/// The container's rootfs as recorded in its bundle, absolute (for display).
pub fn rootfs_of(c: &Container) -> PathBuf {
    fs::read(c.bundle().join("config.json"))
        .ok()
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
        .and_then(|v| v["root"]["path"].as_str().map(PathBuf::from))
        .map(|p| {
            if p.is_absolute() {
                p
            } else {
                c.bundle().join(p)
            }
        })
        .unwrap_or_else(|| Path::new("").to_path_buf())
}
