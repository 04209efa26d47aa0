//! `sandboy`: a runc-compatible OCI runtime on libcontainer that confines
//! every container's init with Landlock and seccomp right before execve, and
//! runs WebAssembly components as containers.
//!
//! Layout: `cli` (flags) → `commands/*` (one per subcommand) → `ops`
//! (container operations on libcontainer) → `executor` (what runs inside the
//! init: confinement, then the payload). `error` maps failures to exit codes.

mod bundle;
mod cgroup_devices;
mod cgroup_prime;
mod cgroup_remove;
mod cli;
mod commands;
mod error;
mod executor;
mod limits;
mod logging;
mod loopback;
mod oom;
mod ops;
mod output;
mod pidfd;
mod poststop;
mod privilege;
mod sealed_exe;
mod seccomp_notify;
mod stats;
#[cfg(test)]
mod test_support;
mod timeout;
mod wrap;

use clap::Parser;

use crate::cli::{Cli, Command, LogFormat};
use crate::error::{Failure, Result};
use crate::ops::Runtime;

fn main() {
    let cli = Cli::parse();
    if cli.global.version {
        print_version();
        return;
    }
    let Some(command) = cli.command else {
        use clap::CommandFactory;
        let _ = Cli::command().print_help();
        std::process::exit(2);
    };
    // CVE-2019-5736: commands that put a process into a container run from a
    // copy of the binary the container cannot write back to.
    if matches!(
        command,
        Command::Create(_) | Command::Run(_) | Command::Exec(_) | Command::Wrap(_)
    ) {
        // These also attach a process to cgroups: start the kernel's wait
        // for that before the re-exec, so the two overlap.
        cgroup_prime::start();
        if let Err(e) = sealed_exe::ensure(&cli.global.root.join(".exe-lower")) {
            output::error_line(&format!(
                "sandboy: cannot seal the runtime binary (CVE-2019-5736 protection): {e}"
            ));
            exit(1);
        }
    }
    let format = match cli.global.log_format {
        LogFormat::Text => logging::Format::Text,
        LogFormat::Json => logging::Format::Json,
    };
    if let Err(e) = logging::init(format, cli.global.log.as_deref(), cli.global.debug) {
        output::error_line(&format!(
            "sandboy: cannot open log file {}: {e}",
            cli.global
                .log
                .as_deref()
                .unwrap_or(std::path::Path::new("-"))
                .display()
        ));
        exit(1);
    }
    if cli.global.criu.is_some() || cli.global.rootless.is_some() || cli.global.log_level.is_some()
    {
        tracing::debug!("ignoring runc-only global flags (--criu, --rootless, --log-level)");
    }
    tracing::debug!(args = ?std::env::args().collect::<Vec<_>>(), "invoked");

    let code = match dispatch(&cli.global, command) {
        Ok(code) => code,
        Err(failure) => {
            if cli.global.log.is_some() {
                // Engines (conmon, containerd's shim) prefix the runtime's
                // name themselves; print the bare message as runc does.
                tracing::error!("{}", failure.message);
                output::error_line(&failure.message);
            } else {
                output::error_line(&format!("sandboy: error: {}", failure.message));
            }
            failure.exit_code()
        }
    };
    exit(code);
}

/// Every exit of the runtime process: nothing it forked stays behind.
fn exit(code: i32) -> ! {
    cgroup_prime::finish();
    std::process::exit(code)
}

fn dispatch(global: &cli::Global, command: Command) -> Result<i32> {
    use commands::*;
    let rt = || Runtime::new(global.root.clone(), global.systemd_cgroup);
    match command {
        Command::Create(a) => create::run(&rt()?, a),
        Command::Start(a) => start::run(&rt()?, a),
        Command::Run(a) => run::run(&rt()?, a),
        Command::State(a) => state::run(&rt()?, a),
        Command::Kill(a) => kill::run(&rt()?, a),
        Command::Delete(a) => delete::run(&rt()?, a),
        Command::Exec(a) => exec::run(&rt()?, a),
        Command::Ps(a) => ps::run(&rt()?, a),
        Command::List(a) => list::run(&rt()?, a),
        Command::Pause(a) => pause::pause(&rt()?, a),
        Command::Resume(a) => pause::resume(&rt()?, a),
        Command::Events(a) => events::run(&rt()?, a),
        Command::Update(a) => update::run(&rt()?, a),
        Command::Features => features::run(),
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
        Command::Wrap(a) => wrap::run(&rt()?, a),
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

fn print_version() {
    output::line(&format!(
        "sandboy version {}\nspec: {}\nlibcontainer: 0.7.0",
        env!("CARGO_PKG_VERSION"),
        oci_spec::runtime::VERSION
    ));
}
