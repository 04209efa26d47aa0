//! `run`: create + start, and in the foreground wait and delete; a short
//! summary of the container's refusals on stderr at exit.

use super::args::Run;
use crate::container::learn::Learning;
use crate::container::{Ran, RunMode, Runtime};
use crate::error::{Failure, Result};
use crate::supervisor::learn::Learn;

pub fn run(rt: &Runtime, args: Run) -> Result<i32> {
    let mode = RunMode {
        detach: args.detach,
        keep: args.keep,
        report: args.report.clone(),
    };
    let mut opts = args.opts.to_options();
    opts.learn = args
        .learn
        .as_ref()
        .map(|out| learning(out, &args))
        .transpose()?;
    let ran = rt.run(&args.container_id, &opts, mode)?;
    summary(&ran, args.report.as_deref());
    // 255 with an error from the init: it failed before the payload ran (a
    // startContainer hook), a runtime failure (exit 1), as under runc, not
    // the payload's status.
    if ran.status == 255 && !args.detach {
        if let Some(cause) = super::cause::init_failure() {
            return Err(Failure::runtime(format!(
                "the container's init failed before its process ran: {cause}"
            )));
        }
    }
    Ok(ran.status)
}

/// `--learn OUT [--policy BASE] [--collapse N]`, OUT made absolute here,
/// against the caller's directory (the container's supervisor writes it).
fn learning(out: &std::path::Path, args: &Run) -> Result<Learning> {
    let absolute = |p: &std::path::Path| {
        std::path::absolute(p)
            .map_err(|e| crate::error::Failure::usage(format!("--learn {}: {e}", p.display())))
    };
    Ok(Learning {
        learn: Learn {
            out: absolute(out)?,
            depth: args.collapse,
        },
        base: args.policy.clone(),
    })
}

/// `sandboy: 3 refusals: read /etc/shadow, connect 80, syscall ptrace; see --report FILE`
pub fn summary(ran: &Ran, report: Option<&std::path::Path>) {
    if ran.refusals.is_empty() {
        return;
    }
    const SHOWN: usize = 5;
    let mut what: Vec<String> = ran.refusals.iter().take(SHOWN).map(|d| d.short()).collect();
    if ran.refusals.len() > SHOWN {
        what.push(format!("and {} more", ran.refusals.len() - SHOWN));
    }
    let n = ran.refusals.len();
    let see = match report {
        Some(p) => format!("; see {}", p.display()),
        None => "; see --report FILE".to_owned(),
    };
    super::output::error_line(&format!(
        "sandboy: {n} refusal{}: {}{see}",
        if n == 1 { "" } else { "s" },
        what.join(", ")
    ));
}
