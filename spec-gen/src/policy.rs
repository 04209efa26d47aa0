//! The `owen.policy.toml` model (SPEC §4) and its validation.
//!
//! Two layers: [`PolicyDoc`] mirrors the TOML file one to one, with spans on
//! every value so that semantic errors can point at `line:column`; its JSON
//! Schema is what `sandboy-spec-gen schema` prints. [`Policy`] is the checked,
//! resolved result (absolute mount sources, parsed sizes, final syscall deny
//! list) that rendering and `explain` work from.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::Deserialize;
use serde_spanned::Spanned;
use sha2::{Digest, Sha256};

use crate::annotations::{LandlockMode, Scope, WasmLimits};
use crate::error::{closest, Diagnostic, Error, Location};
use crate::units::{ByteSize, Span};
use crate::{guards, syscalls};

/// The only policy format version this release understands.
pub const VERSION: i64 = 1;

/// sandboy's built-in seccomp deny list (`[syscalls] default_deny = true`).
///
/// Why these: each one either reaches kernel attack surface that a build
/// step or agent tool never needs (bpf, io_uring, userfaultfd, perf, keyrings,
/// module loading, kexec, handle-based opens that bypass path checks), or
/// changes state outside the container (mount and namespace games, clocks,
/// swap, reboot, accounting, quotas, x86 port I/O), or lets one process read
/// or steer another (ptrace, process_vm_*). `personality` stays allowed
/// (some build tools set it; policies can deny it), as do the NUMA calls
/// (mbind, migrate_pages, move_pages, set_mempolicy), which only affect the
/// caller's placement. Names missing on one architecture (iopl on aarch64)
/// are harmless: the runtime skips what an architecture lacks.
pub const DEFAULT_DENY: &[&str] = &[
    "acct",
    "add_key",
    "adjtimex",
    "bpf",
    "clock_adjtime",
    "clock_settime",
    "create_module",
    "delete_module",
    "fanotify_init",
    "finit_module",
    "fsmount",
    "fsopen",
    "fspick",
    "get_kernel_syms",
    "init_module",
    "io_uring_enter",
    "io_uring_register",
    "io_uring_setup",
    "ioperm",
    "iopl",
    "kexec_file_load",
    "kexec_load",
    "keyctl",
    "lookup_dcookie",
    "mount",
    "move_mount",
    "name_to_handle_at",
    "nfsservctl",
    "open_by_handle_at",
    "open_tree",
    "perf_event_open",
    "pivot_root",
    "process_vm_readv",
    "process_vm_writev",
    "ptrace",
    "query_module",
    "quotactl",
    "reboot",
    "request_key",
    "setns",
    "settimeofday",
    "swapoff",
    "swapon",
    "syslog",
    "umount2",
    "unshare",
    "uselib",
    "userfaultfd",
    "vhangup",
];

/// Syscalls a policy may never deny: the runtime needs them after the
/// seccomp filter is loaded (Landlock is applied by the container's init
/// right before `execve`, seccomp through `prctl`/`seccomp`), and denying
/// them would make every container fail to start rather than confine it.
pub const NEVER_DENY: &[&str] = &[
    "execve",
    "landlock_add_rule",
    "landlock_create_ruleset",
    "landlock_restrict_self",
    "prctl",
    "seccomp",
];

/// `PATH` used when `[process] env` sets none (runc's default).
pub const DEFAULT_PATH: &str = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

// ---------------------------------------------------------------------------
// The file as written.

/// Top level of `owen.policy.toml`, version 1.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "owen.policy.toml (sandboy policy, version 1)")]
pub struct PolicyDoc {
    /// Policy format version; must be 1.
    #[schemars(with = "u32", range(min = 1, max = 1))]
    pub version: Spanned<i64>,
    /// Label shown in logs and annotations.
    #[schemars(with = "String")]
    pub name: Spanned<String>,
    #[serde(default)]
    pub landlock: LandlockTable,
    #[serde(default)]
    pub fs: FsTable,
    /// Binds from the host into the container.
    #[serde(default, rename = "mount")]
    pub mounts: Vec<MountTable>,
    #[serde(default)]
    pub net: NetTable,
    #[serde(default)]
    pub syscalls: SyscallsTable,
    pub process: ProcessTable,
    #[serde(default)]
    pub limits: LimitsTable,
    /// OCI-wasm mode limits; present means a `dev.sandboy.wasm.limits` annotation.
    #[serde(default)]
    pub wasm: Option<WasmTable>,
    #[serde(default)]
    pub context: ContextTable,
}

/// `[landlock]`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LandlockTable {
    /// enforce (default) | best-effort | off.
    #[schemars(with = "Option<LandlockMode>")]
    pub mode: Option<Spanned<String>>,
}

/// `[fs]`: absolute paths inside the container; everything else is denied.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FsTable {
    /// Read files, list directories.
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub read: Vec<Spanned<String>>,
    /// Read and execute.
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub exec: Vec<Spanned<String>>,
    /// Read, write, create and remove.
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub write: Vec<Spanned<String>>,
    /// Masked (OCI maskedPaths), even inside allowed trees.
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub hide: Vec<Spanned<String>>,
}

/// One `[[mount]]`: a bind mount from the host.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MountTable {
    /// Host path, relative to the policy file's directory; must exist.
    #[schemars(with = "String")]
    pub source: Spanned<String>,
    /// Absolute path inside the container.
    #[schemars(with = "String")]
    pub destination: Spanned<String>,
    /// Mount options; default `["rbind", "ro"]`.
    #[serde(default)]
    #[schemars(with = "Option<Vec<String>>")]
    pub options: Option<Vec<Spanned<String>>>,
}

/// Network namespace choice (schema only; validated from a string).
#[derive(JsonSchema)]
#[serde(rename_all = "kebab-case")]
#[allow(dead_code)]
enum NetNamespaceName {
    None,
    Host,
}

/// `[net]`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NetTable {
    /// none (own netns, loopback only; default) | host.
    #[schemars(with = "Option<NetNamespaceName>")]
    pub namespace: Option<Spanned<String>>,
    /// TCP ports connect() may reach.
    #[serde(default)]
    #[schemars(with = "Vec<u16>")]
    pub connect: Vec<Spanned<i64>>,
    /// TCP ports bind() may use.
    #[serde(default)]
    #[schemars(with = "Vec<u16>")]
    pub bind: Vec<Spanned<i64>>,
    /// UDP ports; any entry opens UDP sockets (refused by default when the
    /// network is restricted). Seccomp cannot see ports: see `explain`.
    #[serde(default)]
    #[schemars(with = "Vec<u16>")]
    pub udp: Vec<Spanned<i64>>,
    /// Landlock scopes; default both.
    #[schemars(with = "Option<Vec<Scope>>")]
    pub scope: Option<Vec<Spanned<String>>>,
}

/// Seccomp action name (schema only).
#[derive(JsonSchema)]
#[serde(rename_all = "kebab-case")]
#[allow(dead_code)]
enum ActionName {
    Errno,
    Kill,
    Log,
}

/// `[syscalls]`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SyscallsTable {
    /// Start from sandboy's built-in deny list (default true).
    pub default_deny: Option<bool>,
    /// Added to the deny list.
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub deny: Vec<Spanned<String>>,
    /// Removed from the built-in list.
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub allow: Vec<Spanned<String>>,
    /// errno (EPERM; default) | kill | log.
    #[schemars(with = "Option<ActionName>")]
    pub action: Option<Spanned<String>>,
}

/// `[process]`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProcessTable {
    /// argv; `args[0]` ending in `.wasm` selects OCI-wasm mode.
    #[schemars(with = "Vec<String>", length(min = 1))]
    pub args: Spanned<Vec<Spanned<String>>>,
    /// Absolute working directory (default `/`).
    #[schemars(with = "Option<String>")]
    pub cwd: Option<Spanned<String>>,
    /// `KEY=VALUE` entries; a `PATH` default is added if missing.
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub env: Vec<Spanned<String>>,
    /// Numeric `uid:gid` (default `0:0`).
    #[schemars(with = "Option<String>", regex(pattern = r"^[0-9]+:[0-9]+$"))]
    pub user: Option<Spanned<String>>,
}

/// An integer or a string with a unit, checked after parsing so that a bad
/// unit gets a located message with a hint.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum UnitValue {
    Int(i64),
    Text(String),
}

/// `[limits]`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LimitsTable {
    /// Memory limit, e.g. "512MiB".
    #[schemars(with = "Option<ByteSize>")]
    pub memory: Option<Spanned<UnitValue>>,
    /// Maximum number of tasks.
    #[schemars(with = "Option<u32>")]
    pub pids: Option<Spanned<i64>>,
    /// CPU share as a number of CPUs (CFS quota over a 100 ms period).
    #[schemars(with = "Option<f64>")]
    pub cpus: Option<Spanned<f64>>,
    /// RLIMIT_NOFILE (soft = hard).
    #[schemars(with = "Option<u32>")]
    pub nofile: Option<Spanned<i64>>,
    /// Wall-clock limit; then SIGKILL to the whole container.
    #[schemars(with = "Option<Span>")]
    pub timeout: Option<Spanned<UnitValue>>,
}

/// `[wasm]`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WasmTable {
    #[schemars(with = "Option<u64>")]
    pub fuel: Option<Spanned<i64>>,
    #[schemars(with = "Option<Span>")]
    pub deadline: Option<Spanned<UnitValue>>,
    #[schemars(with = "Option<ByteSize>")]
    pub memory: Option<Spanned<UnitValue>>,
    #[schemars(with = "Option<ByteSize>")]
    pub max_input: Option<Spanned<UnitValue>>,
    #[schemars(with = "Option<ByteSize>")]
    pub max_output: Option<Spanned<UnitValue>>,
    #[schemars(with = "Option<u64>")]
    pub max_results: Option<Spanned<i64>>,
}

/// `[context]`: agent context hygiene, not a security boundary.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ContextTable {
    /// gitignore-style patterns for `.agentsignore` and friends.
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub ignore: Vec<Spanned<String>>,
}

// ---------------------------------------------------------------------------
// The checked policy.

/// `[net] namespace`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NetNamespace {
    /// Own network namespace (loopback only).
    None,
    /// The host's network namespace.
    Host,
}

/// `[syscalls] action`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SeccompAction {
    /// Fail with EPERM.
    Errno,
    /// Kill the whole process.
    Kill,
    /// Allow but log.
    Log,
}

/// A validated bind mount.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BindMount {
    /// Absolute, canonical host path.
    pub source: PathBuf,
    pub destination: String,
    pub options: Vec<String>,
}

impl BindMount {
    pub fn read_only(&self) -> bool {
        self.options.iter().any(|o| o == "ro")
    }
}

/// A validated, resolved policy.
#[derive(Debug, Clone)]
pub struct Policy {
    /// The file as the user named it (for messages and generated comments).
    pub file: String,
    pub name: String,
    /// Hex sha256 of the policy file's bytes.
    pub sha256: String,
    pub landlock_mode: LandlockMode,
    pub read: Vec<String>,
    pub exec: Vec<String>,
    pub write: Vec<String>,
    pub hide: Vec<String>,
    pub mounts: Vec<BindMount>,
    pub net_namespace: NetNamespace,
    pub connect: Vec<u16>,
    pub bind: Vec<u16>,
    /// `[net] udp`: UDP ports (opens UDP sockets when non-empty).
    pub udp: Vec<u16>,
    pub scope: Vec<Scope>,
    pub default_deny: bool,
    /// Final deny list, sorted: default (if on) + deny − allow.
    pub deny: Vec<String>,
    pub action: SeccompAction,
    pub args: Vec<String>,
    pub cwd: String,
    /// Environment including the `PATH` default.
    pub env: Vec<String>,
    pub uid: u32,
    pub gid: u32,
    pub memory: Option<ByteSize>,
    pub pids: Option<i64>,
    pub cpus: Option<f64>,
    pub nofile: Option<u64>,
    pub timeout: Option<Span>,
    pub wasm: Option<WasmLimits>,
    pub ignore: Vec<String>,
}

impl Policy {
    /// Read and validate a policy file. Relative mount sources resolve
    /// against the file's directory.
    pub fn load(path: &Path) -> Result<Policy, Error> {
        let src = std::fs::read_to_string(path).map_err(|source| Error::Io {
            action: "read policy",
            path: path.to_path_buf(),
            source,
        })?;
        let dir = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        // Absolute, so that "does not exist" messages name the real place.
        let dir = std::path::absolute(&dir).unwrap_or(dir);
        Policy::parse(&src, &path.display().to_string(), &dir)
    }

    /// Validate policy text. `file` labels diagnostics; `base_dir` is where
    /// relative mount sources resolve.
    pub fn parse(src: &str, file: &str, base_dir: &Path) -> Result<Policy, Error> {
        let doc: PolicyDoc = toml::from_str(src)
            .map_err(|e| Error::Policy(vec![syntax_diagnostic(src, file, &e)]))?;
        let mut v = Validator {
            src,
            file,
            diags: Vec::new(),
        };
        let policy = v.check(doc, base_dir, src.as_bytes());
        if v.diags.is_empty() {
            Ok(policy)
        } else {
            Err(Error::Policy(v.diags))
        }
    }

    /// Whether `process.args[0]` selects OCI-wasm mode.
    pub fn is_wasm(&self) -> bool {
        self.args.first().is_some_and(|a| a.ends_with(".wasm"))
    }
}

/// Hex sha256 of some bytes.
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

// ---------------------------------------------------------------------------
// Syntax errors from the TOML parser.

fn syntax_diagnostic(src: &str, file: &str, e: &toml::de::Error) -> Diagnostic {
    let span = e.span();
    let location = span
        .as_ref()
        .map_or(Location::START, |s| Location::of_offset(src, s.start));
    let message = e.message().trim().to_string();
    let mut key = span
        .as_ref()
        .and_then(|s| key_at(src, s.start))
        .unwrap_or_else(|| "(top level)".to_string());
    let mut suggestion = None;
    let hint;
    if let Some(rest) = message.strip_prefix("unknown field `") {
        // serde: "unknown field `foo`, expected one of `a`, `b`" (or
        // "expected `a`", or "there are no fields").
        let name = rest.split('`').next().unwrap_or_default().to_string();
        let expected: Vec<&str> = rest
            .split_once(", expected")
            .map(|(_, list)| list.split('`').skip(1).step_by(2).collect())
            .unwrap_or_default();
        suggestion = closest(&name, expected.iter().copied());
        hint = if expected.is_empty() {
            "remove the key; this table takes no keys".to_string()
        } else {
            format!("remove the key or use one of: {}", expected.join(", "))
        };
        // The span points at the key itself: report its table.
        key = match key.rsplit_once('.') {
            Some((table, _)) => format!("{table}.{name}"),
            None => name.clone(),
        };
        return Diagnostic {
            file: file.to_string(),
            location,
            key,
            message: format!("unknown key \"{name}\""),
            suggestion,
            hint,
        };
    } else if let Some(rest) = message.strip_prefix("missing field `") {
        // The span is the enclosing table's: name that table, not a key in it.
        let name = rest.split('`').next().unwrap_or_default().to_string();
        let table = span
            .as_ref()
            .map(|s| table_at(src, s.start))
            .unwrap_or_default();
        key = if table.is_empty() {
            name.clone()
        } else {
            format!("{table}.{name}")
        };
        return Diagnostic {
            file: file.to_string(),
            location,
            key,
            message: format!("missing required key \"{name}\""),
            suggestion,
            hint: if table.is_empty() && name == "process" {
                "add a [process] table, e.g. args = [\"/bin/sh\", \"-c\", \"make test\"]"
                    .to_string()
            } else {
                format!("add `{name} = …` (see SPEC §4 or `sandboy-spec-gen schema`)")
            },
        };
    } else if message.starts_with("invalid type") || message.starts_with("invalid value") {
        // serde names Rust types; say what a TOML author writes instead.
        let plain = message
            .replace("expected i64", "expected an integer")
            .replace("expected u64", "expected an integer")
            .replace("expected f64", "expected a number")
            .replace("expected a sequence", "expected an array")
            .replace("expected a boolean", "expected true or false");
        return Diagnostic {
            file: file.to_string(),
            location,
            key,
            message: plain.replace('\n', "; "),
            suggestion,
            hint: "use the type SPEC §4 shows for this key (see `sandboy-spec-gen schema`)"
                .to_string(),
        };
    } else if message.starts_with("data did not match any variant") {
        // Only sizes and durations are untagged (integer or string).
        return Diagnostic {
            file: file.to_string(),
            location,
            key,
            message: "expected an integer or a string with a unit".to_string(),
            suggestion,
            hint: "write e.g. \"512MiB\" for a size or \"30s\" for a duration".to_string(),
        };
    } else {
        hint = "fix the TOML syntax at this position (strings need quotes, arrays need brackets)"
            .to_string();
    }
    Diagnostic {
        file: file.to_string(),
        location,
        key,
        message: message.replace('\n', "; "),
        suggestion,
        hint,
    }
}

/// The `[table]` / `[[array]]` header in force at `offset` ("" at top level).
fn table_at(src: &str, offset: usize) -> String {
    let mut table = String::new();
    let mut pos = 0;
    for line in src.split_inclusive('\n') {
        if pos > offset {
            break;
        }
        let t = line.trim();
        if t.starts_with('[') {
            table = t
                .trim_start_matches('[')
                .split(']')
                .next()
                .unwrap_or_default()
                .trim()
                .to_string();
        }
        pos += line.len();
    }
    table
}

/// Best-effort dotted key for a byte offset: the innermost `[table]` /
/// `[[array]]` header above it plus the `key =` on (or above, for
/// multi-line arrays) its line. Only used to name the key in syntax and type
/// errors, whose spans the parser gives without a key path.
fn key_at(src: &str, offset: usize) -> Option<String> {
    let offset = offset.min(src.len());
    let mut table = String::new();
    let mut key: Option<String> = None;
    let mut pos = 0;
    for line in src.split_inclusive('\n') {
        if pos > offset {
            break;
        }
        let t = line.trim();
        if t.starts_with('[') {
            table = t
                .trim_start_matches('[')
                .split(']')
                .next()
                .unwrap_or_default()
                .trim()
                .to_string();
            key = None;
        } else if let Some((k, _)) = t.split_once('=') {
            let k = k.trim();
            if !k.is_empty()
                && !k.starts_with('#')
                && !k.starts_with('"')
                && !k.contains([' ', ','])
            {
                key = Some(k.to_string());
            }
        }
        pos += line.len();
    }
    match (table.is_empty(), key) {
        (true, None) => None,
        (true, Some(k)) => Some(k),
        (false, None) => Some(table),
        (false, Some(k)) => Some(format!("{table}.{k}")),
    }
}

// ---------------------------------------------------------------------------
// Semantic checks.

struct Validator<'a> {
    src: &'a str,
    file: &'a str,
    diags: Vec<Diagnostic>,
}

impl Validator<'_> {
    fn err<T>(&mut self, at: &Spanned<T>, key: &str, message: String, hint: &str) {
        self.err_suggest(at, key, message, None, hint);
    }

    fn err_suggest<T>(
        &mut self,
        at: &Spanned<T>,
        key: &str,
        message: String,
        suggestion: Option<String>,
        hint: &str,
    ) {
        self.diags.push(Diagnostic {
            file: self.file.to_string(),
            location: Location::of_offset(self.src, at.span().start),
            key: key.to_string(),
            message,
            suggestion,
            hint: hint.to_string(),
        });
    }

    fn check(&mut self, doc: PolicyDoc, base_dir: &Path, bytes: &[u8]) -> Policy {
        if *doc.version.get_ref() != VERSION {
            self.err(
                &doc.version,
                "version",
                format!("unsupported policy version {}", doc.version.get_ref()),
                "set `version = 1`; this sandboy understands only version 1",
            );
        }
        let name = doc.name.get_ref().clone();
        let name_ok = name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphanumeric())
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
        if !name_ok {
            self.err(
                &doc.name,
                "name",
                format!("invalid policy name {name:?}"),
                "use letters, digits, '-', '_' and '.', starting with a letter or digit",
            );
        }

        let landlock_mode = match doc.landlock.mode.as_ref() {
            None => LandlockMode::Enforce,
            Some(m) => match m.get_ref().as_str() {
                "enforce" => LandlockMode::Enforce,
                "best-effort" => LandlockMode::BestEffort,
                "off" => LandlockMode::Off,
                other => {
                    let s = closest(other, ["enforce", "best-effort", "off"]);
                    self.err_suggest(
                        m,
                        "landlock.mode",
                        format!("unknown Landlock mode \"{other}\""),
                        s,
                        "use \"enforce\", \"best-effort\" or \"off\"",
                    );
                    LandlockMode::Enforce
                }
            },
        };

        let read = self.paths(&doc.fs.read, "fs.read");
        let exec = self.paths(&doc.fs.exec, "fs.exec");
        let write = self.paths(&doc.fs.write, "fs.write");
        let hide = self.paths(&doc.fs.hide, "fs.hide");
        for h in &doc.fs.hide {
            let p = normalize(h.get_ref());
            for (list, key) in [(&read, "fs.read"), (&exec, "fs.exec"), (&write, "fs.write")] {
                if list.contains(&p) {
                    self.err(
                        h,
                        "fs.hide",
                        format!("hidden path \"{p}\" is also granted by {key}"),
                        "hide a path inside an allowed tree, not the allowed path itself; remove one of the two",
                    );
                }
            }
        }

        let mounts = self.mounts(&doc.mounts, base_dir);
        for w in &doc.fs.write {
            let p = normalize(w.get_ref());
            if let Some(m) = mounts
                .iter()
                .filter(|m| is_under(&p, &m.destination))
                .max_by_key(|m| m.destination.len())
            {
                if m.read_only() {
                    let msg = format!(
                        "write path \"{p}\" lies in read-only mount \"{}\"",
                        m.destination
                    );
                    self.err(
                        w,
                        "fs.write",
                        msg,
                        "add \"rw\" to that [[mount]]'s options, or drop the write path",
                    );
                }
            } else if is_under(&p, "/sys") {
                let msg = format!("write path \"{p}\" lies in /sys, which is mounted read-only");
                self.err(
                    w,
                    "fs.write",
                    msg,
                    "remove it; sysfs is never writable under a policy",
                );
            }
        }

        let net_namespace = match doc.net.namespace.as_ref() {
            None => NetNamespace::None,
            Some(n) => match n.get_ref().as_str() {
                "none" => NetNamespace::None,
                "host" => NetNamespace::Host,
                other => {
                    let s = closest(other, ["none", "host"]);
                    self.err_suggest(
                        n,
                        "net.namespace",
                        format!("unknown network namespace \"{other}\""),
                        s,
                        "use \"none\" (own namespace, loopback only) or \"host\"",
                    );
                    NetNamespace::None
                }
            },
        };
        let connect = self.ports(&doc.net.connect, "net.connect");
        let bind = self.ports(&doc.net.bind, "net.bind");
        let udp = self.ports(&doc.net.udp, "net.udp");
        let scope = match &doc.net.scope {
            None => vec![Scope::AbstractUnixSocket, Scope::Signal],
            Some(list) => {
                let mut out = BTreeSet::new();
                for s in list {
                    match s.get_ref().as_str() {
                        "abstract-unix-socket" => {
                            out.insert(Scope::AbstractUnixSocket);
                        }
                        "signal" => {
                            out.insert(Scope::Signal);
                        }
                        other => {
                            let sug = closest(other, ["abstract-unix-socket", "signal"]);
                            self.err_suggest(
                                s,
                                "net.scope",
                                format!("unknown Landlock scope \"{other}\""),
                                sug,
                                "use \"abstract-unix-socket\" and/or \"signal\"",
                            );
                        }
                    }
                }
                out.into_iter().collect()
            }
        };

        let (default_deny, deny, action) = self.syscalls(&doc.syscalls);
        let (args, cwd, env, uid, gid) = self.process(&doc.process);

        let memory = doc
            .limits
            .memory
            .as_ref()
            .and_then(|v| self.size(v, "limits.memory"));
        let pids = doc.limits.pids.as_ref().and_then(|v| {
            self.int_range(
                v,
                "limits.pids",
                1,
                i64::from(u32::MAX),
                "set a positive number of tasks, e.g. 256",
            )
        });
        let cpus = doc.limits.cpus.as_ref().and_then(|c| {
            let n = *c.get_ref();
            if n.is_finite() && n > 0.0 && n <= 1024.0 {
                Some(n)
            } else {
                self.err(
                    c,
                    "limits.cpus",
                    format!("invalid CPU count {n}"),
                    "use a positive number of CPUs, e.g. 1.5",
                );
                None
            }
        });
        let nofile = doc.limits.nofile.as_ref().and_then(|v| {
            self.int_range(
                v,
                "limits.nofile",
                1,
                1 << 20,
                "use a number of open files between 1 and 1048576, e.g. 1024",
            )
            .map(|n| n as u64)
        });
        let timeout = doc
            .limits
            .timeout
            .as_ref()
            .and_then(|v| self.span(v, "limits.timeout"));

        let wasm = doc.wasm.as_ref().map(|w| WasmLimits {
            fuel: w.fuel.as_ref().and_then(|v| {
                self.int_range(
                    v,
                    "wasm.fuel",
                    1,
                    i64::MAX,
                    "use a positive amount of fuel, e.g. 5_000_000_000",
                )
                .map(|n| n as u64)
            }),
            deadline: w
                .deadline
                .as_ref()
                .and_then(|v| self.span(v, "wasm.deadline")),
            memory: w.memory.as_ref().and_then(|v| self.size(v, "wasm.memory")),
            max_input: w
                .max_input
                .as_ref()
                .and_then(|v| self.size(v, "wasm.max_input")),
            max_output: w
                .max_output
                .as_ref()
                .and_then(|v| self.size(v, "wasm.max_output")),
            max_results: w.max_results.as_ref().and_then(|v| {
                self.int_range(
                    v,
                    "wasm.max_results",
                    0,
                    i64::MAX,
                    "use a non-negative count, e.g. 10000",
                )
                .map(|n| n as u64)
            }),
        });

        let mut ignore = Vec::new();
        for pat in &doc.context.ignore {
            let p = pat.get_ref();
            if p.trim().is_empty() || p.contains(['\n', '\r']) {
                self.err(
                    pat,
                    "context.ignore",
                    format!("invalid ignore pattern {p:?}"),
                    "use one non-empty gitignore pattern per entry",
                );
            } else {
                ignore.push(p.clone());
            }
        }

        Policy {
            file: self.file.to_string(),
            name,
            sha256: sha256_hex(bytes),
            landlock_mode,
            read,
            exec,
            write,
            hide,
            mounts,
            net_namespace,
            connect,
            bind,
            udp,
            scope,
            default_deny,
            deny,
            action,
            args,
            cwd,
            env,
            uid,
            gid,
            memory,
            pids,
            cpus,
            nofile,
            timeout,
            wasm,
            ignore,
        }
    }

    /// Check one absolute container path; returns it normalized.
    fn path(&mut self, p: &Spanned<String>, key: &str) -> Option<String> {
        let s = p.get_ref();
        if !s.starts_with('/') {
            self.err(
                p,
                key,
                format!("path \"{s}\" is not absolute"),
                &format!(
                    "paths inside the container start with '/', e.g. \"/{}\"",
                    s.trim_start_matches("./")
                ),
            );
            return None;
        }
        if s.split('/').any(|c| c == "..") || s.contains('\0') {
            self.err(
                p,
                key,
                format!("path \"{s}\" contains \"..\" or a NUL byte"),
                "write the path without \"..\" components",
            );
            return None;
        }
        Some(normalize(s))
    }

    fn paths(&mut self, list: &[Spanned<String>], key: &str) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for p in list {
            if let Some(n) = self.path(p, key) {
                if !out.contains(&n) {
                    out.push(n);
                }
            }
        }
        out
    }

    fn mounts(&mut self, list: &[MountTable], base_dir: &Path) -> Vec<BindMount> {
        const KNOWN: &[&str] = &[
            "bind",
            "rbind",
            "ro",
            "rw",
            "nosuid",
            "nodev",
            "noexec",
            "suid",
            "dev",
            "exec",
            "private",
            "rprivate",
            "slave",
            "rslave",
            "shared",
            "rshared",
            "relatime",
            "norelatime",
            "noatime",
            "strictatime",
            "nodiratime",
        ];
        let mut out = Vec::new();
        for (i, m) in list.iter().enumerate() {
            let key = format!("mount[{i}]");
            let dest = self.path(&m.destination, &format!("{key}.destination"));
            if let Some(d) = &dest {
                if d == "/" {
                    self.err(&m.destination, &format!("{key}.destination"), "cannot bind-mount over the container root \"/\"".into(), "use --rootfs to choose the root filesystem; mount at a subdirectory such as /work");
                }
            }
            let raw = m.source.get_ref();
            let source = if raw.is_empty() {
                self.err(
                    &m.source,
                    &format!("{key}.source"),
                    "empty mount source".into(),
                    "name a host directory, relative to the policy file",
                );
                None
            } else {
                let joined = base_dir.join(raw.strip_prefix("./").unwrap_or(raw));
                match joined.canonicalize() {
                    Ok(p) => Some(p),
                    Err(_) => {
                        self.err(
                            &m.source,
                            &format!("{key}.source"),
                            format!("mount source \"{raw}\" does not exist (resolved to \"{}\")", joined.display()),
                            "create it or fix the path; relative sources resolve against the policy file's directory",
                        );
                        None
                    }
                }
            };
            let mut options = Vec::new();
            if let Some(opts) = &m.options {
                for o in opts {
                    let s = o.get_ref();
                    if KNOWN.contains(&s.as_str()) {
                        if !options.contains(s) {
                            options.push(s.clone());
                        }
                    } else {
                        let sug = closest(s, KNOWN.iter().copied());
                        self.err_suggest(
                            o,
                            &format!("{key}.options"),
                            format!("unknown bind mount option \"{s}\""),
                            sug,
                            "use bind mount options such as rbind, ro, rw, nosuid, nodev, noexec",
                        );
                    }
                }
                if options.iter().any(|o| o == "ro") && options.iter().any(|o| o == "rw") {
                    let first = &opts[0];
                    self.err(
                        first,
                        &format!("{key}.options"),
                        "mount options contain both \"ro\" and \"rw\"".into(),
                        "keep one of them",
                    );
                }
            }
            // A policy mount is always a bind; read-only unless it says rw.
            if !options.iter().any(|o| o == "bind" || o == "rbind") {
                options.insert(0, "rbind".into());
            }
            if !options.iter().any(|o| o == "ro" || o == "rw") {
                options.push("ro".into());
            }
            if let (Some(source), Some(destination)) = (source, dest) {
                out.push(BindMount {
                    source,
                    destination,
                    options,
                });
            }
        }
        out
    }

    fn ports(&mut self, list: &[Spanned<i64>], key: &str) -> Vec<u16> {
        let mut out = BTreeSet::new();
        for p in list {
            let n = *p.get_ref();
            if (1..=65535).contains(&n) {
                out.insert(n as u16);
            } else {
                self.err(
                    p,
                    key,
                    format!("port {n} is out of range"),
                    "TCP ports are 1 to 65535",
                );
            }
        }
        out.into_iter().collect()
    }

    fn syscall_name(&mut self, s: &Spanned<String>, key: &str) -> bool {
        let name = s.get_ref();
        if syscalls::is_known(name) || guards::find(name).is_some() {
            return true;
        }
        let all = syscalls::Arch::ALL
            .iter()
            .flat_map(|&a| syscalls::names(a))
            .chain(guards::GUARDS.iter().map(|g| g.name));
        let sug = closest(name, all);
        self.err_suggest(
            s,
            key,
            format!("unknown syscall \"{name}\""),
            sug,
            "use a Linux syscall name known on x86_64 or aarch64 (see `man 2 syscalls`)",
        );
        false
    }

    fn syscalls(&mut self, t: &SyscallsTable) -> (bool, Vec<String>, SeccompAction) {
        let default_deny = t.default_deny.unwrap_or(true);
        let mut set: BTreeSet<String> = if default_deny {
            DEFAULT_DENY.iter().map(|s| s.to_string()).collect()
        } else {
            BTreeSet::new()
        };
        // Guards (named argument rules, see guards.rs): syscall guards come
        // with the built-in list, network guards always (they apply only
        // when the network is restricted).
        if default_deny {
            set.extend(guards::names(guards::Kind::Syscall).map(String::from));
        }
        set.extend(guards::names(guards::Kind::Net).map(String::from));
        for d in &t.deny {
            if !self.syscall_name(d, "syscalls.deny") {
                continue;
            }
            let name = d.get_ref();
            if NEVER_DENY.contains(&name.as_str()) {
                self.err(
                    d,
                    "syscalls.deny",
                    format!("syscall \"{name}\" must stay allowed"),
                    "remove it; sandboy needs landlock_*, seccomp, prctl and execve to confine and start the process",
                );
                continue;
            }
            if t.allow.iter().any(|a| a.get_ref() == name) {
                self.err(
                    d,
                    "syscalls.deny",
                    format!("syscall \"{name}\" is both denied and allowed"),
                    "remove it from one of syscalls.deny and syscalls.allow",
                );
                continue;
            }
            set.insert(name.clone());
        }
        for a in &t.allow {
            if !self.syscall_name(a, "syscalls.allow") {
                continue;
            }
            let name = a.get_ref();
            let removable = match guards::find(name) {
                Some(g) => default_deny || g.kind == guards::Kind::Net,
                None => default_deny && DEFAULT_DENY.contains(&name.as_str()),
            };
            if !removable {
                let why = if default_deny {
                    format!("syscall \"{name}\" is not in sandboy's default deny list, so allowing it has no effect")
                } else {
                    format!("syscall \"{name}\" is allowed but default_deny = false, so there is nothing to remove it from")
                };
                self.err(a, "syscalls.allow", why, "remove it; syscalls.allow only removes names from the built-in list (see `sandboy-spec-gen explain`)");
                continue;
            }
            set.remove(name);
        }
        let action = match t.action.as_ref() {
            None => SeccompAction::Errno,
            Some(a) => match a.get_ref().as_str() {
                "errno" => SeccompAction::Errno,
                "kill" => SeccompAction::Kill,
                "log" => SeccompAction::Log,
                other => {
                    let s = closest(other, ["errno", "kill", "log"]);
                    self.err_suggest(
                        a,
                        "syscalls.action",
                        format!("unknown seccomp action \"{other}\""),
                        s,
                        "use \"errno\" (EPERM), \"kill\" or \"log\"",
                    );
                    SeccompAction::Errno
                }
            },
        };
        (default_deny, set.into_iter().collect(), action)
    }

    #[allow(clippy::type_complexity)]
    fn process(&mut self, p: &ProcessTable) -> (Vec<String>, String, Vec<String>, u32, u32) {
        let args: Vec<String> = p
            .args
            .get_ref()
            .iter()
            .map(|a| a.get_ref().clone())
            .collect();
        if args.is_empty() {
            self.err(
                &p.args,
                "process.args",
                "empty argument list".into(),
                "give the command to run, e.g. args = [\"/bin/sh\", \"-c\", \"make test\"]",
            );
        } else if args[0].is_empty() {
            self.err(
                &p.args.get_ref()[0],
                "process.args",
                "empty program name".into(),
                "args[0] is the program to run, e.g. \"/bin/sh\"",
            );
        }
        let cwd = match &p.cwd {
            None => "/".to_string(),
            Some(c) => self.path(c, "process.cwd").unwrap_or_else(|| "/".into()),
        };
        let mut env = Vec::new();
        for e in &p.env {
            let s = e.get_ref();
            match s.split_once('=') {
                Some((k, _)) if !k.is_empty() && !k.contains(char::is_whitespace) => {
                    env.push(s.clone())
                }
                _ => self.err(
                    e,
                    "process.env",
                    format!("environment entry {s:?} is not KEY=VALUE"),
                    "write entries as \"KEY=VALUE\", e.g. \"CI=true\"",
                ),
            }
        }
        if !env.iter().any(|e| e.starts_with("PATH=")) {
            env.insert(0, DEFAULT_PATH.to_string());
        }
        let (mut uid, mut gid) = (0, 0);
        if let Some(u) = &p.user {
            match u
                .get_ref()
                .split_once(':')
                .and_then(|(a, b)| Some((a.parse::<u32>().ok()?, b.parse::<u32>().ok()?)))
            {
                Some((a, b)) => (uid, gid) = (a, b),
                None => self.err(
                    u,
                    "process.user",
                    format!("invalid user {:?}", u.get_ref()),
                    "write numeric \"uid:gid\", e.g. \"1000:1000\" (names are not resolved)",
                ),
            }
        }
        (args, cwd, env, uid, gid)
    }

    fn int_range(
        &mut self,
        v: &Spanned<i64>,
        key: &str,
        min: i64,
        max: i64,
        hint: &str,
    ) -> Option<i64> {
        let n = *v.get_ref();
        if (min..=max).contains(&n) {
            Some(n)
        } else {
            self.err(
                v,
                key,
                format!("value {n} is out of range {min}..={max}"),
                hint,
            );
            None
        }
    }

    fn size(&mut self, v: &Spanned<UnitValue>, key: &str) -> Option<ByteSize> {
        let parsed = match v.get_ref() {
            UnitValue::Int(n) if *n > 0 => Ok(ByteSize(*n as u64)),
            UnitValue::Int(n) => Err(format!("invalid size {n}")),
            UnitValue::Text(s) => match ByteSize::parse(s) {
                Ok(b) if b.0 > 0 => Ok(b),
                Ok(_) => Err(format!("invalid size {s:?}")),
                Err(_) => Err(format!("invalid size {s:?}")),
            },
        };
        match parsed {
            Ok(b) => Some(b),
            Err(m) => {
                self.err(
                    v,
                    key,
                    m,
                    "write a positive integer with a unit B, KiB, MiB or GiB, e.g. \"512MiB\"",
                );
                None
            }
        }
    }

    fn span(&mut self, v: &Spanned<UnitValue>, key: &str) -> Option<Span> {
        let parsed = match v.get_ref() {
            UnitValue::Int(n) if *n > 0 => Ok(Span(std::time::Duration::from_millis(*n as u64))),
            UnitValue::Int(n) => Err(format!("invalid duration {n}")),
            UnitValue::Text(s) => match Span::parse(s) {
                Ok(d) if d.as_millis() > 0 => Ok(d),
                _ => Err(format!("invalid duration {s:?}")),
            },
        };
        match parsed {
            Ok(d) => Some(d),
            Err(m) => {
                self.err(
                    v,
                    key,
                    m,
                    "write a positive integer with a unit ms, s, m or h, e.g. \"10m\"",
                );
                None
            }
        }
    }
}

/// Strip trailing slashes (except for `/`) and collapse `//` and `/./`.
fn normalize(p: &str) -> String {
    let parts: Vec<&str> = p
        .split('/')
        .filter(|c| !c.is_empty() && *c != ".")
        .collect();
    format!("/{}", parts.join("/"))
}

/// Whether container path `p` is `dir` or beneath it.
pub fn is_under(p: &str, dir: &str) -> bool {
    dir == "/" || p == dir || (p.starts_with(dir) && p.as_bytes().get(dir.len()) == Some(&b'/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths() {
        assert_eq!(normalize("/usr//bin/"), "/usr/bin");
        assert_eq!(normalize("/"), "/");
        assert!(is_under("/work/x", "/work"));
        assert!(!is_under("/workshop", "/work"));
        assert!(is_under("/a", "/"));
    }

    #[test]
    fn key_paths() {
        let src = "version = 1\n[limits]\npids = \"x\"\n[net]\nconnect = [\n  1,\n  0,\n]\n";
        assert_eq!(key_at(src, 0).as_deref(), Some("version"));
        assert_eq!(
            key_at(src, src.find("\"x\"").unwrap()).as_deref(),
            Some("limits.pids")
        );
        assert_eq!(
            key_at(src, src.find("0,").unwrap()).as_deref(),
            Some("net.connect")
        );
    }

    #[test]
    fn defaults_are_known_syscalls() {
        for name in DEFAULT_DENY.iter().chain(NEVER_DENY) {
            assert!(syscalls::is_known(name), "{name}");
        }
        let mut sorted = DEFAULT_DENY.to_vec();
        sorted.sort_unstable();
        assert_eq!(sorted, DEFAULT_DENY, "keep DEFAULT_DENY sorted");
        assert!(!DEFAULT_DENY.iter().any(|d| NEVER_DENY.contains(d)));
    }
}
