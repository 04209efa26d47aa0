//! Signal delivery as runc does it: to the init, or with `all` to every
//! process of the container's cgroup (frozen meanwhile).

use libcgroups::common::{CgroupManager, FreezerState};
use libcontainer::container::{Container, ContainerStatus};
use nix::errno::Errno;
use nix::sys::signal::Signal;
use nix::unistd::Pid;

use crate::cgroups;
use crate::error::{Failure, Result};

/// Send `signal` to the container's init, or with `all` to every process
/// in its cgroup, as runc does. Unlike libcontainer's `Container::kill`,
/// nothing is written to the state afterwards: a signal need not be lethal
/// (a created container that gets SIGWINCH is still created, and must
/// still start), and the container's own `run` or engine may be removing
/// its state directory at that very moment, which must not turn a
/// delivered signal into a failed `kill`.
pub fn deliver(c: &Container, signal: Signal, all: bool) -> Result<()> {
    if all {
        return deliver_to_all(c, signal);
    }
    let pid = c
        .pid()
        .ok_or_else(|| Failure::runtime("container process pid not found in state"))?;
    signal_pid(pid, signal)?;
    // On cgroup v1 a frozen process cannot act on SIGKILL until thawed.
    if signal == Signal::SIGKILL
        && c.status() == ContainerStatus::Paused
        && !cgroups::unified_host()
    {
        cgroups::cgroup_manager(c)?
            .freeze(FreezerState::Thawed)
            .map_err(|e| Failure::runtime(format!("thawing {} for SIGKILL: {e}", c.id())))?;
    }
    Ok(())
}

/// Every process in the cgroup, frozen meanwhile so that none forks away
/// unsignalled; thawed afterwards, as runc does — except a paused
/// container, which stays frozen (runc 1.1 thawed it, leaving it recorded
/// `paused` and running), unless the signal is SIGKILL, which a v1-frozen
/// process only acts on once thawed.
fn deliver_to_all(c: &Container, signal: Signal) -> Result<()> {
    let cgroup = cgroups::cgroup_manager(c)?;
    let paused = c.status() == ContainerStatus::Paused;
    if !paused {
        if let Err(e) = cgroup.freeze(FreezerState::Frozen) {
            tracing::warn!(id = c.id(), error = %e, "cannot freeze the container before signalling it");
        }
    }
    let sent = cgroup
        .get_all_pids()
        .map_err(|e| Failure::runtime(format!("processes of {}: {e}", c.id())))
        .and_then(|pids| pids.into_iter().try_for_each(|pid| signal_pid(pid, signal)));
    if paused && signal != Signal::SIGKILL {
        return sent;
    }
    if let Err(e) = cgroup.freeze(FreezerState::Thawed) {
        tracing::warn!(id = c.id(), error = %e, "cannot thaw the container after signalling it");
    }
    sent
}

/// One process; one already gone is what a kill wants.
fn signal_pid(pid: Pid, signal: Signal) -> Result<()> {
    match nix::sys::signal::kill(pid, signal) {
        Ok(()) | Err(Errno::ESRCH) => Ok(()),
        Err(e) => Err(Failure::runtime(format!("kill {signal} to pid {pid}: {e}"))),
    }
}
