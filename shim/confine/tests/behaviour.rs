//! Behavioural tests: each case forks a child that applies a
//! [`Confinement`] and then tries what the confinement must allow or refuse.
//!
//! `harness = false`: cases run one after another in a single-threaded
//! process, so `fork` is safe. Run one case with `cargo test -p
//! sandboy-confine --test behaviour -- NAME`.

use std::collections::HashMap;
use std::ffi::CString;
use std::io;
use std::net::{TcpListener, TcpStream};
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};

use oci_spec::runtime::{LinuxBuilder, LinuxSeccomp, Spec};
use sandboy_confine::{landlock, ConfineError, Confinement};

type CaseResult = Result<(), String>;
type Case = (&'static str, fn() -> CaseResult);

fn spec(landlock: Option<&str>, seccomp: Option<&str>) -> Spec {
    let mut spec = Spec::default();
    if let Some(value) = landlock {
        let mut ann = HashMap::new();
        ann.insert("dev.sandboy.landlock".to_string(), value.to_string());
        spec.set_annotations(Some(ann));
    }
    let mut linux = LinuxBuilder::default().build().expect("linux");
    if let Some(json) = seccomp {
        let profile: LinuxSeccomp = serde_json::from_str(json).expect("seccomp JSON");
        linux.set_seccomp(Some(profile));
    }
    spec.set_linux(Some(linux));
    spec
}

#[derive(Debug, PartialEq, Eq)]
enum Outcome {
    Exited(i32),
    Signaled(i32),
}

/// Runs `f` in a forked child that first sets no_new_privs (so no root is
/// needed); its return value is the exit status.
fn in_child(f: impl FnOnce() -> i32) -> Outcome {
    // SAFETY: the process is single-threaded (harness = false), so the child
    // is a consistent copy; it only runs `f` and then `_exit`s.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork: {}", io::Error::last_os_error());
    if pid == 0 {
        // SAFETY: PR_SET_NO_NEW_PRIVS takes no pointers.
        unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) };
        let code = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or(101);
        // SAFETY: ends the child without running the parent's atexit handlers.
        unsafe { libc::_exit(code) };
    }
    let mut status = 0;
    // SAFETY: pid is our child; status is a live, writable int.
    let rc = unsafe { libc::waitpid(pid, &mut status, 0) };
    assert_eq!(rc, pid, "waitpid: {}", io::Error::last_os_error());
    if libc::WIFSIGNALED(status) {
        Outcome::Signaled(libc::WTERMSIG(status))
    } else {
        Outcome::Exited(libc::WEXITSTATUS(status))
    }
}

fn errno() -> i32 {
    io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

/// 0 if the syscall result `rc` succeeded, else its errno.
fn err_of(rc: i64) -> i32 {
    if rc < 0 {
        errno()
    } else {
        0
    }
}

/// A spec with only `linux.seccomp` (profile JSON).
fn seccomp_only(json: &str) -> Spec {
    spec(None, Some(json))
}

/// [`in_child`] that applies `s`'s confinement first (exit 90+ if that
/// fails) and then runs `f`.
fn confined(s: &Spec, f: impl FnOnce() -> i32) -> Outcome {
    in_child(|| {
        if let Err(code) = apply(s, 0) {
            return code;
        }
        f()
    })
}

/// Child helper: applies the confinement, 90+ on failure to apply.
fn apply(spec: &Spec, preserve_fds: u32) -> Result<(), i32> {
    let c = Confinement::prepare(spec, preserve_fds).map_err(|_| 90)?;
    c.apply().map(drop).map_err(|_| 91)
}

fn create_file(path: &Path) -> i32 {
    let c = CString::new(path.as_os_str().as_encoded_bytes()).expect("path");
    // SAFETY: c is a valid C string.
    let fd = unsafe {
        libc::open(
            c.as_ptr(),
            libc::O_WRONLY | libc::O_CREAT | libc::O_CLOEXEC,
            0o644,
        )
    };
    if fd < 0 {
        return errno();
    }
    // SAFETY: fd was just opened by us.
    unsafe { libc::close(fd) };
    0
}

fn expect(outcome: Outcome, want: Outcome) -> CaseResult {
    if outcome == want {
        Ok(())
    } else {
        Err(format!("child: {outcome:?}, want {want:?}"))
    }
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("sandboy-confine-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("allowed")).expect("scratch dir");
    std::fs::create_dir_all(dir.join("denied")).expect("scratch dir");
    dir
}

fn need_abi(abi: i32) -> Option<String> {
    let have = landlock::abi_version();
    (have < abi).then(|| format!("Landlock ABI {abi} needed, kernel has {have}"))
}

// ---- cases ----

fn landlock_fs() -> CaseResult {
    if let Some(why) = need_abi(3) {
        return skip(&why);
    }
    let dir = scratch("fs");
    let allowed = dir.join("allowed");
    let ann = format!(
        r#"{{"mode":"enforce","fs":[{{"path":"{}","access":["read","write"]}}]}}"#,
        allowed.display()
    );
    let s = spec(Some(&ann), None);
    let out = confined(&s, || {
        match (
            create_file(&allowed.join("f")),
            create_file(&dir.join("denied/f")),
        ) {
            (0, libc::EACCES) => 0,
            (0, _) => 2,
            _ => 1,
        }
    });
    let _ = std::fs::remove_dir_all(&dir);
    expect(out, Outcome::Exited(0))
}

fn seccomp_errno() -> CaseResult {
    let s = seccomp_only(
        r#"{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[
            {"names":["ptrace","mount"],"action":"SCMP_ACT_ERRNO","errnoRet":42},
            {"names":["umount2"],"action":"SCMP_ACT_ERRNO"}]}"#,
    );
    let out = confined(&s, || {
        // SAFETY: harmless arguments; the filter answers before the kernel
        // looks at them.
        let ptrace = err_of(unsafe { libc::syscall(libc::SYS_ptrace, 0x7fff_ffffi64, 0, 0, 0) });
        // SAFETY: NULL pointers are never dereferenced: the filter refuses first.
        let mount = err_of(unsafe {
            libc::syscall(libc::SYS_mount, 0usize, 0usize, 0usize, 0usize, 0usize)
        });
        // SAFETY: as above.
        let umount = err_of(unsafe { libc::syscall(libc::SYS_umount2, 0usize, 0) });
        // SAFETY: getpid has no arguments and is allowed.
        let pid = unsafe { libc::getpid() };
        match (ptrace, mount, umount, pid > 0) {
            (42, 42, libc::EPERM, true) => 0,
            (p, _, _, _) if p != 42 => 1,
            (_, m, _, _) if m != 42 => 2,
            (_, _, u, _) if u != libc::EPERM => 3,
            _ => 4,
        }
    });
    expect(out, Outcome::Exited(0))
}

/// `guards::threads_only` (unprivileged `adapt`'s wasm host): a thread
/// starts, a process does not — fork and a clone without CLONE_THREAD
/// fail with EPERM, clone3 with ENOSYS.
fn seccomp_threads_only() -> CaseResult {
    let mut profile: LinuxSeccomp =
        serde_json::from_str(r#"{"defaultAction":"SCMP_ACT_ALLOW"}"#).expect("profile JSON");
    profile.set_syscalls(Some(sandboy_spec_gen::guards::threads_only()));
    let mut s = spec(None, None);
    s.set_linux(Some(
        LinuxBuilder::default()
            .seccomp(profile)
            .build()
            .expect("linux"),
    ));
    let out = confined(&s, || {
        // Each errno read right after its call. A child made anyway (the
        // guard failing) leaves at once.
        let made = |rc: i64| {
            if rc == 0 {
                // SAFETY: in a child that should not exist; nothing to run.
                unsafe { libc::_exit(0) }
            }
            err_of(rc)
        };
        // SAFETY: a raw fork; see `made`.
        let fork = made(unsafe { libc::syscall(libc::SYS_fork) });
        // SAFETY: SIGCHLD only: a new process sharing nothing, no new stack.
        let clone =
            made(unsafe { libc::syscall(libc::SYS_clone, libc::SIGCHLD as i64, 0, 0, 0, 0) });
        // SAFETY: the filter answers before the kernel reads the pointer.
        let clone3 = made(unsafe { libc::syscall(libc::SYS_clone3, 0usize, 0usize) });
        let thread = std::thread::spawn(|| 7).join().unwrap_or(0);
        match (fork, clone, clone3, thread) {
            (libc::EPERM, libc::EPERM, libc::ENOSYS, 7) => 0,
            (f, _, _, _) if f != libc::EPERM => 1,
            (_, c, _, _) if c != libc::EPERM => 2,
            (_, _, c3, _) if c3 != libc::ENOSYS => 3,
            _ => 4,
        }
    });
    expect(out, Outcome::Exited(0))
}

fn seccomp_arg_conditions() -> CaseResult {
    let s = seccomp_only(
        r#"{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[
            {"names":["dup"],"action":"SCMP_ACT_ERRNO","errnoRet":7,
             "args":[{"index":0,"value":99,"op":"SCMP_CMP_EQ"}]},
            {"names":["dup"],"action":"SCMP_ACT_ERRNO","errnoRet":34,
             "args":[{"index":0,"value":240,"valueTwo":80,"op":"SCMP_CMP_MASKED_EQ"}]},
            {"names":["dup"],"action":"SCMP_ACT_ERRNO","errnoRet":22,
             "args":[{"index":0,"value":1500,"op":"SCMP_CMP_EQ"},
                     {"index":0,"value":5000,"op":"SCMP_CMP_EQ"}]},
            {"names":["dup"],"action":"SCMP_ACT_ERRNO","errnoRet":1,
             "args":[{"index":0,"value":3000,"op":"SCMP_CMP_GT"},
                     {"index":1,"value":7,"op":"SCMP_CMP_EQ"}]}]}"#,
    );
    let out = confined(&s, || {
        // SAFETY: dup on (almost surely) closed fds: EBADF or the filter's errno.
        let dup = |fd: i32| err_of(unsafe { libc::dup(fd) } as i64);
        let got = [
            dup(99),
            dup(98),
            dup(0x55),
            dup(0x65),
            dup(1500),
            dup(5000),
            dup(1501),
        ];
        // Conditions on one argument are ORed (as in runc), on different
        // arguments ANDed (dup ignores its second argument; the filter sees it).
        // SAFETY: dup with a second (ignored) argument; fd 4000 is closed.
        let and_match = err_of(unsafe { libc::syscall(libc::SYS_dup, 4000, 7) });
        // SAFETY: as above.
        let and_miss = err_of(unsafe { libc::syscall(libc::SYS_dup, 4000, 8) });
        if (and_match, and_miss) != (libc::EPERM, libc::EBADF) {
            return 29;
        }
        let want = [7, libc::EBADF, 34, libc::EBADF, 22, 22, libc::EBADF];
        match got.iter().zip(want).position(|(g, w)| *g != w) {
            None => 0,
            Some(i) => 30 + i as i32,
        }
    });
    expect(out, Outcome::Exited(0))
}

fn seccomp_kill_process() -> CaseResult {
    let s = seccomp_only(
        r#"{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[
            {"names":["uname"],"action":"SCMP_ACT_KILL_PROCESS"}]}"#,
    );
    let out = confined(&s, || {
        // SAFETY: an all-zero utsname is valid; uname writes into it.
        let mut u: libc::utsname = unsafe { std::mem::zeroed() };
        // SAFETY: u is live and writable.
        unsafe { libc::uname(&mut u) };
        1
    });
    expect(out, Outcome::Signaled(libc::SIGSYS))
}

fn seccomp_default_errno_allow_list() -> CaseResult {
    let s = seccomp_only(
        r#"{"defaultAction":"SCMP_ACT_ERRNO","defaultErrnoRet":38,
            "architectures":["SCMP_ARCH_X86_64","SCMP_ARCH_AARCH64"],
            "syscalls":[{"names":["exit","exit_group"],"action":"SCMP_ACT_ALLOW"},
                        {"names":["getppid"],"action":"SCMP_ACT_ERRNO","errnoRet":5}]}"#,
    );
    let out = confined(&s, || {
        // SAFETY: no arguments.
        let getpid = err_of(unsafe { libc::syscall(libc::SYS_getpid) });
        // SAFETY: no arguments.
        let getppid = err_of(unsafe { libc::syscall(libc::SYS_getppid) });
        if getpid == libc::ENOSYS && getppid == libc::EIO {
            0
        } else {
            1
        }
    });
    expect(out, Outcome::Exited(0))
}

fn seccomp_log_flag() -> CaseResult {
    let profile: LinuxSeccomp = serde_json::from_str(
        r#"{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[
        {"names":["getppid"],"action":"SCMP_ACT_ERRNO","errnoRet":5}]}"#,
    )
    .expect("profile");
    let compiled = sandboy_confine::seccomp::compile(&profile)
        .map_err(|e| e.to_string())?
        .with_log(true);
    let out = in_child(|| {
        let c = Confinement::prepare_with(&spec(None, None), 0, Some(compiled.clone()));
        let Ok(c) = c else { return 90 };
        if c.apply().is_err() {
            return 91;
        }
        // SAFETY: no arguments.
        let getppid = err_of(unsafe { libc::syscall(libc::SYS_getppid) });
        i32::from(getppid != libc::EIO)
    });
    expect(out, Outcome::Exited(0))
}

fn landlock_tcp() -> CaseResult {
    if let Some(why) = need_abi(4) {
        return skip(&why);
    }
    let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    let allowed = listener.local_addr().map_err(|e| e.to_string())?.port();
    let other = TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    let denied = other.local_addr().map_err(|e| e.to_string())?.port();
    drop(other);
    let ann = format!(r#"{{"mode":"enforce","fs":[],"net":{{"connect":[{allowed}],"bind":[]}}}}"#);
    let s = spec(Some(&ann), None);
    let out = confined(&s, || {
        let ok = TcpStream::connect(("127.0.0.1", allowed));
        let no = TcpStream::connect(("127.0.0.1", denied));
        let bind = TcpListener::bind(("127.0.0.1", denied));
        match (ok, no, bind) {
            (Ok(_), Err(e), Err(b))
                if e.raw_os_error() == Some(libc::EACCES)
                    && b.raw_os_error() == Some(libc::EACCES) =>
            {
                0
            }
            (Err(_), _, _) => 1,
            (_, Ok(_), _) => 2,
            _ => 3,
        }
    });
    drop(listener);
    expect(out, Outcome::Exited(0))
}

fn landlock_abstract_unix_scope() -> CaseResult {
    if let Some(why) = need_abi(6) {
        return skip(&why);
    }
    let name = format!("sandboy-confine-test-{}", std::process::id());
    let ann = r#"{"mode":"enforce","fs":[],"scope":["abstract-unix-socket"]}"#;
    let s = spec(Some(ann), None);
    let out = in_child(|| {
        use std::os::linux::net::SocketAddrExt;
        let addr = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes());
        let Ok(addr) = addr else { return 10 };
        // Created before the restriction: outside the Landlock domain.
        let Ok(_listener) = UnixListener::bind_addr(&addr) else {
            return 11;
        };
        if let Err(code) = apply(&s, 0) {
            return code;
        }
        match std::os::unix::net::UnixStream::connect_addr(&addr) {
            Err(e) if e.raw_os_error() == Some(libc::EPERM) => 0,
            Err(_) => 2,
            Ok(_) => 1,
        }
    });
    expect(out, Outcome::Exited(0))
}

fn fd_sweep_across_exec() -> CaseResult {
    let sh = CString::new("/bin/sh").expect("cstr");
    if !Path::new("/bin/sh").exists() {
        return skip("/bin/sh missing");
    }
    let script =
        CString::new("[ -e /proc/self/fd/3 ] || exit 4; [ -e /proc/self/fd/42 ] && exit 5; exit 0")
            .expect("cstr");
    let dash_c = CString::new("-c").expect("cstr");
    let out = in_child(|| {
        let null = CString::new("/dev/null").expect("cstr");
        // SAFETY: plain fd juggling on a fresh /dev/null fd; no CLOEXEC on 3 or 42.
        unsafe {
            let fd = libc::open(null.as_ptr(), libc::O_RDONLY);
            if fd < 0 || libc::dup2(fd, 42) < 0 || libc::dup2(fd, 3) < 0 {
                return 20;
            }
        }
        if Confinement::fd_sweep_only(1).apply().is_err() {
            return 91;
        }
        let argv = [
            sh.as_ptr(),
            dash_c.as_ptr(),
            script.as_ptr(),
            std::ptr::null(),
        ];
        // SAFETY: argv is a NULL-terminated array of valid C strings.
        unsafe { libc::execv(sh.as_ptr(), argv.as_ptr()) };
        21
    });
    expect(out, Outcome::Exited(0))
}

fn enforce_refuses_unknown_right() -> CaseResult {
    if let Some(why) = need_abi(1) {
        return skip(&why);
    }
    let ann = r#"{"mode":"enforce","fs":[{"path":"/","access":["read",1099511627776]}]}"#;
    match Confinement::prepare(&spec(Some(ann), None), 0) {
        Err(e @ ConfineError::LandlockUnsupported { .. }) if e.to_string().contains("1<<40") => {}
        other => return Err(format!("enforce with 1<<40: {other:?}")),
    }
    let ann = r#"{"mode":"best-effort","fs":[{"path":"/","access":["read",1099511627776]}]}"#;
    let c = Confinement::prepare(&spec(Some(ann), None), 0)
        .map_err(|e| format!("best-effort with 1<<40: {e}"))?;
    if !c.has_landlock() {
        return Err("best-effort dropped the whole ruleset".into());
    }
    Ok(())
}

fn missing_path_by_mode() -> CaseResult {
    if let Some(why) = need_abi(1) {
        return skip(&why);
    }
    let ann = r#"{"mode":"enforce","fs":[{"path":"/nonexistent/sandboy","access":["read"]}]}"#;
    match Confinement::prepare(&spec(Some(ann), None), 0) {
        Err(e @ ConfineError::LandlockPath { .. }) if !e.is_config() => {}
        other => return Err(format!("enforce, missing path: {other:?}")),
    }
    let ann = r#"{"mode":"best-effort","fs":[{"path":"/nonexistent/sandboy","access":["read"]}]}"#;
    Confinement::prepare(&spec(Some(ann), None), 0)
        .map(|_| ())
        .map_err(|e| format!("best-effort, missing path: {e}"))
}

fn config_errors() -> CaseResult {
    for bad in [
        r#"{"mode":"strict"}"#,
        r#"{"fs":[{"path":"/","access":["raed"]}]}"#,
        "not json",
    ] {
        match Confinement::prepare(&spec(Some(bad), None), 0) {
            Err(e) if e.is_config() && e.to_string().contains("dev.sandboy.landlock") => {}
            other => return Err(format!("{bad}: {other:?}")),
        }
    }
    Ok(())
}

fn landlock_then_seccomp() -> CaseResult {
    if let Some(why) = need_abi(3) {
        return skip(&why);
    }
    let dir = scratch("both");
    let ann = format!(
        r#"{{"mode":"enforce","fs":[{{"path":"{}","access":["write"]}}]}}"#,
        dir.join("allowed").display()
    );
    let s = spec(
        Some(&ann),
        Some(
            r#"{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[
            {"names":["ptrace"],"action":"SCMP_ACT_ERRNO"}]}"#,
        ),
    );
    let out = confined(&s, || {
        // SAFETY: harmless arguments, refused by the filter.
        let ptrace = err_of(unsafe { libc::syscall(libc::SYS_ptrace, 0x7fff_ffffi64, 0, 0, 0) });
        let denied = create_file(&dir.join("denied/f"));
        let allowed = create_file(&dir.join("allowed/f"));
        match (ptrace, denied, allowed) {
            (libc::EPERM, libc::EACCES, 0) => 0,
            _ => 1,
        }
    });
    let _ = std::fs::remove_dir_all(&dir);
    expect(out, Outcome::Exited(0))
}

fn skip(why: &str) -> CaseResult {
    sandboy_tests::skip("confine behaviour", why);
    Ok(())
}

fn main() {
    let cases: &[Case] = &[
        ("landlock_fs", landlock_fs),
        ("landlock_tcp", landlock_tcp),
        ("landlock_abstract_unix_scope", landlock_abstract_unix_scope),
        ("landlock_then_seccomp", landlock_then_seccomp),
        (
            "enforce_refuses_unknown_right",
            enforce_refuses_unknown_right,
        ),
        ("missing_path_by_mode", missing_path_by_mode),
        ("config_errors", config_errors),
        ("seccomp_errno", seccomp_errno),
        ("seccomp_arg_conditions", seccomp_arg_conditions),
        ("seccomp_threads_only", seccomp_threads_only),
        ("seccomp_kill_process", seccomp_kill_process),
        (
            "seccomp_default_errno_allow_list",
            seccomp_default_errno_allow_list,
        ),
        ("seccomp_log_flag", seccomp_log_flag),
        ("fd_sweep_across_exec", fd_sweep_across_exec),
    ];
    let filter: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let mut failed = 0;
    let mut ran = 0;
    for (name, case) in cases {
        if !filter.is_empty() && !filter.iter().any(|f| name.contains(f.as_str())) {
            continue;
        }
        ran += 1;
        match case() {
            Ok(()) => println!("test {name} ... ok"),
            Err(why) => {
                failed += 1;
                println!("test {name} ... FAILED: {why}");
            }
        }
    }
    println!("behaviour: {ran} run, {failed} failed");
    if failed > 0 {
        std::process::exit(1);
    }
}
