//! The file as written: the tables and keys of `owen.policy.toml`, for its
//! JSON Schema (`sandboy-spec-gen schema`, editors) and as the reference
//! of what each key takes. Parsing does not go through these types (see
//! `reader`: serde would stop at the first error); a test keeps the two
//! vocabularies equal.

#![allow(dead_code)] // Schema-only types: built by schemars, never by code.

use schemars::JsonSchema;

use crate::annotations::{LandlockMode, Scope};

/// A size with a unit, e.g. "512MiB" (a bare number is refused, so that
/// 512 never silently means bytes).
#[derive(JsonSchema)]
#[schemars(extend("examples" = ["512MiB", "2GiB"]))]
pub struct SizeText(#[schemars(regex(pattern = r"^[0-9][0-9_]*\s*(B|KiB|MiB|GiB)$"))] String);

/// A duration with a unit ms, s, m or h, e.g. "10m" (a bare number is
/// refused, so that 10 never silently means milliseconds).
#[derive(JsonSchema)]
#[schemars(extend("examples" = ["30s", "10m"]))]
pub struct DurationText(#[schemars(regex(pattern = r"^[0-9][0-9_]*\s*(ms|s|m|h)$"))] String);

/// `host:port`, host an exact name or `*.` plus at least two labels.
#[derive(JsonSchema)]
#[schemars(extend("examples" = ["github.com:443", "*.crates.io:443"]))]
pub struct HostPortText(String);

/// `addr/prefix:port`.
#[derive(JsonSchema)]
#[schemars(extend("examples" = ["10.0.0.0/8:5432"]))]
pub struct CidrPortText(String);

/// Top level of `owen.policy.toml`, version 1.
#[derive(JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "owen.policy.toml (sandboy policy, version 1)")]
pub struct PolicyDoc {
    /// Policy format version; must be 1.
    #[schemars(range(min = 1, max = 1))]
    pub version: u32,
    /// Label shown in logs and annotations; default: the file's stem.
    pub name: Option<String>,
    pub landlock: Option<LandlockTable>,
    pub fs: Option<FsTable>,
    /// Binds from the host into the container.
    pub mount: Option<Vec<MountTable>>,
    pub net: Option<NetTable>,
    pub syscalls: Option<SyscallsTable>,
    /// Optional: `sandboy wrap` takes the command from its arguments,
    /// `generate` from here or from `--base`.
    pub process: Option<ProcessTable>,
    pub limits: Option<LimitsTable>,
    /// OCI-wasm mode limits; present means a `dev.sandboy.wasm.limits` annotation.
    pub wasm: Option<WasmTable>,
    pub context: Option<ContextTable>,
}

/// `[landlock]`.
#[derive(JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LandlockTable {
    /// enforce (default) | best-effort | off.
    pub mode: Option<LandlockMode>,
}

/// `[fs]`: paths inside the container; everything else is denied.
/// read/exec/write may also be relative (`.`, `./x`, `~/x`) for
/// `sandboy wrap`, which anchors them at its working or home directory.
#[derive(JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FsTable {
    /// Read files, list directories.
    pub read: Option<Vec<String>>,
    /// Read and execute.
    pub exec: Option<Vec<String>>,
    /// Read, write, create and remove.
    pub write: Option<Vec<String>>,
    /// Masked (OCI maskedPaths), even inside allowed trees; absolute only.
    pub hide: Option<Vec<String>>,
}

/// One `[[mount]]`: a bind mount from the host.
#[derive(JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MountTable {
    /// Host path, relative to the policy file's directory; must exist.
    pub source: String,
    /// Absolute path inside the container.
    pub destination: String,
    /// Mount options; default `["rbind", "ro"]`.
    pub options: Option<Vec<String>>,
}

/// Network namespace choice.
#[derive(JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum NetNamespaceName {
    None,
    Host,
}

/// `[net]`.
#[derive(JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NetTable {
    /// none (own netns, loopback only; default) | host.
    pub namespace: Option<NetNamespaceName>,
    /// TCP ports connect() may reach.
    pub connect: Option<Vec<PortNumber>>,
    /// TCP ports bind() may use.
    pub bind: Option<Vec<PortNumber>>,
    /// UDP ports opened; none by default when any [net] rule is set.
    pub udp: Option<Vec<PortNumber>>,
    /// `sandboy wrap` without root: pathname UNIX sockets on the host
    /// (ssh-agent, D-Bus, a rootless docker) may be used; false by default.
    pub unix: Option<bool>,
    /// Host names that may be reached, `host:port`.
    pub allow: Option<Vec<HostPortText>>,
    /// Host names never reached, `host:port`; checked before allow.
    pub deny: Option<Vec<HostPortText>>,
    /// Address ranges that may be reached, `addr/prefix:port`.
    pub allow_cidr: Option<Vec<CidrPortText>>,
    /// Landlock scopes; default both.
    pub scope: Option<Vec<Scope>>,
}

/// A TCP or UDP port, 1 to 65535.
#[derive(JsonSchema)]
pub struct PortNumber(#[schemars(range(min = 1, max = 65535))] u16);

/// Seccomp action name.
#[derive(JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ActionName {
    Errno,
    Kill,
    Log,
}

/// `[syscalls]`.
#[derive(JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SyscallsTable {
    /// Start from sandboy's built-in deny list (default true).
    pub default_deny: Option<bool>,
    /// Added to the deny list.
    pub deny: Option<Vec<String>>,
    /// Removed from the built-in list.
    pub allow: Option<Vec<String>>,
    /// errno (EPERM; default) | kill | log.
    pub action: Option<ActionName>,
}

/// `[process]`.
#[derive(JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProcessTable {
    /// argv; `args[0]` ending in `.wasm` selects OCI-wasm mode.
    #[schemars(length(min = 1))]
    pub args: Option<Vec<String>>,
    /// Absolute working directory (default `/`).
    pub cwd: Option<String>,
    /// `KEY=VALUE` entries; a `PATH` default is added if missing.
    pub env: Option<Vec<String>>,
    /// Numeric `uid:gid` (default `0:0` in a container; `sandboy wrap` as
    /// root runs a step without one as the sudo caller or nobody, and as
    /// host root only for an explicit `"0:0"`).
    #[schemars(regex(pattern = r"^[0-9]+:[0-9]+$"))]
    pub user: Option<String>,
    /// `generate`: run container root as an unprivileged host id in a user
    /// namespace (default: yes unless the bundle writes host files, see
    /// docs/policy.md).
    pub userns: Option<bool>,
}

/// `[limits]`.
#[derive(JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LimitsTable {
    /// Memory limit, e.g. "512MiB".
    pub memory: Option<SizeText>,
    /// Maximum number of tasks.
    #[schemars(range(min = 1))]
    pub pids: Option<u32>,
    /// CPU share as a number of CPUs (CFS quota over a 100 ms period).
    pub cpus: Option<f64>,
    /// RLIMIT_NOFILE (soft = hard).
    #[schemars(range(min = 1, max = 1048576))]
    pub nofile: Option<u32>,
    /// Wall-clock limit; then SIGKILL to the whole container.
    pub timeout: Option<DurationText>,
    /// Storage for each writable path, e.g. "2GiB" (default 1GiB).
    pub disk: Option<SizeText>,
    /// Number of files and directories each writable path may hold
    /// (default 100000).
    #[schemars(range(min = 1))]
    pub inodes: Option<u64>,
}

/// `[wasm]`.
#[derive(JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WasmTable {
    /// Instruction budget ("fuel"); exhaustion traps.
    #[schemars(range(min = 1))]
    pub fuel: Option<u64>,
    /// Epoch deadline, a backstop to fuel.
    pub deadline: Option<DurationText>,
    /// Linear memory plus tables.
    pub memory: Option<SizeText>,
    /// Largest input the component may read.
    pub max_input: Option<SizeText>,
    /// Largest output the component may write.
    pub max_output: Option<SizeText>,
    /// SARIF results cap.
    pub max_results: Option<u64>,
}

/// `[context]`: agent context hygiene, not a security boundary.
#[derive(JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ContextTable {
    /// gitignore-style patterns for `.agentsignore` and friends.
    pub ignore: Option<Vec<String>>,
}
