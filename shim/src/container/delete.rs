//! Deleting a container: libcontainer's delete (or sandboy's one-pass
//! removal for the common stopped case), poststop hooks, and the leftovers.

use std::fs;
use std::path::PathBuf;
use std::time::Duration;

use libcontainer::config::YoukiConfig;
use libcontainer::container::{Container, ContainerStatus};
use nix::unistd::Pid;

use super::{validate_id, Runtime, SHADOW_DIR, WRAP_DIR};
use crate::error::{Failure, Result};
use crate::supervisor::pidfd::Pidfd;

impl Runtime {
    /// runc's `delete`: a stopped or created container, or with `force`
    /// any container (killed first); a missing one is fine with `force`.
    /// Serialised with the id's other state changes (see `claim`).
    pub fn delete(&self, id: &str, force: bool) -> Result<()> {
        validate_id(id)?;
        // A root never made has no state to lock (`--force` may still
        // find the container's cgroups), and gets no lock directory.
        if std::fs::symlink_metadata(&self.root).is_err() {
            return self.delete_locked(id, force);
        }
        let lock = self.wait_lock(id)?;
        let result = self.delete_locked(id, force);
        if !self.dir(id).exists() {
            lock.remove();
        }
        result
    }

    fn delete_locked(&self, id: &str, force: bool) -> Result<()> {
        let mut c = match self.load(id) {
            Ok(c) => c,
            // No readable state (none yet, or cut by a SIGKILL mid-write):
            // what --force asks for is still possible from the cgroups.
            // Another runtime's container (a shared --root) is not ours to
            // recover: its processes and state stay.
            Err(e) if force && self.foreign(id).is_none() => {
                if self.dir(id).exists() {
                    tracing::warn!(id, error = %e, "recovering a container without readable state");
                }
                return self.recover(id);
            }
            Err(e) => return Err(e),
        };
        if !force && c.status() == ContainerStatus::Running && finishing(&c) {
            c.refresh_status()?;
        }
        if !force
            && !matches!(
                c.status(),
                ContainerStatus::Stopped | ContainerStatus::Created
            )
        {
            return Err(Failure::runtime(format!(
                "cannot delete container {} that is not stopped: {}",
                id,
                c.status()
            )));
        }
        crate::cgroups::oom::report(&c);
        if force && c.status() != ContainerStatus::Stopped {
            kill_and_wait(&mut c);
        }
        match self.destroy(&mut c, force) {
            // E.g. a create killed before it recorded the init's pid: the
            // state says stopped while its processes still hold the
            // cgroups. --force finds and kills them there.
            Err(e) if force => {
                tracing::warn!(id, error = %e, "delete failed; recovering from the cgroups");
                self.recover(id)
            }
            done => done,
        }
    }

    /// Delete a container (libcontainer's delete, our leftovers) and then
    /// run its poststop hooks, whose failures are only warnings.
    pub fn destroy(&self, c: &mut Container, force: bool) -> Result<()> {
        self.destroy_with(c, force, |_| ()).1
    }

    /// [`Runtime::destroy`], calling `last_look` exactly once, with the
    /// container's supervisor (if one runs), while the state directory
    /// still exists, as late as it can: after the cgroups are gone when
    /// sandboy removes them itself. A foreground `run` reads the final
    /// denial report there, so the supervisor's last audit drain runs
    /// while the cgroups are removed instead of before. What `last_look`
    /// returned comes back whether or not the delete then succeeded.
    pub fn destroy_with<T>(
        &self,
        c: &mut Container,
        force: bool,
        last_look: impl FnOnce(Option<&Pidfd>) -> T,
    ) -> (T, Result<()>) {
        let config = YoukiConfig::load(&c.root).ok();
        // Read now: libcontainer's delete removes the state directory.
        let supervisor = supervisor_of(&c.root);
        self.no_exec_in_flight(c.id());
        let looked;
        let hooks = match config {
            Some(cfg) if delete_stopped(c, &cfg) => {
                looked = last_look(supervisor.as_ref());
                super::poststop::of(&cfg)
            }
            config => {
                looked = last_look(supervisor.as_ref());
                let hooks = config
                    .map(|cfg| super::poststop::take(c, cfg))
                    .unwrap_or_default();
                if let Err(e) = c.delete(force) {
                    if force && !c.root.exists() {
                        // Another delete removed it meanwhile (an engine's
                        // cleanup racing its own `delete`): gone is what
                        // --force asks for, and that delete ran the hooks.
                        tracing::debug!(id = c.id(), error = %e, "deleted concurrently");
                        self.remove_leftovers(c.id());
                        self.remove_lock(c.id());
                        return (looked, Ok(()));
                    }
                    super::poststop::restore(c, hooks);
                    return (looked, Err(e.into()));
                }
                hooks
            }
        };
        // Before the leftovers go: the hooks' state names the shadow bundle.
        super::poststop::run(c, &hooks);
        wait_supervisor(supervisor, c.id());
        self.remove_leftovers(c.id());
        self.remove_lock(c.id());
        (looked, Ok(()))
    }

    /// `delete --force` of a container whose state cannot be read: its
    /// processes are found through its cgroups (the path libcontainer
    /// recorded in youki_config.json, else the shadow bundle's, else
    /// sandboy's default `/sandboy/<id>`), killed, and everything removed.
    fn recover(&self, id: &str) -> Result<()> {
        let path = YoukiConfig::load(self.dir(id))
            .ok()
            .map(|c| c.cgroup_path)
            .or_else(|| self.shadow_cgroups_path(id))
            .unwrap_or_else(|| PathBuf::from(format!("/sandboy/{id}")));
        self.no_exec_in_flight(id);
        let purged = crate::cgroups::remove::purge(&path);
        wait_supervisor(supervisor_of(&self.dir(id)), id);
        self.remove_leftovers(id);
        self.remove_lock(id);
        match purged {
            Ok(0) => Ok(()),
            Ok(n) => {
                tracing::warn!(id, killed = n, cgroup = %path.display(), "killed the processes of a container without readable state");
                Ok(())
            }
            Err(e) => Err(Failure::runtime(format!(
                "removing cgroup {} of {id}: {e}",
                path.display()
            ))),
        }
    }

    /// Before the cgroups go: an orphaned `exec` would make them again
    /// (see `claim::Runtime::exec_in_flight`).
    fn no_exec_in_flight(&self, id: &str) {
        if !self.wait_execs(id, EXEC_WAIT) {
            tracing::warn!(id, "an exec of the container is still being set up after {EXEC_WAIT:?}; its cgroups may be made again");
        }
    }

    fn shadow_cgroups_path(&self, id: &str) -> Option<PathBuf> {
        let bytes = fs::read(self.root.join(SHADOW_DIR).join(id).join("config.json")).ok()?;
        let v: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
        v["linux"]["cgroupsPath"].as_str().map(PathBuf::from)
    }

    /// Remove what a failed create or a delete may leave.
    pub fn remove_leftovers(&self, id: &str) {
        let _ = fs::remove_dir_all(self.root.join(SHADOW_DIR).join(id));
        // A killed `wrap`'s workdir: its rootfs was a bind of the host's `/`
        // in wrap's own mount namespace only, so here it is an empty
        // directory; removed without recursion all the same.
        let work = self.root.join(WRAP_DIR).join(id);
        let _ = fs::remove_file(work.join("config.json"));
        let _ = fs::remove_dir(work.join("rootfs"));
        // Its staging mount points (`wrap::stage`), empty here for the
        // same reason; a mounted one (EBUSY) is left alone.
        let stage = work.join("stage");
        for entry in fs::read_dir(&stage).into_iter().flatten().flatten() {
            let _ = fs::remove_dir(entry.path());
        }
        let _ = fs::remove_dir(&stage);
        let _ = fs::remove_dir(&work);
        let dir = self.dir(id);
        if dir.exists() {
            if let Err(e) = fs::remove_dir_all(&dir) {
                tracing::warn!(id, error = %e, "could not remove state directory");
            }
        }
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
    if let Err(crate::cgroups::remove::NotHandled(why)) =
        crate::cgroups::remove::remove_empty(&cfg.cgroup_path)
    {
        tracing::debug!(id = c.id(), why, "cgroups left to libcontainer's delete");
        return false;
    }
    // The state directory goes with the rest of the leftovers.
    true
}

/// SIGKILL everything and wait (up to 2 s) for the init to be gone, so the
/// cgroup is empty when libcontainer removes it: its own retry window is
/// short, and a `delete --force` must not fail on a dying container.
fn kill_and_wait(c: &mut Container) {
    if c.status() == ContainerStatus::Paused {
        let _ = c.resume();
    }
    let _ = super::signal::deliver(c, nix::sys::signal::Signal::SIGKILL, true);
    // A container without a cgroup of its own (rootless, no delegation) is
    // reached only through its init; the pid namespace takes the rest.
    if c.status() != ContainerStatus::Stopped {
        let _ = super::signal::deliver(c, nix::sys::signal::Signal::SIGKILL, false);
    }
    if let Some(pid) = c.pid() {
        if wait_gone(pid, Duration::from_secs(2)) {
            // Now stopped: the delete of a stopped container applies.
            let _ = c.refresh_status();
        }
    }
}

/// The supervisor exits once the init is gone, after its last report
/// lines; a delete that returned before then left it running beside a
/// removed state directory (a reliability trial counted it). Wait for it,
/// up to [`SUPERVISOR_WAIT`] (its audit drain takes at most one second),
/// then SIGKILL it.
fn wait_supervisor(supervisor: Option<Pidfd>, id: &str) {
    let Some(fd) = supervisor else {
        return;
    };
    if !fd.wait_exit(SUPERVISOR_WAIT).unwrap_or(false) {
        tracing::warn!(id, "the supervisor outlived its container; killing it");
        // Gone, not just signalled, when delete returns.
        if fd.kill().is_ok() {
            let _ = fd.wait_exit(Duration::from_millis(500));
        }
    }
}

/// The container's running supervisor, from its state directory.
pub(super) fn supervisor_of(state_dir: &std::path::Path) -> Option<Pidfd> {
    let recorded = fs::read_to_string(state_dir.join(crate::supervisor::PID_FILE)).ok()?;
    super::identity::handle(&recorded)
}

/// See [`Runtime::no_exec_in_flight`]: a killed container's orphaned exec
/// intermediate exits within milliseconds.
const EXEC_WAIT: Duration = Duration::from_secs(2);

/// See [`wait_supervisor`].
const SUPERVISOR_WAIT: Duration = Duration::from_secs(2);

/// A `delete` issued right after `start` of a short-lived process can find
/// the init still running its startContainer hooks or its last
/// instructions; runc has the same window (it loses the race too, under
/// load). Give the init up to 300 ms to finish before refusing, enough for
/// a loaded CI host: whether it is gone now.
fn finishing(c: &Container) -> bool {
    c.pid()
        .is_some_and(|pid| wait_gone(pid, Duration::from_millis(300)))
}

/// Wait up to `limit` until `pid` has exited (a zombie init is already
/// harmless); whether it has. Woken by the exit itself through a pidfd.
fn wait_gone(pid: Pid, limit: Duration) -> bool {
    match Pidfd::open(pid) {
        Ok(fd) => fd.wait_exit(limit).unwrap_or(false),
        Err(e) => e.raw_os_error() == Some(libc::ESRCH),
    }
}
