//! `sandboy wrap [--policy P.toml] [inline rules] -- CMD…`: confine one
//! command on the host's own filesystem, and behave like a wrapper: the
//! command runs in the caller's working directory with the caller's
//! environment (plus the policy's `[process] env`; `--clear-env` starts
//! empty), and its exit status is wrap's (126 when the policy refuses the
//! program, 127 when it does not exist).
//!
//! * As root: a temporary container (`container`).
//! * As any other user: the landlock or the namespaces tier (`direct`),
//!   without a state root.
//!
//! The policy comes from `--policy`, from inline flags (`inline`), or both;
//! the wrapped program's loader and libraries are added (`loader`).

mod commit;
mod container;
mod direct;
mod gateway;
mod gitconfig;
mod identity;
mod inline;
mod learn;
mod loader;
mod metadata;
mod namespaces;
mod nested;
mod process;
mod repository;
mod stage;
mod terminals;

use std::path::PathBuf;

use sandboy_spec_gen::policy::{NetNamespace, Policy};

use crate::container::{Ran, Runtime};
use crate::error::{Failure, Result};

pub use crate::supervisor::learn::Learn;
pub use inline::InlineRules;

/// `--isolation`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Isolation {
    #[default]
    Auto,
    Landlock,
    Namespaces,
}

/// What `sandboy wrap` is asked to do.
#[derive(Debug, Clone, Default)]
pub struct WrapOptions {
    /// The owen.policy.toml to confine the command with.
    pub policy: Option<PathBuf>,
    /// Rules from the command line, added to the policy.
    pub inline: InlineRules,
    /// Container id / label in logs (default: generated).
    pub id: Option<String>,
    pub isolation: Isolation,
    /// Start from an empty environment instead of the caller's.
    pub clear_env: bool,
    /// The command and its arguments.
    pub command: Vec<String>,
    /// Where to write the denial report (`--report`).
    pub report: Option<PathBuf>,
    /// Observe instead of confining and write the policy (`--learn`).
    pub learn: Option<Learn>,
    /// Discard the staged writes even when the command exits 0.
    pub dry_run: bool,
}

/// Whether wrap runs as a container (root) or unprivileged.
pub fn needs_runtime() -> bool {
    nix::unistd::geteuid().is_root()
}

/// Run the command; its exit status and refusals. `rt` is only called as
/// root (the
/// unprivileged tiers keep no state).
pub fn run(rt: impl FnOnce() -> Result<Runtime>, opts: WrapOptions) -> Result<Ran> {
    // The same ids for every caller: an unprivileged step's id names its
    // log lines, reports and staging as a container's does.
    if let Some(id) = &opts.id {
        crate::container::validate_id(id)?;
    }
    let id = opts
        .id
        .clone()
        .unwrap_or_else(|| format!("wrap-{}", std::process::id()));
    if let Some(learn) = &opts.learn {
        // Observed, never confined: the same path for root and any user.
        return learn::run(learn, opts.policy.as_deref(), &opts.command).map(Ran::status);
    }
    if needs_runtime() {
        let mut policy = load_policy(&opts, NetNamespace::None)?;
        let Some(program) = behave_like_a_wrapper(&mut policy, &opts)? else {
            return Ok(Ran::status(127));
        };
        return container::run(
            &rt()?,
            policy,
            &id,
            container::Request {
                command: opts.command,
                program,
                report: opts.report,
                dry_run: opts.dry_run,
            },
        );
    }
    let tier = direct::choose(opts.isolation)?;
    if opts.dry_run && tier == direct::Tier::Landlock {
        return Err(Failure::usage(
            "wrap --dry-run: the landlock tier cannot stage writes; use --isolation namespaces where user namespaces work, run it as root, or drop --dry-run",
        ));
    }
    // Inline rules alone take the network the tier gives; a policy file
    // says what it needs and is checked against the tier.
    let ns = match tier {
        direct::Tier::Landlock => NetNamespace::Host,
        direct::Tier::Namespaces => NetNamespace::None,
    };
    let mut policy = load_policy(&opts, ns)?;
    if tier == direct::Tier::Landlock {
        without_gateway(&mut policy, &id)?;
    }
    // Unprivileged tiers read no audit records: refusals show as the
    // command's own errors and wrap's 126/127; the egress gateway's (the
    // namespaces tier's) are reported.
    if opts.report.is_some() {
        unreported(&id, tier);
    }
    direct::run(
        policy,
        direct::Request {
            id: &id,
            command: &opts.command,
            clear_env: opts.clear_env,
            tier,
            dry_run: opts.dry_run,
            report: opts.report.as_deref(),
            threads_only: false,
        },
    )
}

/// Said once, when `--report` asks for what an unprivileged tier cannot
/// collect (a red team took the empty report for "nothing refused").
fn unreported(id: &str, tier: direct::Tier) {
    let held = match tier {
        direct::Tier::Namespaces => "the egress gateway's refusals only",
        direct::Tier::Landlock => "nothing",
    };
    tracing::warn!(
        id,
        "denial reports are unavailable for this step: reading kernel audit records needs CAP_AUDIT_READ (run as root); --report holds {held}, and refusals show as the command's own errors"
    );
}

/// The landlock tier has no egress gateway (it needs a network namespace
/// of the step's own, and so a user namespace): under `enforce` a policy
/// with `[net] allow`/`allow_cidr` is refused; otherwise the host rules
/// are dropped with a warning, so the step keeps only `[net] connect`
/// (never the allowed ports to any host).
fn without_gateway(policy: &mut Policy, id: &str) -> Result<()> {
    if !policy.egress.is_active() {
        return Ok(());
    }
    if policy.landlock_mode == sandboy_spec_gen::annotations::LandlockMode::Enforce {
        return Err(Failure::config(format!(
            "{}: [net] allow/allow_cidr need the egress gateway, which the landlock tier cannot provide (it has no network namespace of its own without a user namespace); use --isolation namespaces (or auto) where unprivileged user namespaces work, run as root, or set [landlock] mode = \"best-effort\" to run without the host rules (no network beyond [net] connect)",
            policy.file
        )));
    }
    tracing::warn!(
        id,
        "[net] allow/allow_cidr are not enforced by the landlock tier of unprivileged wrap (no egress gateway): the step gets only [net] connect"
    );
    policy.egress = Default::default();
    Ok(())
}

/// The policy from `--policy` and/or the inline rules.
fn load_policy(opts: &WrapOptions, inline_ns: NetNamespace) -> Result<Policy> {
    let cwd = std::env::current_dir()
        .map_err(|e| Failure::runtime(format!("wrap: the working directory: {e}")))?;
    let flags = (!opts.inline.is_empty())
        .then(|| opts.inline.policy(&cwd, inline_ns))
        .transpose()?;
    let mut policy = match (&opts.policy, flags) {
        (Some(file), flags) => {
            let mut policy = Policy::load(file).map_err(|e| Failure::config(e.to_string()))?;
            if let Some(flags) = flags {
                inline::merge(&mut policy, flags);
            }
            policy
        }
        (None, Some(flags)) => flags,
        (None, None) => {
            return Err(Failure::usage(
                "wrap needs --policy FILE or inline rules (--ro, --rw, --exec, --connect, --bind, --timeout)",
            ))
        }
    };
    // `write = ["."]`, `read = ["~/.cargo"]`: this checkout, this user.
    let home = std::env::var_os("HOME").map_or_else(|| PathBuf::from("/"), PathBuf::from);
    policy
        .resolve_relative(&cwd, &home)
        .map_err(|e| Failure::config(e.to_string()))?;
    Ok(policy)
}

/// The container path runs the command like the unprivileged tiers do: in
/// the caller's directory, with the caller's environment, and with the
/// program's loader readable. The program, or `None` (and a message) when
/// it does not exist: exit status 127, before any container is made.
fn behave_like_a_wrapper(policy: &mut Policy, opts: &WrapOptions) -> Result<Option<PathBuf>> {
    let cwd = std::env::current_dir()
        .map_err(|e| Failure::runtime(format!("wrap: the working directory: {e}")))?;
    let env = direct::environment(policy, opts.clear_env);
    let path_var = env
        .iter()
        .find(|(k, _)| k == "PATH")
        .and_then(|(_, v)| v.to_str().map(String::from));
    let Some(program) = process::find_program(&opts.command[0], path_var.as_deref(), &cwd) else {
        process::not_found(&opts.command[0]);
        return Ok(None);
    };
    loader::grant(policy, Some(&program));
    policy.env = env
        .into_iter()
        .filter_map(|(k, v)| Some(format!("{}={}", k.to_str()?, v.to_str()?)))
        .collect();
    policy.cwd = cwd.display().to_string();
    Ok(Some(program))
}

/// The wrap tiers this caller can use here, strongest first (`features`):
/// `container` as root, `namespaces` where unprivileged user namespaces
/// work, `landlock` where the kernel has Landlock.
pub fn tiers_available() -> Vec<&'static str> {
    let mut tiers = Vec::new();
    if nix::unistd::geteuid().is_root() {
        tiers.push("container");
    }
    if namespaces::available() {
        tiers.push("namespaces");
    }
    if sandboy_confine::landlock::abi_version() > 0 {
        tiers.push("landlock");
    }
    tiers
}

/// Runs `command` under `policy` in the lightest unprivileged tier that
/// gives what it asks, with an environment of the policy's alone (for
/// `adapt`'s confined wasm host, a trusted binary running a component that
/// imports nothing, so it cannot ask the kernel for anything itself).
///
/// That is the landlock tier wherever Landlock has TCP rules and scopes
/// (ABI 6): the
/// policy grants no write, so a read-only host root and a private /tmp add
/// nothing; its empty `[net] connect`/`bind` refuse TCP and the profile
/// refuses `socket` outright (UDP, raw and netlink too), standing in for
/// `namespace = "none"`; signals, ptrace and abstract sockets stop at the
/// Landlock domain. There `[limits] pids` becomes "threads only": the
/// host may start threads, never a process (`RLIMIT_NPROC` would count all
/// of the user's tasks). A user namespace cost 2.2 ms of a 6.4 ms warm
/// `adapt` (docs/performance.md); the namespaces tier is left for older
/// kernels.
pub fn run_confined(mut policy: Policy, id: &str, command: &[String]) -> Result<i32> {
    let tier = if sandboy_confine::landlock::abi_version() >= sandboy_confine::landlock::SCOPE_ABI {
        direct::choose(Isolation::Landlock)?
    } else {
        direct::choose(Isolation::Auto)?
    };
    if tier == direct::Tier::Landlock && policy.net_namespace == NetNamespace::None {
        no_sockets_on_the_host(&mut policy);
    }
    direct::run(
        policy,
        direct::Request {
            id,
            command,
            clear_env: true,
            tier,
            // The wasm host writes only its output, through stdout.
            dry_run: false,
            report: None,
            threads_only: tier == direct::Tier::Landlock,
        },
    )
    .map(|ran| ran.status)
}

/// A `namespace = "none"` policy in the landlock tier, for a process that
/// needs no socket at all (`adapt`'s host): the host's network, with
/// `socket` on the deny list (the policy's action), beside Landlock's
/// empty TCP rules.
pub(crate) fn no_sockets_on_the_host(policy: &mut Policy) {
    policy.net_namespace = NetNamespace::Host;
    if let Err(at) = policy.deny.binary_search_by(|s| s.as_str().cmp("socket")) {
        policy.deny.insert(at, "socket".into());
    }
}
