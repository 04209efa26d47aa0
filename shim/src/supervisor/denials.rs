//! Denial reports: the supervisor's duty that reads the kernel's audit
//! records (see [`super::audit`]), keeps the ones of its own container, and
//! turns each into a plain statement — what was refused, which path, port or
//! syscall, which process, and which policy change would allow it.
//!
//! Record formats (kernel 6.15+, checked on this host's 6.18):
//! * `AUDIT_LANDLOCK_ACCESS` (1423): `domain=<hex id> blockers=fs.read_file
//!   path="/etc/passwd" dev="vda" ino=737`, or `net.connect_tcp daddr=… dest=80`,
//!   `net.bind_tcp saddr=… src=8081`, `scope.signal opid=1 ocomm="…"`,
//!   `scope.abstract_unix_socket path=<hex>`;
//! * `AUDIT_LANDLOCK_DOMAIN` (1424): `domain=<id> status=allocated
//!   mode=enforcing pid=<creator> uid=… exe=… comm=…`, once per domain, in the
//!   same event (serial) as the domain's first denial, after its 1423;
//! * `AUDIT_SYSCALL` (1300) of the same serial: `pid=`, `comm=`, `exe=`;
//! * `AUDIT_SECCOMP` (1326), alone: `pid= comm= exe= sig= arch= syscall=
//!   code=0x<action>`.
//!
//! Attribution never guesses: a Landlock domain is the container's when its
//! creator is the container's init (which calls `landlock_restrict_self`
//! right before execve) or a process of the container; a seccomp record is
//! the container's when its pid is the init or is, at record time, in the
//! init's pid namespace (or cgroups, for a container sharing the host's).
//! Anything else is some other container's and is dropped.

use std::collections::{HashMap, HashSet};
use std::fs;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::audit::{Record, Socket};

/// The report's file name in the container's state directory.
pub const REPORT_FILE: &str = "denials.jsonl";
/// Held (flock) by the supervisor while it may still write the report.
pub const LOCK_FILE: &str = "denials.lock";
/// Pids of processes added with `exec`, one per line.
pub const TENANTS_FILE: &str = "exec-pids";

const LANDLOCK_ACCESS: u16 = 1423;
const LANDLOCK_DOMAIN: u16 = 1424;
const SECCOMP: u16 = 1326;
const SYSCALL: u16 = 1300;
const EOE: u16 = 1320;

/// Warnings per container: one per distinct denial up to this many, then one
/// saying the rest are only in the report (a loop over 100,000 paths must
/// not flood the log).
pub(crate) const MAX_WARNINGS: usize = 32;
/// Distinct denials kept; further distinct ones are only counted.
const MAX_DISTINCT: usize = 10_000;
/// The report's size, at most: further distinct denials are only counted.
/// A red team's image held 7,000 files under a 3.8 KB path: 10,000
/// distinct refusals of those made a 38 MB report, which the supervisor
/// (outside the container's cgroup) rewrote five times a second.
const MAX_REPORT_BYTES: usize = 4 << 20;
/// How often a report with new refusals is rewritten while the container
/// runs; one whose counts alone changed, every [`COUNTS_EVERY`]. Either
/// way at least [`WRITE_SHARE`] times the last write's own time passes
/// first, so rewriting costs the supervisor at most a twentieth of a core.
const WRITE_EVERY: Duration = Duration::from_millis(200);
const COUNTS_EVERY: Duration = Duration::from_secs(2);
const WRITE_SHARE: u32 = 20;

/// One distinct refusal, as written to `denials.jsonl` (SPEC §8).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Denial {
    /// read, write, create, remove, exec, truncate, ioctl-dev, connect,
    /// bind, signal, abstract-unix-socket, syscall.
    pub kind: String,
    /// A path, a TCP port, a signal's target or a syscall name.
    pub target: String,
    pub pid: Option<i32>,
    pub comm: Option<String>,
    pub exe: Option<String>,
    /// The policy change that would permit it; null for a rule nothing may
    /// relax.
    pub allow: Option<String>,
    /// How many times it was refused.
    pub count: u64,
    /// What refused it: the Landlock blocker (`fs.read_file`) or the
    /// seccomp verdict (`seccomp.errno`, `seccomp.kill`, `seccomp.log`).
    pub blocker: String,
    /// The syscall that was refused (Landlock: the one that hit the rule).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub syscall: Option<String>,
}

impl Denial {
    /// The few words for `run`'s summary on the caller's terminal, `read
    /// /etc/shadow`. The target is the step's choice (a file name, an
    /// abstract socket name), so its control characters are shown escaped,
    /// never sent to the terminal.
    pub fn short(&self) -> String {
        format!("{} {}", self.kind, escape_controls(&self.target))
    }

    fn key(&self) -> (String, String, Option<String>) {
        (self.kind.clone(), self.target.clone(), self.comm.clone())
    }
}

/// `s` with its control characters (ESC, BEL, newline, …) escaped as
/// `\u{1b}`; everything else, non-ASCII names included, as it is.
fn escape_controls(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// Read a report (`denials.jsonl`); a torn last line is skipped.
pub fn read_report(path: &Path) -> Vec<Denial> {
    let Ok(text) = fs::read_to_string(path) else {
        return Vec::new();
    };
    text.lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// Whether a supervisor is collecting this container's refusals now (it
/// holds [`LOCK_FILE`] exclusively while it runs): processes added with
/// `exec` are then filtered with the audit log flag too.
pub fn collecting(state_dir: &Path) -> bool {
    let Ok(file) = fs::File::open(state_dir.join(LOCK_FILE)) else {
        return false;
    };
    nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockSharedNonblock).is_err()
}

// ---------------------------------------------------------------------------
// Record text

/// A record's event serial and its `key=value` fields, values unquoted and
/// hex-decoded where the kernel hex-encodes untrusted strings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fields {
    pub serial: u64,
    pub kind: u16,
    pairs: Vec<(String, String)>,
}

impl Fields {
    pub fn get(&self, key: &str) -> Option<&str> {
        self.pairs
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

/// Fields whose values the kernel writes with `audit_log_untrustedstring`:
/// quoted when plain, hex when they hold spaces, quotes or control bytes.
const UNTRUSTED: &[&str] = &["path", "comm", "exe", "ocomm", "name", "cwd"];

pub fn parse(record: &Record) -> Option<Fields> {
    let rest = record.text.strip_prefix("audit(")?;
    let (stamp, body) = rest.split_once("):")?;
    let serial = stamp.split_once(':')?.1.parse().ok()?;
    let mut pairs = Vec::new();
    let mut s = body.trim_start();
    while !s.is_empty() {
        let Some((key, after)) = s.split_once('=') else {
            break;
        };
        let (value, next, quoted) = if let Some(q) = after.strip_prefix('"') {
            let end = q.find('"').unwrap_or(q.len());
            (&q[..end], q.get(end + 1..).unwrap_or(""), true)
        } else {
            let end = after.find(' ').unwrap_or(after.len());
            (&after[..end], &after[end..], false)
        };
        let key = key.trim().to_owned();
        let value = if !quoted && UNTRUSTED.contains(&key.as_str()) {
            unhex(value).unwrap_or_else(|| value.to_owned())
        } else {
            value.to_owned()
        };
        pairs.push((key, value));
        s = next.trim_start();
    }
    Some(Fields {
        serial,
        kind: record.kind,
        pairs,
    })
}

/// `2F746D70` → `/tmp`; an abstract socket name (leading NUL) → `@name`.
fn unhex(s: &str) -> Option<String> {
    if s.is_empty() || !s.len().is_multiple_of(2) || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let bytes: Vec<u8> = (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).ok())
        .collect::<Option<_>>()?;
    let text = String::from_utf8_lossy(&bytes).into_owned();
    Some(match text.strip_prefix('\0') {
        Some(name) => format!("@{}", name.trim_end_matches('\0')),
        None => text,
    })
}

// ---------------------------------------------------------------------------
// Decoding

/// What the collector knows of the container's policy to phrase `allow`.
#[derive(Debug, Clone, Default)]
pub struct Policy {
    /// Paths nothing may expose (`[fs] hide`, the spec's `maskedPaths`).
    pub hidden: Vec<String>,
    /// Calls the profile answers only with the ENOSYS nudge (see
    /// [`is_fallback`]).
    pub fallbacks: Vec<String>,
}

/// `path` under (or equal to) one of `roots`.
fn under(path: &str, roots: &[String]) -> bool {
    roots.iter().any(|r| {
        let r = r.trim_end_matches('/');
        path == r || path.starts_with(&format!("{r}/"))
    })
}

/// The audit arch value → syscall table.
fn arch(value: &str) -> Option<sandboy_spec_gen::syscalls::Arch> {
    use sandboy_spec_gen::syscalls::Arch;
    match value {
        "c000003e" => Some(Arch::X86_64),
        "c00000b7" => Some(Arch::Aarch64),
        _ => None,
    }
}

fn syscall_name(fields: &Fields) -> Option<String> {
    let nr: i64 = fields.get("syscall")?.parse().ok()?;
    let name = arch(fields.get("arch")?).and_then(|a| sandboy_spec_gen::syscalls::name(a, nr));
    Some(name.map_or_else(|| format!("syscall {nr}"), str::to_owned))
}

/// How much a blocker says: a record that names several (an execve is
/// refused both `fs.execute` and `fs.read_file`, an `O_RDWR` open both write
/// and read) is one refusal, stated by its strongest right, whose policy
/// list grants the weaker ones too.
fn rank(blocker: &str) -> u8 {
    match blocker {
        "fs.execute" => 3,
        "fs.read_file" | "fs.read_dir" => 1,
        _ => 2,
    }
}

/// One Landlock access record (+ the event's SYSCALL record) → one denial.
pub fn decode_landlock(
    access: &Fields,
    syscall: Option<&Fields>,
    policy: &Policy,
) -> Option<Denial> {
    let blockers = access.get("blockers").unwrap_or("");
    let path = access.get("path").map(str::to_owned);
    blockers
        .split(',')
        .filter(|b| !b.is_empty())
        .max_by_key(|b| rank(b))
        .map(|blocker| {
            let (kind, target, allow) =
                landlock_statement(blocker, access, path.as_deref(), policy);
            Denial {
                kind,
                target,
                pid: syscall.and_then(|s| s.get("pid")?.parse().ok()),
                comm: syscall.and_then(|s| s.get("comm")).map(str::to_owned),
                exe: syscall.and_then(|s| s.get("exe")).map(str::to_owned),
                allow,
                count: 1,
                blocker: blocker.to_owned(),
                syscall: syscall.and_then(syscall_name),
            }
        })
}

fn landlock_statement(
    blocker: &str,
    f: &Fields,
    path: Option<&str>,
    policy: &Policy,
) -> (String, String, Option<String>) {
    let path = path.unwrap_or("?").to_owned();
    let fs_rule = |kind: &str, list: &str| {
        let allow = (!under(&path, &policy.hidden)).then(|| format!("add {path:?} to [fs] {list}"));
        (kind.to_owned(), path.clone(), allow)
    };
    match blocker {
        "fs.read_file" | "fs.read_dir" => fs_rule("read", "read"),
        "fs.write_file" => fs_rule("write", "write"),
        "fs.execute" => fs_rule("exec", "exec"),
        "fs.truncate" => fs_rule("truncate", "write"),
        "fs.ioctl_dev" => fs_rule("ioctl-dev", "write"),
        "fs.remove_file" | "fs.remove_dir" => fs_rule("remove", "write"),
        "fs.refer" => fs_rule("rename", "write"),
        b if b.starts_with("fs.make_") => fs_rule("create", "write"),
        "net.connect_tcp" => {
            let port = f.get("dest").unwrap_or("?").to_owned();
            let allow = format!("add {port} to [net] connect");
            ("connect".into(), port, Some(allow))
        }
        "net.bind_tcp" => {
            let port = f.get("src").unwrap_or("?").to_owned();
            let allow = format!("add {port} to [net] bind");
            ("bind".into(), port, Some(allow))
        }
        "scope.signal" => {
            let target = match (f.get("opid"), f.get("ocomm")) {
                (Some(p), Some(c)) => format!("pid {p} ({c})"),
                (Some(p), None) => format!("pid {p}"),
                _ => "?".into(),
            };
            let allow = r#"remove "signal" from [net] scope"#.to_owned();
            ("signal".into(), target, Some(allow))
        }
        "scope.abstract_unix_socket" => {
            let allow = r#"remove "abstract-unix-socket" from [net] scope"#.to_owned();
            ("abstract-unix-socket".into(), path, Some(allow))
        }
        // fs.change_topology (mount games), ptrace: the runtime's own
        // protections, which no policy key relaxes.
        other => (other.replace('.', "-"), path, None),
    }
}

/// The guards answer `clone3` and `openat2` with ENOSYS so that libc falls
/// back to `clone` and `openat`, where the arguments can be checked (see
/// spec-gen's guards): the call that matters comes next and is judged on
/// its own, so this one refuses nothing and is no refusal to report (every
/// threaded program would otherwise show one).
///
/// The kernel logs the ERRNO action without its errno (`code=0x50000` for
/// ENOSYS and EPERM alike), so the profile says which calls only ever get
/// the nudge: `fallbacks`, from the spec.
fn is_fallback(f: &Fields, fallbacks: &[String]) -> bool {
    let errno = seccomp_code(f).is_some_and(|c| c & 0xffff_0000 == 0x0005_0000);
    errno && syscall_name(f).is_some_and(|n| fallbacks.contains(&n))
}

/// A seccomp record's `code`: the filter's return value (action | data).
fn seccomp_code(f: &Fields) -> Option<u32> {
    f.get("code")
        .and_then(|c| u32::from_str_radix(c.trim_start_matches("0x"), 16).ok())
}

/// A seccomp record → a denial. `default_deny`: sandboy's built-in list,
/// whose entries a policy re-allows with `[syscalls] allow`.
pub fn decode_seccomp(f: &Fields) -> Denial {
    let name = syscall_name(f).unwrap_or_else(|| "?".into());
    let code = seccomp_code(f).unwrap_or(0);
    let verdict = match code & 0xffff_0000 {
        0x8000_0000 | 0 => "kill",
        0x0005_0000 => "errno",
        0x0003_0000 => "trap",
        0x7ffc_0000 => "log",
        0x7fc0_0000 => "notify",
        _ => "other",
    };
    let allow = if sandboy_spec_gen::policy::DEFAULT_DENY.contains(&name.as_str()) {
        format!("remove {name:?} from the default deny with [syscalls] allow = [{name:?}]")
    } else {
        format!("remove {name:?} from [syscalls] deny")
    };
    Denial {
        kind: "syscall".into(),
        target: name.clone(),
        pid: f.get("pid").and_then(|p| p.parse().ok()),
        comm: f.get("comm").map(str::to_owned),
        exe: f.get("exe").map(str::to_owned),
        allow: Some(allow),
        count: 1,
        blocker: format!("seccomp.{verdict}"),
        syscall: Some(name),
    }
}

// ---------------------------------------------------------------------------
// Attribution

/// Which processes are the container's.
#[derive(Debug, Clone)]
pub struct Members {
    init: i32,
    /// [`TENANTS_FILE`]: processes added with `exec`, which may be reaped
    /// (their namespace gone from /proc) before their records are read.
    tenants: PathBuf,
    /// The init's pid namespace, when it is not the supervisor's own.
    pidns: Option<u64>,
    /// The init's cgroup lines (`N:controllers:path`).
    cgroups: Vec<(String, String)>,
    /// The audit session `create` gave the container alone
    /// ([`super::audit::own_session`]), and those of `exec`'d processes.
    session: Option<u32>,
}

fn pidns_of(pid: &str) -> Option<u64> {
    use std::os::unix::fs::MetadataExt;
    fs::metadata(format!("/proc/{pid}/ns/pid"))
        .ok()
        .map(|m| m.ino())
}

fn cgroups_of(pid: &str) -> Vec<(String, String)> {
    fs::read_to_string(format!("/proc/{pid}/cgroup"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let (hier, path) = l.rsplit_once(':')?;
            Some((hier.to_owned(), path.to_owned()))
        })
        .collect()
}

impl Members {
    pub fn of(init: i32, state_dir: &Path) -> Self {
        let own = pidns_of("self");
        let pidns = pidns_of(&init.to_string()).filter(|ns| Some(*ns) != own);
        let cgroups = cgroups_of(&init.to_string())
            .into_iter()
            .filter(|(_, p)| p != "/")
            .collect();
        Members {
            init,
            tenants: state_dir.join(TENANTS_FILE),
            pidns,
            cgroups,
            session: None,
        }
    }

    /// Whether the process that made record `f` is the container's: its
    /// session is one of the container's own (it may have exited), or its
    /// pid is the container's now.
    fn made(&self, f: &Fields) -> bool {
        let ses = f.get("ses").and_then(|s| s.parse::<u32>().ok());
        if ses.is_some() && ses == self.session {
            return true;
        }
        f.get("pid")
            .and_then(|p| p.parse().ok())
            .is_some_and(|p| self.contains(p))
            || ses.is_some_and(|s| self.is_tenant(&format!("ses {s}")))
    }

    /// Whether `pid` is the container's now.
    pub fn contains(&self, pid: i32) -> bool {
        if pid == self.init {
            return true;
        }
        let p = pid.to_string();
        if let Some(ns) = self.pidns {
            return pidns_of(&p) == Some(ns) || self.is_tenant(&p);
        }
        if self.cgroups.is_empty() {
            return false;
        }
        let theirs = cgroups_of(&p);
        self.cgroups.iter().all(|(hier, path)| {
            theirs
                .iter()
                .any(|(h, q)| h == hier && (q == path || q.starts_with(&format!("{path}/"))))
        }) || self.is_tenant(&p)
    }

    /// `exec` writes the pid before it waits for the process, so a process
    /// already reaped when its record is read is found here; a process not
    /// yet reaped is still found through /proc above.
    fn is_tenant(&self, pid: &str) -> bool {
        fs::read_to_string(&self.tenants).is_ok_and(|t| t.lines().any(|l| l == pid))
    }
}

/// Record a process added with `exec` as the container's, for the
/// supervisor that is collecting its refusals (see [`Members`]): its pid,
/// and the audit session `exec` gave it (its children's records carry it).
pub fn add_tenant(state_dir: &Path, pid: i32, session: Option<u32>) -> std::io::Result<()> {
    let mut lines = format!("{pid}\n");
    if let Some(s) = session {
        lines.push_str(&format!("ses {s}\n"));
    }
    fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(state_dir.join(TENANTS_FILE))?
        .write_all(lines.as_bytes())
}

// ---------------------------------------------------------------------------
// The collector

/// The denials duty, set up in `create` before the container starts so that
/// no record of its first instruction is missed.
pub struct Duty {
    pub socket: Socket,
    /// flock'ed by `create`; the supervisor holds it until its last write
    /// (kept for the lock, never read). A plain file, not nix's `Flock`:
    /// that one unlocks on drop, and the parent's copy is dropped right
    /// after the fork while the supervisor's must keep the lock.
    #[allow(dead_code)]
    pub lock: fs::File,
    pub policy: Policy,
    /// Whether Landlock records can come (kernel audit enabled).
    pub landlock: bool,
    /// The kernel's count of lost records when the container was created.
    pub lost_before: Option<u32>,
    /// The audit session the container has to itself, if `create` got one.
    pub session: Option<u32>,
}

impl Duty {
    /// Set up in `create`, before the container runs: the reader socket
    /// (joined now so the first denial is not missed), the kernel's audit
    /// switch as the operator allows, and the report's lock. `None`, with
    /// one warning naming why, when no report can be made.
    pub fn prepare(
        id: &str,
        state_dir: &Path,
        mode: super::audit::Mode,
        policy: Policy,
    ) -> Option<Duty> {
        use super::audit::Mode;
        let unavailable = |why: &str| {
            tracing::warn!(
                id,
                "denial reports are unavailable for this container: {why}"
            );
            None
        };
        if mode == Mode::Off {
            return None;
        }
        let socket = match Socket::reader() {
            Ok(s) => s,
            Err(e) if e.raw_os_error() == Some(libc::EPERM) => {
                return unavailable(
                    "reading kernel audit records needs CAP_AUDIT_READ (run as root)",
                )
            }
            Err(e) => return unavailable(&format!("cannot join the kernel audit log group: {e}")),
        };
        let status = Socket::control().and_then(|c| c.status().map(|s| (c, s)));
        let lost_before = status.as_ref().ok().map(|(_, s)| s.lost);
        let landlock = match (status, mode) {
            (Ok((_, s)), _) if s.enabled != 0 => true,
            (Ok((control, _)), Mode::Enable) => match control.set_enabled(1) {
                Ok(()) => {
                    tracing::info!(
                        id,
                        "enabled kernel auditing for denial reports (--audit=enable)"
                    );
                    true
                }
                Err(e) => {
                    return unavailable(&format!(
                        "kernel auditing is off and enabling it failed ({e}; needs CAP_AUDIT_CONTROL)"
                    ))
                }
            },
            // No collector at all then (no fork, no drain wait): only
            // seccomp kill verdicts would come, and the one warning says
            // reports are off.
            (Ok(_), _) => {
                return unavailable(
                    "kernel auditing is off (audit_enabled=0), so refusals leave no record; let sandboy enable it with --audit=enable or SANDBOY_AUDIT=enable",
                )
            }
            (Err(e), _) => {
                return unavailable(&format!("cannot read the kernel audit status: {e}"))
            }
        };
        let lock = report_lock(state_dir)?;
        Some(Duty {
            socket,
            lock,
            policy,
            landlock,
            lost_before,
            session: None,
        })
    }
}

/// The report's lock, taken (see [`Duty::lock`]).
fn report_lock(state_dir: &Path) -> Option<fs::File> {
    let lock = fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .open(state_dir.join(LOCK_FILE))
        .ok()?;
    // SAFETY: flock on an fd we own; the lock belongs to the open file
    // description, shared with the supervisor after the fork.
    if unsafe {
        libc::flock(
            std::os::fd::AsRawFd::as_raw_fd(&lock),
            libc::LOCK_EX | libc::LOCK_NB,
        )
    } != 0
    {
        return None;
    }
    Some(lock)
}

impl std::fmt::Debug for Duty {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Duty")
            .field("landlock", &self.landlock)
            .finish()
    }
}

/// Records of one event (one serial), kept until the event is complete:
/// a Landlock record is logged during the syscall, its SYSCALL and EOE
/// records at the syscall's exit, so other events' records (another
/// container's) can come in between.
struct Event {
    since: Instant,
    records: Vec<Fields>,
}

/// An event without its EOE after this long is complete as it is (a
/// record without syscall context, or the rest was lost).
const EVENT_WAIT: Duration = Duration::from_millis(100);
/// Events kept open at once; beyond, the oldest is completed.
const MAX_OPEN: usize = 1024;

pub struct Collector {
    id: String,
    /// Where the report is kept up to date (`None`: in memory only).
    report: Option<PathBuf>,
    members: Members,
    policy: Policy,
    domains: HashSet<String>,
    pending: std::collections::BTreeMap<u64, Event>,
    seen: HashMap<(String, String, Option<String>), usize>,
    denials: Vec<Denial>,
    /// Refusals beyond [`MAX_DISTINCT`] or [`MAX_REPORT_BYTES`], only
    /// counted.
    overflow: u64,
    /// The report's size so far.
    bytes: usize,
    warned: usize,
    dirty: bool,
    /// A distinct refusal came since the last write (not just a count).
    grew: bool,
    written: Instant,
    /// How long the last write took.
    cost: Duration,
}

impl Collector {
    pub fn new(id: &str, state_dir: &Path, init: i32, policy: Policy) -> Self {
        Collector {
            report: Some(state_dir.join(REPORT_FILE)),
            members: Members::of(init, state_dir),
            policy,
            ..Collector::in_memory(id)
        }
    }

    /// The container's own audit session (see [`Members`]).
    pub fn with_session(mut self, session: Option<u32>) -> Self {
        self.members.session = session;
        self
    }

    /// A collector of refusals [`Collector::record`]ed by other duties
    /// only (no audit records, no state directory): unprivileged wrap's
    /// egress gateway. The report is [`Collector::jsonl`], written by the
    /// caller.
    pub fn in_memory(id: &str) -> Self {
        Collector {
            id: id.to_owned(),
            report: None,
            members: Members {
                init: 0,
                tenants: PathBuf::new(),
                pidns: None,
                cgroups: Vec::new(),
                session: None,
            },
            policy: Policy::default(),
            domains: HashSet::new(),
            pending: Default::default(),
            seen: HashMap::new(),
            denials: Vec::new(),
            overflow: 0,
            bytes: 0,
            warned: 0,
            dirty: false,
            grew: false,
            written: Instant::now(),
            cost: Duration::ZERO,
        }
    }

    /// Take one record from the socket.
    pub fn feed(&mut self, record: &Record) {
        if !matches!(
            record.kind,
            LANDLOCK_ACCESS | LANDLOCK_DOMAIN | SECCOMP | SYSCALL | EOE
        ) {
            return;
        }
        let Some(fields) = parse(record) else {
            return;
        };
        let serial = fields.serial;
        let end = fields.kind == EOE || fields.kind == SECCOMP;
        self.pending
            .entry(serial)
            .or_insert_with(|| Event {
                since: Instant::now(),
                records: Vec::new(),
            })
            .records
            .push(fields);
        if end {
            self.complete(serial);
        }
        while self.pending.len() > MAX_OPEN {
            let oldest = *self.pending.keys().next().expect("not empty");
            self.complete(oldest);
        }
    }

    /// Complete every event open for longer than [`EVENT_WAIT`] (all of
    /// them with `all`).
    fn complete_stale(&mut self, all: bool) {
        let stale: Vec<u64> = self
            .pending
            .iter()
            .filter(|(_, e)| all || e.since.elapsed() >= EVENT_WAIT)
            .map(|(s, _)| *s)
            .collect();
        for serial in stale {
            self.complete(serial);
        }
    }

    /// An event is complete: attribute and decode it.
    fn complete(&mut self, serial: u64) {
        let Some(Event { records, .. }) = self.pending.remove(&serial) else {
            return;
        };
        for d in records.iter().filter(|r| r.kind == LANDLOCK_DOMAIN) {
            let creator = d.get("pid").and_then(|p| p.parse().ok());
            if d.get("status") == Some("allocated")
                && creator.is_some_and(|p| self.members.contains(p))
            {
                if let Some(dom) = d.get("domain") {
                    self.domains.insert(dom.to_owned());
                }
            }
        }
        let syscall = records.iter().find(|r| r.kind == SYSCALL);
        let mut found = Vec::new();
        for r in &records {
            match r.kind {
                LANDLOCK_ACCESS if r.get("domain").is_some_and(|d| self.domains.contains(d)) => {
                    found.extend(decode_landlock(r, syscall, &self.policy));
                }
                SECCOMP if self.members.made(r) && !is_fallback(r, &self.policy.fallbacks) => {
                    found.push(decode_seccomp(r));
                }
                _ => {}
            }
        }
        for d in found {
            self.add(d, true);
        }
    }

    /// A refusal found by another duty (the egress gateway), which has
    /// logged it already.
    pub fn record(&mut self, d: Denial) {
        self.add(d, false);
    }

    fn add(&mut self, mut d: Denial, warn: bool) {
        self.dirty = true;
        if let Some(&i) = self.seen.get(&d.key()) {
            self.denials[i].count += 1;
            return;
        }
        // When the kernel's backlog overflows it drops the SYSCALL record
        // that names the process: such a refusal joins the same refusal of
        // a named process, and a named one completes an unnamed entry.
        let unnamed = (d.kind.clone(), d.target.clone(), None);
        if d.comm.is_none() {
            if let Some(i) = self
                .denials
                .iter()
                .position(|x| (&x.kind, &x.target) == (&d.kind, &d.target))
            {
                self.denials[i].count += 1;
                return;
            }
        } else if let Some(i) = self.seen.remove(&unnamed) {
            let entry = &mut self.denials[i];
            d.count = entry.count + 1;
            *entry = d;
            self.seen.insert(entry.key(), i);
            return;
        }
        let line = serde_json::to_string(&d).map_or(0, |l| l.len() + 1);
        if self.denials.len() >= MAX_DISTINCT || self.bytes + line > MAX_REPORT_BYTES {
            self.overflow += 1;
            return;
        }
        if warn {
            self.warn(&d);
        }
        self.bytes += line;
        self.grew = true;
        self.seen.insert(d.key(), self.denials.len());
        self.denials.push(d);
    }

    fn warn(&mut self, d: &Denial) {
        self.warned += 1;
        let id = self.id.as_str();
        if self.warned < MAX_WARNINGS {
            tracing::warn!(
                id,
                kind = %d.kind,
                target = %d.target,
                pid = d.pid,
                comm = d.comm.as_deref().unwrap_or("?"),
                allow = d.allow.as_deref().unwrap_or("nothing may relax this rule"),
                "refused: {} {} ({})",
                d.kind,
                d.target,
                d.blocker
            );
        } else if self.warned == MAX_WARNINGS {
            tracing::warn!(
                id,
                "further refusals are not logged one by one; they are in {}",
                self.report
                    .as_ref()
                    .map_or("the report".into(), |r| r.display().to_string())
            );
        }
    }

    /// Rewrite the report if it changed and the last write is old enough
    /// (see [`WRITE_EVERY`]).
    pub fn tick(&mut self) {
        self.complete_stale(false);
        let every = if self.grew { WRITE_EVERY } else { COUNTS_EVERY };
        if self.dirty && self.written.elapsed() >= every.max(self.cost * WRITE_SHARE) {
            self.write();
        }
    }

    /// Write the report now (0600, replaced whole so readers never see a
    /// half-written one).
    pub fn write(&mut self) {
        self.dirty = false;
        self.grew = false;
        self.written = Instant::now();
        let Some(report) = &self.report else {
            return;
        };
        let text = self.jsonl();
        let tmp = report.with_extension("jsonl.tmp");
        let written = fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&tmp)
            .and_then(|mut f| f.write_all(text.as_bytes()))
            .and_then(|()| fs::rename(&tmp, report));
        if let Err(e) = written {
            // The state directory is gone: the container was deleted.
            let _ = fs::remove_file(&tmp);
            tracing::debug!(id = %self.id, error = %e, "denial report not written");
        }
        self.cost = self.written.elapsed();
    }

    /// The report's text: one JSON object a line (SPEC §8).
    pub fn jsonl(&self) -> String {
        let mut text = String::new();
        for d in &self.denials {
            text.push_str(&serde_json::to_string(d).expect("plain data serializes"));
            text.push('\n');
        }
        text
    }

    /// The distinct refusals so far.
    pub fn denials(&self) -> &[Denial] {
        &self.denials
    }

    /// At exit: the last event, the final report, and the overflow count.
    /// `lost_before`: the kernel's lost-record count at create; records lost
    /// since (the audit backlog overflowed, a loop of denials) make the
    /// counts lower bounds, which the log says.
    pub fn finish(&mut self, lost_before: Option<u32>) {
        self.complete_stale(true);
        let lost_now = Socket::control().and_then(|c| c.status()).ok();
        if let (Some(before), Some(now)) = (lost_before, lost_now) {
            // Also with an empty report: a flood (anyone's) that fills the
            // backlog can drop this container's only refusal, or the
            // record of its Landlock domain and with it every later one;
            // "no refusal" must not read as certain then.
            if now.lost > before {
                tracing::warn!(
                    id = %self.id,
                    lost = now.lost - before,
                    backlog_limit = now.backlog_limit,
                    reported = self.denials.len(),
                    "the kernel dropped audit records while this container ran (node-wide count; audit backlog full): its report may miss refusals, and its counts are lower bounds"
                );
            }
        }
        if self.overflow > 0 {
            tracing::warn!(id = %self.id, dropped = self.overflow, "more distinct refusals than the report holds ({MAX_DISTINCT}, {MAX_REPORT_BYTES} bytes); the report holds the first ones");
        }
        if self.dirty {
            self.write();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(kind: u16, text: &str) -> Record {
        Record {
            kind,
            text: text.into(),
        }
    }

    // Records captured on this host (6.18) from a Landlock-confined process
    // and a seccomp-killed probe.
    const READ: &str = r#"audit(1796125375.965:56): domain=175a628fe blockers=fs.read_file path="/etc/passwd" dev="vda" ino=737"#;
    const DOMAIN: &str = r#"audit(1796125375.965:56): domain=175a628fe status=allocated mode=enforcing pid=14038 uid=0 exe="/tmp/denial-exp/ll" comm="ll""#;
    const SYSCALL_READ: &str = r#"audit(1796125375.965:56): arch=c000003e syscall=257 success=no exit=-13 a0=ffffff9c a1=55f28227a01c a2=0 a3=0 items=0 ppid=13830 pid=14038 auid=4294967295 uid=0 gid=0 euid=0 suid=0 fsuid=0 egid=0 sgid=0 fsgid=0 tty=(none) ses=4294967295 comm="ll" exe="/tmp/denial-exp/ll" key=(null)"#;
    const KILL: &str = r#"audit(1796124830.237:31): auid=4294967295 uid=0 gid=0 ses=4294967295 pid=12062 comm="probe" exe="/bin/probe" sig=31 arch=c000003e syscall=101 compat=0 ip=0x43b5f9 code=0x80000000"#;

    #[test]
    fn a_guard_s_enosys_nudge_to_the_older_call_is_no_refusal() {
        // As this host's kernel logs an ERRNO verdict: the action without
        // its errno (the spec's clone3 rule said ENOSYS).
        let clone3 = KILL.replace("syscall=101", "syscall=435");
        let nudge = clone3.replace("code=0x80000000", "code=0x50000");
        let guarded = ["clone3".to_owned()];
        assert!(is_fallback(&parse(&rec(1326, &nudge)).unwrap(), &guarded));
        // A profile that refuses clone3 otherwise has no fallback for it,
        // and a kill of it is a refusal whatever the profile.
        assert!(!is_fallback(&parse(&rec(1326, &nudge)).unwrap(), &[]));
        assert!(!is_fallback(&parse(&rec(1326, &clone3)).unwrap(), &guarded));
        // An ERRNO verdict on another call is reported.
        let other = KILL.replace("code=0x80000000", "code=0x50000");
        assert!(!is_fallback(&parse(&rec(1326, &other)).unwrap(), &guarded));
    }

    #[test]
    fn the_summary_never_sends_control_characters_to_the_terminal() {
        let d = Denial {
            kind: "read".into(),
            target: "/data/\u{1b}]0;x\u{7}é".into(),
            pid: None,
            comm: None,
            exe: None,
            allow: None,
            count: 1,
            blocker: "fs.read_file".into(),
            syscall: None,
        };
        assert_eq!(d.short(), "read /data/\\u{1b}]0;x\\u{7}é");
    }

    #[test]
    fn parses_quoted_bare_and_hex_values() {
        let f = parse(&rec(1423, READ)).unwrap();
        assert_eq!(f.serial, 56);
        assert_eq!(f.get("path"), Some("/etc/passwd"));
        assert_eq!(f.get("ino"), Some("737"));
        let hex = parse(&rec(
            1423,
            "audit(1.2:3): domain=1 blockers=scope.abstract_unix_socket path=00666F6F",
        ))
        .unwrap();
        assert_eq!(hex.get("path"), Some("@foo"));
        let spaced = parse(&rec(1423, "audit(1.2:3): path=2F612062 ino=12")).unwrap();
        assert_eq!(spaced.get("path"), Some("/a b"));
        assert_eq!(spaced.get("ino"), Some("12"));
    }

    #[test]
    fn decodes_a_landlock_read_with_its_process() {
        let a = parse(&rec(1423, READ)).unwrap();
        let s = parse(&rec(1300, SYSCALL_READ)).unwrap();
        let d = decode_landlock(&a, Some(&s), &Policy::default()).unwrap();
        assert_eq!(d.kind, "read");
        assert_eq!(d.target, "/etc/passwd");
        assert_eq!(d.pid, Some(14038));
        assert_eq!(d.comm.as_deref(), Some("ll"));
        assert_eq!(d.syscall.as_deref(), Some("openat"));
        assert_eq!(
            d.allow.as_deref(),
            Some(r#"add "/etc/passwd" to [fs] read"#)
        );
        let hidden = Policy {
            hidden: vec!["/etc".into()],
            ..Policy::default()
        };
        assert_eq!(decode_landlock(&a, Some(&s), &hidden).unwrap().allow, None);
        // An execve refused both rights is one exec refusal.
        let exec = parse(&rec(
            1423,
            r#"audit(1.2:3): domain=1 blockers=fs.execute,fs.read_file path="/data/x" dev="vda" ino=1"#,
        ))
        .unwrap();
        let d = decode_landlock(&exec, None, &Policy::default()).unwrap();
        assert_eq!(
            (d.kind.as_str(), d.blocker.as_str()),
            ("exec", "fs.execute")
        );
    }

    #[test]
    fn decodes_a_signal_scope_refusal() {
        // Captured: kill(1, 0) from a signal-scoped domain on the host.
        let f = parse(&rec(
            1423,
            r#"audit(1796125375.965:60): domain=175a628fe blockers=scope.signal opid=1 ocomm="process_api""#,
        ))
        .unwrap();
        let d = decode_landlock(&f, None, &Policy::default()).unwrap();
        assert_eq!(d.kind, "signal");
        assert_eq!(d.target, "pid 1 (process_api)");
        assert_eq!(
            d.allow.as_deref(),
            Some(r#"remove "signal" from [net] scope"#)
        );
    }

    #[test]
    fn decodes_a_seccomp_kill_of_a_default_deny_syscall() {
        let d = decode_seccomp(&parse(&rec(1326, KILL)).unwrap());
        assert_eq!(d.kind, "syscall");
        assert_eq!(d.target, "ptrace");
        assert_eq!(d.blocker, "seccomp.kill");
        assert_eq!(
            d.allow.as_deref(),
            Some(r#"remove "ptrace" from the default deny with [syscalls] allow = ["ptrace"]"#)
        );
    }

    #[test]
    fn the_report_has_a_size_as_well_as_a_count() {
        let mut c = Collector::in_memory("t");
        let long = "a".repeat(3800);
        for i in 0..2000 {
            c.record(Denial {
                kind: "read".into(),
                target: format!("/deep/{long}/f{i:05}"),
                pid: Some(7),
                comm: Some("opn".into()),
                exe: None,
                allow: None,
                count: 1,
                blocker: "fs.read_file".into(),
                syscall: None,
            });
        }
        let text = c.jsonl();
        assert!(text.len() <= MAX_REPORT_BYTES, "{}", text.len());
        assert!(c.denials().len() > 1000 && c.denials().len() < 2000);
        assert_eq!(c.overflow as usize + c.denials().len(), 2000);
    }

    #[test]
    fn keeps_only_domains_its_init_created() {
        let dir = std::env::temp_dir().join(format!("denials-unit-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        // Our "init" is this test process; the captured domain's creator
        // (14038) is someone else's.
        let me = std::process::id() as i32;
        let mut c = Collector::new("t", &dir, me, Policy::default());
        for (k, t) in [(1423, READ), (1424, DOMAIN), (1300, SYSCALL_READ)] {
            c.feed(&rec(k, t));
        }
        c.feed(&rec(1320, "audit(1796125375.965:56): "));
        assert!(c.denials.is_empty());
        let ours = DOMAIN.replace("pid=14038", &format!("pid={me}"));
        for (k, t) in [(1423, READ), (1424, ours.as_str()), (1300, SYSCALL_READ)] {
            c.feed(&rec(k, &t.replace(":56)", ":57)")));
        }
        c.feed(&rec(1320, "audit(1796125375.965:57): "));
        // Another event's records in between this one's.
        c.feed(&rec(1423, &READ.replace(":56)", ":58)")));
        c.feed(&rec(
            1423,
            &READ.replace(":56)", ":59)").replace("175a628fe", "99"),
        ));
        c.feed(&rec(1300, &SYSCALL_READ.replace(":56)", ":58)")));
        c.finish(None);
        assert_eq!(c.denials.len(), 1);
        assert_eq!(c.denials[0].count, 2);
        assert_eq!(c.denials[0].comm.as_deref(), Some("ll"));
        let back = read_report(&dir.join(REPORT_FILE));
        assert_eq!(back, c.denials);
        fs::remove_dir_all(&dir).unwrap();
    }
}
