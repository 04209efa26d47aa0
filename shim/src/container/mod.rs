//! Container operations on libcontainer: the layer between the CLI and the
//! kernel-facing pieces. It owns its option types and never reaches back up
//! into `cli`: commands call down into a [`Runtime`].
//!
//! * `create` — checks before anything exists, libcontainer's build with
//!   sandboy's executor (`init`), cleanup on failure;
//! * `run` — create + start + wait in the foreground, as runc's `run`;
//! * `exec` — a new process in a running container, confined like its init;
//! * `signal` — runc's delivery of signals to the init or the whole cgroup;
//! * `delete` — libcontainer's delete, poststop hooks, leftovers;
//! * `bundle`, `limits`, `loopback`, `poststop` — what those steps read and
//!   apply.

pub mod bundle;
mod claim;
mod compat;
mod create;
mod delete;
pub mod egress;
mod exec;
mod exec_process;
pub(crate) mod identity;
pub mod learn;
pub mod limits;
pub mod loopback;
pub mod mounts;
mod namespaces;
pub mod poststop;
pub mod rootfs_hook;
pub mod rootless;
mod run;
pub mod signal;
mod sysctl;

use std::fs;
use std::os::unix::ffi::OsStringExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use libcontainer::container::builder::ContainerBuilder;
use libcontainer::container::{Container, ContainerStatus};
use libcontainer::syscall::syscall::SyscallType;

use crate::error::{Failure, Result};

pub use exec::ExecOptions;
pub use run::{exit_status, report_kill, Ran, RunMode};

/// What `create` (and `run`) are given besides the id: runc's create flags.
#[derive(Debug, Clone, Default)]
pub struct CreateOptions {
    /// The bundle directory (holding config.json).
    pub bundle: PathBuf,
    /// Unix socket that receives the pty master fd.
    pub console_socket: Option<PathBuf>,
    /// File to write the container init's pid to.
    pub pid_file: Option<PathBuf>,
    /// Do not pivot_root into the rootfs.
    pub no_pivot: bool,
    /// Pass fds 3..3+N to the container.
    pub preserve_fds: i32,
    /// Observe instead of confining and write the policy (`run --learn`).
    pub learn: Option<learn::Learning>,
    /// The init dies with this process (root `wrap`).
    pub die_with_caller: bool,
}

/// Where the runtime keeps state, and how it manages cgroups.
pub struct Runtime {
    pub root: PathBuf,
    pub systemd: bool,
    /// What the operator allows for kernel auditing (denial reports).
    pub audit: crate::supervisor::audit::Mode,
    /// The node configuration (named policies, what containers must bring).
    pub node: crate::node::Config,
}

/// Whether `dir` is a sandboy state root: empty, or holding one of the
/// runtime's own directories (a directory of other things is never
/// narrowed).
fn is_state_root(dir: &Path) -> bool {
    let mut entries = match fs::read_dir(dir) {
        Ok(e) => e.flatten().peekable(),
        Err(_) => return false,
    };
    entries.peek().is_none()
        || entries.any(|e| {
            [
                SHADOW_DIR,
                SECCOMP_CACHE_DIR,
                WRAP_DIR,
                claim::LOCK_DIR,
                crate::host::sealed_exe::EMPTY_DIR,
            ]
            .contains(&e.file_name().to_string_lossy().as_ref())
        })
}

/// Directory (under the state root) for rewritten bundles, see `create`.
pub(crate) const SHADOW_DIR: &str = ".bundles";
/// Directory (under the state root) of compiled seccomp programs.
pub(crate) const SECCOMP_CACHE_DIR: &str = ".seccomp-cache";
/// Directory (under the state root) of `wrap`'s temporary bundles.
pub(crate) const WRAP_DIR: &str = ".wrap";
/// In a shadow bundle: the path of the bundle the caller gave.
pub(crate) const ORIGIN_FILE: &str = "origin";

impl Runtime {
    /// Open (or create, 0700) the state root, for the commands that make
    /// containers. As runc keeps it: 0700, so no other user reads the
    /// containers' state or their bundles' env. A sandboy root with looser
    /// modes (an older sandboy made it 0755) is narrowed; one we may not
    /// use is refused with "permission denied".
    pub fn new(root: PathBuf, systemd: bool) -> Result<Self> {
        claim::private_dir(&root).map_err(|e| {
            Failure::runtime(format!("cannot create state root {}: {e}", root.display()))
        })?;
        Self::checked(root, systemd, true)
    }

    /// The state root for commands that only act on containers already
    /// made (`state`, `list`, `kill`, `delete`, …): never created (a
    /// mistyped `--root` made a tree of directories) and never narrowed
    /// (`list --root /tmp` once made /tmp 0700). A missing root holds no
    /// container.
    pub fn open(root: PathBuf, systemd: bool) -> Result<Self> {
        if fs::symlink_metadata(&root).is_err() {
            return Ok(Self {
                root,
                systemd,
                audit: Default::default(),
                node: Default::default(),
            });
        }
        Self::checked(root, systemd, false)
    }

    fn checked(root: PathBuf, systemd: bool, narrow: bool) -> Result<Self> {
        let root = fs::canonicalize(&root)
            .map_err(|e| Failure::runtime(format!("state root {}: {e}", root.display())))?;
        let meta = fs::metadata(&root)?;
        let euid = nix::unistd::geteuid().as_raw();
        // Others may write it: they could plant a container's state, whose
        // hooks root's `delete` runs. Never ours to narrow (it is /tmp).
        if meta.mode() & 0o022 != 0 {
            return Err(Failure::runtime(format!(
                "state root {}: other users may write it (mode {:o}), so they could plant containers' state; use a directory of your own with --root",
                root.display(),
                meta.mode() & 0o7777
            )));
        }
        if narrow && meta.uid() == euid && meta.mode() & 0o077 != 0 && is_state_root(&root) {
            fs::set_permissions(&root, fs::Permissions::from_mode(0o700))?;
        }
        let rwx = nix::unistd::AccessFlags::R_OK
            | nix::unistd::AccessFlags::W_OK
            | nix::unistd::AccessFlags::X_OK;
        // A read-only root still serves `list` and `state`; writes to it
        // fail naming the read-only filesystem (see `claim`).
        if let Err(e) = nix::unistd::access(&root, rwx).or_else(|e| match e {
            nix::errno::Errno::EROFS => Ok(()),
            e => Err(e),
        }) {
            return Err(Failure::runtime(format!(
                "state root {}: {} (it belongs to uid {} with mode {:o}); use a root of your own with --root",
                root.display(),
                if e == nix::errno::Errno::EACCES { "permission denied".to_owned() } else { e.to_string() },
                meta.uid(),
                meta.mode() & 0o7777
            )));
        }
        // Another user's directory is never ours to trust, whatever we may
        // do in it: they could forge a container's state, and root's
        // `delete` would run its hooks and `kill` signal any pid (a red
        // team's pre-made `--root` in /tmp).
        if meta.uid() != euid {
            return Err(Failure::runtime(format!(
                "state root {}: it belongs to uid {}, not to uid {euid}; use a root of your own with --root",
                root.display(),
                meta.uid()
            )));
        }
        Ok(Self {
            root,
            systemd,
            audit: Default::default(),
            node: Default::default(),
        })
    }

    pub(crate) fn dir(&self, id: &str) -> PathBuf {
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
        let mut c = self.load_state(id)?;
        c.refresh_status()?;
        // A pid is alive, but is it the init's? (A recycled one was killed
        // by `kill` and entered by `exec`: a red team.)
        if c.status() != ContainerStatus::Stopped && !identity::same_init(&self.dir(id), c.pid()) {
            c.set_status(ContainerStatus::Stopped);
        }
        Ok(c)
    }

    /// libcontainer saves state.json in place (truncate, then write), so a
    /// load that meets a concurrent `pause`, `start` or `kill` mid-save
    /// reads it empty or cut: such a read is retried for up to ~100 ms
    /// before the file is called corrupt. A state of another runtime
    /// sharing the root is not retried.
    fn load_state(&self, id: &str) -> Result<Container> {
        let mut tries = 0;
        loop {
            match Container::load(self.dir(id)) {
                Ok(c) => return Ok(c),
                Err(e) => {
                    tries += 1;
                    if tries > 20 || !self.exists(id) || self.foreign(id).is_some() {
                        return Err(self.load_error(id, e));
                    }
                    std::thread::sleep(std::time::Duration::from_millis(5));
                }
            }
        }
    }

    /// `Some(owner)` when `<root>/<id>/state.json` is whole JSON but not
    /// libcontainer's state: a container of another runtime sharing this
    /// `--root` (runc's own state file, for example). sandboy must leave
    /// such a container alone, `delete --force` included.
    pub fn foreign(&self, id: &str) -> Option<&'static str> {
        let bytes = fs::read(self.dir(id).join("state.json")).ok()?;
        let v: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
        if serde_json::from_value::<libcontainer::container::State>(v.clone()).is_ok() {
            return None;
        }
        // runc's libcontainer writes `init_process_pid` and `config`.
        Some(if v.get("init_process_pid").is_some() {
            "runc"
        } else {
            "another runtime"
        })
    }

    /// The container's denial report so far (empty without one).
    pub fn denials(&self, id: &str) -> Vec<crate::supervisor::denials::Denial> {
        crate::supervisor::denials::read_report(
            &self.dir(id).join(crate::supervisor::denials::REPORT_FILE),
        )
    }

    /// A state.json that does not parse is named as such: libcontainer
    /// writes it in place (truncate, then write), so a SIGKILL at the wrong
    /// moment leaves it empty or cut; `delete --force` recovers from that.
    fn load_error(&self, id: &str, e: libcontainer::error::LibcontainerError) -> Failure {
        let file = self.dir(id).join("state.json");
        if !file.exists() {
            // Deleted since `exists` (a concurrent `delete`).
            return Failure::runtime("container does not exist");
        }
        if let Some(owner) = self.foreign(id) {
            let hint = if owner == "runc" {
                "runc"
            } else {
                "that runtime"
            };
            return Failure::runtime(format!(
                "container {id} belongs to another runtime ({owner}'s state file {}); sandboy leaves it alone: use {hint} with --root {}",
                file.display(),
                self.root.display()
            ));
        }
        let parses = fs::read(&file)
            .ok()
            .is_some_and(|b| serde_json::from_slice::<serde_json::Value>(&b).is_ok());
        if !parses && file.exists() {
            return Failure::runtime(format!(
                "state file {} is corrupt (truncated?); remove it with `sandboy delete --force {id}`",
                file.display()
            ));
        }
        Failure::from(e).context(format!("loading state of {id}"))
    }

    /// Ids of all containers under the root.
    pub fn ids(&self) -> Result<Vec<String>> {
        let mut ids = Vec::new();
        let entries = match fs::read_dir(&self.root) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(ids),
            entries => entries?,
        };
        for entry in entries {
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

/// The longest container id.
pub const MAX_ID_LEN: usize = 200;

/// runc's id rules, checked before any path is built from the id.
pub fn validate_id(id: &str) -> Result<()> {
    // The state root's own directories (`.bundles`, `.locks`, `.adapt`, the
    // caches) start with a dot: `delete -f .bundles` removed every
    // container's shadow bundle (a red team).
    if id.starts_with('.') {
        return Err(Failure::usage(format!(
            "invalid container id {id:?}: an id may not start with '.' (the state root's own directories do)"
        )));
    }
    // A directory, a lock file and cgroups are named after it: within one
    // file name (255 bytes) with room for their suffixes.
    if id.len() > MAX_ID_LEN {
        return Err(Failure::usage(format!(
            "invalid container id: {} bytes long; an id has at most {MAX_ID_LEN}",
            id.len()
        )));
    }
    ContainerBuilder::new(id.to_owned(), SyscallType::default())
        .validate_id()
        .map(|_| ())
        .map_err(|e| Failure::usage(format!("invalid container id {id:?}: {e}")))
}

/// `--pid-file`, written by the runtime rather than libcontainer (which
/// writes through a symlink at that name): a temporary file renamed into
/// place, as runc does.
pub(crate) fn write_pid_file(
    path: Option<&std::path::Path>,
    pid: Option<nix::unistd::Pid>,
) -> Result<()> {
    let (Some(path), Some(pid)) = (path, pid) else {
        return Ok(());
    };
    crate::host::output::replace(path, pid.as_raw().to_string().as_bytes(), 0o644)
        .map_err(|e| Failure::runtime(format!("--pid-file {}: {e}", path.display())))
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
pub(crate) fn to_json(v: &impl serde::Serialize) -> Result<Vec<u8>> {
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
/// Only `root.path` is decoded: `list` does this once per container, and
/// building the whole config.json as a `Value` was most of its time.
pub fn rootfs_of(c: &Container) -> PathBuf {
    #[derive(serde::Deserialize)]
    struct Config {
        root: Root,
    }
    #[derive(serde::Deserialize)]
    struct Root {
        path: PathBuf,
    }
    fs::read(c.bundle().join("config.json"))
        .ok()
        .and_then(|b| serde_json::from_slice::<Config>(&b).ok())
        .map(|c| c.root.path)
        .map(|p| {
            if p.is_absolute() {
                p
            } else {
                c.bundle().join(p)
            }
        })
        .unwrap_or_else(|| Path::new("").to_path_buf())
}

/// The spec's entry for the pid namespace (none: the host's).
pub(crate) fn pid_namespace(
    spec: &oci_spec::runtime::Spec,
) -> Option<oci_spec::runtime::LinuxNamespace> {
    spec.linux()
        .as_ref()
        .and_then(|l| l.namespaces().as_ref())
        .and_then(|ns| {
            ns.iter()
                .find(|n| n.typ() == oci_spec::runtime::LinuxNamespaceType::Pid)
                .cloned()
        })
}
