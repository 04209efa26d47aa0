//! `kill`: a signal to the init, or with `--all` to every process.

use libcontainer::container::ContainerStatus;
use nix::sys::signal::Signal;

use super::args::Kill;
use crate::container::{require, signal, Runtime};
use crate::error::{Failure, Result};

pub fn run(rt: &Runtime, args: Kill) -> Result<i32> {
    let sig = parse_signal(&args.signal)?;
    let (c, _lock) = rt.load_locked(&args.container_id)?;
    // runc lets --all reach a stopped container's leftovers; a plain kill
    // needs a live init.
    let reachable = c.can_kill() || (args.all && c.status() == ContainerStatus::Stopped);
    require(&c, reachable, "kill")?;
    signal::deliver(&c, sig, args.all)?;
    Ok(0)
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
