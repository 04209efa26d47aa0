//! Kernel-facing property test (#19): random Landlock rulesets — fs rules
//! on existing directories, a file and missing paths, named and raw
//! rights (raw bits no kernel knows included), TCP port lists, scopes, the
//! three modes — are prepared and applied in a forked child, which then
//! probes what the ruleset grants and what it does not. The parent checks
//! each outcome against a model of the kernel's ABI:
//!
//! * `enforce`: the ruleset applies exactly (every probe as granted), or it
//!   is refused naming the first unsupported right and the ABIs, or the
//!   first rule path that cannot be opened;
//! * `best-effort`: it applies, with exactly one warn event per dropped
//!   right and per skipped path;
//! * `off`: nothing is applied;
//! * never a panic, and never an unconfined child: an access no rule
//!   grants always fails with EACCES.
//!
//! `harness = false` (fork in a single-threaded process). Cases:
//! `SANDBOY_LANDLOCK_CASES` (default 128), seeded by
//! `SANDBOY_LANDLOCK_SEED` for a rerun; a failure prints the ruleset.

use std::fs;
use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, SocketAddrV4, TcpListener, TcpStream};
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestRng, TestRunner};
use sandboy_confine::landlock;
use sandboy_spec_gen::annotations::{
    access_bits, Access, FsRule, LandlockMode, LandlockRuleset, NetRules, Scope, ACCESS_NAMES,
    FS_FILE_RIGHTS,
};

const DIRS: usize = 3;
/// Ports the rulesets list and the child probes (loopback only).
const PORTS: std::ops::Range<u16> = 47310..47316;
const WRITE_FILE: u64 = 1 << 1;
const READ_FILE: u64 = 1 << 2;
const READ_DIR: u64 = 1 << 3;
const MAKE_REG: u64 = 1 << 8;

/// Where the rules point: fixture directories, a file, or nothing.
#[derive(Debug, Clone, Copy)]
enum Target {
    Dir(usize),
    File,
    Missing,
}

fn target() -> impl Strategy<Value = Target> {
    prop_oneof![
        4 => (0..DIRS).prop_map(Target::Dir),
        1 => Just(Target::File),
        1 => Just(Target::Missing),
    ]
}

/// A right: a name (groups included), raw known bits, or a raw bit no
/// kernel knows (1<<40..1<<47).
fn access() -> impl Strategy<Value = Access> {
    prop_oneof![
        6 => (0..ACCESS_NAMES.len()).prop_map(|i| Access::Named(ACCESS_NAMES[i].0.to_owned())),
        2 => (1u64..0x10000).prop_map(Access::Raw),
        1 => (40u32..48).prop_map(|b| Access::Raw(1 << b)),
    ]
}

fn ports() -> impl Strategy<Value = Vec<u16>> {
    prop::collection::vec(PORTS, 0..4)
}

/// A ruleset over targets; paths are filled in per run (see `Fixture`).
/// A generated ruleset before its targets become paths.
type Drawn = (
    LandlockMode,
    Vec<(Target, Vec<Access>)>,
    Option<NetRules>,
    Vec<Scope>,
);

fn ruleset() -> impl Strategy<Value = Drawn> {
    let mode = prop_oneof![
        3 => Just(LandlockMode::Enforce),
        3 => Just(LandlockMode::BestEffort),
        1 => Just(LandlockMode::Off),
    ];
    let rules = prop::collection::vec((target(), prop::collection::vec(access(), 1..4)), 0..5);
    let net =
        prop::option::of((ports(), ports()).prop_map(|(connect, bind)| NetRules { connect, bind }));
    let scope = prop::sample::subsequence(vec![Scope::AbstractUnixSocket, Scope::Signal], 0..=2);
    (mode, rules, net, scope)
}

/// The scratch tree: `d0..d2/f`, a file `ff`, `untouched/f` (never a
/// rule path: the proof of confinement), and a missing path.
struct Fixture {
    root: PathBuf,
}

impl Fixture {
    fn new() -> Self {
        let root = std::env::temp_dir().join(format!("sandboy-ll-props-{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        for d in (0..DIRS)
            .map(|i| format!("d{i}"))
            .chain(["untouched".into()])
        {
            fs::create_dir_all(root.join(&d)).unwrap();
            fs::write(root.join(&d).join("f"), "x").unwrap();
        }
        fs::write(root.join("ff"), "x").unwrap();
        Fixture { root }
    }

    fn path(&self, t: Target) -> PathBuf {
        match t {
            Target::Dir(i) => self.root.join(format!("d{i}")),
            Target::File => self.root.join("ff"),
            Target::Missing => self.root.join("missing"),
        }
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.root);
    }
}

/// Counts warn events (the best-effort downgrade reports).
struct Warns(Arc<AtomicUsize>);

impl tracing::Subscriber for Warns {
    fn enabled(&self, m: &tracing::Metadata<'_>) -> bool {
        *m.level() <= tracing::Level::WARN
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, e: &tracing::Event<'_>) {
        if *e.metadata().level() == tracing::Level::WARN {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

/// The probes, in order: (name, allowed?) as the child saw them.
fn probes(fx: &Fixture, abstract_addr: &SocketAddr, n: usize) -> Vec<(String, bool)> {
    let mut out = Vec::new();
    let denied = |r: io::Result<()>| match r {
        Ok(()) => false,
        Err(e) => matches!(e.raw_os_error(), Some(libc::EACCES) | Some(libc::EPERM)),
    };
    for i in 0..DIRS {
        let d = fx.root.join(format!("d{i}"));
        out.push((
            format!("d{i} read_file"),
            !denied(fs::File::open(d.join("f")).map(drop)),
        ));
        let w = fs::OpenOptions::new()
            .write(true)
            .open(d.join("f"))
            .map(drop);
        out.push((format!("d{i} write_file"), !denied(w)));
        out.push((
            format!("d{i} read_dir"),
            !denied(fs::read_dir(&d).map(drop)),
        ));
        out.push((
            format!("d{i} make_reg"),
            !denied(mknod(&d.join(format!("new{n}")))),
        ));
    }
    let ff = fx.root.join("ff");
    out.push((
        "ff read_file".into(),
        !denied(fs::File::open(&ff).map(drop)),
    ));
    let w = fs::OpenOptions::new().write(true).open(&ff).map(drop);
    out.push(("ff write_file".into(), !denied(w)));
    let u = fs::File::open(fx.root.join("untouched/f")).map(drop);
    out.push(("untouched read_file".into(), !denied(u)));
    for p in PORTS {
        let a = SocketAddrV4::new(Ipv4Addr::LOCALHOST, p);
        out.push((
            format!("connect {p}"),
            !denied(TcpStream::connect(a).map(drop)),
        ));
        let b = match TcpListener::bind(a) {
            Err(e) if e.kind() == io::ErrorKind::AddrInUse => Ok(()),
            r => r.map(drop),
        };
        out.push((format!("bind {p}"), !denied(b)));
    }
    // SAFETY: signal 0 to our parent only checks permission.
    let sig = unsafe { libc::kill(libc::getppid(), 0) } == 0;
    out.push(("signal parent".into(), sig));
    let unix = UnixStream::connect_addr(abstract_addr).map(drop);
    out.push(("abstract unix".into(), !denied(unix)));
    out
}

/// A regular file made with mknod: only `make_reg` (an open with O_CREAT
/// for writing also needs `write_file`).
fn mknod(path: &Path) -> io::Result<()> {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: c is a valid NUL-terminated path; no other memory involved.
    if unsafe { libc::mknod(c.as_ptr(), libc::S_IFREG | 0o600, 0) } == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// What the model says each probe must be.
fn expected(fx: &Fixture, rs: &LandlockRuleset, known: u64) -> Vec<(String, bool)> {
    let granted = |t: Target| {
        rs.fs
            .iter()
            .filter(|r| Path::new(&r.path) == fx.path(t))
            .map(|r| bits(r) & known)
            .fold(0, |a, b| a | b)
    };
    let mut out = Vec::new();
    for i in 0..DIRS {
        let g = granted(Target::Dir(i));
        out.push((format!("d{i} read_file"), g & READ_FILE != 0));
        out.push((format!("d{i} write_file"), g & WRITE_FILE != 0));
        out.push((format!("d{i} read_dir"), g & READ_DIR != 0));
        out.push((format!("d{i} make_reg"), g & MAKE_REG != 0));
    }
    let g = granted(Target::File) & FS_FILE_RIGHTS;
    out.push(("ff read_file".into(), g & READ_FILE != 0));
    out.push(("ff write_file".into(), g & WRITE_FILE != 0));
    out.push(("untouched read_file".into(), false));
    for p in PORTS {
        let net = rs.net.as_ref();
        out.push((
            format!("connect {p}"),
            net.is_none_or(|n| n.connect.contains(&p)),
        ));
        out.push((format!("bind {p}"), net.is_none_or(|n| n.bind.contains(&p))));
    }
    out.push(("signal parent".into(), !rs.scope.contains(&Scope::Signal)));
    out.push((
        "abstract unix".into(),
        !rs.scope.contains(&Scope::AbstractUnixSocket),
    ));
    out
}

fn bits(r: &FsRule) -> u64 {
    r.access
        .iter()
        .map(|a| access_bits(a).unwrap())
        .fold(0, |a, b| a | b)
}

/// Run the ruleset in a forked child; its report (see `child`).
fn in_child(rs: &LandlockRuleset, fx: &Fixture, addr: &SocketAddr, n: usize) -> String {
    let mut fds = [0; 2];
    // SAFETY: fds is a live array of two ints for pipe2 to fill.
    assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
    // SAFETY: both fds are fresh and owned here.
    let (r, w) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    // SAFETY: single-threaded process (harness = false); the child only
    // runs `child` and then `_exit`s.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork: {}", io::Error::last_os_error());
    if pid == 0 {
        drop(r);
        let report =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| child(rs, fx, addr, n)))
                .unwrap_or_else(|_| "PANIC".into());
        let _ = fs::File::from(w).write_all(report.as_bytes());
        // SAFETY: ends the child without the parent's atexit handlers.
        unsafe { libc::_exit(0) };
    }
    drop(w);
    let mut report = String::new();
    fs::File::from(r).read_to_string(&mut report).unwrap();
    let mut status = 0;
    // SAFETY: pid is our child; status is a live int.
    assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
    report
}

/// `REFUSED <error>`, `OFF`, or `APPLIED <warns>` and one probe per line.
fn child(rs: &LandlockRuleset, fx: &Fixture, addr: &SocketAddr, n: usize) -> String {
    // SAFETY: PR_SET_NO_NEW_PRIVS takes no pointers.
    unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) };
    let warns = Arc::new(AtomicUsize::new(0));
    let prepared =
        tracing::subscriber::with_default(Warns(warns.clone()), || landlock::prepare(rs));
    match prepared {
        Err(e) => format!("REFUSED {e}"),
        Ok(None) => "OFF".into(),
        Ok(Some(p)) => {
            if let Err(e) = p.restrict_self() {
                return format!("RESTRICT-FAILED {e}");
            }
            let mut out = format!("APPLIED {}\n", warns.load(Ordering::Relaxed));
            for (name, ok) in probes(fx, addr, n) {
                out.push_str(&format!("{name}={ok}\n"));
            }
            out
        }
    }
}

fn check(
    fx: &Fixture,
    addr: &SocketAddr,
    listener: &UnixListener,
    rs: &LandlockRuleset,
    n: usize,
    abi: i32,
) -> Result<(), String> {
    let known = landlock::known_fs_rights(abi);
    let report = in_child(rs, fx, addr, n);
    // Drain the abstract socket's backlog and the files the child made.
    while listener.accept().is_ok() {}
    for i in 0..DIRS {
        let _ = fs::remove_file(fx.root.join(format!("d{i}/new{n}")));
    }
    let union = rs.fs.iter().map(bits).fold(0, |a, b| a | b);
    let unknown = union & !known;
    // A rule that still grants something once unknown bits are dropped
    // and whose path cannot be opened.
    let missing = rs
        .fs
        .iter()
        .position(|r| bits(r) & known != 0 && !Path::new(&r.path).exists());
    let enforce = rs.mode == LandlockMode::Enforce;
    if rs.mode == LandlockMode::Off {
        return (report == "OFF")
            .then_some(())
            .ok_or(format!("mode off: {report}"));
    }
    if enforce && unknown != 0 {
        let bit = unknown.trailing_zeros();
        let names = report.starts_with("REFUSED")
            && report.contains(&format!("raw access bit 1<<{bit} is not supported"))
            && report.contains(&format!("this kernel offers ABI {abi}"));
        return names.then_some(()).ok_or(format!(
            "want a refusal naming 1<<{bit} and ABI {abi}: {report}"
        ));
    }
    if enforce {
        if let Some(i) = missing {
            let names =
                report.starts_with("REFUSED") && report.contains(&format!("fs[{i}]: cannot open"));
            return names
                .then_some(())
                .ok_or(format!("want a refusal naming fs[{i}]: {report}"));
        }
    }
    let Some(rest) = report.strip_prefix("APPLIED ") else {
        return Err(format!("want the ruleset applied: {report}"));
    };
    let mut lines = rest.lines();
    let warns: usize = lines
        .next()
        .unwrap_or("")
        .parse()
        .map_err(|_| report.clone())?;
    let want_warns = if enforce {
        0
    } else {
        unknown.count_ones() as usize
            + rs.fs
                .iter()
                .filter(|r| bits(r) & known != 0 && !Path::new(&r.path).exists())
                .count()
    };
    if warns != want_warns {
        return Err(format!("{warns} warn events, want {want_warns}"));
    }
    let seen: Vec<(String, bool)> = lines
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_owned(), v == "true"))
        .collect();
    let want = expected(fx, rs, known);
    let wrong: Vec<String> = want
        .iter()
        .zip(&seen)
        .filter(|(w, s)| w != s)
        .map(|((name, w), (_, s))| format!("{name}: allowed={s}, want {w}"))
        .collect();
    if seen.len() != want.len() || !wrong.is_empty() {
        return Err(format!(
            "probes differ: {wrong:?} ({} of {} seen)",
            seen.len(),
            want.len()
        ));
    }
    Ok(())
}

fn main() {
    let abi = landlock::abi_version();
    if abi < 6 {
        sandboy_tests::skip(
            "landlock_props",
            &format!("Landlock ABI 6 needed (scopes), kernel has {abi}"),
        );
        return;
    }
    let cases: u32 = std::env::var("SANDBOY_LANDLOCK_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(128);
    let seed: u64 = std::env::var("SANDBOY_LANDLOCK_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(19);
    let fx = Fixture::new();
    let name = format!("sandboy-ll-props-{}", std::process::id());
    let addr = SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
    let listener = UnixListener::bind_addr(&addr).unwrap();
    listener.set_nonblocking(true).unwrap();
    let mut seed_bytes = [0u8; 32];
    seed_bytes[..8].copy_from_slice(&seed.to_le_bytes());
    let config = Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    };
    let mut runner = TestRunner::new_with_rng(
        config,
        TestRng::from_seed(RngAlgorithm::ChaCha, &seed_bytes),
    );
    let n = AtomicUsize::new(0);
    let strategy = ruleset().prop_map(|(mode, rules, net, scope)| LandlockRuleset {
        mode,
        fs: rules
            .into_iter()
            .map(|(t, access)| FsRule {
                path: fx.path(t).display().to_string(),
                access,
            })
            .collect(),
        net,
        scope,
    });
    let result = runner.run(&strategy, |rs| {
        let i = n.fetch_add(1, Ordering::Relaxed);
        check(&fx, &addr, &listener, &rs, i, abi).map_err(|e| {
            TestCaseError::fail(format!(
                "{e}\nruleset: {}",
                serde_json::to_string(&rs).unwrap()
            ))
        })
    });
    match result {
        Ok(()) => println!(
            "landlock_props: {cases} random rulesets (seed {seed}, ABI {abi}) applied as modelled"
        ),
        Err(e) => {
            eprintln!("landlock_props FAILED (seed {seed}): {e}");
            std::process::exit(1);
        }
    }
}
