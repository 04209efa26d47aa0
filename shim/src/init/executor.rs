//! The payload side of the container's init: libcontainer calls `validate`
//! at create time (after pivot_root, before waiting for `start`) and `exec`
//! after `start`, on the same object in the same process. Everything that
//! can fail is prepared in `validate`, because a failure in `exec` only
//! shows after `start` already returned 0.

use std::cell::RefCell;
use std::io::Write;

use libcontainer::workload::default::DefaultExecutor;
use libcontainer::workload::{Executor, ExecutorError, ExecutorValidationError};
use oci_spec::runtime::{LinuxSeccomp, Spec};
use sandboy_confine::Confinement;

use crate::wasm_host::exec::Payload;

/// Landlock, then seccomp, then the fd sweep, then the payload: `execve`
/// for a native one, `execveat` of the wasm host binary for an OCI-wasm
/// one (confined the same way: Landlock and seccomp survive the exec).
#[derive(Clone)]
pub struct SandboyExecutor {
    /// Container id, for log events.
    id: String,
    preserve_fds: u32,
    /// OCI-wasm payload: the host binary and the code compiled by the
    /// runtime before the container was built (through the compile cache).
    wasm: Option<Payload>,
    /// For `exec`: the container's own seccomp profile. libcontainer builds
    /// a tenant's spec with a fresh `linux` section that drops it, and an
    /// exec'd process must be exactly as confined as the init.
    inherited_seccomp: Option<LinuxSeccomp>,
    /// A policy-confined init's resource limits, which an exec'd process
    /// may not exceed (libcontainer gives a tenant without a process.json
    /// the runtime's own: a red team's exec had 1024 open files under a
    /// policy's 64).
    inherited_rlimits: Vec<oci_spec::runtime::PosixRlimit>,
    /// The spec's `linux.seccomp`, compiled by the runtime while checking
    /// the bundle (not compiled again in the init).
    seccomp: Option<sandboy_confine::CompiledSeccomp>,
    /// A node policy's seccomp profile, installed after the spec's own
    /// (see `node`): both filters hold.
    node_seccomp: Option<sandboy_confine::CompiledSeccomp>,
    /// The egress guard of a container with the egress annotation
    /// (`container::egress::guard`), installed last.
    egress_seccomp: Option<sandboy_confine::CompiledSeccomp>,
    stage: RefCell<Stage>,
    /// Capabilities sandboy added to the spec's sets only to install the
    /// confinement without no_new_privs (see `privilege`); dropped right
    /// after it, before the payload.
    held: crate::init::privilege::Held,
    /// Where a seccomp user-notification listener goes (`listenerPath`).
    notify: Option<crate::init::seccomp_notify::Target>,
    /// Learn mode: the notifying filter goes in right before the execve
    /// (at `start`, when the supervisor that serves it runs), not in
    /// `validate`, so that nothing of the runtime's own set-up is observed
    /// or waits on a listener nobody reads yet.
    learning: bool,
    /// The init dies with the runtime process that made it (root `wrap`:
    /// a wrapper killed by SIGKILL must not leave its step running).
    die_with_caller: bool,
    /// An exec'd process (`for_tenant`): libcontainer runs no
    /// startContainer hooks for it.
    tenant: bool,
}

/// Where the confinement stands between `validate` and `exec`.
#[derive(Clone, Default)]
enum Stage {
    #[default]
    Unprepared,
    Prepared(Confinement),
    /// Already applied in `validate` (notify profiles: the agent expects
    /// the listener during `create`, as runc sends it).
    Applied,
}

impl SandboyExecutor {
    pub fn new(id: &str, preserve_fds: i32) -> Self {
        Self {
            id: id.to_owned(),
            preserve_fds: preserve_fds.max(0) as u32,
            wasm: None,
            inherited_seccomp: None,
            inherited_rlimits: Vec::new(),
            seccomp: None,
            node_seccomp: None,
            egress_seccomp: None,
            stage: RefCell::new(Stage::Unprepared),
            held: Default::default(),
            notify: None,
            learning: false,
            die_with_caller: false,
            tenant: false,
        }
    }

    /// Die with the caller (see the field).
    pub fn with_die_with_caller(mut self, die: bool) -> Self {
        self.die_with_caller = die;
        self
    }

    /// Learn mode (see the field).
    pub fn with_learning(mut self, learning: bool) -> Self {
        self.learning = learning;
        self
    }

    /// Where to send a seccomp user-notification listener.
    pub fn with_notify(mut self, notify: Option<crate::init::seccomp_notify::Target>) -> Self {
        self.notify = notify;
        self
    }

    /// The spec's seccomp profile, already compiled.
    pub fn with_seccomp(mut self, seccomp: Option<sandboy_confine::CompiledSeccomp>) -> Self {
        self.seccomp = seccomp;
        self
    }

    /// A node policy's seccomp profile, compiled, to install after the
    /// spec's.
    pub fn with_node_seccomp(mut self, seccomp: Option<sandboy_confine::CompiledSeccomp>) -> Self {
        self.node_seccomp = seccomp;
        self
    }

    /// The egress guard, compiled, to install after every other filter.
    pub fn with_egress_seccomp(
        mut self,
        seccomp: Option<sandboy_confine::CompiledSeccomp>,
    ) -> Self {
        self.egress_seccomp = seccomp;
        self
    }

    /// Capabilities to drop once the confinement is installed.
    pub fn with_held(mut self, held: crate::init::privilege::Held) -> Self {
        self.held = held;
        self
    }

    /// An executor for a process joining a container whose spec is `init`.
    pub fn for_tenant(id: &str, preserve_fds: i32, init: &Spec) -> Self {
        let mut e = Self::new(id, preserve_fds);
        e.tenant = true;
        e.inherited_seccomp = init.linux().as_ref().and_then(|l| l.seccomp().clone());
        if crate::init::privilege::policy_confined(init) {
            e.inherited_rlimits = init
                .process()
                .as_ref()
                .and_then(|p| p.rlimits().clone())
                .unwrap_or_default();
        }
        e
    }

    /// Hand over a wasm payload prepared outside the container.
    pub fn with_wasm(mut self, payload: Option<Payload>) -> Self {
        self.wasm = payload;
        self
    }

    /// Whether libcontainer will run startContainer hooks in this process
    /// before it calls `exec`.
    fn runs_start_hooks(&self, spec: &Spec) -> bool {
        !self.tenant
            && spec
                .hooks()
                .as_ref()
                .and_then(|h| h.start_container().as_ref())
                .is_some_and(|h| !h.is_empty())
    }

    fn prepare(&self, spec: &Spec) -> Result<Confinement, sandboy_confine::ConfineError> {
        self.prepare_spec(spec)?
            .with_second_seccomp(self.node_seccomp.clone())?
            .with_second_seccomp(self.egress_seccomp.clone())
    }

    fn prepare_spec(&self, spec: &Spec) -> Result<Confinement, sandboy_confine::ConfineError> {
        match (&self.inherited_seccomp, spec.linux().as_ref()) {
            (Some(profile), Some(linux)) if linux.seccomp().is_none() => {
                let mut spec = spec.clone();
                let mut linux = linux.clone();
                linux.set_seccomp(Some(profile.clone()));
                spec.set_linux(Some(linux));
                // Compiled by `exec` from the same profile (with the audit
                // log flag when the container's refusals are collected).
                Confinement::prepare_with(&spec, self.preserve_fds, self.seccomp.clone())
            }
            (_, linux) => {
                let compiled = self
                    .seccomp
                    .clone()
                    .filter(|_| linux.is_some_and(|l| l.seccomp().is_some()));
                Confinement::prepare_with(spec, self.preserve_fds, compiled)
            }
        }
    }
}

impl Executor for SandboyExecutor {
    /// runc's HOME: libcontainer looks the user up in the container's
    /// /etc/passwd, and runc falls back to `/` when there is no entry.
    fn setup_envs(
        &self,
        mut envs: std::collections::HashMap<String, String>,
    ) -> Result<(), libcontainer::workload::ExecutorSetEnvsError> {
        if envs.get("HOME").is_none_or(|h| h.is_empty()) {
            envs.insert("HOME".into(), "/".into());
        }
        DefaultExecutor {}.setup_envs(envs)
    }

    fn validate(&self, spec: &Spec) -> Result<(), ExecutorValidationError> {
        // The first of sandboy's code in this process: the runtime's procfs
        // handle goes before create returns (`host::procfs`).
        crate::host::procfs::forget_inherited().map_err(|e| {
            ExecutorValidationError::ArgValidationError(format!(
                "dropping the runtime's procfs handle: {e}"
            ))
        })?;
        if let Some(args0) = wasm_payload(spec) {
            let payload = self.wasm.as_ref().ok_or_else(|| {
                ExecutorValidationError::ArgValidationError(
                    "wasm: an OCI-wasm payload, but no wasm host was handed to this process (exec of a wasm payload into a running container is not supported)".into(),
                )
            })?;
            payload
                .open_inside(&args0)
                .map_err(|e| ExecutorValidationError::ArgValidationError(format!("wasm: {e}")))?;
        } else {
            DefaultExecutor {}.validate(spec)?;
        }
        // Without CAP_SYS_ADMIN (nothing held for it, e.g. an exec with its
        // own process.json) the filters can only go in under no_new_privs.
        if (self.inherited_seccomp.is_some()
            || self.node_seccomp.is_some()
            || self.egress_seccomp.is_some()
            || confinement_requested(spec))
            && !sandboy_confine::has_cap_sys_admin().unwrap_or(false)
        {
            set_no_new_privs()?;
        }
        let confinement = self.prepare(spec).map_err(|e| {
            ExecutorValidationError::ArgValidationError(format!("confinement: {e}"))
        })?;
        if let Some(payload) = &self.wasm {
            payload
                .allow(&confinement)
                .map_err(ExecutorValidationError::ArgValidationError)?;
        }
        let start_hooks = self.runs_start_hooks(spec);
        if !self.learning && (confinement.has_notify() || start_hooks) {
            // The agent expects the listener during create (runc installs
            // the filter there too): confine now, in the same order. And
            // startContainer hooks run between here and `exec`, in the
            // container, from the image's files: confined like the payload
            // (runc installs its seccomp filter before them too), or a
            // hook's binary the image provides ran unconfined (stop 35).
            // libcontainer gives each hook /dev/null as its stdout.
            if start_hooks {
                confinement.allow_null_device().map_err(|e| {
                    ExecutorValidationError::ArgValidationError(format!("confinement: {e}"))
                })?;
            }
            self.confine(confinement, spec)
                .map_err(ExecutorValidationError::ArgValidationError)?;
            *self.stage.borrow_mut() = Stage::Applied;
            return Ok(());
        }
        *self.stage.borrow_mut() = Stage::Prepared(confinement);
        Ok(())
    }

    fn exec(&self, spec: &Spec) -> Result<(), ExecutorError> {
        reset_signals()?;
        crate::init::privilege::no_looser_than(&self.inherited_rlimits)
            .map_err(|e| ExecutorError::Other(format!("resource limits: {e}")))?;
        // The init is a child of the runtime's main process (libcontainer
        // clones it as the intermediate's sibling): SIGKILL when that dies.
        if self.die_with_caller {
            nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL)
                .map_err(|e| ExecutorError::Other(format!("PR_SET_PDEATHSIG: {e}")))?;
        }
        let stage = self.stage.take();
        let confinement = match stage {
            // Confined in validate; fds opened since must not leak either.
            Stage::Applied => None,
            Stage::Prepared(c) => Some(c),
            // validate always ran first in this process; preparing again
            // keeps exec fail-closed should that ever change.
            Stage::Unprepared => {
                let c = self
                    .prepare(spec)
                    .map_err(|e| ExecutorError::Other(format!("confinement: {e}")))?;
                if let Some(payload) = &self.wasm {
                    payload.allow(&c).map_err(ExecutorError::Other)?;
                }
                Some(c)
            }
        };
        match confinement {
            Some(c) => self.confine(c, spec).map_err(ExecutorError::Other)?,
            None => sandboy_confine::fds::mark_cloexec(self.preserve_fds)
                .map_err(|e| ExecutorError::Other(format!("confinement: {e}")))?,
        }
        match &self.wasm {
            Some(payload) => Err(ExecutorError::Other(payload.exec(&self.id, spec))),
            None => {
                let result = DefaultExecutor {}.exec(spec);
                if let Err(e) = &result {
                    refused_exec(&self.id, spec, e);
                }
                result
            }
        }
    }
}

impl SandboyExecutor {
    /// Landlock, seccomp (sending a notification listener to the agent),
    /// then dropping the capabilities held for it. On error nothing may run.
    fn confine(&self, confinement: Confinement, spec: &Spec) -> Result<(), String> {
        let listener = confinement.apply().map_err(|e| {
            tracing::warn!(id = %self.id, error = %e, "confinement could not be applied; not starting the payload");
            format!("confinement: {e}")
        })?;
        if let Some(listener) = listener {
            let target = self
                .notify
                .as_ref()
                .ok_or("confinement: a seccomp listener but no listenerPath connection")?;
            target
                .send(listener)
                .map_err(|e| format!("confinement: {e}"))?;
        }
        crate::init::privilege::release(spec, &self.held).map_err(|e| {
            tracing::warn!(id = %self.id, error = %e, "not starting the payload");
            e
        })
    }
}

/// An execve refused by the policy (Landlock answers EACCES) exits 126 with
/// a message naming the program and the policy key, as a shell would;
/// libcontainer reports the errno only in its error text. Every failed
/// execve of the payload is a `warn` event with the container id (issue
/// 14): the one trace of it in `--log` besides the exit status.
fn refused_exec(id: &str, spec: &Spec, e: &ExecutorError) {
    // The Display text is generic; the errno is in the Debug form.
    let text = format!("{e} {e:?}");
    let program = spec
        .process()
        .as_ref()
        .and_then(|p| p.args().as_ref()?.first().cloned())
        .unwrap_or_default();
    let refused = text.contains("EACCES") || text.contains("EPERM");
    tracing::warn!(
        %id,
        %program,
        refused,
        error = %text,
        "exec: the payload's execve failed{}",
        if refused { " (refused by the policy: not in [fs] exec)" } else { "" }
    );
    if !refused {
        return;
    }
    let _ = writeln!(
        std::io::stderr(),
        "sandboy: {program}: not executable under the policy; add it (or its directory) to [fs] exec"
    );
    std::process::exit(126);
}

/// `process.args[0]` when the annotations select OCI-wasm mode for it.
pub fn wasm_payload(spec: &Spec) -> Option<String> {
    let args0 = spec.process().as_ref()?.args().as_ref()?.first()?.clone();
    let annotations = spec.annotations().as_ref()?;
    sandboy_wasm_contract::wasm_selected(annotations, &args0).then_some(args0)
}

/// The payload starts with an empty signal mask and default SIGPIPE: the
/// runtime blocks signals while it waits in `run`, and Rust ignores SIGPIPE;
/// neither is the container's business.
fn reset_signals() -> Result<(), ExecutorError> {
    use nix::sys::signal::{signal, SigHandler, Signal};
    use nix::sys::signalfd::SigSet;
    SigSet::empty()
        .thread_set_mask()
        .map_err(|e| ExecutorError::Other(format!("resetting the signal mask: {e}")))?;
    // SAFETY: restoring the default disposition installs no handler code.
    unsafe { signal(Signal::SIGPIPE, SigHandler::SigDfl) }
        .map_err(|e| ExecutorError::Other(format!("resetting SIGPIPE: {e}")))?;
    Ok(())
}

/// Whether the spec asks for Landlock or seccomp.
pub fn confinement_requested(spec: &Spec) -> bool {
    spec.linux().as_ref().is_some_and(|l| l.seccomp().is_some())
        || spec
            .annotations()
            .as_ref()
            .is_some_and(|a| a.contains_key(sandboy_spec_gen::annotations::LANDLOCK))
}

/// Landlock and seccomp are installed at the last moment, after libcontainer
/// dropped capabilities, which the kernel only allows under no_new_privs or
/// with CAP_SYS_ADMIN. A process that holds neither (an exec'd process
/// whose own process.json lacks it) gets no_new_privs: confining wins over
/// setuid binaries gaining privileges, never the other way round.
fn set_no_new_privs() -> Result<(), ExecutorValidationError> {
    nix::sys::prctl::set_no_new_privs().map_err(|e| {
        ExecutorValidationError::ArgValidationError(format!("prctl(PR_SET_NO_NEW_PRIVS): {e}"))
    })
}
