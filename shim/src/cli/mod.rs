//! The runc-compatible command line: flags (`args`), one module per
//! subcommand, and what the CLI prints (`output`, `logging`). Commands parse
//! and print; the work is done by calling down into `container` (or `wrap`).
//! Failures travel up as [`crate::error::Failure`], which `main` maps to exit
//! codes in one place.

mod adapt;
pub mod args;
mod cause;
mod create;
mod delete;
mod events;
mod exec;
mod features;
mod kill;
mod list;
pub mod logging;
pub mod output;
mod pause;
mod policy;
mod ps;
mod run;
mod spec;
mod start;
mod state;
mod update;

use crate::container::Runtime;
use crate::error::{Failure, Result};
use args::Command;

/// Run one subcommand; its exit status, or the failure to report.
pub fn dispatch(global: &args::Global, command: Command) -> Result<i32> {
    let rt = || {
        let mut rt = Runtime::new(global.state_root()?, global.systemd_cgroup)?;
        rt.audit = audit_mode(global, None)?;
        Ok::<_, Failure>(rt)
    };
    // Commands on containers already made: the root is never created.
    let existing = || Runtime::open(global.state_root()?, global.systemd_cgroup);
    // Only the commands that create containers read the node
    // configuration: a broken one must not stop `delete` or `kill`.
    let node_rt = || {
        let node = node_config(global)?;
        let mut rt = Runtime::new(global.state_root()?, global.systemd_cgroup)?;
        rt.audit = audit_mode(global, node.audit)?;
        rt.node = node;
        Ok::<_, Failure>(rt)
    };
    match command {
        Command::Create(a) => create::run(&node_rt()?, a),
        Command::Start(a) => start::run(&existing()?, a),
        Command::Run(a) => run::run(&node_rt()?, a),
        Command::State(a) => state::run(&existing()?, a),
        Command::Kill(a) => kill::run(&existing()?, a),
        Command::Delete(a) => delete::run(&existing()?, a),
        Command::Exec(a) => exec::run(&rt()?, a),
        Command::Ps(a) => ps::run(&existing()?, a),
        Command::List(a) => list::run(&existing()?, a),
        Command::Pause(a) => pause::pause(&existing()?, a),
        Command::Resume(a) => pause::resume(&existing()?, a),
        Command::Events(a) => events::run(&existing()?, a),
        Command::Update(a) => update::run(&existing()?, a),
        Command::Features => features::run(),
        Command::Policy(a) => policy::run(global.config.as_deref(), a),
        Command::Spec(a) => spec::run(a),
        Command::Checkpoint(a) | Command::Restore(a) => {
            // runc validates its flags before it reaches CRIU; so do we.
            if let Some(e) = criu_flag_error(&a.args) {
                return Err(e);
            }
            Err(Failure::runtime(
                "checkpoint/restore is not supported by sandboy (no CRIU integration); stop and re-create the container instead",
            ))
        }
        Command::Wrap(a) => {
            let report = a.report.clone();
            let ran = crate::wrap::run(rt, wrap_options(a))?;
            run::summary(&ran, report.as_deref());
            Ok(ran.status)
        }
        Command::Adapt(a) => adapt::run(global, rt, a),
        Command::Audit(a) => adapt::audit(global, a),
    }
}

fn wrap_options(a: args::Wrap) -> crate::wrap::WrapOptions {
    use crate::wrap::{InlineRules, Isolation, WrapOptions};
    WrapOptions {
        policy: a.policy,
        inline: InlineRules {
            ro: a.ro,
            rw: a.rw,
            exec: a.exec,
            connect: a.connect,
            bind: a.bind,
            timeout: a.timeout,
        },
        id: a.id,
        isolation: match a.isolation {
            args::Isolation::Auto => Isolation::Auto,
            args::Isolation::Landlock => Isolation::Landlock,
            args::Isolation::Namespaces => Isolation::Namespaces,
        },
        clear_env: a.clear_env,
        command: a.command,
        report: a.report,
        learn: a.learn.map(|out| crate::wrap::Learn {
            out,
            depth: a.collapse,
        }),
        dry_run: a.dry_run,
    }
}

/// runc's checks of `--parent-path`: relative to `--image-path` (default
/// `checkpoint`), and existing.
fn criu_flag_error(args: &[String]) -> Option<Failure> {
    // `--flag VALUE` or `--flag=VALUE`.
    let value = |flag: &str| -> Option<String> {
        args.iter().enumerate().find_map(|(i, a)| {
            if a == flag {
                args.get(i + 1).cloned()
            } else {
                a.strip_prefix(flag)?.strip_prefix('=').map(String::from)
            }
        })
    };
    let parent = value("--parent-path")?;
    if parent.starts_with('/') {
        return Some(Failure::usage(
            "--parent-path must be relative to the image directory (CRIU links pre-dumps with it)",
        ));
    }
    let image = value("--image-path").unwrap_or_else(|| "checkpoint".into());
    let full = std::path::Path::new(&image).join(&parent);
    if !full.is_dir() {
        return Some(Failure::usage(format!(
            "invalid --parent-path: {}: no such directory",
            full.display()
        )));
    }
    None
}

/// The node configuration: `--config`, else `SANDBOY_CONFIG`, else the
/// default file (whose absence means the defaults).
pub fn node_config(global: &args::Global) -> Result<crate::node::Config> {
    crate::node::Config::load(config_path(global.config.as_deref()).as_deref())
}

/// The explicitly named configuration file, if any.
fn config_path(flag: Option<&std::path::Path>) -> Option<std::path::PathBuf> {
    flag.map(std::path::Path::to_path_buf).or_else(|| {
        std::env::var_os(crate::node::config::ENV)
            .filter(|v| !v.is_empty())
            .map(std::path::PathBuf::from)
    })
}

/// `--audit`, else `SANDBOY_AUDIT`, else the node configuration's `audit`,
/// else `if-enabled`.
fn audit_mode(
    global: &args::Global,
    node: Option<crate::supervisor::audit::Mode>,
) -> Result<crate::supervisor::audit::Mode> {
    match (&global.audit, std::env::var("SANDBOY_AUDIT")) {
        (Some(flag), _) => flag
            .parse()
            .map_err(|e| Failure::usage(format!("--audit: {e}"))),
        (None, Ok(env)) if !env.is_empty() => env
            .parse()
            .map_err(|e| Failure::usage(format!("SANDBOY_AUDIT: {e}"))),
        _ => Ok(node.unwrap_or_default()),
    }
}
