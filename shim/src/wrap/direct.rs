//! `sandboy wrap` for ordinary users: no state root, no container, no
//! daemon. Two tiers (`--isolation`):
//!
//! * **landlock** — any user on any kernel with Landlock: the runtime forks
//!   the command's process, which sets rlimits and no_new_privs, applies
//!   Landlock (fs rights, TCP ports, scopes) and the policy's seccomp
//!   profile (both inherited by every child), sweeps fds and `execve`s.
//! * **namespaces** — where unprivileged user namespaces work: the same,
//!   inside new user (caller's ids mapped to themselves), mount, pid, ipc,
//!   uts and (for `[net] namespace = "none"`) net namespaces, with host `/`
//!   read-only as the root (see [`super::namespaces`]).
//!
//! `auto` picks namespaces when a user namespace can be made, else landlock.
//! With `[net] allow`/`allow_cidr` the namespaces tier gets the egress
//! gateway (`super::gateway`), served by the watchdog; the landlock tier
//! has none.
//!
//! The sandboy process itself stays outside as the watchdog: child
//! subreaper, it waits for the command, kills the whole tree at the
//! `timeout` deadline (exit 137, a `warn` event) and when the command exits,
//! and returns the command's status.
//!
//! Limits without a cgroup are rlimits: `nofile` → RLIMIT_NOFILE, `memory`
//! → RLIMIT_AS (address space, larger than resident memory: a cap, not an
//! accounting), `pids` → RLIMIT_NPROC, which the kernel counts over *all*
//! tasks of the real uid (per user namespace): in the namespaces tier that
//! is the step's own; in the landlock tier, on the host, the limit is the
//! user's task count at start plus `pids` (`process::user_tasks`), so a
//! user already running more than `pids` tasks can still fork inside;
//! `cpus` has no rlimit equivalent and is not applied (a warn).
//!
//! Under `[landlock] mode = "enforce"`, what a tier cannot give (a private
//! network namespace or `[limits] disk`/`inodes` in the landlock tier, a
//! Landlock right above the kernel's ABI) refuses the run; under
//! `best-effort` one warn per downgrade.
//!
//! The namespaces tier stages its directory write paths like root wrap
//! (`super::stage`): pid 1 of its namespaces commits them when the command
//! exits 0 (and no `--dry-run`), else they vanish with the namespace.

use std::ffi::{CString, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::Path;
use std::time::Instant;

use nix::unistd::{fork, ForkResult};
use oci_spec::runtime::{LinuxBuilder, LinuxSeccomp, Spec};
use sandboy_confine::{ConfineError, Confinement};
use sandboy_spec_gen::annotations::LandlockMode;
use sandboy_spec_gen::policy::{NetNamespace, Policy, DEFAULT_PATH};
use sandboy_spec_gen::render;

use super::process::{self, Exec, Outcome, Rlimits};
use super::stage::Held;
use super::{gateway, namespaces, Isolation};
use crate::container::Ran;
use crate::error::{Failure, Result};

/// The tier actually used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tier {
    Landlock,
    Namespaces,
}

impl std::fmt::Display for Tier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Tier::Landlock => "landlock",
            Tier::Namespaces => "namespaces",
        })
    }
}

/// The tier for `--isolation`.
pub fn choose(isolation: Isolation) -> Result<Tier> {
    let userns = || namespaces::available();
    let tier = match isolation {
        Isolation::Landlock => Tier::Landlock,
        Isolation::Namespaces if userns() => Tier::Namespaces,
        Isolation::Namespaces => {
            return Err(Failure::runtime(
                "--isolation namespaces: unprivileged user namespaces are not available here \
                 (unshare(CLONE_NEWUSER) was refused); use --isolation landlock or auto",
            ))
        }
        Isolation::Auto if userns() => Tier::Namespaces,
        Isolation::Auto => Tier::Landlock,
    };
    tracing::debug!(%tier, requested = ?isolation, "wrap: isolation tier");
    Ok(tier)
}

/// Refuse (enforce) or warn (best-effort) about what `tier` cannot give.
fn check_tier(policy: &Policy, tier: Tier, id: &str) -> Result<()> {
    let mut missing = Vec::new();
    if tier == Tier::Landlock && policy.net_namespace == NetNamespace::None {
        missing.push((
            "a private network namespace ([net] namespace = \"none\") needs user namespaces",
            "use --isolation namespaces where user namespaces work, or set [net] namespace = \"host\" (TCP stays limited by [net] connect/bind)",
        ));
    }
    if tier == Tier::Landlock && (policy.disk.is_some() || policy.inodes.is_some()) {
        missing.push((
            "[limits] disk and inodes need staged write paths, which this tier cannot make (it writes the host directly)",
            "use --isolation namespaces where user namespaces work, or run it as root, or drop [limits] disk and inodes",
        ));
    }
    if tier == Tier::Landlock && hides_inside_grants(policy) {
        missing.push((
            "[fs] hide inside a read, write or exec path needs a mount namespace to mask it (Landlock only grants, it cannot take a subpath back)",
            "use --isolation namespaces where user namespaces work, or run it as root, or drop those [fs] hide entries",
        ));
    }
    let enforce = policy.landlock_mode == LandlockMode::Enforce;
    for (what, fix) in &missing {
        if enforce {
            return Err(Failure::config(format!(
                "{}: the {tier} tier cannot give what the policy asks: {what}; {fix}",
                policy.file
            )));
        }
        tracing::warn!(%id, %tier, "wrap: not enforced in this tier: {what}");
    }
    if policy.cpus.is_some() {
        tracing::warn!(%id, %tier, "wrap: [limits] cpus is not applied without a cgroup");
    }
    Ok(())
}

/// Whether a `[fs] hide` path lies in (or is) a path the policy grants:
/// one outside every grant is already out of reach.
fn hides_inside_grants(policy: &Policy) -> bool {
    let grants = || policy.read.iter().chain(&policy.write).chain(&policy.exec);
    policy
        .hide
        .iter()
        .any(|h| grants().any(|g| Path::new(h).starts_with(Path::new(g))))
}

/// What the unprivileged run needs from the caller.
pub struct Request<'a> {
    pub id: &'a str,
    pub command: &'a [String],
    pub clear_env: bool,
    pub tier: Tier,
    /// Discard the staged writes (namespaces tier) whatever the status.
    pub dry_run: bool,
    /// Where the egress gateway's refusals go (`--report`).
    pub report: Option<&'a std::path::Path>,
    /// No new process, threads only (seccomp,
    /// [`sandboy_spec_gen::guards::threads_only`]), in place of `[limits]
    /// pids`: in the landlock tier `RLIMIT_NPROC` counts all of the user's
    /// tasks, not the step's (`adapt`'s wasm host).
    pub threads_only: bool,
}

/// The environment: the caller's (unless `clear_env`) with the policy's
/// `[process] env` added, then the egress gateway's proxy variables (which
/// replace the caller's: a host proxy is not reachable from the step). The
/// policy's `PATH` default does not replace the caller's `PATH`; a `PATH`
/// the policy sets does.
pub(super) fn environment(policy: &Policy, clear_env: bool) -> Vec<(OsString, OsString)> {
    let mut env: Vec<(OsString, OsString)> = if clear_env {
        Vec::new()
    } else {
        std::env::vars_os().collect()
    };
    for e in policy.env.iter().chain(&render::proxy_env(policy)) {
        let Some((k, v)) = e.split_once('=') else {
            continue;
        };
        let has = env.iter().position(|(ek, _)| ek == k);
        if e == DEFAULT_PATH && has.is_some() {
            continue;
        }
        match has {
            Some(i) => env[i].1 = v.into(),
            None => env.push((k.into(), v.into())),
        }
    }
    env
}

fn cstring(b: &[u8]) -> Result<CString> {
    CString::new(b).map_err(|_| Failure::usage("arguments and environment may not contain NUL"))
}

/// The spec fragment `sandboy_confine` prepares from: the Landlock
/// annotation and the rendered seccomp profile.
///
/// The namespaces tier's /tmp, when no write path, is a tmpfs of the step's
/// own (`namespaces::build_root`): writable, as a step's `mktemp` or a
/// compiler's temporary files expect (bubblewrap's `--tmpfs /tmp`), since
/// nothing of the host's is there. Learned and suggested policies no
/// longer grant the host's shared /tmp for them.
fn confinement_spec(policy: &Policy, tier: Tier, threads_only: bool) -> Result<Spec> {
    let mut spec = Spec::default();
    let private_tmp = tier == Tier::Namespaces && !policy.write.iter().any(|w| w == "/tmp");
    let annotations = if private_tmp {
        let mut own = policy.clone();
        own.write.push("/tmp".into());
        render::annotations(&own)
    } else {
        render::annotations(policy)
    };
    spec.set_annotations(Some(annotations.into_iter().collect()));
    let linux = LinuxBuilder::default()
        .seccomp(with_host_guards(
            render::seccomp(policy),
            policy,
            tier,
            threads_only,
        ))
        .build()
        .map_err(|e| Failure::runtime(format!("wrap: seccomp profile: {e}")))?;
    spec.set_linux(Some(linux));
    Ok(spec)
}

/// The rules the unprivileged tiers add because they run on the host:
/// UNIX sockets are refused at creation
/// ([`sandboy_spec_gen::guards::unix_sockets`]), since the user's own
/// sockets answer any process of the user, unless the policy says `[net]
/// unix = true`; and the landlock tier, with no pid or IPC namespace of its
/// own, keeps away from the user's other processes
/// ([`sandboy_spec_gen::guards::host_processes`]) and, with the host's
/// files writable underneath, from their attribute flags
/// ([`sandboy_spec_gen::guards::file_attributes`]), and its metadata
/// guard's listener from being replaced by one of the step's
/// ([`sandboy_spec_gen::guards::own_listeners`]).
fn with_host_guards(
    mut profile: LinuxSeccomp,
    policy: &Policy,
    tier: Tier,
    threads_only: bool,
) -> LinuxSeccomp {
    let mut rules = profile.syscalls().clone().unwrap_or_default();
    if threads_only {
        rules.extend(sandboy_spec_gen::guards::threads_only());
    }
    if !policy.unix {
        rules.extend(sandboy_spec_gen::guards::unix_sockets());
    }
    if tier == Tier::Landlock {
        rules.extend(sandboy_spec_gen::guards::host_processes());
        rules.extend(sandboy_spec_gen::guards::file_attributes());
        // The metadata guard's calls go to the watchdog, from this same
        // program: one filter to compile and to run on every syscall, not
        // two (the compiler orders each syscall's rules by the kernel's
        // precedence, so a refusal still wins over the notification, as
        // between two filters).
        rules.push(metadata_rule());
        // …and no listener of the step's own may take its calls over.
        rules.extend(sandboy_spec_gen::guards::own_listeners());
        if profile.listener_path().is_none() {
            profile.set_listener_path(Some(crate::supervisor::unotify::NO_AGENT.into()));
        }
    }
    profile.set_syscalls(Some(rules));
    profile
}

fn metadata_rule() -> oci_spec::runtime::LinuxSyscall {
    crate::supervisor::unotify::rule(super::metadata::NAMES)
        .expect("a rule of fixed syscall names builds")
}

fn confine_failure(e: ConfineError) -> Failure {
    let msg = format!("confinement: {e}");
    match e {
        ConfineError::Annotation { .. }
        | ConfineError::SeccompConfig { .. }
        | ConfineError::LandlockUnsupported { .. } => Failure::config(msg),
        _ => Failure::runtime(msg),
    }
}

/// Run the command confined in `req.tier`; its exit status, and the
/// egress gateway's refusals (namespaces tier with `[net] allow`).
pub fn run(mut policy: Policy, req: Request<'_>) -> Result<Ran> {
    check_tier(&policy, req.tier, req.id)?;
    let cwd = std::env::current_dir()
        .map_err(|e| Failure::runtime(format!("wrap: the working directory: {e}")))?;
    let env = environment(&policy, req.clear_env);
    let path_var = env
        .iter()
        .find(|(k, _)| k == "PATH")
        .and_then(|(_, v)| v.to_str().map(String::from));
    let name = &req.command[0];
    let Some(program) = process::find_program(name, path_var.as_deref(), &cwd) else {
        process::not_found(name);
        return Ok(Ran::status(127));
    };
    super::loader::grant(&mut policy, Some(&program));
    if req.tier == Tier::Landlock {
        super::terminals::withhold(&mut policy);
    }

    let spec = confinement_spec(&policy, req.tier, req.threads_only)?;
    // Landlock and seccomp may only be installed under no_new_privs; the
    // watchdog never execs, so setting it here costs nothing.
    nix::sys::prctl::set_no_new_privs()
        .map_err(|e| Failure::runtime(format!("prctl(PR_SET_NO_NEW_PRIVS): {e}")))?;
    // Prepared here (after the tier check) so every refusal is reported
    // before anything runs; the namespaces tier prepares again inside, where
    // its own /proc, /dev and /tmp are the rule paths.
    let confinement = Confinement::prepare_with(&spec, 0, None).map_err(confine_failure)?;
    let exec = Exec {
        program,
        argv: req
            .command
            .iter()
            .map(|a| cstring(a.as_bytes()))
            .collect::<Result<_>>()?,
        env: env
            .into_iter()
            .map(|(k, v)| {
                let mut kv = k.into_vec();
                kv.push(b'=');
                kv.extend(v.as_bytes());
                cstring(&kv)
            })
            .collect::<Result<_>>()?,
        cwd,
        rlimits: Rlimits {
            nofile: policy.nofile,
            nproc: policy
                .pids
                .filter(|_| !req.threads_only)
                .map(|p| match req.tier {
                    // The host's count: what the user runs already, plus
                    // the step's own (`process::user_tasks`).
                    Tier::Landlock => process::user_tasks() + p.max(1) as u64,
                    Tier::Namespaces => p.max(1) as u64,
                }),
            address_space: policy.memory.map(|m| m.0),
        },
    };
    let deadline = policy.timeout.map(|t| Instant::now() + t.0);

    let plan = match req.tier {
        Tier::Namespaces => gateway::Plan::new(&policy)?,
        // `wrap` refused or dropped the host rules already (fail closed).
        Tier::Landlock if policy.egress.is_active() => {
            return Err(Failure::config(
                "the landlock tier has no egress gateway for [net] allow/allow_cidr",
            ))
        }
        Tier::Landlock => None,
    };

    process::block_signals().map_err(|e| Failure::runtime(format!("blocking signals: {e}")))?;
    nix::sys::prctl::set_child_subreaper(true)
        .map_err(|e| Failure::runtime(format!("prctl(PR_SET_CHILD_SUBREAPER): {e}")))?;
    let metadata = match req.tier {
        Tier::Landlock => Some(MetadataGuard::prepare(&policy, req.id)?),
        Tier::Namespaces => None,
    };
    // The namespaces tier's commit refuses these; here they are put back.
    let repositories =
        (req.tier == Tier::Landlock).then(|| super::repository::Held::take(&policy.write, req.id));
    let child = match req.tier {
        Tier::Landlock => process::spawn_confined(
            &exec,
            confinement,
            metadata.as_ref().map(MetadataGuard::to_parent),
            die_with_parent,
        )
        .map_err(|e| Failure::runtime(format!("clone: {e}")))?,
        Tier::Namespaces => {
            drop(confinement);
            // SAFETY: sandboy is single-threaded here (no runtime, no
            // threads were started for wrap; the gateway's threads start
            // after this fork); the child only runs setup code and execs
            // or exits.
            match unsafe { fork() } {
                Ok(ForkResult::Parent { child }) => child,
                Ok(ForkResult::Child) => {
                    die_with_parent();
                    namespaced(&policy, &spec, &exec, req.id, req.dry_run, plan)
                }
                Err(e) => return Err(Failure::runtime(format!("fork: {e}"))),
            }
        }
    };
    if let Some(m) = metadata {
        m.serve_from_parent();
    }
    // The gateway is served from here: outside the step's namespaces and
    // confinement, in the caller's network namespace.
    let gateway = match plan.map(|p| p.serve(req.id, child.as_raw())).transpose() {
        Ok(g) => g,
        Err(e) => {
            process::kill_descendants();
            return Err(e);
        }
    };
    let status = match process::supervise(child, deadline, true) {
        Outcome::Exited(code) => {
            crate::container::report_kill(req.id, code);
            code
        }
        Outcome::TimedOut => {
            tracing::warn!(
                id = %req.id,
                timeout = ?policy.timeout.map(|t| t.0),
                "timeout: the wrapped command ran past its deadline; killed its whole process tree"
            );
            137
        }
    };
    let status = match repositories.map(|r| r.check(req.id)) {
        Some(Err(why)) => {
            tracing::warn!(id = %req.id, "wrap: {why}");
            crate::error::print_line(&format!("sandboy: {why}"));
            if status == 0 {
                1
            } else {
                status
            }
        }
        _ => status,
    };
    match gateway {
        Some(g) => g.finish(status, req.report),
        None => {
            // Written even when empty, as root's is: a script can rely on
            // the file (`super::unreported` said why it holds nothing).
            if let Some(to) = req.report {
                crate::host::output::replace(to, b"", 0o600)
                    .map_err(|e| Failure::runtime(format!("--report {}: {e}", to.display())))?;
            }
            Ok(Ran::status(status))
        }
    }
}

/// The landlock tier's metadata guard (`super::metadata`): the socketpair
/// its listener crosses from the child to this process (its rule is in the
/// policy's filter, see `with_host_guards`).
struct MetadataGuard {
    ours: std::os::fd::OwnedFd,
    theirs: std::os::fd::OwnedFd,
    guard: super::metadata::Guard,
}

impl MetadataGuard {
    fn prepare(policy: &Policy, id: &str) -> Result<MetadataGuard> {
        use nix::sys::socket::{socketpair, AddressFamily, SockFlag, SockType};
        let (ours, theirs) = socketpair(
            AddressFamily::Unix,
            SockType::Stream,
            None,
            SockFlag::SOCK_CLOEXEC,
        )
        .map_err(|e| Failure::runtime(format!("wrap: socketpair: {e}")))?;
        Ok(MetadataGuard {
            ours,
            theirs,
            guard: super::metadata::Guard::new(&policy.write, id),
        })
    }

    /// In the child: where the policy's filter sends its listener.
    fn to_parent(&self) -> std::os::fd::RawFd {
        use std::os::fd::AsRawFd;
        self.theirs.as_raw_fd()
    }

    /// In the parent: serve the step's calls from a thread until the last
    /// filtered process is gone. A child that died before sending has
    /// nothing to serve (its exit status says why).
    fn serve_from_parent(self) {
        drop(self.theirs);
        let Some(listener) = crate::supervisor::unotify::receive_listener(&self.ours) else {
            return;
        };
        let guard = self.guard;
        std::thread::spawn(move || guard.serve(&listener));
    }
}

/// In pid 1, once the command exited `code` (every other process of the
/// namespace is gone with it): commit the staged write paths when it
/// passed and this is no dry run, else let them go with the namespace.
fn settle(staged: &[Held], policy: &Policy, id: &str, code: i32, dry_run: bool) -> Result<()> {
    let full: Vec<(&std::path::Path, &'static str)> = staged
        .iter()
        .filter_map(|h| Some((h.host.as_path(), h.at_cap()?)))
        .collect();
    if staged.is_empty() || !super::stage::decide(id, policy, &full, code, dry_run) {
        return Ok(());
    }
    for h in staged {
        let c = h
            .commit()
            .map_err(|e| super::stage::commit_failure(&h.host, e))?;
        tracing::debug!(%id, path = %h.host.display(), written = c.written, removed = c.removed, "wrap: staged writes committed");
    }
    Ok(())
}

/// SIGKILL when the parent dies, so a killed watchdog takes the sandbox
/// with it.
fn die_with_parent() {
    let _ = nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL);
}

/// The namespaces tier from the first child on: namespaces, then pid 1
/// (builds the root, reaps), then the command. Never returns.
fn namespaced(
    policy: &Policy,
    spec: &Spec,
    exec: &Exec,
    id: &str,
    dry_run: bool,
    gateway: Option<gateway::Plan>,
) -> ! {
    let fail = |e: &dyn std::fmt::Display| -> ! {
        crate::error::print_line(&format!("sandboy: error: {e}"));
        // SAFETY: _exit is always sound.
        unsafe { libc::_exit(1) }
    };
    let exit = |code: i32| -> ! {
        // SAFETY: _exit is always sound.
        unsafe { libc::_exit(code) }
    };
    if let Err(e) = namespaces::enter(policy.net_namespace) {
        fail(&e);
    }
    // Before anything of the step runs, in its network namespace.
    if let Some(Err(e)) = gateway.map(gateway::Plan::bind_and_send) {
        fail(&format!(
            "egress gateway: binding its sockets in the step's network namespace: {e}"
        ));
    }
    // SAFETY: single-threaded child; see `run`.
    match unsafe { fork() } {
        Ok(ForkResult::Parent { child }) => match process::supervise(child, None, false) {
            Outcome::Exited(code) => exit(code),
            Outcome::TimedOut => exit(137),
        },
        Ok(ForkResult::Child) => {}
        Err(e) => fail(&format!("fork: {e}")),
    }
    // Pid 1 of the new pid namespace.
    die_with_parent();
    let staged = match namespaces::build_root(policy, &exec.cwd) {
        Ok(staged) => staged,
        Err(e) => fail(&e),
    };
    let confinement = match Confinement::prepare_with(spec, 0, None) {
        Ok(c) => c,
        Err(e) => fail(&format!("confinement: {e}")),
    };
    // SAFETY: single-threaded child; see `run`.
    match unsafe { fork() } {
        Ok(ForkResult::Parent { child }) => {
            drop(confinement);
            // Every other process of the namespace is killed and reaped
            // before the commit reads the staging: a red team's background
            // writer kept filling it during the commit, past its disk cap.
            match process::supervise(child, None, true) {
                Outcome::Exited(code) => match settle(&staged, policy, id, code, dry_run) {
                    Ok(()) => exit(code),
                    Err(e) => fail(&e),
                },
                Outcome::TimedOut => exit(137),
            }
        }
        Ok(ForkResult::Child) => {
            drop(staged);
            process::confine_and_exec(exec, confinement, None)
        }
        Err(e) => fail(&format!("fork: {e}")),
    }
}
