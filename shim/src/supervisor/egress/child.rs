//! The gateway's own process. The gateway parses what the container sends
//! (HTTP request heads, DNS queries, TLS ClientHellos), so a parser bug is
//! reachable from inside; the supervisor, which must stay root (the
//! deadline kill, the audit reader, the client lookup in root-owned
//! `/proc/<pid>/fd`), forks this process before it starts any thread, and
//! the process drops everything the gateway does not need before it reads
//! a byte (docs/egress.md, "The gateway's process"):
//!
//! * every fd but its sockets and the [`channel`] becomes `/dev/null`;
//! * the capability bounding set is emptied, supplementary groups cleared,
//!   real/effective/saved ids set to `nobody` ([`UID`], [`GID`]), every
//!   capability set cleared (ambient too), `no_new_privs` set, not dumpable
//!   (no ptrace, no core, its `/proc/<pid>/*` root's), killed when the
//!   supervisor dies (set after the id change, which clears it; then the
//!   parent is checked);
//! * Landlock: read-only `/etc` and the library directories (the host
//!   resolver, NSS modules), nothing writable, TCP connect only to the
//!   allowed ports and 53, no bind; abstract UNIX sockets and signals
//!   scoped; seccomp: sandboy's deny list and network guards (a policy
//!   built here, rendered by spec-gen as any policy) and no UNIX sockets;
//! * then it checks that all of it holds (ids, the five capability sets,
//!   no_new_privs, a path no rule grants refused, seccomp on) and only then
//!   serves. Any failure: a warning over the channel and exit; the
//!   container's connections are then refused (fail closed), never served
//!   by root.
//!
//! The supervisor settles the refusals it sends ([`super::Refused::settle`])
//! and kills and reaps it when the container's init exits ([`Gateway`]).

use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Instant;

use caps::CapSet;
use nix::sys::signal::{kill, Signal};
use nix::sys::wait::waitpid;
use nix::unistd::{fork, getpid, getppid, ForkResult, Gid, Pid, Uid};
use sandboy_confine::{CompiledSeccomp, ConfineError, PreparedLandlock};
use sandboy_spec_gen::policy::{Egress, Policy};
use sandboy_spec_gen::{guards, render};

use super::channel::{self, Message, Receiver};
use super::client;
use super::Listeners;
use crate::supervisor::denials::Denial;

/// The gateway's user: `nobody`. It owns nothing on a usual host, and the
/// gateways of different containers cannot reach each other although they
/// share it: not dumpable (no ptrace, its `/proc/<pid>/*` root's), signals
/// and abstract sockets scoped by Landlock, ptrace denied by seccomp.
pub const UID: u32 = 65534;
/// The gateway's group: `nogroup`.
pub const GID: u32 = 65534;
/// Its name in `ps` (and `/proc/<pid>/comm`), taken once it has dropped
/// everything and is confined (before, it is called as its parent).
pub const COMM: &str = "sandboy-egress";
/// Warnings from the gateway logged at most (it is untrusted).
const MAX_WARNINGS: u32 = 32;

/// Directories the host resolver reads: its configuration and the NSS
/// modules glibc loads (those that exist are granted, read-only).
const READ: &[&str] = &["/etc", "/lib", "/lib64", "/usr/lib", "/usr/lib64"];
/// Resolver files that may be symlinks out of /etc (systemd-resolved's
/// stub file): their targets are granted too.
const RESOLVER_FILES: &[&str] = &["/etc/resolv.conf", "/etc/hosts", "/etc/nsswitch.conf"];

/// The confinement as a policy, so spec-gen renders it as any other:
/// own rules below; the default deny list and network guards; UDP for the
/// host resolver's queries (seccomp cannot scope its port).
const POLICY: &str = r#"version = 1
name = "egress-gateway"
[net]
namespace = "host"
udp = [53]
"#;

/// Who the gateway's process becomes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Identity {
    /// Forked by the root supervisor: [`UID`]/[`GID`], no supplementary
    /// group, every capability gone (bounding set included).
    Nobody,
    /// Forked by unprivileged wrap's watchdog: it keeps the caller's ids
    /// (it may not change them) and drops whatever capabilities it has;
    /// confined the same way.
    Caller,
}

/// Why the gateway's process does not serve.
#[derive(Debug, thiserror::Error)]
pub enum DropError {
    #[error("{what}: {source}")]
    Kernel {
        what: &'static str,
        source: std::io::Error,
    },
    #[error("confinement: {0}")]
    Confine(#[from] ConfineError),
    #[error("the built-in confinement policy: {0}")]
    Policy(String),
    #[error("check failed after dropping privileges: {0}")]
    Check(String),
}

fn kernel<E: Into<std::io::Error>>(what: &'static str) -> impl FnOnce(E) -> DropError {
    move |e| DropError::Kernel {
        what,
        source: e.into(),
    }
}

fn caps_err(what: &'static str) -> impl FnOnce(caps::errors::CapsError) -> DropError {
    move |e| DropError::Kernel {
        what,
        source: std::io::Error::other(e.to_string()),
    }
}

/// The gateway's process, as the supervisor sees it.
pub struct Gateway {
    pid: Pid,
    channel: Receiver,
    warnings: u32,
    reaped: bool,
    /// The time client lookups may take.
    lookups: client::Budget,
}

/// Fork the gateway's process for `listeners`, becoming `who`; this
/// process keeps no copy of them. Call while single-threaded, from the
/// thread that will outlive it (the parent death signal follows the
/// thread that forked).
pub fn spawn(rules: Egress, listeners: Listeners, who: Identity) -> std::io::Result<Gateway> {
    let (ours, theirs) = UnixStream::pair()?;
    let channel = Receiver::new(ours)?;
    let supervisor = getpid();
    // SAFETY: the supervisor is single-threaded here (see `supervise`); the
    // child continues as a fresh single-threaded process.
    match unsafe { fork() }? {
        ForkResult::Parent { child } => {
            drop((theirs, listeners));
            Ok(Gateway {
                pid: child,
                channel,
                warnings: 0,
                reaped: false,
                lookups: client::Budget::new(Instant::now()),
            })
        }
        ForkResult::Child => {
            drop(channel);
            serve(rules, listeners, theirs, supervisor, who)
        }
    }
}

/// In the child: drop, confine, check, serve; never returns.
fn serve(rules: Egress, listeners: Listeners, chan: UnixStream, parent: Pid, who: Identity) -> ! {
    let tx = channel::Sender::new(chan);
    let mut keep = listeners.raw_fds();
    keep.push(tx.raw_fd());
    if let Err(e) = neutralise_fds(&keep).and_then(|()| deprivilege(&rules, parent, who)) {
        tx.warn(&format!("the gateway does not serve: {e}"));
        std::process::exit(1);
    }
    // Named only now: a process called so has dropped and is confined.
    if let Ok(name) = std::ffi::CString::new(COMM) {
        let _ = nix::sys::prctl::set_name(&name);
    }
    super::start(rules, listeners, tx);
    loop {
        std::thread::park();
    }
}

/// Every fd but `keep` becomes /dev/null (not closed: the log writer and
/// other owners still hold their numbers, which must not be reused).
fn neutralise_fds(keep: &[RawFd]) -> Result<(), DropError> {
    let fds: Vec<RawFd> = std::fs::read_dir("/proc/self/fd")
        .map_err(kernel("listing /proc/self/fd"))?
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .collect();
    let null = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/null")
        .map_err(kernel("opening /dev/null"))?;
    for fd in fds {
        // Skip the fds to keep, the one just opened, and the directory's
        // (closed already).
        if keep.contains(&fd)
            || fd == null.as_raw_fd()
            || nix::fcntl::fcntl(fd, nix::fcntl::FcntlArg::F_GETFD).is_err()
        {
            continue;
        }
        nix::unistd::dup2(null.as_raw_fd(), fd).map_err(kernel("dup2 of /dev/null"))?;
    }
    Ok(())
}

/// Ids, capabilities, no_new_privs, dumpable, parent death signal,
/// Landlock, seccomp; then the checks.
fn deprivilege(rules: &Egress, parent: Pid, who: Identity) -> Result<(), DropError> {
    // Prepared while the rule paths can still be opened by anyone.
    let (landlock, seccomp) = confinement(rules)?;
    if who == Identity::Nobody {
        caps::clear(None, CapSet::Bounding).map_err(caps_err("emptying the bounding set"))?;
        nix::unistd::setgroups(&[]).map_err(kernel("setgroups([])"))?;
        let (uid, gid) = (Uid::from_raw(UID), Gid::from_raw(GID));
        nix::unistd::setresgid(gid, gid, gid).map_err(kernel("setresgid"))?;
        nix::unistd::setresuid(uid, uid, uid).map_err(kernel("setresuid"))?;
    }
    // The id change cleared permitted and effective; clear all of them
    // anyway (ambient first: it must stay within the others).
    for set in [
        CapSet::Ambient,
        CapSet::Inheritable,
        CapSet::Effective,
        CapSet::Permitted,
    ] {
        caps::clear(None, set).map_err(caps_err("clearing a capability set"))?;
    }
    nix::sys::prctl::set_no_new_privs().map_err(kernel("PR_SET_NO_NEW_PRIVS"))?;
    nix::sys::prctl::set_dumpable(false).map_err(kernel("PR_SET_DUMPABLE"))?;
    // After the id change, which clears it.
    nix::sys::prctl::set_pdeathsig(Signal::SIGKILL).map_err(kernel("PR_SET_PDEATHSIG"))?;
    if getppid() != parent {
        return Err(DropError::Check("the supervisor is gone".into()));
    }
    check_status(who)?;
    landlock.restrict_self()?;
    seccomp.install()?;
    check_confined()
}

/// The Landlock ruleset and seccomp program of the gateway's process.
fn confinement(rules: &Egress) -> Result<(PreparedLandlock, CompiledSeccomp), DropError> {
    let mut policy = Policy::parse(POLICY, "egress-gateway (built in)", Path::new("/"))
        .map_err(|e| DropError::Policy(e.to_string()))?;
    policy.read = read_paths();
    policy.connect = upstream_ports(rules);
    let mut ruleset = render::ruleset(&policy);
    // The filesystem rules are required (Landlock ABI 1; without them it
    // does not serve); the TCP port rules (ABI 4) and scopes (ABI 6) are
    // added where the kernel has them, seccomp holding the rest.
    let abi = sandboy_confine::landlock::abi_version();
    if abi < 4 {
        ruleset.net = None;
    }
    if abi < 6 {
        ruleset.scope.clear();
    }
    let landlock = sandboy_confine::landlock::prepare(&ruleset)?
        .ok_or_else(|| DropError::Check("Landlock is not available".into()))?;
    let mut profile = render::seccomp(&policy);
    let mut syscalls = profile.syscalls().clone().unwrap_or_default();
    syscalls.extend(guards::unix_sockets());
    profile.set_syscalls(Some(syscalls));
    Ok((landlock, sandboy_confine::seccomp::compile(&profile)?))
}

/// [`READ`] that exist, and the resolver files' targets outside them.
fn read_paths() -> Vec<String> {
    let mut out: Vec<String> = READ
        .iter()
        .filter(|p| Path::new(p).exists())
        .map(|p| p.to_string())
        .collect();
    for f in RESOLVER_FILES {
        if let Ok(real) = std::fs::canonicalize(f) {
            if !READ.iter().any(|d| real.starts_with(d)) {
                out.push(real.display().to_string());
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

/// The TCP ports the gateway connects to: the allowed ones (names and
/// address ranges) and 53 (the host resolver over TCP).
pub fn upstream_ports(rules: &Egress) -> Vec<u16> {
    let mut v = rules.ports();
    v.extend(rules.allow_cidr.iter().map(|c| c.port));
    v.push(53);
    v.sort_unstable();
    v.dedup();
    v
}

/// What `/proc/self/status` says, as the host's tools would see it.
fn check_status(who: Identity) -> Result<(), DropError> {
    let status = std::fs::read_to_string("/proc/self/status")
        .map_err(kernel("reading /proc/self/status"))?;
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
            .map(|v| v.split_whitespace().collect::<Vec<_>>().join(" "))
            .unwrap_or_default()
    };
    let (uid, gid) = match who {
        Identity::Nobody => (UID, GID),
        Identity::Caller => (Uid::current().as_raw(), Gid::current().as_raw()),
    };
    let ids = format!("{uid} {uid} {uid} {uid}");
    let gids = format!("{gid} {gid} {gid} {gid}");
    let zero = "0000000000000000";
    let mut want = vec![
        ("Uid", ids.as_str()),
        ("Gid", gids.as_str()),
        ("CapInh", zero),
        ("CapPrm", zero),
        ("CapEff", zero),
        ("CapAmb", zero),
        ("NoNewPrivs", "1"),
    ];
    // Only root may empty the bounding set and the groups.
    if who == Identity::Nobody {
        want.extend([("Groups", ""), ("CapBnd", zero)]);
    }
    for (name, value) in want {
        let got = field(name);
        if got != value {
            return Err(DropError::Check(format!(
                "{name} is {got:?}, not {value:?}"
            )));
        }
    }
    if nix::sys::prctl::get_dumpable().unwrap_or(true) {
        return Err(DropError::Check("the process is still dumpable".into()));
    }
    Ok(())
}

/// Landlock and seccomp in force: a path no rule grants is refused, and
/// the kernel reports a filter.
fn check_confined() -> Result<(), DropError> {
    match std::fs::read_dir("/") {
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {}
        other => {
            return Err(DropError::Check(format!(
                "Landlock does not refuse reading / ({:?})",
                other.map(|_| ())
            )))
        }
    }
    // SAFETY: PR_GET_SECCOMP takes no pointers; it returns the mode.
    let mode = unsafe { libc::prctl(libc::PR_GET_SECCOMP, 0, 0, 0, 0) };
    if mode != 2 {
        return Err(DropError::Check(format!("seccomp mode is {mode}, not 2")));
    }
    Ok(())
}

impl Gateway {
    /// The channel's socket to poll, while the gateway's end is open.
    pub fn fd(&self) -> Option<std::os::fd::BorrowedFd<'_>> {
        self.channel.fd()
    }

    /// Settle what the gateway sent (refusals with their clients in the
    /// network namespace of `init`, to `record`; warnings logged) and ack
    /// each refusal. Notices when the gateway's process ended.
    pub fn pump(&mut self, id: &str, init: i32, mut record: impl FnMut(Denial)) {
        let pid = self.pid.as_raw();
        // A flood of refusals, from the container or a subverted gateway,
        // must not hold the supervisor (its deadline kill) nor spend its
        // CPU: one read of the TCP table and at most one walk of /proc per
        // wake-up, within a budget; past it, refusals lack their client.
        let start = Instant::now();
        let mut clients = client::Lookup::new(init, self.lookups.until(start));
        for m in self.channel.read() {
            match m {
                Message::Refused { seq, refused } => {
                    let who = refused.peer.and_then(|p| clients.find(p));
                    record(refused.settle(id, who));
                    self.channel.ack(seq);
                }
                Message::Warn { message } => {
                    self.warnings += 1;
                    if self.warnings <= MAX_WARNINGS {
                        tracing::warn!(id, gateway = pid, "egress gateway: {message}");
                    }
                }
            }
        }
        self.lookups.spend(start.elapsed());
        if !self.channel.is_open() && !self.reaped {
            // Its end closed: it exited, or it is of no use any more.
            self.reaped = true;
            let _ = kill(self.pid, Signal::SIGKILL);
            let status = waitpid(self.pid, None);
            // Worth a word only while the container still runs (unprivileged
            // wrap's watchdog kills its descendants, this one included, once
            // the step has ended).
            if running(init) {
                tracing::warn!(
                    id,
                    gateway = pid,
                    status = ?status,
                    malformed = self.channel.malformed,
                    "egress gateway: its process ended; the container's connections through it are refused"
                );
            }
        }
    }

    /// The container's init exited: kill and reap the gateway's process,
    /// then settle what it had sent.
    pub fn stop(mut self, id: &str, init: i32, record: impl FnMut(Denial)) {
        if !self.reaped {
            let _ = kill(self.pid, Signal::SIGKILL);
            let _ = waitpid(self.pid, None);
            self.reaped = true;
        }
        self.pump(id, init, record);
        if self.channel.malformed > 0 {
            tracing::warn!(
                id,
                malformed = self.channel.malformed,
                "egress gateway: lines from its process that were not messages were dropped"
            );
        }
    }
}

/// Whether process `pid` exists and has not exited (a zombie has).
fn running(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|st| {
        st.rsplit_once(") ")
            .is_some_and(|(_, rest)| !rest.starts_with(['Z', 'X']))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upstream_ports_are_the_allowed_ones_and_53() {
        let rules = Egress {
            allow: vec![
                sandboy_spec_gen::policy::HostRule::parse("a.example:443").unwrap(),
                sandboy_spec_gen::policy::HostRule::parse("b.example:8080").unwrap(),
            ],
            deny: vec![],
            allow_cidr: vec![sandboy_spec_gen::policy::CidrRule::parse("10.0.0.0/8:5432").unwrap()],
            outside_only: false,
        };
        assert_eq!(upstream_ports(&rules), [53, 443, 5432, 8080]);
    }

    /// The built-in policy parses and renders: Landlock read-only on the
    /// resolver's paths, connect to the upstream ports only, no bind; UDP
    /// open, raw sockets and the deny list refused; UNIX sockets refused.
    #[test]
    fn confinement_policy_renders() {
        let mut policy = Policy::parse(POLICY, "t", Path::new("/")).unwrap();
        policy.read = read_paths();
        policy.connect = vec![53, 443];
        let rs = render::ruleset(&policy);
        assert!(rs.fs.iter().any(|r| r.path == "/etc"));
        assert!(rs.fs.iter().all(|r| r
            .access
            .iter()
            .all(|a| *a == sandboy_spec_gen::annotations::Access::Named("read".into()))));
        let net = rs.net.unwrap();
        assert_eq!((net.connect, net.bind), (vec![53, 443], vec![]));
        let profile = render::seccomp(&policy);
        let names: Vec<String> = profile
            .syscalls()
            .iter()
            .flatten()
            .flat_map(|s| s.names().clone())
            .collect();
        for n in ["ptrace", "unshare", "bpf", "socket", "clone3"] {
            assert!(names.iter().any(|x| x == n), "{n} not in {names:?}");
        }
        assert!(sandboy_confine::seccomp::compile(&profile).is_ok());
    }
}
