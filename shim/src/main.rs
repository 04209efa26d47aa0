//! `sandboy`: a runc-compatible OCI runtime on libcontainer that confines
//! every container's init with Landlock and seccomp right before execve, and
//! runs WebAssembly components as containers.
//!
//! The tree is the architecture; arrows point one way:
//!
//! ```text
//! cli        flags, one module per subcommand, output and logging setup
//!  └─> adapt       `sandboy adapt`: an analyzer's output to SARIF through its confined adapter
//!  └─> wrap        `sandboy wrap`: a temporary bundle as root, else the landlock/namespaces tiers
//!  └─> container   operations on libcontainer (create, run, exec, signal, delete)
//!       ├─> init        what runs in the container's init: confinement, payload
//!       ├─> supervisor  the per-container process (deadline, …), pidfd
//!       ├─> cgroups     devices, prime, removal, stats, OOM
//!       └─> node        the node configuration and its named policies
//! host       protections of the host itself (sealed runtime binary)
//! error      failures and their exit codes, in one place
//! ```
//!
//! Confinement (`sandboy-confine`), the WebAssembly host (`sandboy-wasm`) and
//! the policy model (`sandboy-spec-gen`) are crates below all of these.

mod adapt;
mod cgroups;
mod cli;
mod container;
mod error;
mod host;
mod init;
mod node;
mod supervisor;
#[cfg(test)]
mod test_support;
mod wasm_host;
mod wrap;

use crate::cli::args::{Cli, Command, LogFormat};
use crate::cli::{logging, output};

fn main() {
    // Run by a container's init as its `createContainer` hook, not by a user.
    if std::env::args_os().next().as_deref() == Some(container::rootfs_hook::ARG0.as_ref()) {
        container::rootfs_hook::main();
    }
    let cli = Cli::from_env();
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
    // The unprivileged wrap keeps no state and execs the command itself:
    // the runtime binary is never reachable from inside (Landlock's ptrace
    // scope keeps /proc/<watchdog>/exe out of reach).
    let container = match &command {
        Command::Create(_) | Command::Run(_) | Command::Exec(_) => true,
        Command::Wrap(_) => wrap::needs_runtime(),
        // One run as root makes a container; --all and --list only start
        // children or read files.
        Command::Adapt(a) => wrap::needs_runtime() && a.all.is_none() && !a.list,
        Command::Audit(_) => false,
        _ => false,
    };
    if matches!(command, Command::Adapt(_) | Command::Audit(_)) {
        host::sealed_exe::remember();
    }
    if container {
        // These also attach a process to cgroups: start the kernel's wait
        // for that before the re-exec, so the two overlap.
        cgroups::prime::start();
        let root = match cli.global.state_root() {
            Ok(root) => root,
            Err(failure) => {
                output::error_line(&format!("sandboy: error: {}", failure.message));
                exit(failure.exit_code());
            }
        };
        if let Err(e) = host::sealed_exe::ensure(&root.join(host::sealed_exe::EMPTY_DIR)) {
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

    let code = match cli::dispatch(&cli.global, command) {
        Ok(code) => code,
        Err(mut failure) => {
            failure.message = logging::explain(&failure.message);
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
    cgroups::prime::finish();
    std::process::exit(code)
}

fn print_version() {
    output::line(&format!(
        "sandboy version {}\nspec: {}\nlibcontainer: 0.7.0",
        env!("CARGO_PKG_VERSION"),
        oci_spec::runtime::VERSION
    ));
}
