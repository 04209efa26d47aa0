use libcgroups::common::{CgroupManager, FreezerState};
use libcontainer::container::{Container, ContainerStatus};
use nix::errno::Errno;
use nix::sys::signal::Signal;
use nix::unistd::Pid;

use crate::cli::Kill;
use crate::error::{Failure, Result};
use crate::ops::{require, Runtime};

pub fn run(rt: &Runtime, args: Kill) -> Result<i32> {
    let signal = parse_signal(&args.signal)?;
    let c = rt.load(&args.container_id)?;
    // runc lets --all reach a stopped container's leftovers; a plain kill
    // needs a live init.
    let reachable = c.can_kill() || (args.all && c.status() == ContainerStatus::Stopped);
    require(&c, reachable, "kill")?;
    deliver(&c, signal, args.all)?;
    Ok(0)
}

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
        && !crate::ops::unified_host()
    {
        crate::ops::cgroup_manager(c)?
            .freeze(FreezerState::Thawed)
            .map_err(|e| Failure::runtime(format!("thawing {} for SIGKILL: {e}", c.id())))?;
    }
    Ok(())
}

/// Every process in the cgroup, frozen meanwhile so that none forks away
/// unsignalled; thawed afterwards, as runc does.
fn deliver_to_all(c: &Container, signal: Signal) -> Result<()> {
    let cgroup = crate::ops::cgroup_manager(c)?;
    if let Err(e) = cgroup.freeze(FreezerState::Frozen) {
        tracing::warn!(id = c.id(), error = %e, "cannot freeze the container before signalling it");
    }
    let sent = cgroup
        .get_all_pids()
        .map_err(|e| Failure::runtime(format!("processes of {}: {e}", c.id())))
        .and_then(|pids| pids.into_iter().try_for_each(|pid| signal_pid(pid, signal)));
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

/// A signal as runc's `kill` takes it: a name with or without `SIG`, in
/// any case, or a number 1-31.
pub fn parse_signal(s: &str) -> Result<Signal> {
    let upper = s.to_ascii_uppercase();
    let parsed = match upper.parse::<i32>() {
        Ok(n) if (1..=31).contains(&n) => Signal::try_from(n).ok(),
        Ok(_) => None,
        Err(_) => {
            let name = upper.strip_prefix("SIG").unwrap_or(&upper);
            match name {
                "IOT" => Some(Signal::SIGABRT),
                _ => format!("SIG{name}").parse().ok(),
            }
        }
    };
    parsed.ok_or_else(|| {
        Failure::usage(format!(
            "invalid signal {s:?}: use a name like SIGTERM/TERM or a number 1-31"
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_numbers_and_aliases() {
        for (given, want) in [
            ("TERM", Signal::SIGTERM),
            ("sigkill", Signal::SIGKILL),
            ("SIGWINCH", Signal::SIGWINCH),
            ("9", Signal::SIGKILL),
            ("31", Signal::SIGSYS),
            ("iot", Signal::SIGABRT),
        ] {
            assert_eq!(parse_signal(given).unwrap(), want, "{given}");
        }
    }

    #[test]
    fn unknown_signals_are_usage_errors() {
        for bad in ["0", "32", "-9", "SIGFOO", "", "SIG"] {
            assert_eq!(parse_signal(bad).unwrap_err().exit_code(), 2, "{bad:?}");
        }
    }
}
