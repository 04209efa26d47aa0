//! `create`: the checks that must pass before anything exists, libcontainer's
//! build with sandboy's executor, and cleanup so that a failed create leaves
//! no state, cgroup, mount or process.

use std::fs;
use std::path::PathBuf;

use libcontainer::container::builder::ContainerBuilder;
use libcontainer::container::Container;
use libcontainer::syscall::syscall::SyscallType;
use oci_spec::runtime::LinuxNamespaceType;

use super::bundle::Bundle;
use super::{
    claim, to_json, validate_id, CreateOptions, Runtime, ORIGIN_FILE, SECCOMP_CACHE_DIR, SHADOW_DIR,
};
use crate::cgroups;
use crate::error::{Failure, Result};
use crate::init::executor::SandboyExecutor;
use crate::supervisor::{self, denials, Duties, Target};
use crate::wasm_host::{self, exec::Payload};
use sandboy_spec_gen::annotations::WASM_LIMITS;
use sandboy_wasm_contract::host::EXIT_REFUSED;
use sandboy_wasm_contract::Limits;

impl Runtime {
    /// Create a container: checks, then libcontainer, then cleanup on failure
    /// so a failed create leaves no state, cgroup, mount or process.
    pub fn create(&self, id: &str, opts: &CreateOptions, detach: bool) -> Result<Container> {
        validate_id(id)?;
        // Held until this returns; every cleanup below runs under it, on a
        // state directory this create made (see `claim`).
        let exists = || Failure::runtime(format!("container with id exists: {id}"));
        let claim = self.try_lock(id)?.ok_or_else(exists)?;
        if self.dir(id).exists() {
            return Err(exists());
        }
        let created = self.create_claimed(id, opts, detach);
        if created.is_err() {
            // Nothing of this id is left: neither is its lock file.
            claim.remove();
        }
        created
    }

    fn create_claimed(&self, id: &str, opts: &CreateOptions, detach: bool) -> Result<Container> {
        if self.systemd {
            return Err(Failure::usage(
                "--systemd-cgroup: the systemd cgroup manager is not built into sandboy; drop the flag (cgroupfs is used)",
            ));
        }
        let mut bundle = Bundle::load(&opts.bundle, &self.root.join(SECCOMP_CACHE_DIR))?;
        let node_policy = crate::node::apply(
            id,
            &self.node,
            &mut bundle.spec,
            &bundle.dir.join("config.json"),
            &self.root.join(SECCOMP_CACHE_DIR),
        )?;
        let learning = opts
            .learn
            .as_ref()
            .map(|l| super::learn::observe(l, &mut bundle, node_policy.is_some()))
            .transpose()?;
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
        let unified = cgroups::unified_host();
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
        super::limits::check(&bundle.spec, &bundle.dir, unified)?;
        super::rootless::check(&bundle.spec, &bundle.dir, unified)?;
        // Loaded before anything exists: bad rules are a config error and a
        // kernel without cgroup BPF stops here, with nothing to clean up.
        // Not for a rootless container (see `rootless`).
        let devices = if super::rootless::active() {
            None
        } else {
            crate::cgroups::devices::prepare(&bundle.spec, &bundle.dir, unified)?
        };
        let memfd_noexec = super::sysctl::memfd_noexec(&bundle.spec)?;
        let held = crate::init::privilege::to_hold(&bundle.spec);
        super::compat::prepare_rootfs(
            &bundle.spec,
            &fs::canonicalize(bundle.rootfs())?,
            &bundle.dir.join("config.json"),
        )?;
        let build_dir =
            self.shadow_if_needed(id, &bundle, &held, node_policy.as_ref(), learning.is_some())?;
        let wasm = match self.precompile_wasm(&bundle) {
            Ok(w) => w,
            Err(e) => {
                self.remove_leftovers(id);
                return Err(e);
            }
        };

        // A learning container's agent is its own supervisor, which gets
        // the other end of the pair.
        let (notify, learn_socket) = match &learning {
            Some(_) => crate::init::seccomp_notify::Channel::pair()
                .map(|(channel, agent)| (Some(channel), Some(agent))),
            None => crate::init::seccomp_notify::Channel::open(&bundle.spec).map(|n| (n, None)),
        }
        .inspect_err(|_| self.remove_leftovers(id))?;
        // Refusals are audited (seccomp's errno verdicts included) only when
        // the supervisor will collect them (nothing refuses while learning).
        let audited = confined(&bundle) && learning.is_none() && self.audit.collects();
        let seccomp = bundle.seccomp.clone().map(|s| s.with_log(audited));
        // Before the init is forked: it and its children inherit it.
        let session = audited
            .then(crate::supervisor::audit::own_session)
            .flatten();
        let egress_guard = match super::egress::guard(&bundle.spec, audited) {
            Ok(g) => g,
            Err(e) => {
                self.remove_leftovers(id);
                return Err(e);
            }
        };
        // The init is a clone of this process: what it looks up must
        // load nothing from the image (`host::nss`).
        if let Err(e) = crate::host::nss::files_only() {
            self.remove_leftovers(id);
            return Err(e);
        }
        let result = ContainerBuilder::new(id.to_owned(), SyscallType::default())
            .with_executor(
                SandboyExecutor::new(id, opts.preserve_fds)
                    .with_wasm(wasm)
                    .with_seccomp(seccomp)
                    .with_node_seccomp(node_policy.map(|p| p.seccomp.with_log(audited)))
                    .with_egress_seccomp(egress_guard)
                    .with_held(held)
                    .with_learning(learning.is_some())
                    .with_die_with_caller(opts.die_with_caller)
                    .with_notify(
                        notify
                            .as_ref()
                            .map(|n| n.target(id, &bundle.dir, &bundle.spec)),
                    ),
            )
            .with_root_path(&self.root)
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
        crate::cgroups::prime::finish();
        // The init holds its own copy; ours would keep the supervisor's
        // listener socket from ever seeing the init's end close.
        drop(notify);

        let result = result
            .map_err(|e| Failure::from(e).context(format!("create {id}")))
            .and_then(|c| {
                if super::loopback::wants_new_netns(&bundle.spec) && super::rootless::active() {
                    // The init's netns is out of an ordinary caller's reach
                    // (see `rootless`): no network at all, not even `lo`.
                    tracing::warn!(
                        id,
                        "rootless container: its private network namespace keeps loopback down"
                    );
                } else if super::loopback::wants_new_netns(&bundle.spec) {
                    let pid = c
                        .pid()
                        .ok_or_else(|| Failure::runtime("container has no init pid"))?;
                    super::loopback::bring_up(pid.as_raw())?;
                }
                if let Some(v) = memfd_noexec {
                    let pid = c
                        .pid()
                        .ok_or_else(|| Failure::runtime("container has no init pid"))?;
                    super::sysctl::apply(pid.as_raw(), v)?;
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
                    .and_then(|()| crate::cgroups::oom::apply_disable(&container, &bundle.spec));
                let confined =
                    confined.and_then(|()| super::identity::record(&self.dir(id), container.pid()));
                claim::narrow_modes(&self.dir(id));
                let learn = learning.zip(learn_socket).map(|(p, socket)| p.duty(socket));
                let supervised = confined
                    .and_then(|()| self.supervise(&container, &bundle, detach, learn, session))
                    .and_then(|()| {
                        super::write_pid_file(opts.pid_file.as_deref(), container.pid())
                    });
                if let Err(e) = supervised {
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
        held: &crate::init::privilege::Held,
        node_policy: Option<&crate::node::Applied>,
        learning: bool,
    ) -> Result<Option<PathBuf>> {
        let linux = bundle
            .spec
            .linux()
            .as_ref()
            .expect("checked by Bundle::load");
        let deny_first = crate::cgroups::devices::needs_default_deny(&bundle.spec);
        let mut spec = bundle.spec.clone();
        let rootfs = fs::canonicalize(bundle.rootfs())?;
        let rewritten =
            super::compat::rewrite(id, &mut spec, &rootfs, &bundle.dir.join("config.json"))?
                | (policy_confined(&bundle.spec, node_policy)
                    && super::mounts::restrict_recursively(&mut spec));
        let runtime_sysctl = super::sysctl::memfd_noexec(&bundle.spec)?.is_some();
        let dir = self.root.join(SHADOW_DIR).join(id);
        let egress = super::egress::wants(&bundle.spec);
        if linux.cgroups_path().is_some()
            && held.is_empty()
            && !deny_first
            && !rewritten
            && !runtime_sysctl
            && node_policy.is_none()
            && !egress
            && !learning
        {
            return Ok(None);
        }
        if linux.cgroups_path().is_none() {
            // The rewritten spec's linux, not the caller's.
            let mut linux = spec.linux().clone().expect("checked by Bundle::load");
            linux.set_cgroups_path(Some(PathBuf::from(format!("/sandboy/{id}"))));
            spec.set_linux(Some(linux));
        }
        if deny_first {
            crate::cgroups::devices::with_default_deny(&mut spec);
        }
        crate::init::privilege::drop_plant(&mut spec);
        crate::init::privilege::augment(&mut spec, held);
        super::sysctl::strip(&mut spec);
        if let Some(mut root) = spec.root().clone() {
            root.set_path(bundle.dir.join(root.path()));
            spec.set_root(Some(root));
        }
        if egress {
            super::egress::mount_files(&mut spec, &dir);
        }
        let written = (|| {
            claim::private_dir(&dir)?;
            if egress {
                super::egress::write_files(&dir)?;
            }
            claim::write_private(
                &dir.join(ORIGIN_FILE),
                bundle.dir.as_os_str().as_encoded_bytes(),
            )?;
            claim::write_private(
                &dir.join(crate::init::privilege::HELD_FILE),
                &to_json(&held)?,
            )?;
            if let Some(p) = node_policy {
                claim::write_private(&dir.join(crate::node::SECCOMP_FILE), &p.profile_json()?)?;
            }
            // Last: a shadow bundle with its config.json is complete.
            claim::write_private(&dir.join("config.json"), &to_json(&spec)?).map_err(Failure::from)
        })();
        if let Err(e) = written {
            self.remove_leftovers(id);
            return Err(e);
        }
        Ok(Some(dir))
    }

    /// For an OCI-wasm container: the limits checked, the host binary
    /// opened (protected, see `wasm_host`), and the payload validated and
    /// compiled now by the host's `prepare`, through the compile cache under
    /// the state root, so that errors (imports, bad limits, not wasm) fail
    /// `create` with the right exit code and a warm start only loads. A
    /// payload that is not a plain file inside the rootfs (e.g. on a bind
    /// mount) is opened inside the container and compiled there by the host.
    fn precompile_wasm(&self, bundle: &Bundle) -> Result<Option<Payload>> {
        let Some(args0) = crate::init::executor::wasm_payload(&bundle.spec) else {
            return Ok(None);
        };
        // A payload that cannot be prepared (not wasm, imports, bad
        // limits) is a configuration problem of the bundle.
        let refused = |e: &str| Failure::config(format!("wasm payload {args0}: {e}"));
        let limits = bundle
            .spec
            .annotations()
            .as_ref()
            .and_then(|a| a.get(WASM_LIMITS).cloned())
            .unwrap_or_else(|| "{}".into());
        Limits::from_value(&limits).map_err(|e| refused(&e.to_string()))?;
        let exe = wasm_host::Exe::open(&self.root.join(crate::host::sealed_exe::EMPTY_DIR))?;
        if payload_not_a_file(bundle, &args0) {
            return Err(refused("not a regular file"));
        }
        let Some(host) = payload_in_rootfs(bundle, &args0) else {
            return Ok(Some(Payload::new(exe, None, None, limits)));
        };
        let cache = self.root.join(wasm_host::CACHE_DIR);
        let program = wasm_host::Program::Fd(&exe);
        let cache_ref = wasm_host::CacheRef::unsealed(&cache);
        let report = match wasm_host::memo::prepare(program, &host, cache_ref, &limits, false)? {
            Ok(r) => r,
            Err(r) if r.code == EXIT_REFUSED => return Err(refused(&r.message)),
            Err(r) => return Err(Failure::runtime(r.message)),
        };
        // The compiled code from the cache, else the wasm bytes (then the
        // host compiles them again inside).
        let code = report
            .cache_file
            .as_deref()
            .filter(|f| f.starts_with(&cache))
            .unwrap_or(&host);
        let code = fs::File::open(code).map_err(|e| {
            Failure::runtime(format!("wasm payload {args0}: {}: {e}", code.display()))
        })?;
        Ok(Some(Payload::new(
            exe,
            Some(code),
            Some(report.sha256),
            limits,
        )))
    }

    /// The container's supervisor, when it has duties: it outlives this
    /// command (a detached container's too) and exits with the init.
    /// `detach`: the caller does not wait for the container (an engine's
    /// `create`, `run --detach`), so the supervisor must not hold its
    /// stderr; a foreground `run` keeps it, and sees the warnings there.
    fn supervise(
        &self,
        c: &Container,
        bundle: &Bundle,
        detach: bool,
        learn: Option<crate::supervisor::learn::Duty>,
        session: Option<u32>,
    ) -> Result<()> {
        let annotations = bundle.spec.annotations().clone().unwrap_or_default();
        let state_dir = self.dir(c.id());
        let init = c
            .pid()
            .ok_or_else(|| Failure::runtime("container has no init pid"))?;
        // While learning nothing refuses: no denial reports.
        let denials = (confined(bundle) && learn.is_none())
            .then(|| denials::Duty::prepare(c.id(), &state_dir, self.audit, denial_policy(bundle)))
            .flatten()
            .map(|d| denials::Duty { session, ..d });
        let egress = super::egress::listen(&annotations, init.as_raw())?;
        let duties = Duties {
            timeout: super::bundle::timeout(&annotations)?.map(|s| s.0),
            denials,
            egress,
            learn,
        };
        if duties.is_empty() {
            return Ok(());
        }
        if duties.learn.is_some() {
            claim::write_private(
                &state_dir.join(crate::supervisor::learn::LEARNING_FILE),
                b"",
            )?;
        }
        let record = state_dir.join(supervisor::PID_FILE);
        let target = Target {
            id: c.id().to_owned(),
            state_dir,
            keep_stderr: !detach,
            init,
            shares_pids: !super::bundle::own_pid_namespace(&bundle.spec),
        };
        let child = supervisor::spawn(
            target,
            duties,
            |id| {
                let c = self.load(id)?;
                super::signal::deliver(&c, nix::sys::signal::Signal::SIGKILL, true)
            },
            // A look that fails is no empty container: only one whose
            // state is gone (deleted) has nothing left, else a passing read
            // error would end the supervisor, and its deadline, early.
            |id| {
                let Ok(c) = self.load(id) else {
                    return self.dir(id).exists();
                };
                crate::cgroups::cgroup_manager(&c)
                    .ok()
                    .and_then(|m| libcgroups::common::CgroupManager::get_all_pids(&m).ok())
                    .is_none_or(|pids| !pids.is_empty())
            },
        )?;
        // For `delete`, which waits for it (see `delete::wait_supervisor`).
        if let Some(pid) = child {
            if let Err(e) = claim::write_private(&record, super::identity::describe(pid).as_bytes())
            {
                tracing::warn!(id = c.id(), error = %e, "could not record the supervisor's pid");
            }
        }
        Ok(())
    }
}

/// Whether the payload's path in the rootfs is there but no regular file
/// (a FIFO at `/app.wasm` once hung the container's start past every
/// deadline: the host's open blocked).
fn payload_not_a_file(bundle: &Bundle, args0: &str) -> bool {
    // The entry itself: a symlink is followed inside the container, where
    // the host refuses anything but a regular file too.
    let path = bundle.rootfs().join(args0.trim_start_matches('/'));
    fs::symlink_metadata(path).is_ok_and(|m| !m.is_file() && !m.file_type().is_symlink())
}

/// The payload's file in the rootfs on the host, symlinks resolved, when it
/// is a plain file that stays inside the rootfs.
fn payload_in_rootfs(bundle: &Bundle, args0: &str) -> Option<PathBuf> {
    let rootfs = fs::canonicalize(bundle.rootfs()).ok()?;
    let host = fs::canonicalize(rootfs.join(args0.trim_start_matches('/'))).ok()?;
    (host.starts_with(&rootfs) && host.is_file()).then_some(host)
}

/// Whether anything can refuse the container's processes (Landlock rules or
/// a seccomp profile): else there is nothing to report and no duty.
fn confined(bundle: &Bundle) -> bool {
    let annotations = bundle.spec.annotations().as_ref();
    annotations.is_some_and(|a| a.contains_key(sandboy_spec_gen::annotations::LANDLOCK))
        || bundle
            .spec
            .linux()
            .as_ref()
            .is_some_and(|l| l.seccomp().is_some())
}

/// Whether a policy confines the container: sandboy's Landlock annotation
/// (spec-gen's, a node policy's or a hand-written one) or a node policy.
/// Its binds are then restricted all the way down
/// (`mounts::restrict_recursively`); a plain OCI container's keep runc's
/// top-only meaning.
fn policy_confined(
    spec: &oci_spec::runtime::Spec,
    node_policy: Option<&crate::node::Applied>,
) -> bool {
    node_policy.is_some()
        || spec
            .annotations()
            .as_ref()
            .is_some_and(|a| a.contains_key(sandboy_spec_gen::annotations::LANDLOCK))
}

/// Paths no policy change may expose: the spec's masked paths (`[fs] hide`),
/// and the calls whose only verdict is the guards' ENOSYS nudge.
fn denial_policy(bundle: &Bundle) -> denials::Policy {
    let linux = bundle.spec.linux().as_ref();
    denials::Policy {
        hidden: linux
            .and_then(|l| l.masked_paths().clone())
            .unwrap_or_default(),
        fallbacks: linux
            .and_then(|l| l.seccomp().as_ref())
            .map(enosys_only)
            .unwrap_or_default(),
    }
}

/// The calls every rule of `seccomp` answers with ENOSYS and nothing else:
/// the guards' `clone3`/`openat2`, which libc retries as `clone`/`openat`.
/// The kernel's audit record keeps the ERRNO action but not the errno, so
/// the collector tells this nudge from a refusal by the profile instead; a
/// name some rule also refuses otherwise (EPERM, kill) is reported.
fn enosys_only(seccomp: &oci_spec::runtime::LinuxSeccomp) -> Vec<String> {
    use oci_spec::runtime::LinuxSeccompAction as A;
    let rules = seccomp.syscalls().as_deref().unwrap_or_default();
    let nudges = |r: &&oci_spec::runtime::LinuxSyscall| {
        r.action() == A::ScmpActErrno && r.errno_ret() == Some(libc::ENOSYS as u32)
    };
    let mut names: Vec<String> = rules
        .iter()
        .filter(nudges)
        .flat_map(|r| r.names().iter().cloned())
        .collect();
    names.retain(|n| {
        !rules
            .iter()
            .any(|r| !nudges(&r) && r.action() != A::ScmpActAllow && r.names().contains(n))
    });
    names.sort();
    names.dedup();
    names
}
