//! `sandboy wrap`: one-line confinement of a host command by a policy.

use std::fs;
use std::io::Write;
use std::process::{Command, Stdio};

use sandboy_tests::*;

/// A policy over the host filesystem with `dir` as the only write path.
fn policy(dir: &std::path::Path, extra: &str) -> std::path::PathBuf {
    let p = dir.join("wrap.toml");
    fs::write(
        &p,
        format!(
            r#"version = 1
name = "wrap-test"
[landlock]
mode = "enforce"
[fs]
read = ["/usr", "/lib", "/lib64", "/etc", "/bin", "/proc"]
exec = ["/usr/bin", "/bin", "/usr/lib", "/lib", "/lib64"]
write = ["{}", "/dev/null"]
[syscalls]
default_deny = true
[process]
args = ["true"]
cwd = "/"
{extra}
"#,
            dir.join("out").display()
        ),
    )
    .unwrap();
    fs::create_dir_all(dir.join("out")).unwrap();
    p
}

fn wrap(rt: &Runtime, policy: &std::path::Path, id: &str, cmd: &[&str]) -> Command {
    let mut c = rt.cmd();
    c.args([
        "wrap",
        "--policy",
        policy.to_str().unwrap(),
        "--id",
        id,
        "--",
    ])
    .args(cmd);
    c
}

fn assert_clean(rt: &Runtime, id: &str) {
    assert!(!rt.root.path().join(id).exists(), "state left for {id}");
    assert!(
        !rt.root.path().join(".wrap").join(id).exists(),
        "wrap bundle left for {id}"
    );
    assert!(
        cgroups_named(id).is_empty(),
        "cgroups left: {:?}",
        cgroups_named(id)
    );
}

#[test]
fn wrap_passes_exit_status_and_stdio_and_confines_writes() {
    if !need_root("wrap_passes_exit_status_and_stdio_and_confines_writes") {
        return;
    }
    let dir = TempDir::new("wrap");
    let p = policy(dir.path(), "");
    let rt = Runtime::sandboy();
    let id = unique_id("wrap");
    let out = dir.path().join("out/f");
    let outside = dir.path().join("outside");
    let script = format!(
        "read line; echo got:$line; echo kept > {}; echo no > {} || echo refused; exit 9",
        out.display(),
        outside.display()
    );
    let mut child = wrap(&rt, &p, &id, &["sh", "-c", &script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(b"hello\n").unwrap();
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(9), "{}", text(&o.stderr));
    assert_eq!(text(&o.stdout), "got:hello\nrefused\n");
    assert_eq!(
        fs::read_to_string(&out).unwrap(),
        "kept\n",
        "write path change did not persist"
    );
    assert!(!outside.exists(), "write outside the policy went through");
    assert_clean(&rt, &id);
}

#[test]
fn wrap_cleans_up_after_sigkill_and_enforces_timeout() {
    if !need_root("wrap_cleans_up_after_sigkill_and_enforces_timeout") {
        return;
    }
    let dir = TempDir::new("wrapk");
    let p = policy(dir.path(), "");
    let rt = Runtime::sandboy();
    let id = unique_id("wrapk");
    // SIGKILL of the command from outside: wrap reports 137 and cleans up.
    let out = TempDir::new("wrapk-out");
    let child = wrap(&rt, &p, &id, &["sleep", "30"])
        .stdin(Stdio::null())
        .stdout(fs::File::create(out.path().join("o")).unwrap())
        .stderr(fs::File::create(out.path().join("e")).unwrap())
        .spawn()
        .unwrap();
    rt.wait_status(&id, "running");
    let pid = rt.state(&id)["pid"].as_i64().unwrap();
    // SAFETY: signalling the container's init, which we just looked up.
    assert_eq!(unsafe { libc::kill(pid as i32, libc::SIGKILL) }, 0);
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(137));
    assert_clean(&rt, &id);

    let p = policy(dir.path(), "[limits]\ntimeout = \"1s\"");
    let id = unique_id("wrapt");
    let log = dir.path().join("log.json");
    let mut c = rt.cmd();
    c.args([
        "--log",
        log.to_str().unwrap(),
        "--log-format",
        "json",
        "wrap",
        "--policy",
        p.to_str().unwrap(),
        "--id",
        &id,
        "--",
        "sleep",
        "30",
    ]);
    let started = std::time::Instant::now();
    let o = capture(&mut c);
    assert_exit(&o, 137);
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
    let log = fs::read_to_string(&log).unwrap_or_default();
    assert!(
        log.contains("timeout") && log.contains(&id),
        "no timeout warning: {log}"
    );
    assert_clean(&rt, &id);
}

#[test]
fn wrap_rejects_bad_policy_with_location() {
    let dir = TempDir::new("wrapbad");
    let p = dir.path().join("bad.toml");
    // Relative paths are wrap's own (the working directory); one that climbs
    // out with `..` is still a located policy error.
    fs::write(
        &p,
        "version = 1\nname = \"x\"\n[fs]\nread = [\"../up\"]\n[process]\nargs = [\"true\"]\n",
    )
    .unwrap();
    let rt = Runtime::sandboy();
    let o = capture(&mut wrap(&rt, &p, "wrapbad", &["true"]));
    assert_exit(&o, 2);
    assert!(
        text(&o.stderr).contains("bad.toml:4:"),
        "{}",
        text(&o.stderr)
    );
}

#[test]
fn wrap_as_root_runs_the_readme_one_liner_and_reports_126_and_127() {
    if !need_root("wrap_as_root_runs_the_readme_one_liner_and_reports_126_and_127") {
        return;
    }
    let rt = Runtime::sandboy();
    let strict = repo().join("policies/strict.toml");
    // exec = ["/bin"] alone runs the dynamic sh: its loader and libraries
    // under /usr/lib are granted.
    let id = unique_id("wrapsh");
    let o = capture(&mut wrap(&rt, &strict, &id, &["sh", "-c", "true"]));
    assert_exit(&o, 0);
    assert_clean(&rt, &id);
    let id = unique_id("wrap127");
    let o = capture(&mut wrap(&rt, &strict, &id, &["no-such-program-sbt"]));
    assert_exit(&o, 127);
    assert!(text(&o.stderr).contains("no-such-program-sbt"));
    assert_clean(&rt, &id);
    let id = unique_id("wrap126");
    let o = capture(&mut wrap(&rt, &strict, &id, &["/usr/sbin/nologin"]));
    assert_exit(&o, 126);
    assert!(
        text(&o.stderr).contains("/usr/sbin/nologin: not executable under the policy"),
        "{}",
        text(&o.stderr)
    );
    assert_clean(&rt, &id);
}

#[test]
fn wrap_as_root_hides_host_daemon_sockets_under_run() {
    if !need_root("wrap_as_root_hides_host_daemon_sockets_under_run")
        || !need_tool(
            "wrap_as_root_hides_host_daemon_sockets_under_run",
            "python3",
        )
    {
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    let dir = TempDir::new("wraprun");
    let p = policy(dir.path(), "");
    let rt = Runtime::sandboy();
    // A root-only daemon socket on the host, and one in a write path.
    let host_sock = std::path::PathBuf::from(format!("/run/{}.sock", unique_id("sbt-daemon")));
    let _daemon = std::os::unix::net::UnixListener::bind(&host_sock).unwrap();
    fs::set_permissions(&host_sock, fs::Permissions::from_mode(0o600)).unwrap();
    let listed_sock = dir.path().join("out/listed.sock");
    let _listed = std::os::unix::net::UnixListener::bind(&listed_sock).unwrap();
    let connect = "import socket,sys\ns=socket.socket(socket.AF_UNIX)\ntry:\n s.connect(sys.argv[1]); print('ok')\nexcept OSError as e:\n print('refused', e.errno)";
    let run = |sock: &std::path::Path| {
        let id = unique_id("wraprun");
        let o = capture(&mut wrap(
            &rt,
            &p,
            &id,
            &["python3", "-c", connect, sock.to_str().unwrap()],
        ));
        assert_clean(&rt, &id);
        o
    };
    let o = run(&host_sock);
    let _ = fs::remove_file(&host_sock);
    assert!(
        text(&o.stdout).starts_with("refused 2"),
        "daemon socket answered: {} {}",
        text(&o.stdout),
        text(&o.stderr)
    );
    let o = run(&listed_sock);
    assert_eq!(text(&o.stdout), "ok\n", "{}", text(&o.stderr));
}

/// Issue 14 in wrap (root): setuid modes are refused while chmod 0755
/// works, and code placed in the write path does not run.
#[test]
fn wrap_refuses_setuid_modes_and_exec_of_written_code() {
    let t = "wrap_refuses_setuid_modes_and_exec_of_written_code";
    if !need_root(t) {
        return;
    }
    let probe = target_dir().join("probes/probe");
    if !probe.is_file() {
        skip(t, "no probe binary (run `make probes`)");
        return;
    }
    let dir = TempDir::new("wrap14");
    let p = policy(dir.path(), "");
    // A program in the write path (not an exec path, mounted noexec).
    let bin = dir.path().join("out/probe");
    fs::copy(&probe, &bin).unwrap();
    let rt = Runtime::sandboy();
    let id = unique_id("wrap14");
    let o = capture(&mut wrap(&rt, &p, &id, &[bin.to_str().unwrap(), "hello"]));
    assert_ne!(text(&o.stdout).trim(), "hello", "written code ran");
    let f = dir.path().join("out/f");
    fs::write(&f, "x").unwrap();
    let script = format!(
        "chmod 4755 {f} 2>/dev/null; echo suid=$?; chmod 0755 {f}; echo plain=$?",
        f = f.display()
    );
    let o = capture(&mut wrap(&rt, &p, &id, &["sh", "-c", &script]));
    assert_eq!(text(&o.stdout), "suid=1\nplain=0\n", "{}", text(&o.stderr));
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        fs::metadata(&f).unwrap().permissions().mode() & 0o7777,
        0o755
    );
    assert_clean(&rt, &id);
}
