//! Command-line surface, flag for flag with runc (SPEC §3), plus `wrap`.

use std::path::PathBuf;

/// `--preserve-fds`: never negative, and no more fds than a process may
/// hold (libcontainer's init adds 3 to it unchecked and panicked on
/// `i32::MAX`).
fn preserve_fds() -> clap::builder::RangedI64ValueParser<i32> {
    clap::builder::RangedI64ValueParser::new().range(0..=1_048_576)
}

use clap::{Args, Parser, Subcommand, ValueEnum};

#[derive(Parser, Debug)]
#[command(
    name = "sandboy",
    about = "A runc-compatible OCI runtime that confines containers with Landlock and seccomp",
    disable_version_flag = true
)]
pub struct Cli {
    #[command(flatten)]
    pub global: Global,
    #[command(subcommand)]
    pub command: Option<Command>,
}

impl Cli {
    /// The process's command line, parsed.
    ///
    /// The per-container commands engines call on every container (`create`,
    /// `start`, `run`, `state`, `kill`, `delete`, `exec`), `wrap` and `adapt`
    /// (a CI step per tool) are parsed by a command tree holding only the
    /// global flags and that one subcommand: building clap's whole tree (twenty subcommands, about two
    /// hundred arguments) was a fifth of the runtime's start-up, paid twice
    /// per `create`/`run`/`exec` (before and after the sealed re-exec). Help,
    /// anything unrecognised and every error go through the full parser, so
    /// what a user sees is the same; `lean_parse_equals_full_parse` holds
    /// the two to the same result.
    pub fn from_env() -> Cli {
        let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
        lean(&args).unwrap_or_else(|| Cli::parse_from(args))
    }
}

/// [`Cli::from_env`]'s fast path; `None` sends the arguments to the full
/// parser.
fn lean(args: &[std::ffi::OsString]) -> Option<Cli> {
    use clap::FromArgMatches;
    let root = Global::augment_args(clap::Command::new("sandboy").disable_version_flag(true));
    let name = subcommand_name(&root, args)?;
    let sub = |name: &'static str| clap::Command::new(name);
    let sub = match name {
        "create" => Create::augment_args(sub("create")),
        "start" => Id::augment_args(sub("start")),
        "state" => Id::augment_args(sub("state")),
        "run" => Run::augment_args(sub("run")),
        "kill" => Kill::augment_args(sub("kill")),
        "delete" => Delete::augment_args(sub("delete")),
        "exec" => Exec::augment_args(sub("exec")),
        "wrap" => Wrap::augment_args(sub("wrap")),
        "adapt" => Adapt::augment_args(sub("adapt")),
        _ => return None,
    };
    let matches = root.subcommand(sub).try_get_matches_from(args).ok()?;
    Cli::from_arg_matches(&matches).ok()
}

/// The subcommand named in `args`: the first word that is neither a global
/// flag nor a global flag's value. `None` for help, `--`, or a flag the
/// root does not know (the full parser then reports it).
fn subcommand_name<'a>(root: &clap::Command, args: &'a [std::ffi::OsString]) -> Option<&'a str> {
    let mut words = args.iter().skip(1);
    while let Some(word) = words.next() {
        let word = word.to_str()?;
        if word == "-h" || word == "--help" || word == "--" {
            return None;
        }
        let Some(flag) = word.strip_prefix("--") else {
            if word.starts_with('-') {
                return None;
            }
            return Some(word);
        };
        if flag.contains('=') {
            continue;
        }
        let arg = root.get_arguments().find(|a| a.get_long() == Some(flag))?;
        if arg.get_action().takes_values() {
            words.next();
        }
    }
    None
}

#[derive(Args, Debug)]
pub struct Global {
    /// Root directory for container state (default: /run/sandboy for root,
    /// $XDG_RUNTIME_DIR/sandboy, else /tmp/sandboy-<uid>, for other users).
    #[arg(long, global = true)]
    pub root: Option<PathBuf>,
    /// Log file (default: stderr).
    #[arg(long, global = true)]
    pub log: Option<PathBuf>,
    /// Log format.
    #[arg(long, global = true, value_enum, default_value = "text")]
    pub log_format: LogFormat,
    /// Debug logging.
    #[arg(long, global = true)]
    pub debug: bool,
    /// Use the systemd cgroup manager (not available in this build).
    #[arg(long, global = true)]
    pub systemd_cgroup: bool,
    /// Print the version.
    #[arg(short = 'v', long)]
    pub version: bool,
    /// Accepted for runc compatibility and ignored.
    #[arg(long, global = true, hide = true)]
    pub criu: Option<String>,
    /// Accepted for runc compatibility and ignored (runc's global
    /// `--rootless`; `spec --rootless` is a different flag).
    #[arg(
        id = "global_rootless",
        long = "rootless",
        hide = true,
        num_args = 0..=1,
        default_missing_value = "true"
    )]
    pub rootless: Option<String>,
    /// Accepted for runc compatibility and ignored.
    #[arg(long, global = true, hide = true)]
    pub log_level: Option<String>,
    /// Kernel auditing for denial reports: `enable` (turn it on if off),
    /// `if-enabled` (default), `off`. Default from SANDBOY_AUDIT.
    #[arg(long, global = true, value_name = "MODE")]
    pub audit: Option<String>,
    /// The node configuration (default /etc/sandboy/config.toml, or
    /// SANDBOY_CONFIG): policy directory, default and required policy.
    #[arg(long, global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,
}

impl Global {
    /// `--root`, or runc's default: `/run/sandboy` for root,
    /// `$XDG_RUNTIME_DIR/sandboy` for other users (runc: `$XDG_RUNTIME_DIR/runc`
    /// when it is set and the user is not root). Without XDG_RUNTIME_DIR an
    /// ordinary user gets a usage error naming `--root`: runc falls back to
    /// `/run/runc`, which such a user cannot create, and a guessed shared
    /// place (`/tmp/...`) could be planted by someone else. The root itself
    /// is created private (0700) by `Runtime::new`.
    pub fn state_root(&self) -> Result<PathBuf, crate::error::Failure> {
        if let Some(root) = &self.root {
            return Ok(root.clone());
        }
        let uid = nix::unistd::geteuid();
        let xdg = std::env::var_os("XDG_RUNTIME_DIR").filter(|d| !d.is_empty());
        // runc's shouldHonorXDGRuntimeDir: root in a user namespace other
        // than the initial one (rootless podman runs the runtime there)
        // uses XDG_RUNTIME_DIR when it may write it.
        let in_userns_root = || {
            crate::container::rootless::in_user_ns()
                && xdg.as_ref().is_some_and(|d| {
                    nix::unistd::access(std::path::Path::new(d), nix::unistd::AccessFlags::W_OK)
                        .is_ok()
                })
        };
        if uid.is_root() && !in_userns_root() {
            return Ok(PathBuf::from("/run/sandboy"));
        }
        match xdg {
            Some(dir) => Ok(PathBuf::from(dir).join("sandboy")),
            None => Err(crate::error::Failure::usage(format!(
                "no state root: XDG_RUNTIME_DIR is not set and uid {uid} may not use /run/sandboy; \
                 pass --root DIR (a directory of your own, e.g. --root ~/.local/state/sandboy) \
                 or set XDG_RUNTIME_DIR (a login session sets it to /run/user/{uid})"
            ))),
        }
    }
}

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    Text,
    Json,
}

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Isolation {
    Auto,
    Landlock,
    Namespaces,
}

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Table,
    Json,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Create a container.
    Create(Create),
    /// Start a created container.
    Start(Id),
    /// Create and start a container.
    Run(Run),
    /// Output the state of a container.
    State(Id),
    /// Send a signal to the container's init process.
    Kill(Kill),
    /// Delete a container.
    Delete(Delete),
    /// Execute a new process inside the container.
    Exec(Exec),
    /// Display the processes running inside a container.
    Ps(Ps),
    /// List containers started by sandboy with the given root.
    List(List),
    /// Suspend all processes in the container.
    Pause(Id),
    /// Resume all processes that have been previously paused.
    Resume(Id),
    /// Display container events such as OOM notifications and resource stats.
    Events(Events),
    /// Update container resource constraints.
    Update(Update),
    /// Show the enabled features (runtime-spec features JSON).
    Features,
    /// Create a new specification file (config.json).
    Spec(SpecCmd),
    /// Checkpoint a running container (not supported).
    Checkpoint(Passthrough),
    /// Restore a container from a checkpoint (not supported).
    Restore(Passthrough),
    /// Run a command confined by a policy, on the host's own filesystem.
    Wrap(Wrap),
    /// Convert an analyzer's output to validated SARIF through its adapter component.
    Adapt(Adapt),
    /// Alias of `adapt --all DIR`.
    Audit(Audit),
    /// The node's named policies (the node configuration's policy_dir).
    #[command(subcommand)]
    Policy(PolicyCmd),
}

#[derive(Subcommand, Debug)]
pub enum PolicyCmd {
    /// List the policy names of the node's directory.
    List,
    /// Print a policy's file, with its path and sha256.
    Show { name: String },
    /// Check the node configuration and one policy (or all), with located errors.
    Check { name: Option<String> },
}

#[derive(Args, Debug)]
pub struct Id {
    pub container_id: String,
}

#[derive(Args, Debug, Clone)]
pub struct CreateOpts {
    /// Path to the bundle directory.
    #[arg(short, long, default_value = ".")]
    pub bundle: PathBuf,
    /// Unix socket that receives the pty master fd.
    #[arg(long)]
    pub console_socket: Option<PathBuf>,
    /// File to write the container init's pid to.
    #[arg(long)]
    pub pid_file: Option<PathBuf>,
    /// Do not use pivot_root to jail the process inside the rootfs.
    #[arg(long)]
    pub no_pivot: bool,
    /// Do not create a new session keyring.
    #[arg(long)]
    pub no_new_keyring: bool,
    /// Pass N additional fds (3..3+N) to the container (0 to 1048576, the
    /// kernel's default fs.nr_open: no process can hold more).
    #[arg(long, default_value_t = 0, value_parser = preserve_fds())]
    pub preserve_fds: i32,
}

impl CreateOpts {
    /// The container layer's view of these flags.
    pub fn to_options(&self) -> crate::container::CreateOptions {
        crate::container::CreateOptions {
            bundle: self.bundle.clone(),
            console_socket: self.console_socket.clone(),
            pid_file: self.pid_file.clone(),
            no_pivot: self.no_pivot,
            preserve_fds: self.preserve_fds,
            learn: None,
            die_with_caller: false,
        }
    }
}

#[derive(Args, Debug)]
pub struct Create {
    #[command(flatten)]
    pub opts: CreateOpts,
    /// Not for create: taken only to refuse it with the way to learn.
    #[arg(long, value_name = "FILE", hide = true)]
    pub learn: Option<PathBuf>,
    pub container_id: String,
}

#[derive(Args, Debug)]
pub struct Run {
    #[command(flatten)]
    pub opts: CreateOpts,
    /// Detach from the container's process.
    #[arg(short, long)]
    pub detach: bool,
    /// Keep the container's state after it exits.
    #[arg(long)]
    pub keep: bool,
    /// Accepted for runc compatibility and ignored.
    #[arg(long, hide = true)]
    pub no_subreaper: bool,
    /// Write the denial report (JSON lines) here when the container exits.
    #[arg(long, value_name = "FILE")]
    pub report: Option<PathBuf>,
    /// Run the container observed, not confined, and write the policy it
    /// needs to FILE (--policy is the base it extends); in the foreground
    /// only.
    #[arg(long, value_name = "FILE", conflicts_with = "detach")]
    pub learn: Option<PathBuf>,
    /// With --learn: the policy the learned one extends.
    #[arg(long, value_name = "FILE", requires = "learn")]
    pub policy: Option<PathBuf>,
    /// With --learn: keep this many leading path components (0: whole paths).
    #[arg(long, value_name = "DEPTH", default_value_t = 3, requires = "learn")]
    pub collapse: usize,
    pub container_id: String,
}

#[derive(Args, Debug)]
pub struct Kill {
    /// Send the signal to all processes in the container.
    #[arg(short, long)]
    pub all: bool,
    pub container_id: String,
    /// Signal name or number.
    #[arg(default_value = "SIGTERM")]
    pub signal: String,
}

#[derive(Args, Debug)]
pub struct Delete {
    /// Kill the container first if it is running.
    #[arg(short, long)]
    pub force: bool,
    pub container_id: String,
}

#[derive(Args, Debug)]
pub struct Exec {
    /// Path to a process.json.
    #[arg(short, long)]
    pub process: Option<PathBuf>,
    /// Allocate a pseudo-TTY.
    #[arg(short, long)]
    pub tty: bool,
    /// Detach from the process.
    #[arg(short, long)]
    pub detach: bool,
    #[arg(long)]
    pub pid_file: Option<PathBuf>,
    #[arg(long)]
    pub console_socket: Option<PathBuf>,
    /// Working directory inside the container.
    #[arg(long)]
    pub cwd: Option<PathBuf>,
    /// Environment variables (KEY=VALUE).
    #[arg(short, long)]
    pub env: Vec<String>,
    /// UID[:GID].
    #[arg(short, long)]
    pub user: Option<String>,
    /// Additional gids.
    #[arg(short = 'g', long = "additional-gids")]
    pub additional_gids: Vec<u32>,
    /// Add a capability.
    #[arg(short, long)]
    pub cap: Vec<String>,
    #[arg(long)]
    pub no_new_privs: bool,
    /// Pass N additional fds (3..3+N) to the process (0 to 1048576).
    #[arg(long, default_value_t = 0, value_parser = preserve_fds())]
    pub preserve_fds: i32,
    #[arg(long)]
    pub apparmor: Option<String>,
    #[arg(long)]
    pub process_label: Option<String>,
    #[arg(long)]
    pub ignore_paused: bool,
    #[arg(long)]
    pub cgroup: Option<String>,
    pub container_id: String,
    /// Command and arguments (unless --process).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub command: Vec<String>,
}

#[derive(Args, Debug)]
pub struct Ps {
    #[arg(short, long, value_enum, default_value = "table")]
    pub format: Format,
    pub container_id: String,
    /// Options passed to ps(1) for the table format.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub ps_options: Vec<String>,
}

#[derive(Args, Debug)]
pub struct List {
    #[arg(short, long, value_enum, default_value = "table")]
    pub format: Format,
    /// Display only container ids.
    #[arg(short, long)]
    pub quiet: bool,
}

#[derive(Args, Debug)]
pub struct Events {
    /// Stats collection interval (e.g. 5s).
    #[arg(long, default_value = "5s")]
    pub interval: String,
    /// Display the container's stats once, then exit.
    #[arg(long)]
    pub stats: bool,
    pub container_id: String,
}

#[derive(Args, Debug)]
pub struct Update {
    /// Path to a JSON file with linux resources ('-' for stdin).
    #[arg(short, long)]
    pub resources: Option<PathBuf>,
    #[arg(long)]
    pub blkio_weight: Option<u16>,
    #[arg(long)]
    pub cpu_period: Option<u64>,
    #[arg(long)]
    pub cpu_quota: Option<i64>,
    #[arg(long = "cpu-share")]
    pub cpu_share: Option<u64>,
    #[arg(long)]
    pub cpu_rt_period: Option<u64>,
    #[arg(long)]
    pub cpu_rt_runtime: Option<i64>,
    #[arg(long)]
    pub cpuset_cpus: Option<String>,
    #[arg(long)]
    pub cpuset_mems: Option<String>,
    /// Memory limit (bytes, or with k/m/g suffix).
    #[arg(long)]
    pub memory: Option<String>,
    #[arg(long)]
    pub memory_reservation: Option<String>,
    #[arg(long)]
    pub memory_swap: Option<String>,
    /// Accepted for runc compatibility; kernel memory is not supported by the kernel.
    #[arg(long, hide = true)]
    pub kernel_memory: Option<String>,
    #[arg(long, hide = true)]
    pub kernel_memory_tcp: Option<String>,
    #[arg(long)]
    pub pids_limit: Option<i64>,
    #[arg(long, hide = true)]
    pub l3_cache_schema: Option<String>,
    #[arg(long, hide = true)]
    pub mem_bw_schema: Option<String>,
    pub container_id: String,
}

#[derive(Args, Debug)]
pub struct SpecCmd {
    /// Directory to write config.json into.
    #[arg(short, long)]
    pub bundle: Option<PathBuf>,
    /// Generate a spec for a rootless container.
    #[arg(long)]
    pub rootless: bool,
}

#[derive(Args, Debug)]
pub struct Passthrough {
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub args: Vec<String>,
}

#[derive(Args, Debug)]
pub struct Wrap {
    /// The owen.policy.toml to confine the command with (inline rules add to it).
    #[arg(long)]
    pub policy: Option<PathBuf>,
    /// Container id / log label (default: generated).
    #[arg(long)]
    pub id: Option<String>,
    /// Write the denial report (JSON lines) here when the command exits.
    #[arg(long, value_name = "FILE")]
    pub report: Option<PathBuf>,
    /// Unprivileged isolation tier (auto: namespaces where user namespaces work, else landlock).
    #[arg(long, value_enum, default_value = "auto")]
    pub isolation: Isolation,
    /// Start the command with an empty environment (plus the policy's [process] env).
    #[arg(long)]
    pub clear_env: bool,
    /// Run the command but discard its staged writes to the write paths (as root).
    #[arg(long)]
    pub dry_run: bool,
    /// Allow reading PATH (file or directory; relative to the working directory).
    #[arg(long = "ro", value_name = "PATH")]
    pub ro: Vec<String>,
    /// Allow reading and writing PATH.
    #[arg(long = "rw", value_name = "PATH")]
    pub rw: Vec<String>,
    /// Allow reading and executing PATH.
    #[arg(long = "exec", value_name = "PATH")]
    pub exec: Vec<String>,
    /// Allow TCP connect to PORT.
    #[arg(long, value_name = "PORT")]
    pub connect: Vec<u16>,
    /// Allow TCP bind to PORT.
    #[arg(long, value_name = "PORT")]
    pub bind: Vec<u16>,
    /// Wall-clock timeout, e.g. 30s; then the whole process tree is killed.
    #[arg(long, value_name = "DURATION")]
    pub timeout: Option<String>,
    /// Run the command observed, not confined, and write the policy it
    /// needs to FILE (--policy is the base it extends).
    #[arg(long, value_name = "FILE")]
    pub learn: Option<PathBuf>,
    /// With --learn: keep this many leading path components (0: whole paths).
    #[arg(long, value_name = "DEPTH", default_value_t = 3, requires = "learn")]
    pub collapse: usize,
    /// The command and its arguments.
    #[arg(last = true, required = true)]
    pub command: Vec<String>,
}

#[derive(Args, Debug)]
pub struct Adapt {
    #[command(flatten)]
    pub common: AdaptCommon,
    /// An input: NAME=PATH (the name the component looks for, e.g. report.json).
    #[arg(long, value_name = "NAME=PATH")]
    pub artifact: Vec<String>,
    /// The tool's standard output, as an input.
    #[arg(long, value_name = "FILE")]
    pub stdout: Option<PathBuf>,
    /// The tool's standard error, as an input.
    #[arg(long, value_name = "FILE")]
    pub stderr: Option<PathBuf>,
    /// Adapter options (passed to the component as bytes).
    #[arg(long, value_name = "FILE")]
    pub options: Option<PathBuf>,
    /// Run this component instead of the registry's (still zero imports, still validated).
    #[arg(long, value_name = "FILE")]
    pub component: Option<PathBuf>,
    /// Every adapter whose input is in DIR, merged into one SARIF log.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["artifact", "component", "list"])]
    pub all: Option<PathBuf>,
    /// Show the registry: tools, components, sha256, inputs, phases.
    #[arg(long)]
    pub list: bool,
}

#[derive(Args, Debug)]
pub struct Audit {
    /// The directory holding the tools' outputs.
    pub dir: PathBuf,
    #[command(flatten)]
    pub common: AdaptCommon,
}

/// The flags `adapt` and `audit` share.
#[derive(Args, Debug)]
pub struct AdaptCommon {
    /// The tool whose output to convert (see --list); with --all, only these tools.
    #[arg(long)]
    pub tool: Vec<String>,
    /// Write the SARIF here (default: standard output).
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// The registry (default: $SANDBOY_REGISTRY, else <exe>/../share/sandboy/adapters.toml).
    #[arg(long, value_name = "FILE")]
    pub registry: Option<PathBuf>,
    /// The components directory (default: $SANDBOY_COMPONENTS, else components/ beside the registry).
    #[arg(long, value_name = "DIR")]
    pub components: Option<PathBuf>,
    /// An adapter policy instead of the built-in ownaudit-adapter one.
    #[arg(long, value_name = "FILE")]
    pub policy: Option<PathBuf>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(line: &str) -> Vec<std::ffi::OsString> {
        line.split(' ').map(Into::into).collect()
    }

    #[test]
    fn lean_parse_equals_full_parse() {
        for line in [
            "sandboy create --bundle /b c1",
            "sandboy --root /r --log /l --log-format json create -b /b --pid-file /p c1",
            "sandboy --root=/r create c1 --console-socket /s --preserve-fds 2",
            "sandboy --debug start c1",
            "sandboy state c1 --root /r",
            "sandboy run -d --bundle /b c1",
            "sandboy kill c1 KILL",
            "sandboy kill --all c1 9",
            "sandboy delete --force c1",
            "sandboy --systemd-cgroup --criu x --log-level debug delete c1",
            "sandboy --rootless=true state c1",
            "sandboy exec -t --cwd /w -e A=1 c1 sh -c true --help",
            "sandboy exec --process /p.json c1",
            "sandboy --audit off wrap --policy p.toml -- sh -c x",
            "sandboy adapt --tool infersharp --artifact report.json=/r.json -o /o.sarif",
            "sandboy adapt --all /d --tool a --tool b",
            "sandboy adapt --list --registry /r.toml",
        ] {
            let args = argv(line);
            let lean = lean(&args).unwrap_or_else(|| panic!("no fast path for {line}"));
            let full = Cli::try_parse_from(&args).unwrap();
            assert_eq!(format!("{lean:?}"), format!("{full:?}"), "{line}");
        }
    }

    #[test]
    fn everything_else_goes_to_the_full_parser() {
        for line in [
            "sandboy",
            "sandboy --help",
            "sandboy -v",
            "sandboy create --help",
            "sandboy create",
            "sandboy list",
            "sandboy --rootless create c1",
            "sandboy --no-such-flag state c1",
            "sandboy state c1 extra",
        ] {
            assert!(lean(&argv(line)).is_none(), "{line}");
        }
    }
}
