//! `exec`: a new process in a running container, built by libcontainer as a
//! tenant and confined by sandboy's executor exactly like the init.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use libcontainer::container::builder::ContainerBuilder;
use libcontainer::container::ContainerStatus;
use libcontainer::syscall::syscall::SyscallType;
use nix::sys::wait::waitpid;

use super::{bundle_of, exit_status, require, Runtime};
use crate::error::{Failure, Result};
use crate::init::executor::SandboyExecutor;

/// runc's exec options, parsed.
#[derive(Debug, Default)]
pub struct ExecOptions {
    /// A process.json to run instead of `command`.
    pub process: Option<PathBuf>,
    pub command: Vec<String>,
    pub detach: bool,
    pub pid_file: Option<PathBuf>,
    pub console_socket: Option<PathBuf>,
    pub cwd: Option<PathBuf>,
    pub env: HashMap<String, String>,
    pub uid: Option<u32>,
    pub gid: Option<u32>,
    pub additional_gids: Vec<u32>,
    pub cap: Vec<String>,
    pub no_new_privs: bool,
    pub preserve_fds: i32,
    pub apparmor: Option<String>,
    pub process_label: Option<String>,
    pub ignore_paused: bool,
    pub cgroup: Option<String>,
}

impl Runtime {
    /// Run a process in container `id`: its exit status, or 0 once started
    /// when detached.
    pub fn exec(&self, id: &str, mut opts: ExecOptions) -> Result<i32> {
        let c = self.load(id)?;
        let paused = c.status() == ContainerStatus::Paused;
        require(&c, c.can_exec() || (opts.ignore_paused && paused), "exec")?;

        // The exec'd process gets the init's confinement; without the spec
        // it cannot, so exec is refused rather than run unconfined.
        let init_spec =
            oci_spec::runtime::Spec::load(c.bundle().join("config.json")).map_err(|e| {
                Failure::runtime(format!(
                    "exec: cannot read the container's config.json to confine the new process: {e}"
                ))
            })?;
        // A policy's init holds neither; no exec'd process may either: asked
        // by --cap, refused; in an engine's process.json (containerd's and
        // podman's default sets hold both), taken out of a copy that also
        // gets the init's user, limits and no_new_privs.
        // `--cap` names were checked by the CLI: none is dropped here.
        let asked: Vec<oci_spec::runtime::Capability> = opts
            .cap
            .iter()
            .filter_map(|c| crate::init::privilege::named(c))
            .collect();
        if crate::init::privilege::policy_confined(&init_spec) {
            refuse_plant(&asked)?;
        }
        super::exec_process::check_user_flags(&init_spec, opts.uid, opts.gid)?;
        let rewritten = match &opts.process {
            Some(p) => super::exec_process::held_to_init(p, &self.dir(id), &init_spec)?,
            None => None,
        };
        if let Some(copy) = &rewritten {
            opts.process = Some(copy.0.clone());
        }
        // Without --process, the new process gets the init's capability
        // sets, including any the init held only to confine itself: drop
        // those too, unless asked for with --cap.
        let held = if opts.process.is_some() {
            Default::default()
        } else {
            crate::init::privilege::read_held(c.bundle()).except(&asked)
        };
        // As runc: without --user / --additional-gids the new process runs
        // as the container's user (libcontainer alone would make it root).
        let spec_user = init_spec.process().as_ref().map(|p| p.user().clone());
        let uid = opts.uid.or(spec_user.as_ref().map(|u| u.uid()));
        let gid = opts.gid.or(spec_user.as_ref().map(|u| u.gid()));
        let additional_gids = if opts.additional_gids.is_empty() {
            spec_user
                .as_ref()
                .and_then(|u| u.additional_gids().clone())
                .unwrap_or_default()
        } else {
            opts.additional_gids
        };
        if self
            .dir(id)
            .join(crate::supervisor::learn::LEARNING_FILE)
            .exists()
        {
            return Err(Failure::runtime(format!(
                "exec {id}: the container is being learned (run --learn), and a new process would run unobserved; run it from the container's own process instead, or exec once it runs confined by the learned policy"
            )));
        }
        let init_nnp = init_spec
            .process()
            .as_ref()
            .and_then(|p| p.no_new_privileges())
            .unwrap_or(false);
        let notify = crate::init::seccomp_notify::Channel::open(&init_spec)?;
        let logged = crate::supervisor::denials::collecting(&self.dir(id));
        let seccomp = self.tenant_seccomp(&init_spec, logged)?;
        // Its children's records carry it (see `denials::Members`).
        let session = logged.then(crate::supervisor::audit::own_session).flatten();
        // The second filter of a node policy, as the init has it.
        let node_seccomp = crate::node::read_seccomp(c.bundle())?
            .map(|p| sandboy_confine::seccomp::compile(&p).map(|c| c.with_log(logged)))
            .transpose()
            .map_err(|e| Failure::runtime(format!("exec: the container's node policy: {e}")))?;
        // And the egress guard, as the init has it.
        let egress_guard = super::egress::guard(&init_spec, logged)?;
        let bundle = bundle_of(&c);
        let before = tenant_sockets(&self.dir(id));
        // As for the init (`host::nss`).
        crate::host::nss::files_only()?;
        let in_flight = self.exec_in_flight(id, 2 + opts.preserve_fds);
        let built = ContainerBuilder::new(id.to_owned(), SyscallType::default())
            .with_executor(
                SandboyExecutor::for_tenant(id, opts.preserve_fds, &init_spec)
                    .with_held(held)
                    .with_seccomp(seccomp)
                    .with_node_seccomp(node_seccomp)
                    .with_egress_seccomp(egress_guard)
                    .with_notify(notify.as_ref().map(|n| n.target(id, &bundle, &init_spec))),
            )
            .with_root_path(&self.root)?
            .with_console_socket(opts.console_socket.as_ref())
            .with_preserved_fds(opts.preserve_fds)
            .as_tenant()
            .with_detach(opts.detach)
            .with_cwd(opts.cwd.as_ref())
            .with_env(opts.env)
            .with_process(opts.process.as_ref())
            // A container whose init may not gain privileges (every policy's)
            // gets no exec'd process that may: a `--process` file's
            // `noNewPrivileges: false` would otherwise be honoured.
            .with_no_new_privs(opts.no_new_privs || init_nnp)
            .with_container_args(opts.command)
            .with_additional_gids(additional_gids)
            .with_user(uid)
            .with_group(gid)
            .with_capabilities(opts.cap)
            .with_ignore_paused(opts.ignore_paused)
            .with_sub_cgroup(opts.cgroup)
            .with_apparmor(opts.apparmor)
            .with_process_label(opts.process_label)
            .build();
        drop(in_flight);
        remove_stale_sockets(&self.dir(id), &before);
        let pid = built?;
        // A caller that asked for the pid and did not get it cannot manage
        // the process: it is killed rather than left running (as runc).
        if let Err(e) = super::write_pid_file(opts.pid_file.as_deref(), Some(pid)) {
            let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL);
            let _ = waitpid(pid, None);
            return Err(e);
        }
        if logged {
            // Before the wait: see `denials::Members`.
            let _ = crate::supervisor::denials::add_tenant(&self.dir(id), pid.as_raw(), session);
        }
        if opts.detach {
            return Ok(0);
        }
        Ok(exit_status(waitpid(pid, None)?))
    }

    /// The init's seccomp profile compiled for the new process (through the
    /// node's cache), logged to audit when the container's supervisor
    /// collects refusals, as the init's own filter is.
    fn tenant_seccomp(
        &self,
        init_spec: &oci_spec::runtime::Spec,
        logged: bool,
    ) -> Result<Option<sandboy_confine::CompiledSeccomp>> {
        let Some(profile) = init_spec
            .linux()
            .as_ref()
            .and_then(|l| l.seccomp().as_ref())
        else {
            return Ok(None);
        };
        let compiled = sandboy_confine::seccomp::compile_cached(
            profile,
            &self.root.join(super::SECCOMP_CACHE_DIR),
        )
        .map_err(|e| Failure::runtime(format!("exec: the container's seccomp profile: {e}")))?;
        Ok(Some(compiled.with_log(logged)))
    }
}

/// libcontainer's tenant builder binds `tenant-notify-<random>.sock` in the
/// state directory for each exec and never removes it: 5,000 execs into a
/// long-lived container (an engine's probes) left 5,000 files there.
const TENANT_NOTIFY: &str = "tenant-notify-";

/// A socket of an exec more than this old that nobody listens on is left
/// by a killed exec.
const STALE_AFTER: std::time::Duration = std::time::Duration::from_secs(60);

fn tenant_sockets(dir: &Path) -> HashSet<PathBuf> {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(TENANT_NOTIFY))
        .map(|e| e.path())
        .collect()
}

/// After this exec's build: remove its notify socket (new since `before`)
/// and old ones of killed execs, but never one a concurrent exec still
/// listens on (its runtime binds it in this network namespace and connects
/// to it once the new process is ready).
fn remove_stale_sockets(dir: &Path, before: &HashSet<PathBuf>) {
    // The directory first: a socket bound after this listing is not judged,
    // and one bound before it is in the table read next while it lives.
    let present = tenant_sockets(dir);
    // libcontainer binds and connects by the bare file name (from inside
    // the directory, for sun_path's length): that is what the table shows.
    let listening: HashSet<std::ffi::OsString> = std::fs::read_to_string("/proc/self/net/unix")
        .unwrap_or_default()
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().nth(7))
        .filter_map(|p| Path::new(p).file_name().map(Into::into))
        .collect();
    for path in present {
        if path.file_name().is_some_and(|n| listening.contains(n)) {
            continue;
        }
        let old = std::fs::symlink_metadata(&path)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age > STALE_AFTER);
        if !before.contains(&path) || old {
            let _ = std::fs::remove_file(&path);
        }
    }
}

/// Refuses an exec into a policy-confined container that asks for a
/// capability of [`PLANT`](crate::init::privilege::PLANT) with `--cap`.
fn refuse_plant(asked: &[oci_spec::runtime::Capability]) -> Result<()> {
    use crate::init::privilege::PLANT;
    match asked.iter().find(|c| PLANT.contains(c)) {
        Some(c) => Err(Failure::config(format!(
            "exec --cap {c}: never given to a process of a policy-confined container: a file it makes in a writable bind would work for host users (file capabilities, device nodes); leave it out"
        ))),
        None => Ok(()),
    }
}
