//! One module per runc subcommand. Each returns the process exit status or a
//! `Failure`; `main` maps failures to exit codes.

pub mod create;
pub mod delete;
pub mod events;
pub mod exec;
pub mod features;
pub mod kill;
pub mod list;
pub mod pause;
pub mod ps;
pub mod run;
pub mod spec;
pub mod start;
pub mod state;
pub mod update;

use nix::sys::wait::WaitStatus;

/// Exit status for a reaped process, shell style: 128+N for a signal.
pub fn exit_status(status: WaitStatus) -> i32 {
    match status {
        WaitStatus::Exited(_, code) => code,
        WaitStatus::Signaled(_, sig, _) => 128 + sig as i32,
        _ => 0,
    }
}
