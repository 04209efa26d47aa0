//! `sandboy wrap` as an ordinary user: a real host user made for the test
//! runs wrap in the landlock tier (forced, as where user namespaces are
//! off), the namespaces tier, and auto. Each refusal is paired with the
//! allowed counterpart.

use std::fs;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use sandboy_tests::*;

const TIERS: &[&str] = &["landlock", "namespaces"];

struct Env {
    user: TestUser,
    dir: TempDir,
    sandboy: PathBuf,
    probe: PathBuf,
}

impl Env {
    fn new(test: &str) -> Option<Env> {
        let probe_bin = target_dir().join("probes/probe");
        if !probe_bin.is_file() {
            skip(test, "the probe is not built (make probes)");
            return None;
        }
        let sandboy_bin = need_sandboy(test)?;
        let user = TestUser::create(test)?;
        let dir = TempDir::new("wrapu");
        let probe = user.reachable_copy(&probe_bin, &dir);
        let sandboy = user.reachable_copy(&sandboy_bin, &dir);
        for d in ["out", "ro", "cwd"] {
            fs::create_dir_all(dir.path().join(d)).unwrap();
            user.chown(&dir.path().join(d));
        }
        fs::write(dir.path().join("ro/file"), "r").unwrap();
        fs::write(dir.path().join("secret"), "s").unwrap();
        fs::set_permissions(dir.path().join("secret"), fs::Permissions::from_mode(0o644)).unwrap();
        Some(Env {
            user,
            dir,
            sandboy,
            probe,
        })
    }

    fn p(&self, rel: &str) -> String {
        self.dir.path().join(rel).display().to_string()
    }

    /// A policy file with `extra` appended (tables after [fs]).
    fn policy(&self, name: &str, namespace: &str, extra: &str) -> PathBuf {
        let path = self.dir.path().join(format!("{name}.toml"));
        fs::write(
            &path,
            format!(
                r#"version = 1
name = "{name}"
[landlock]
mode = "enforce"
[fs]
read = ["/etc", "/proc", "{ro}"]
exec = ["/usr/bin", "{bin}"]
write = ["{out}", "/dev/null"]
[net]
namespace = "{namespace}"
connect = [{connect}]
bind = [{bind}]
[process]
args = ["true"]
{extra}
"#,
                ro = self.p("ro"),
                bin = self.p("bin"),
                out = self.p("out"),
                connect = CONNECT_OK,
                bind = BIND_OK,
            ),
        )
        .unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).unwrap();
        path
    }

    fn wrap(&self, tier: &str, policy: &Path, cmd: &[&str]) -> Command {
        let mut c = self.user.cmd(&self.sandboy);
        c.args(["wrap", "--isolation", tier, "--policy"])
            .arg(policy)
            .arg("--")
            .args(cmd)
            .current_dir(self.dir.path().join("cwd"));
        c
    }

    fn probe(&self, tier: &str, policy: &Path, args: &[&str]) -> Output {
        let mut cmd = vec![self.probe.to_str().unwrap()];
        cmd.extend(args);
        output_timeout(
            &mut self.wrap(tier, policy, &cmd),
            std::time::Duration::from_secs(60),
        )
    }
}

const CONNECT_OK: u16 = 34511;
const BIND_OK: u16 = 34512;

fn ns_of(tier: &str) -> &'static str {
    if tier == "landlock" {
        "host"
    } else {
        "none"
    }
}

fn assert_probe(o: &Output, want_ok: bool, what: &str) {
    let out = text(&o.stdout);
    if want_ok {
        assert!(
            o.status.code() == Some(0) && (out.starts_with("ok") || out.is_empty()),
            "{what}: expected allowed, got {:?} {out} {}",
            o.status,
            text(&o.stderr)
        );
    } else {
        assert!(
            o.status.code() != Some(0) && out.contains("errno="),
            "{what}: expected refused, got {:?} {out} {}",
            o.status,
            text(&o.stderr)
        );
    }
}

#[test]
fn both_tiers_refuse_and_allow_what_a_container_does() {
    let Some(env) = Env::new("both_tiers_refuse_and_allow_what_a_container_does") else {
        return;
    };
    // Servers on 127.0.0.1 for the host-network (landlock) tier.
    let _ok = std::net::TcpListener::bind(("127.0.0.1", CONNECT_OK)).ok();
    let _other = std::net::TcpListener::bind(("127.0.0.1", 0)).unwrap();
    let other_port = _other.local_addr().unwrap().port().to_string();
    for tier in TIERS {
        let pol = env.policy(&format!("p-{tier}"), ns_of(tier), "");
        let cases: Vec<(Vec<String>, bool, &str)> = vec![
            (
                vec!["write".into(), env.p("secret")],
                false,
                "write outside",
            ),
            (
                vec!["create".into(), env.p(&format!("out/new-{tier}"))],
                true,
                "create inside",
            ),
            (
                vec!["create".into(), env.p("ro/new")],
                false,
                "create in read-only",
            ),
            (vec!["read".into(), env.p("ro/file")], true, "read inside"),
            (vec!["read".into(), env.p("secret")], false, "read outside"),
            (
                vec!["exec".into(), "/usr/bin/true".into()],
                true,
                "exec inside",
            ),
            (
                vec!["exec".into(), "/usr/sbin/nologin".into()],
                false,
                "exec outside",
            ),
            (
                vec!["connect".into(), CONNECT_OK.to_string()],
                true,
                "connect listed",
            ),
            (
                vec!["connect".into(), other_port.clone()],
                false,
                "connect unlisted",
            ),
            (
                vec!["bind".into(), BIND_OK.to_string()],
                true,
                "bind listed",
            ),
            (vec!["bind".into(), "34519".into()], false, "bind unlisted"),
            (
                vec!["syscall".into(), "keyctl".into()],
                false,
                "default-deny syscall",
            ),
        ];
        for (args, ok, what) in cases {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let o = env.probe(tier, &pol, &args);
            assert_probe(&o, ok, &format!("{tier}: {what}"));
        }
        // The allowed counterpart of the default-deny syscall.
        let allow = env.policy(
            &format!("allow-{tier}"),
            ns_of(tier),
            "[syscalls]\nallow = [\"keyctl\"]",
        );
        let o = env.probe(tier, &allow, &["syscall", "keyctl"]);
        assert!(
            !text(&o.stdout).contains("EPERM"),
            "{tier}: keyctl allowed: {}",
            text(&o.stdout)
        );
    }
    assert!(env.dir.path().join("out/new-landlock").exists());
    assert!(!env.dir.path().join("ro/new").exists());
}

#[test]
fn leaked_fds_and_scopes_are_closed_in_both_tiers() {
    let Some(env) = Env::new("leaked_fds_and_scopes_are_closed_in_both_tiers") else {
        return;
    };
    use std::os::unix::process::CommandExt;
    let leak = fs::File::open("/etc/hostname").unwrap();
    let leak_fd = std::os::fd::AsRawFd::as_raw_fd(&leak);
    let with_leak = |c: &mut Command| {
        // SAFETY: dup2 in the child before exec; async-signal-safe.
        unsafe {
            c.pre_exec(move || {
                if libc::dup2(leak_fd, 9) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    };
    // Without wrap the leaked fd reaches the probe (the test is real) ...
    let mut plain = env.user.cmd(&env.probe);
    plain.arg("fds");
    with_leak(&mut plain);
    let o = capture(&mut plain);
    assert!(
        text(&o.stdout).contains("9 "),
        "leak not set up: {}",
        text(&o.stdout)
    );
    // An abstract socket outside the sandbox.
    let name = unique_id("sbt-abstract");
    let _sock = {
        use std::os::linux::net::SocketAddrExt;
        let addr = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
        std::os::unix::net::UnixListener::bind_addr(&addr).unwrap()
    };
    for tier in TIERS {
        // ... and not through wrap.
        let pol = env.policy(&format!("fd-{tier}"), ns_of(tier), "");
        let mut c = env.wrap(tier, &pol, &[env.probe.to_str().unwrap(), "fds"]);
        with_leak(&mut c);
        let o = capture(&mut c);
        assert_eq!(
            text(&o.stdout).trim(),
            "0 1 2",
            "{tier}: {}",
            text(&o.stderr)
        );

        // UNIX sockets opened (`unix = true`), so the scope is what refuses.
        let scoped = env.policy(&format!("scoped-{tier}"), ns_of(tier), "");
        let body = fs::read_to_string(&scoped)
            .unwrap()
            .replace("[net]\n", "[net]\nunix = true\n");
        fs::write(&scoped, body).unwrap();
        let o = env.probe(tier, &scoped, &["abstract-connect", &name]);
        assert_probe(
            &o,
            false,
            &format!("{tier}: abstract socket outside, scoped"),
        );
        // The landlock tier shares the host's network namespace, where the
        // socket is: the scope refuses it (EPERM). The namespaces tier has its
        // own, where nothing listens.
        if *tier == "landlock" {
            assert!(
                text(&o.stdout).contains("EPERM"),
                "not the scope: {}",
                text(&o.stdout)
            );
        }
    }
    // Allowed counterpart: no scope, host network (landlock tier).
    let open = env.policy("noscope", "host", "");
    let text_policy = fs::read_to_string(&open)
        .unwrap()
        .replace("[net]\n", "[net]\nunix = true\n")
        .replace("bind = [", "scope = []\nbind = [");
    fs::write(&open, text_policy).unwrap();
    let o = env.probe("landlock", &open, &["abstract-connect", &name]);
    assert_probe(&o, true, "abstract socket without scope");

    // Signal scope: a process of the same user outside the sandbox.
    let mut sleeper = env.user.cmd("sleep").arg("60").spawn().unwrap();
    let pid = (0..100)
        .find_map(|_| {
            std::thread::sleep(std::time::Duration::from_millis(20));
            env.user.processes().into_iter().find(|p| {
                fs::read_to_string(format!("/proc/{p}/comm")).is_ok_and(|c| c.trim() == "sleep")
            })
        })
        .expect("sleeper");
    let scoped = env.policy("sig", "host", "");
    let o = env.probe("landlock", &scoped, &["kill", &pid.to_string(), "0"]);
    assert_probe(&o, false, "signal outside, scoped");
    let o = env.probe("landlock", &open, &["kill", &pid.to_string(), "0"]);
    assert_probe(&o, true, "signal without scope");
    let _ = sleeper.kill();
    let _ = sleeper.wait();
}

#[test]
fn timeout_kills_the_whole_tree_and_pids_stop_a_fork_bomb() {
    let Some(env) = Env::new("timeout_kills_the_whole_tree_and_pids_stop_a_fork_bomb") else {
        return;
    };
    for tier in TIERS.iter().chain(&["auto"]) {
        let pol = env.policy(
            &format!("t-{tier}"),
            ns_of(if *tier == "auto" { "namespaces" } else { tier }),
            "[limits]\ntimeout = \"2s\"",
        );
        // A grandchild that double-forks away from its parent, then sleeps.
        let o = output_timeout(
            &mut env.wrap(
                tier,
                &pol,
                &["sh", "-c", "(sh -c 'sleep 300' &) ; sleep 300"],
            ),
            std::time::Duration::from_secs(60),
        );
        assert_eq!(o.status.code(), Some(137), "{tier}: {}", text(&o.stderr));
        let left: Vec<i32> = env.user.processes();
        assert!(left.is_empty(), "{tier}: processes left: {left:?}");

        let pol = env.policy(
            &format!("f-{tier}"),
            ns_of(if *tier == "auto" { "namespaces" } else { tier }),
            "[limits]\npids = 40",
        );
        let o = env.probe(tier, &pol, &["forkbomb"]);
        let out = text(&o.stdout);
        assert!(
            out.contains("errno=EAGAIN"),
            "{tier}: {out} {}",
            text(&o.stderr)
        );
        let forks: u32 = out
            .split("forks=")
            .nth(1)
            .and_then(|s| s.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .unwrap();
        assert!(forks < 40, "{tier}: {forks} forks");
        let left = env.user.leftovers();
        assert!(
            left.is_empty(),
            "{tier}: fork bomb left processes: {left:?}"
        );
        busy_user_keeps_the_steps_pids(&env, tier, &pol);
    }
}

/// A user already running more tasks than `pids` elsewhere (a workstation
/// runs hundreds) can still fork inside, and the step still stops at
/// `pids` of its own: in the landlock tier `RLIMIT_NPROC` counts every
/// task of the user on the host, and a limit of `pids` alone refused the
/// step's first fork ("Cannot fork").
fn busy_user_keeps_the_steps_pids(env: &Env, tier: &str, pol: &Path) {
    let busy = env.user.busy(60);
    let o = output_timeout(
        &mut env.wrap(tier, pol, &["sh", "-c", "/bin/true && echo forked"]),
        std::time::Duration::from_secs(60),
    );
    let bomb = env.probe(tier, pol, &["forkbomb"]);
    drop(busy);
    assert_eq!(o.status.code(), Some(0), "{tier}: {}", text(&o.stderr));
    assert_eq!(text(&o.stdout).trim(), "forked", "{tier}");
    let out = text(&bomb.stdout);
    let forks: u32 = out
        .split("forks=")
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(u32::MAX);
    assert!(
        out.contains("errno=EAGAIN") && forks < 40,
        "{tier}, 60 tasks of the user running: {out} {}",
        text(&bomb.stderr)
    );
}

#[test]
fn a_wrapper_keeps_status_stdio_cwd_and_environment() {
    let Some(env) = Env::new("a_wrapper_keeps_status_stdio_cwd_and_environment") else {
        return;
    };
    for tier in TIERS.iter().chain(&["auto"]) {
        let pol = env.policy(
            &format!("w-{tier}"),
            ns_of(if *tier == "auto" { "namespaces" } else { tier }),
            "",
        );
        let script = "read l; echo got:$l; pwd; echo foo=$FOO; echo err >&2; exit 7";
        let mut child = env
            .wrap(tier, &pol, &["sh", "-c", script])
            .env("FOO", "bar")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(b"hello\n").unwrap();
        let o = child.wait_with_output().unwrap();
        assert_eq!(o.status.code(), Some(7), "{tier}: {}", text(&o.stderr));
        assert_eq!(
            text(&o.stdout),
            format!("got:hello\n{}\nfoo=bar\n", env.p("cwd")),
            "{tier}"
        );
        assert_eq!(text(&o.stderr), "err\n", "{tier}");

        // --clear-env: only the policy's environment.
        let mut c = env.user.cmd(&env.sandboy);
        c.args(["wrap", "--clear-env", "--isolation", tier, "--policy"])
            .arg(&pol)
            .args(["--", "sh", "-c", "echo foo=$FOO home=$HOME"])
            .env("FOO", "bar")
            .current_dir(env.dir.path().join("cwd"));
        let o = capture(&mut c);
        assert_eq!(
            text(&o.stdout),
            "foo= home=\n",
            "{tier}: {}",
            text(&o.stderr)
        );

        // A signal's status: 128+N.
        let o = capture(&mut env.wrap(tier, &pol, &["sh", "-c", "kill -9 $$"]));
        assert_eq!(o.status.code(), Some(137), "{tier}: {}", text(&o.stderr));
    }
}

#[test]
fn refused_and_missing_programs_exit_126_and_127() {
    let Some(env) = Env::new("refused_and_missing_programs_exit_126_and_127") else {
        return;
    };
    for tier in TIERS {
        let pol = env.policy(&format!("x-{tier}"), ns_of(tier), "");
        let o = capture(&mut env.wrap(tier, &pol, &["/usr/sbin/nologin"]));
        assert_exit(&o, 126);
        let e = text(&o.stderr);
        assert!(
            e.contains("/usr/sbin/nologin") && e.contains("[fs] exec"),
            "{tier}: {e}"
        );
        let o = capture(&mut env.wrap(tier, &pol, &["no-such-program-sbt"]));
        assert_exit(&o, 127);
        assert!(text(&o.stderr).contains("no-such-program-sbt"), "{tier}");
        // exec = ["/usr/bin"] alone runs the dynamic sh (loader under /usr/lib).
        let o = capture(&mut env.wrap(tier, &pol, &["sh", "-c", "true"]));
        assert_exit(&o, 0);
    }
}

#[test]
fn inline_flags_confine_without_a_policy_file() {
    let Some(env) = Env::new("inline_flags_confine_without_a_policy_file") else {
        return;
    };
    for tier in TIERS {
        let mut c = env.user.cmd(&env.sandboy);
        c.args([
            "wrap",
            "--isolation",
            tier,
            "--ro",
            "/etc",
            "--exec",
            "/usr/bin",
        ])
        .args(["--rw", "../out", "--timeout", "30s", "--"])
        .args([
            "sh",
            "-c",
            &format!(
                "echo in > ../out/inline; echo no > {} || echo refused",
                env.p("ro/x")
            ),
        ])
        .current_dir(env.dir.path().join("cwd"));
        let o = capture(&mut c);
        assert_exit(&o, 0);
        assert_eq!(text(&o.stdout), "refused\n", "{tier}: {}", text(&o.stderr));
        assert!(env.dir.path().join("out/inline").exists());
        assert!(!env.dir.path().join("ro/x").exists());
    }
    // Bad flag values are policy errors.
    let o = capture(
        env.user
            .cmd(&env.sandboy)
            .args(["wrap", "--timeout", "30", "--", "true"]),
    );
    assert_exit(&o, 2);
}

#[test]
fn a_private_network_under_the_landlock_tier_is_refused_under_enforce() {
    let Some(env) = Env::new("a_private_network_under_the_landlock_tier_is_refused_under_enforce")
    else {
        return;
    };
    let pol = env.policy("netnone", "none", "");
    let o = capture(&mut env.wrap("landlock", &pol, &["sh", "-c", "echo ran"]));
    assert_exit(&o, 2);
    let e = text(&o.stderr);
    assert!(
        e.contains("landlock tier") && e.contains("namespace") && e.lines().count() == 1,
        "{e}"
    );
    assert_eq!(text(&o.stdout), "", "the command ran");
    let left = env.user.leftovers();
    assert!(left.is_empty(), "processes left: {left:?}");
    // Nothing left behind: no state root was created.
    assert!(!Path::new(&format!("/tmp/sandboy-{}", env.user.uid)).exists());
    // best-effort: runs with a warning.
    let text_policy = fs::read_to_string(&pol)
        .unwrap()
        .replace("\"enforce\"", "\"best-effort\"");
    fs::write(&pol, text_policy).unwrap();
    let o = capture(&mut env.wrap("landlock", &pol, &["sh", "-c", "echo ran"]));
    assert_exit(&o, 0);
    assert_eq!(text(&o.stdout), "ran\n");
    assert!(
        text(&o.stderr).contains("level=warning"),
        "{}",
        text(&o.stderr)
    );
}

#[test]
fn the_readme_strict_one_liner_works_as_an_ordinary_user() {
    let Some(env) = Env::new("the_readme_strict_one_liner_works_as_an_ordinary_user") else {
        return;
    };
    let strict = env.dir.path().join("strict.toml");
    fs::copy(repo().join("policies/strict.toml"), &strict).unwrap();
    fs::set_permissions(&strict, fs::Permissions::from_mode(0o644)).unwrap();
    let mut c = env.user.cmd(&env.sandboy);
    c.args(["wrap", "--policy"])
        .arg(&strict)
        .args(["--", "sh", "-c", "echo strict-ok"]);
    let o = capture(&mut c);
    assert_exit(&o, 0);
    assert_eq!(text(&o.stdout), "strict-ok\n");
}

/// Issue 14, disk, for ordinary users: the namespaces tier stages its
/// write paths like root wrap does (ENOSPC past `[limits] disk`, a flood
/// stops at `inodes`, committed only when the command exits 0, discarded
/// with --dry-run); the landlock tier cannot stage, and refuses both under
/// enforce rather than run uncapped.
#[test]
fn the_namespaces_tier_stages_and_caps_writes_the_landlock_tier_refuses_caps() {
    let t = "the_namespaces_tier_stages_and_caps_writes_the_landlock_tier_refuses_caps";
    let Some(env) = Env::new(t) else {
        return;
    };
    if !namespaces_work(&env) {
        skip(t, "unprivileged user namespaces are refused here");
        return;
    }
    let capped = env.policy("capped", "none", "[limits]\ndisk = \"8MiB\"\ninodes = 50");
    let out = env.dir.path().join("out");
    let o = env.probe(
        "namespaces",
        &capped,
        &["fallocate", &env.p("out/small"), "4"],
    );
    assert_eq!(text(&o.stdout), "ok\n", "{}", text(&o.stderr));
    assert_eq!(
        fs::metadata(out.join("small")).unwrap().len(),
        4 << 20,
        "committed"
    );
    let o = env.probe(
        "namespaces",
        &capped,
        &["fallocate", &env.p("out/big"), "64"],
    );
    assert_eq!(text(&o.stdout), "errno=ENOSPC\n", "{}", text(&o.stderr));
    assert!(
        !out.join("big").exists(),
        "a failing command's file was committed"
    );
    fs::create_dir_all(out.join("flood")).unwrap();
    env.user.chown(&out.join("flood"));
    let o = env.probe("namespaces", &capped, &["inodes", &env.p("out/flood")]);
    let said = text(&o.stdout);
    let n: u64 = said
        .strip_prefix("files=")
        .and_then(|r| r.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{said} {}", text(&o.stderr)));
    assert!(
        (40..=50).contains(&n) && said.ends_with("errno=ENOSPC\n"),
        "{said}"
    );
    assert_eq!(fs::read_dir(out.join("flood")).unwrap().count(), 0);

    // The commit writes no more than the staging held: a 1 GiB sparse
    // file stays sparse on the host; six names of one 4 MiB file (24 MiB
    // as copies) are refused whole under the 8 MiB cap, two (8 MiB plus
    // the sparse file's nothing) fit. A red team committed 1.15 GiB from
    // a 10 MiB staging this way.
    let shell = |script: &str| {
        output_timeout(
            &mut env.wrap("namespaces", &capped, &["sh", "-c", script]),
            std::time::Duration::from_secs(60),
        )
    };
    let links = |n: usize| {
        let mut s = format!(
            "cd {o} && mkdir -p links && yes 0123456789abcdef | head -c 3000000 > links/a",
            o = out.display()
        );
        for i in 1..n {
            s.push_str(&format!(" && ln links/a links/l{i}"));
        }
        s
    };
    let o = shell(&format!("{} && truncate -s 1G sparse", links(6)));
    assert_exit(&o, 1);
    assert!(
        text(&o.stderr).contains("refusing to commit") && text(&o.stderr).contains("hard links"),
        "{}",
        text(&o.stderr)
    );
    assert!(
        !out.join("links").exists() && !out.join("sparse").exists(),
        "part of a refused commit was written"
    );
    let o = shell(&format!("{} && truncate -s 1G sparse", links(2)));
    assert_exit(&o, 0);
    let sparse = fs::metadata(out.join("sparse")).unwrap();
    use std::os::unix::fs::MetadataExt as _;
    assert_eq!(sparse.len(), 1 << 30);
    assert!(
        sparse.blocks() < 64,
        "the sparse file was written out: {} blocks",
        sparse.blocks()
    );
    assert_eq!(fs::read_dir(out.join("links")).unwrap().count(), 2);
    fs::remove_dir_all(out.join("links")).unwrap();
    fs::remove_file(out.join("sparse")).unwrap();

    // --dry-run: the command runs, its writes are discarded.
    let plain = env.policy("plain", "none", "");
    let dry = |tier: &str| {
        let mut c = env.user.cmd(&env.sandboy);
        c.args(["wrap", "--dry-run", "--isolation", tier, "--policy"])
            .arg(&plain)
            .arg("--")
            .args([env.probe.to_str().unwrap(), "create", &env.p("out/dry")])
            .current_dir(env.dir.path().join("cwd"));
        capture(&mut c)
    };
    let o = dry("namespaces");
    assert_eq!(text(&o.stdout), "ok\n", "{}", text(&o.stderr));
    assert!(
        !out.join("dry").exists(),
        "--dry-run write reached the host"
    );

    // The landlock tier: no staging, so no caps and no --dry-run.
    let o = env.probe(
        "landlock",
        &env.policy("capped-ll", "host", "[limits]\ndisk = \"8MiB\""),
        &["hello"],
    );
    assert_exit(&o, 2);
    assert!(
        text(&o.stderr).contains("[limits] disk"),
        "{}",
        text(&o.stderr)
    );
    let o = dry("landlock");
    assert_exit(&o, 2);
    assert!(text(&o.stderr).contains("--dry-run"), "{}", text(&o.stderr));
    let o = env.probe("landlock", &env.policy("plain-ll", "host", ""), &["hello"]);
    assert_eq!(text(&o.stdout), "hello\n", "{}", text(&o.stderr));
}

/// A write path that holds a checkout (`--rw .`) does not take the
/// repository's config, hooks or info through the commit: the user's next
/// `git` runs them outside any sandbox (a red team's `pre-commit` hook
/// read `~/.ssh`). The whole commit is refused; the same step's objects
/// and sources are committed when it leaves the control files alone, and
/// a write path inside `.git` is the user's to grant.
#[test]
fn a_checkouts_hooks_and_config_are_not_committed_from_a_write_path() {
    let t = "a_checkouts_hooks_and_config_are_not_committed_from_a_write_path";
    let Some(env) = Env::new(t) else {
        return;
    };
    if !namespaces_work(&env) {
        skip(t, "unprivileged user namespaces are refused here");
        return;
    }
    let policy = env.policy("repo", "none", "");
    let repo = env.dir.path().join("out/repo");
    for d in ["", ".git", ".git/hooks", ".git/objects"] {
        fs::create_dir_all(repo.join(d)).unwrap();
        env.user.chown(&repo.join(d));
    }
    fs::write(repo.join(".git/config"), "[core]\n").unwrap();
    env.user.chown(&repo.join(".git/config"));
    let shell = |policy: &Path, script: &str| {
        output_timeout(
            &mut env.wrap("namespaces", policy, &["sh", "-c", script]),
            std::time::Duration::from_secs(60),
        )
    };
    let r = repo.display();
    for plant in [
        format!("echo 'cat ~/.ssh/id_ed25519' > {r}/.git/hooks/pre-commit"),
        format!("printf '\\tfsmonitor = cat ~/.ssh/id_ed25519\\n' >> {r}/.git/config"),
    ] {
        let o = shell(&policy, &format!("echo code > {r}/main.c && {plant}"));
        assert_exit(&o, 1);
        assert!(
            text(&o.stderr).contains("refusing to commit")
                && text(&o.stderr).contains("outside any sandbox"),
            "{plant}: {}",
            text(&o.stderr)
        );
        assert!(
            !repo.join("main.c").exists(),
            "{plant}: part of it was committed"
        );
        assert!(!repo.join(".git/hooks/pre-commit").exists(), "{plant}");
        assert_eq!(
            fs::read_to_string(repo.join(".git/config")).unwrap(),
            "[core]\n"
        );
    }
    // Counterparts: objects and sources commit; a write path inside .git
    // lets the step change the hooks.
    let o = shell(
        &policy,
        &format!("echo code > {r}/main.c && echo obj > {r}/.git/objects/ab"),
    );
    assert_exit(&o, 0);
    assert!(repo.join("main.c").is_file() && repo.join(".git/objects/ab").is_file());
    let hooks = env.dir.path().join("hooks.toml");
    fs::write(
        &hooks,
        fs::read_to_string(&policy)
            .unwrap()
            .replace("write = [", &format!("write = [\"{r}/.git/hooks\", ")),
    )
    .unwrap();
    let o = shell(&hooks, &format!("echo true > {r}/.git/hooks/pre-commit"));
    assert_exit(&o, 0);
    assert!(repo.join(".git/hooks/pre-commit").is_file());
    fs::remove_file(repo.join(".git/hooks/pre-commit")).unwrap();

    // The landlock tier writes the host directly: the watchdog puts the
    // control files back once the step is gone, and the run fails.
    let host_net = env.policy("repo-ll", "host", "");
    let landlock = |script: &str| {
        output_timeout(
            &mut env.wrap("landlock", &host_net, &["sh", "-c", script]),
            std::time::Duration::from_secs(60),
        )
    };
    for plant in [
        format!("echo 'cat ~/.ssh/id_ed25519' > {r}/.git/hooks/pre-commit"),
        format!("printf 'fsmonitor = x\\n' >> {r}/.git/config"),
        format!("rm -rf {r}/.git/hooks && ln -s / {r}/.git/hooks"),
    ] {
        let o = landlock(&plant);
        assert_exit(&o, 1);
        assert!(
            text(&o.stderr).contains("were put back"),
            "{plant}: {}",
            text(&o.stderr)
        );
        assert!(!repo.join(".git/hooks/pre-commit").exists(), "{plant}");
        assert!(repo.join(".git/hooks").is_dir() && !repo.join(".git/hooks").is_symlink());
        assert_eq!(
            fs::read_to_string(repo.join(".git/config")).unwrap(),
            "[core]\n"
        );
    }
    let o = landlock(&format!("echo obj2 > {r}/.git/objects/cd"));
    assert_exit(&o, 0);
    assert!(repo.join(".git/objects/cd").is_file());
}

/// Issue 15, found by trying this build: git runs more than `.git/config`
/// and `.git/hooks`. `commondir` and `config.worktree` redirect or add
/// configuration, a submodule's git directory under `.git/modules` has its
/// own, a worktree's `.git` file names its git directory, a bare
/// repository has hooks of its own, `core.hooksPath` may point into the
/// write path, and a linked worktree has its own `config.worktree`. Each is put back (landlock tier) or refuses the commit
/// (namespaces tier); the same step writing a source file next to them is
/// allowed.
#[test]
fn every_file_git_runs_from_is_held() {
    let t = "every_file_git_runs_from_is_held";
    let Some(env) = Env::new(t) else {
        return;
    };
    let out = env.dir.path().join("out");
    let write = |rel: &str, body: &str| {
        let p = out.join(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(&p, body).unwrap();
    };
    for g in ["repo/.git", "repo/.git/modules/lib/sub", "bare.git"] {
        write(&format!("{g}/HEAD"), "ref: refs/heads/main\n");
        write(&format!("{g}/config"), "[core]\n");
        fs::create_dir_all(out.join(g).join("objects")).unwrap();
    }
    fs::create_dir_all(out.join("bare.git/hooks")).unwrap();
    write("repo/.git/worktrees/wt1/HEAD", "ref: refs/heads/wt1\n");
    write("wt/.git", "gitdir: /nonexistent/.git/worktrees/wt\n");
    write("hp/.git/HEAD", "ref: refs/heads/main\n");
    write(
        "hp/.git/config",
        "[core]\n\thooksPath = githooks # as husky writes it\n",
    );
    fs::create_dir_all(out.join("hp/.git/objects")).unwrap();
    fs::create_dir_all(out.join("githooks-unused")).unwrap();
    fs::create_dir_all(out.join("hp/githooks")).unwrap();
    // Shared hooks beside the checkout, still inside the write path.
    write("hs/.git/HEAD", "ref: refs/heads/main\n");
    write("hs/.git/config", "[core]\n\thooksPath = ../shared-hooks\n");
    fs::create_dir_all(out.join("hs/.git/objects")).unwrap();
    fs::create_dir_all(out.join("shared-hooks")).unwrap();
    let chown = capture(
        std::process::Command::new("chown")
            .arg("-R")
            .arg(format!("{}:{}", env.user.uid, env.user.gid))
            .arg(&out),
    );
    assert_exit(&chown, 0);
    let at = out.display();
    let plants = [
        (
            format!("echo /tmp/evil > {at}/repo/.git/commondir"),
            "repo/.git/commondir",
        ),
        (
            format!("echo '[core]' > {at}/repo/.git/config.worktree"),
            "repo/.git/config.worktree",
        ),
        (
            format!("printf 'fsmonitor = x\\n' >> {at}/repo/.git/modules/lib/sub/config"),
            "repo/.git/modules/lib/sub/config",
        ),
        (
            format!("echo 'gitdir: /tmp/evil' > {at}/wt/.git"),
            "wt/.git",
        ),
        (
            format!("echo id > {at}/bare.git/hooks/post-update"),
            "bare.git/hooks/post-update",
        ),
        (
            format!("echo id > {at}/hp/githooks/pre-commit"),
            "hp/githooks/pre-commit",
        ),
        (
            format!("echo id > {at}/shared-hooks/pre-commit"),
            "shared-hooks/pre-commit",
        ),
        (
            format!("printf '[core]\\nfsmonitor = id\\n' > {at}/repo/.git/worktrees/wt1/config.worktree"),
            "repo/.git/worktrees/wt1/config.worktree",
        ),
    ];
    let snapshot = || {
        [
            "repo/.git/config",
            "repo/.git/modules/lib/sub/config",
            "wt/.git",
            "hp/.git/config",
        ]
        .map(|f| fs::read_to_string(out.join(f)).unwrap())
    };
    let before = snapshot();
    let gone = [
        "repo/.git/commondir",
        "repo/.git/config.worktree",
        "bare.git/hooks/post-update",
        "hp/githooks/pre-commit",
        "shared-hooks/pre-commit",
        "repo/.git/worktrees/wt1/config.worktree",
    ];
    let sh = |tier: &str, policy: &Path, script: &str| {
        output_timeout(
            &mut env.wrap(tier, policy, &["sh", "-c", script]),
            std::time::Duration::from_secs(60),
        )
    };
    let landlock = env.policy("git-ll", "host", "");
    for (plant, what) in &plants {
        let r = sh(
            "landlock",
            &landlock,
            &format!("echo code > {at}/main.c && {plant}"),
        );
        assert_exit(&r, 1);
        assert!(
            text(&r.stderr).contains("were put back"),
            "{what}: {}",
            text(&r.stderr)
        );
        assert_eq!(snapshot(), before, "{what}");
        assert!(gone.iter().all(|g| !out.join(g).exists()), "{what}");
    }
    // Allowed: a source file, and a worktree's own state beside its held
    // control files.
    let r = sh(
        "landlock",
        &landlock,
        &format!("echo code > {at}/main.c && echo a > {at}/repo/.git/worktrees/wt1/ORIG_HEAD"),
    );
    assert_exit(&r, 0);
    assert!(out.join("repo/.git/worktrees/wt1/ORIG_HEAD").is_file());
    if !namespaces_work(&env) {
        skip(
            t,
            "namespaces tier: unprivileged user namespaces are refused here",
        );
        return;
    }
    let staged = env.policy("git-ns", "none", "");
    // The namespaces tier's commit refuses every one of them.
    for (plant, what) in &plants {
        let r = sh(
            "namespaces",
            &staged,
            &format!("echo code2 > {at}/new.c && {plant}"),
        );
        assert_exit(&r, 1);
        assert!(
            text(&r.stderr).contains("refusing to commit"),
            "{what}: {}",
            text(&r.stderr)
        );
        assert!(!out.join("new.c").exists(), "{what}");
        assert_eq!(snapshot(), before, "{what}");
        assert!(gone.iter().all(|g| !out.join(g).exists()), "{what}");
    }
    // Its counterparts: a hook written into a directory no hooksPath names,
    // a bare repository's objects and a worktree's own state commit.
    let r = sh(
        "namespaces",
        &staged,
        &format!("echo id > {at}/githooks-unused/pre-commit && echo o > {at}/bare.git/objects/ab && echo b > {at}/repo/.git/worktrees/wt1/ORIG_HEAD"),
    );
    assert_exit(&r, 0);
    assert!(
        out.join("githooks-unused/pre-commit").is_file()
            && out.join("bare.git/objects/ab").is_file()
    );
    assert_eq!(
        fs::read_to_string(out.join("repo/.git/worktrees/wt1/ORIG_HEAD")).unwrap(),
        "b\n"
    );
}

/// What git reads beyond a repository is held like its own config: the
/// caller's `~/.gitconfig`, a file it or a repository's config includes,
/// a global `core.hooksPath`, a checkout's hooks path in another write
/// path, and `~/.config/git/config` that does not exist yet — in both
/// tiers, each plant next to writes that go through
/// (a note in the home, another program's `~/.config` file).
#[test]
fn global_git_config_and_its_includes_are_held() {
    let t = "global_git_config_and_its_includes_are_held";
    let Some(env) = Env::new(t) else {
        return;
    };
    let out = env.dir.path().join("out");
    let home = out.join("home");
    let write = |rel: &str, body: &str| {
        let p = out.join(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(&p, body).unwrap();
    };
    write(
        "home/.gitconfig",
        "[include]\n\tpath = shared.inc\n[core] hooksPath = ~/hooks\n",
    );
    write("home/shared.inc", "[user]\n\tname = u\n");
    fs::create_dir_all(home.join("hooks")).unwrap();
    fs::create_dir_all(home.join(".config")).unwrap();
    write("team/.git/HEAD", "ref: refs/heads/main\n");
    write(
        "team/.git/config",
        "[includeIf \"gitdir:/\"]\n\tpath = ../../team.gitconfig\n",
    );
    fs::create_dir_all(out.join("team/.git/objects")).unwrap();
    write("team.gitconfig", "[core]\n");
    // A checkout's hooks in another write path than its own.
    let out2 = env.dir.path().join("out2");
    fs::create_dir_all(out2.join("hooks")).unwrap();
    write(
        "team/.git/config.worktree",
        &format!("[core]\n\thooksPath = {}/hooks\n", out2.display()),
    );
    env.user.chown(&out2);
    env.user.chown(&out2.join("hooks"));
    assert_exit(
        &capture(
            std::process::Command::new("chown")
                .arg("-R")
                .arg(format!("{}:{}", env.user.uid, env.user.gid))
                .arg(&out),
        ),
        0,
    );
    let (h, at) = (home.display(), out.display());
    let evil = "printf '[core]\\nfsmonitor = id\\n'";
    let plants = [
        format!("{evil} >> {h}/.gitconfig"),
        format!("{evil} >> {h}/shared.inc"),
        format!("echo id > {h}/hooks/pre-commit"),
        format!("{evil} >> {at}/team.gitconfig"),
        format!("mkdir -p {h}/.config/git && {evil} > {h}/.config/git/config"),
        format!("echo id > {}/hooks/pre-commit", out2.display()),
    ];
    let held = ["home/.gitconfig", "home/shared.inc", "team.gitconfig"];
    let snapshot = || held.map(|f| fs::read_to_string(out.join(f)).unwrap());
    let before = snapshot();
    let sh = |tier: &str, policy: &Path, script: &str| {
        let mut c = env.user.cmd("env");
        c.args(["-u", "XDG_CONFIG_HOME", "-u", "GIT_CONFIG_GLOBAL"])
            .arg(format!("HOME={h}"))
            .arg(&env.sandboy)
            .args(["wrap", "--isolation", tier, "--policy"])
            .arg(policy)
            .args(["--", "sh", "-c", script])
            .current_dir(env.dir.path().join("cwd"));
        output_timeout(&mut c, std::time::Duration::from_secs(60))
    };
    let unchanged = |what: &str| {
        assert_eq!(snapshot(), before, "{what}");
        assert!(!home.join("hooks/pre-commit").exists(), "{what}");
        assert!(!home.join(".config/git/config").exists(), "{what}");
        assert!(!out2.join("hooks/pre-commit").exists(), "{what}");
    };
    // Both directories writable.
    let policy = |name: &str, ns: &str| {
        let p = env.policy(name, ns, "");
        let text = fs::read_to_string(&p).unwrap().replace(
            &format!("write = [\"{}\"", out.display()),
            &format!("write = [\"{}\", \"{}\"", out.display(), out2.display()),
        );
        fs::write(&p, text).unwrap();
        p
    };
    let allowed = |n: &str| {
        format!("echo {n} > {h}/notes.txt && mkdir -p {h}/.config/other && echo {n} > {h}/.config/other/rc")
    };
    let mut tiers = vec![("landlock", policy("gc-ll", "host"), "were put back")];
    if namespaces_work(&env) {
        tiers.push(("namespaces", policy("gc-ns", "none"), "refusing to commit"));
    } else {
        skip(
            t,
            "namespaces tier: unprivileged user namespaces are refused here",
        );
    }
    for (tier, policy, refusal) in &tiers {
        for plant in &plants {
            let r = sh(tier, policy, &format!("echo code > {at}/main.c && {plant}"));
            assert_exit(&r, 1);
            assert!(
                text(&r.stderr).contains(refusal),
                "{tier}: {plant}: {}",
                text(&r.stderr)
            );
            unchanged(&format!("{tier}: {plant}"));
            let _ = fs::remove_dir(home.join(".config/git"));
        }
        let r = sh(tier, policy, &allowed(tier));
        assert_exit(&r, 0);
        assert_eq!(
            fs::read_to_string(home.join("notes.txt")).unwrap(),
            format!("{tier}\n")
        );
        assert_eq!(
            fs::read_to_string(home.join(".config/other/rc")).unwrap(),
            format!("{tier}\n")
        );
        unchanged(&format!("{tier}: allowed"));
    }
}

/// Whether the namespaces tier can run here (unprivileged user namespaces).
fn namespaces_work(env: &Env) -> bool {
    let o = env.probe(
        "namespaces",
        &env.policy("probe-ns", "none", ""),
        &["hello"],
    );
    o.status.success()
}

/// A program planted in a write path does not run through the loader in
/// the namespaces tier: write paths are bound noexec (as in containers),
/// so `ld.so ./copy` cannot map it; the loader on a program in `exec` runs.
/// The landlock tier cannot mount: there this stays a residual
/// (docs/security.md), so it is not asserted.
#[test]
fn the_loader_cannot_run_a_planted_file_in_the_namespaces_tier() {
    let test = "the_loader_cannot_run_a_planted_file_in_the_namespaces_tier";
    let Some(env) = Env::new(test) else {
        return;
    };
    if !namespaces_work(&env) {
        return skip(test, "unprivileged user namespaces are not available");
    }
    let ld = "/lib64/ld-linux-x86-64.so.2";
    if !std::path::Path::new(ld).exists() {
        return skip(test, "no x86-64 glibc loader at /lib64");
    }
    let policy = env.policy("loader", "none", "");
    let planted = format!("{}/true-copy", env.p("out"));
    let script = format!(
        "cp /usr/bin/true {planted} && chmod 755 {planted}; {ld} {planted}; echo planted=$?; {ld} /usr/bin/true; echo listed=$?"
    );
    let o = output_timeout(
        &mut env.wrap("namespaces", &policy, &["sh", "-c", &script]),
        std::time::Duration::from_secs(60),
    );
    let out = text(&o.stdout);
    let err = text(&o.stderr);
    assert!(out.contains("planted=127"), "{out}\n{err}");
    assert!(err.contains("failed to map segment"), "{err}");
    assert!(out.contains("listed=0"), "{out}\n{err}");
}

/// The user's own host sockets (ssh-agent, D-Bus, a rootless docker) are
/// out of reach of an unprivileged step: below Landlock ABI 9 nothing
/// scopes pathname UNIX sockets, so socket(AF_UNIX) is refused (EACCES) in
/// both tiers; `[net] unix = true` opens them.
#[test]
fn unix_sockets_are_refused_unless_the_policy_opens_them() {
    let Some(env) = Env::new("unix_sockets_are_refused_unless_the_policy_opens_them") else {
        return;
    };
    for tier in TIERS {
        if *tier == "namespaces" && !namespaces_work(&env) {
            continue;
        }
        let closed = env.policy(&format!("unix-closed-{tier}"), ns_of(tier), "");
        let o = env.probe(tier, &closed, &["socket", "1", "1", "0"]);
        assert_probe(&o, false, &format!("{tier}: AF_UNIX socket"));
        assert!(text(&o.stdout).contains("EACCES"), "{}", text(&o.stdout));
        // A datagram pair could sendto any pathname socket (journald's
        // /dev/log, $NOTIFY_SOCKET; found by trying this build), with its
        // flags too; a stream pair is connected for good and stays.
        for ty in ["2", "0x80802"] {
            let o = env.probe(tier, &closed, &["socketpair", ty]);
            assert_probe(&o, false, &format!("{tier}: datagram socketpair {ty}"));
            assert!(text(&o.stdout).contains("EACCES"), "{}", text(&o.stdout));
        }
        for ty in ["1", "5"] {
            let o = env.probe(tier, &closed, &["socketpair", ty]);
            assert_probe(
                &o,
                true,
                &format!("{tier}: stream/seqpacket socketpair {ty}"),
            );
        }
        let open = env.policy(&format!("unix-open-{tier}"), ns_of(tier), "");
        let body = fs::read_to_string(&open)
            .unwrap()
            .replace("[net]\n", "[net]\nunix = true\n");
        fs::write(&open, body).unwrap();
        let o = env.probe(tier, &open, &["socket", "1", "1", "0"]);
        assert_probe(
            &o,
            true,
            &format!("{tier}: AF_UNIX socket with unix = true"),
        );
        let o = env.probe(tier, &open, &["socketpair", "2"]);
        assert_probe(
            &o,
            true,
            &format!("{tier}: datagram socketpair, unix = true"),
        );
    }
}

/// Issue 14, found by trying this build: the landlock tier shares the
/// host's pid and IPC namespaces, where Landlock's scopes (signals,
/// abstract sockets, ptrace) do not reach. A process of the same user
/// outside the sandbox, and a System V segment of that user's, are out of
/// the step's reach (prlimit could kill the watchdog with RLIMIT_CPU and
/// lose the timeout); the step's own limits and priority stay its own.
/// Another process of the test user, outside any sandbox, and the first
/// line it prints (its pid, the terminal it holds…).
fn victim(env: &Env, program: &str, args: &[&str]) -> (std::process::Child, String) {
    use std::io::BufRead;
    let mut child = env
        .user
        .cmd(program)
        .args(args)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    (child, line.trim().to_string())
}

#[test]
fn the_users_other_processes_and_ipc_are_out_of_reach() {
    let t = "the_users_other_processes_and_ipc_are_out_of_reach";
    let Some(env) = Env::new(t) else {
        return;
    };
    let (mut victim, pid) = victim(&env, "sh", &["-c", "echo $$; exec sleep 60"]);
    let key = format!("5b0e{:04x}", std::process::id() & 0xffff);
    let outside = |args: &[&str]| capture(env.user.cmd(&env.probe).args(args));
    // Outside the sandbox the user reaches both (so the refusals below are
    // the sandbox's, not the kernel's permission checks).
    assert_probe(
        &outside(&["shm-create", &key]),
        true,
        "host: make a segment",
    );
    assert_probe(&outside(&["shmget", &key]), true, "host: find it");
    assert_probe(
        &outside(&["prlimit", &pid]),
        true,
        "host: prlimit of the victim",
    );
    let queue = format!("/sandboy-mq-{}", std::process::id());
    assert_probe(&outside(&["mq-create", &queue]), true, "host: make a queue");
    for tier in TIERS {
        if *tier == "namespaces" && !namespaces_work(&env) {
            continue;
        }
        let pol = env.policy(&format!("procs-{tier}"), ns_of(tier), "");
        let refused = |args: &[&str], errno: &str| {
            let o = env.probe(tier, &pol, args);
            assert_probe(&o, false, &format!("{tier}: {args:?}"));
            assert!(
                text(&o.stdout).contains(errno),
                "{tier} {args:?}: {}",
                text(&o.stdout)
            );
        };
        // landlock: refused by seccomp (EPERM); namespaces: not visible.
        let (seen, no_ipc) = if *tier == "landlock" {
            ("EPERM", "EPERM")
        } else {
            ("ESRCH", "ENOENT")
        };
        refused(&["prlimit", &pid], seen);
        refused(&["renice", &pid], seen);
        refused(&["shmget", &key], no_ipc);
        // A message queue of the user's: landlock refuses every mq_* call
        // (the queue a refused create made would stay behind otherwise);
        // the namespaces tier sees its own IPC namespace.
        let queue = format!("/sandboy-mq-{}", std::process::id());
        if *tier == "landlock" {
            // glibc reports the kernel's EPERM from mq_unlink as EACCES.
            refused(&["mq-unlink", &queue], "EACCES");
            refused(&["mq-create", "/sandboy-mq-squat"], "EPERM");
        } else {
            refused(&["mq-unlink", &queue], "ENOENT");
        }
        assert_probe(
            &outside(&["mq-unlink", &queue]),
            true,
            &format!("{tier}: the user's queue is still there"),
        );
        assert_probe(
            &outside(&["mq-create", &queue]),
            true,
            "host: remake the queue",
        );
        assert_probe(
            &env.probe(tier, &pol, &["prlimit", "0"]),
            true,
            &format!("{tier}: own prlimit"),
        );
        if *tier == "landlock" {
            refused(&["shm-private"], "EPERM");
        } else {
            assert_probe(
                &env.probe(tier, &pol, &["shm-private"]),
                true,
                "namespaces: own IPC namespace",
            );
        }
    }
    assert!(victim.try_wait().unwrap().is_none(), "the victim died");
    let _ = Command::new("ipcrm")
        .args(["-M", &format!("0x{key}")])
        .status();
    let _ = outside(&["mq-unlink", &queue]);
    // A squat the landlock tier refused must not have been made.
    assert_probe(
        &outside(&["mq-unlink", "/sandboy-mq-squat"]),
        false,
        "no queue left by a refused mq_open",
    );
    let _ = victim.kill();
    let _ = victim.wait();
}

/// `--ro /` in the landlock tier (which shares the host's `/dev`): another
/// terminal of the user stays out of reach, so a step cannot take the
/// keystrokes typed there (a red team read a `sudo` password that way);
/// everything else under `/` still reads, and a policy that names
/// `/dev/pts` itself gets it.
#[test]
fn the_users_other_terminals_are_not_granted_by_a_wider_grant() {
    let t = "the_users_other_terminals_are_not_granted_by_a_wider_grant";
    let Some(env) = Env::new(t) else {
        return;
    };
    if !need_tool(t, "python3") {
        return;
    }
    // A terminal of the user's, held open by another of its processes.
    let (mut victim, tty) = victim(
        &env,
        "python3",
        &[
            "-c",
            "import os,pty,time; m,s=pty.openpty(); print(os.ttyname(s), flush=True); time.sleep(60)",
        ],
    );
    assert!(tty.starts_with("/dev/pts/"), "{tty}");
    let bin = env.p("bin");
    let run = |grants: &[&str], args: &[&str]| {
        let mut c = env.user.cmd(&env.sandboy);
        c.args(["wrap", "--isolation", "landlock", "--exec", &bin])
            .args(grants)
            .arg("--")
            .arg(&env.probe)
            .args(args);
        output_timeout(&mut c, std::time::Duration::from_secs(60))
    };
    let everything = ["--ro", "/"];
    let refused = run(&everything, &["read", &tty]);
    assert_probe(&refused, false, "--ro /: another terminal of the user");
    assert!(
        text(&refused.stdout).contains("EACCES"),
        "{}",
        text(&refused.stdout)
    );
    assert_probe(
        &run(&everything, &["read", "/etc/hostname"]),
        true,
        "--ro /: /etc",
    );
    assert_probe(
        &run(&everything, &["read", "/dev/null"]),
        true,
        "--ro /: /dev/null",
    );
    // Through a link (one a step could have left in an earlier run): the
    // grant is judged by what it resolves to.
    let out = env.p("out");
    let dev_link = format!("{out}/dev-link");
    let tty_link = format!("{out}/tty-link");
    assert_exit(
        &capture(env.user.cmd("ln").args(["-s", "/dev", &dev_link])),
        0,
    );
    assert_exit(
        &capture(env.user.cmd("ln").args(["-s", &tty, &tty_link])),
        0,
    );
    for grant in [&dev_link, &tty_link] {
        let o = run(&["--ro", grant], &["read", &tty]);
        assert_probe(&o, false, &format!("--ro {grant}: another terminal"));
    }
    assert_probe(
        &run(&["--ro", &dev_link], &["read", "/dev/null"]),
        true,
        "--ro <link to /dev>: /dev/null",
    );
    // Named by the policy itself: granted as written.
    assert_probe(
        &run(&["--ro", "/", "--rw", "/dev/pts"], &["write", &tty]),
        true,
        "--rw /dev/pts: the terminal, named",
    );
    assert!(victim.try_wait().unwrap().is_none(), "the victim died");
    let _ = victim.kill();
    let _ = victim.wait();
}

/// `[fs] hide` inside a granted tree: the namespaces tier masks it as root
/// wrap and OCI masked paths do (an empty directory, an empty file); the
/// landlock tier, which can only grant, refuses it under enforce rather
/// than run with the hidden files readable.
#[test]
fn hidden_paths_are_masked_or_the_policy_refused() {
    let t = "hidden_paths_are_masked_or_the_policy_refused";
    let Some(env) = Env::new(t) else {
        return;
    };
    fs::create_dir_all(env.dir.path().join("ro/secrets")).unwrap();
    fs::write(env.dir.path().join("ro/secrets/key"), "HIDDEN-KEY").unwrap();
    fs::write(env.dir.path().join("ro/.env"), "ENV-SECRET").unwrap();
    let hide = format!(
        "[fs]\nhide = [\"{}\", \"{}\"]\n",
        env.p("ro/secrets"),
        env.p("ro/.env")
    );
    let pol = env.policy("hide", "host", "");
    let body = fs::read_to_string(&pol).unwrap().replace("[fs]\n", &hide);
    fs::write(&pol, body).unwrap();
    let cat = format!(
        "cat {ro}/file; echo; cat {ro}/.env; echo; ls -A {ro}/secrets; cat {ro}/secrets/key; echo end",
        ro = env.p("ro")
    );
    let o = capture(&mut env.wrap("landlock", &pol, &["sh", "-c", &cat]));
    assert_exit(&o, 2);
    assert!(text(&o.stderr).contains("[fs] hide"), "{}", text(&o.stderr));
    assert_eq!(text(&o.stdout), "", "the command ran");
    if !namespaces_work(&env) {
        return;
    }
    let o = capture(&mut env.wrap("namespaces", &pol, &["sh", "-c", &cat]));
    let out = text(&o.stdout);
    assert!(
        out.starts_with("r\n\n"),
        "the sibling is readable, .env empty: {out}"
    );
    assert!(out.ends_with("end\n"), "{out}");
    assert!(
        !out.contains("HIDDEN-KEY") && !out.contains("ENV-SECRET"),
        "{out}"
    );
    assert!(
        !out.contains("key"),
        "the hidden directory lists empty: {out}"
    );
}

#[test]
fn a_scripts_interpreter_is_not_granted_by_its_own_line() {
    let Some(env) = Env::new("a_scripts_interpreter_is_not_granted_by_its_own_line") else {
        return;
    };
    // A checkout's script naming an interpreter outside `[fs] exec`.
    let cwd = env.dir.path().join("cwd");
    let script = cwd.join("ci.sh");
    std::fs::write(&script, "#!/usr/bin/tac\nsecond\nfirst\n").unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    for tier in TIERS {
        let run = |extra: &[&str]| {
            let mut c = env.user.cmd(&env.sandboy);
            c.args(["wrap", "--isolation", tier, "--ro", ".", "--exec", "."])
                .args(extra)
                .args(["--", "./ci.sh"])
                .current_dir(&cwd);
            capture(&mut c)
        };
        // Refused: the `#!` line alone does not make /usr/bin/tac runnable.
        let o = run(&[]);
        assert_exit(&o, 126);
        assert!(text(&o.stdout).is_empty(), "{tier}: {}", text(&o.stdout));
        // Allowed: listed in exec, the same script runs.
        let o = run(&["--exec", "/usr/bin/tac"]);
        assert_exit(&o, 0);
        assert_eq!(text(&o.stdout), "first\nsecond\n#!/usr/bin/tac\n", "{tier}");
    }
}

/// `--report` in an unprivileged tier: no audit records can be read, so
/// the warning says so once and the report (written, as root's always is)
/// holds only what the tier collects; an unwritable report path fails the
/// run (exit 1). A red team took the missing file for "nothing refused".
#[test]
fn an_unprivileged_report_says_what_it_cannot_hold() {
    let Some(env) = Env::new("an_unprivileged_report_says_what_it_cannot_hold") else {
        return;
    };
    let policy = env.policy("report", "host", "");
    let report = env.dir.path().join("out/r.jsonl");
    let secret = env.p("secret");
    for tier in TIERS {
        let _ = fs::remove_file(&report);
        let mut c = env.user.cmd(&env.sandboy);
        c.args(["wrap", "--isolation", tier, "--policy"])
            .arg(&policy)
            .arg("--report")
            .arg(&report)
            .args(["--", "cat", &secret])
            .current_dir(env.dir.path().join("cwd"));
        let o = capture(&mut c);
        assert_exit(&o, 1);
        let e = text(&o.stderr);
        assert_eq!(
            e.matches("denial reports are unavailable").count(),
            1,
            "{tier}: {e}"
        );
        // Refused (landlock) or never mounted (namespaces).
        assert!(
            e.contains("Permission denied") || e.contains("No such file"),
            "{tier}: {e}"
        );
        assert_eq!(fs::read_to_string(&report).unwrap(), "", "{tier}");
    }
    // Refused: a report path that cannot be written fails the run.
    let mut c = env.user.cmd(&env.sandboy);
    c.args(["wrap", "--isolation", "landlock", "--policy"])
        .arg(&policy)
        .args(["--report", "/nonexistent/r.jsonl", "--", "true"])
        .current_dir(env.dir.path().join("cwd"));
    let o = capture(&mut c);
    assert_exit(&o, 1);
    assert!(
        text(&o.stderr).contains("--report /nonexistent/r.jsonl"),
        "{}",
        text(&o.stderr)
    );
}

/// `--id` is checked for every caller (root refused `../x` and `a/b`, an
/// ordinary user's wrap took them): exit 2, one line; a plain id runs.
#[test]
fn an_unprivileged_wrap_checks_its_id() {
    let Some(env) = Env::new("an_unprivileged_wrap_checks_its_id") else {
        return;
    };
    let run = |id: &str| {
        let mut c = env.user.cmd(&env.sandboy);
        c.args(["wrap", "--isolation", "landlock", "--id", id])
            .args(["--ro", "/etc", "--exec", "/usr/bin", "--", "true"])
            .current_dir(env.dir.path().join("cwd"));
        capture(&mut c)
    };
    for bad in ["../x", "a/b", ".hidden"] {
        let o = run(bad);
        assert_exit(&o, 2);
        let e = text(&o.stderr);
        assert!(
            e.contains("invalid container id") && e.lines().count() == 1,
            "{bad}: {e}"
        );
    }
    assert_exit(&run("step-1"), 0);
}

/// A red team's checkout: `ci.sh` starting `#!./p\v/../…/usr/bin/sh`
/// (the kernel splits a `#!` line at spaces and tabs only, so it runs
/// `sh`) beside a decoy ELF `p` whose `PT_INTERP` is `/`. Reading the line
/// as text, wrap granted the decoy's "loader", `/`, and the script read
/// everything. Now the line is read as the kernel reads it and only a file
/// in a library directory is granted as a loader: the script runs, and a
/// file outside the policy stays refused.
#[test]
fn a_decoy_loader_grants_nothing() {
    let Some(env) = Env::new("a_decoy_loader_grants_nothing") else {
        return;
    };
    let cwd = env.dir.path().join("cwd");
    let mut elf = fs::read("/usr/bin/true").unwrap();
    let at = elf
        .windows(5)
        .position(|w| w == b"/lib6")
        .expect("/usr/bin/true names its loader");
    elf[at + 1] = 0; // PT_INTERP is now "/"
    fs::write(cwd.join("p"), &elf).unwrap();
    fs::create_dir_all(cwd.join("p\x0b")).unwrap();
    let secret = env.p("secret");
    fs::write(
        cwd.join("ci.sh"),
        format!("#!./p\x0b/../../../../../../../../usr/bin/sh\necho ran; cat {secret}\n"),
    )
    .unwrap();
    for f in ["p", "ci.sh"] {
        fs::set_permissions(cwd.join(f), fs::Permissions::from_mode(0o755)).unwrap();
    }
    for tier in TIERS {
        let run = |extra: &[&str]| {
            let mut c = env.user.cmd(&env.sandboy);
            c.args(["wrap", "--isolation", tier, "--ro", ".", "--exec", "."])
                .args(["--exec", "/usr/bin"])
                .args(extra)
                .args(["--", "./ci.sh"])
                .current_dir(&cwd);
            output_timeout(&mut c, std::time::Duration::from_secs(60))
        };
        // Refused: the script runs, the file outside the policy is not read.
        let o = run(&[]);
        assert_eq!(text(&o.stdout), "ran\n", "{tier}: {}", text(&o.stderr));
        // The landlock tier refuses it; the namespaces tier never mounts it.
        let e = text(&o.stderr);
        assert!(
            e.contains("Permission denied") || e.contains("No such file"),
            "{tier}: {e}"
        );
        // Allowed: listed, the same script reads it.
        let o = run(&["--ro", &secret]);
        assert_exit(&o, 0);
        assert_eq!(text(&o.stdout), "ran\ns", "{tier}");
    }
}

/// `[fs] exec` naming only static programs grants nothing of the loader
/// (the wasm host `adapt` runs is one): no library directory becomes
/// readable. A directory in `[fs] exec`, whose programs may be dynamic,
/// grants them read-only, as before.
#[test]
fn a_static_program_in_exec_grants_no_library_directory() {
    let Some(env) = Env::new("a_static_program_in_exec_grants_no_library_directory") else {
        return;
    };
    let bb = env.user.reachable_copy(Path::new("/bin/busybox"), &env.dir);
    let bb = bb.to_str().unwrap();
    let lib = "/usr/lib/os-release";
    for tier in TIERS {
        let run = |extra: &[&str]| {
            let mut c = env.user.cmd(&env.sandboy);
            c.args(["wrap", "--isolation", tier, "--exec", bb])
                .args(extra)
                .args(["--", bb, "cat", lib])
                .current_dir(env.dir.path().join("cwd"));
            output_timeout(&mut c, std::time::Duration::from_secs(60))
        };
        // Refused: the static program runs, the library directory is not
        // readable (the landlock tier refuses it; the namespaces tier
        // never mounts it).
        let o = run(&[]);
        assert_ne!(o.status.code(), Some(0), "{tier}: {}", text(&o.stdout));
        let e = text(&o.stderr);
        assert!(
            e.contains("Permission denied") || e.contains("No such file"),
            "{tier}: {e}"
        );
        // Allowed: with a directory in `[fs] exec`, it is.
        let o = run(&["--exec", "/usr/bin"]);
        assert_exit(&o, 0);
        assert!(text(&o.stdout).contains("ID="), "{tier}");
    }
}

/// A red team's two runs of one policy in the landlock tier: the first
/// step replaced `~/w/data` (a read rule below the write path `~/w`) by a
/// link to `/`; wrap resolved its rules with `canonicalize` before the
/// terminal carve-out and granted the second step every top-level
/// directory. A rule path is resolved as Landlock opens it: no link below
/// a write path is followed, so the second run is refused, located. (The
/// namespaces tier binds the rule read-only over the write path: the step
/// cannot plant there.)
#[test]
fn a_link_planted_below_a_write_path_grants_nothing_next_time() {
    let Some(env) = Env::new("a_link_planted_below_a_write_path_grants_nothing_next_time") else {
        return;
    };
    let data = env.dir.path().join("out/data");
    fs::create_dir_all(&data).unwrap();
    fs::write(data.join("x"), "x").unwrap();
    env.user.chown(&data);
    let policy = env.dir.path().join("planted.toml");
    fs::write(
        &policy,
        format!(
            "version = 1\n[fs]\nread = [\"/etc\", \"{d}\"]\nexec = [\"/usr/bin\"]\nwrite = [\"{o}\"]\n[net]\nnamespace = \"host\"\n",
            d = data.display(),
            o = env.p("out")
        ),
    )
    .unwrap();
    fs::set_permissions(&policy, fs::Permissions::from_mode(0o644)).unwrap();
    let secret = env.p("secret");
    let tier = "landlock";
    // Allowed: the rule's own directory, before the plant.
    let o = capture(&mut env.wrap(tier, &policy, &["cat", &format!("{}/x", data.display())]));
    assert_exit(&o, 0);
    assert_eq!(text(&o.stdout), "x", "{tier}");
    // The step plants the link (its write path allows it).
    let plant = format!("rm -r {d} && ln -s / {d}", d = data.display());
    assert_exit(
        &capture(&mut env.wrap(tier, &policy, &["sh", "-c", &plant])),
        0,
    );
    // Refused: the next run does not start, nothing is read.
    let o = capture(&mut env.wrap(tier, &policy, &["cat", &secret]));
    assert_exit(&o, 1);
    assert!(text(&o.stdout).is_empty(), "{tier}: {}", text(&o.stdout));
    assert!(
        text(&o.stderr).contains("is a symlink below"),
        "{tier}: {}",
        text(&o.stderr)
    );
    fs::remove_file(&data).unwrap();
    fs::create_dir_all(&data).unwrap();
    fs::write(data.join("x"), "x").unwrap();
    env.user.chown(&data);
}

#[test]
fn a_relative_path_never_leaves_the_checkout_through_its_symlinks() {
    let Some(env) = Env::new("a_relative_path_never_leaves_the_checkout_through_its_symlinks")
    else {
        return;
    };
    let cwd = env.dir.path().join("cwd");
    let policy = env.dir.path().join("rel.toml");
    fs::write(
        &policy,
        "version = 1\n[fs]\nread = [\"/etc\"]\nexec = [\"/usr/bin\"]\nwrite = [\"./build\"]\n[net]\nnamespace = \"host\"\n",
    )
    .unwrap();
    let build = cwd.join("build");
    // Allowed: a real directory of the checkout.
    fs::create_dir_all(&build).unwrap();
    env.user.chown(&build);
    let o = capture(&mut env.wrap("landlock", &policy, &["sh", "-c", "echo made > build/f"]));
    assert_exit(&o, 0);
    assert_eq!(fs::read_to_string(build.join("f")).unwrap(), "made\n");
    // Refused: the checkout's `build -> ../out` (the repository's choice)
    // would grant a directory outside it; a located policy error, exit 2.
    fs::remove_dir_all(&build).unwrap();
    std::os::unix::fs::symlink("../out", &build).unwrap();
    for tier in TIERS {
        let o = capture(&mut env.wrap(tier, &policy, &["sh", "-c", "echo pwned > build/g"]));
        assert_exit(&o, 2);
        let e = text(&o.stderr);
        assert!(
            e.contains("rel.toml:5:") && e.contains("leaves the working directory"),
            "{tier}: {e}"
        );
        assert!(!env.dir.path().join("out/g").exists(), "{tier}");
    }
}

/// The policy `name` with `/usr/local` (where git may live) readable and
/// runnable too.
fn with_usr_local(env: &Env, name: &str, namespace: &str) -> PathBuf {
    let p = env.policy(name, namespace, "");
    let text = fs::read_to_string(&p)
        .unwrap()
        .replace("read = [", "read = [\"/usr/local\", ")
        .replace("exec = [", "exec = [\"/usr/local\", ");
    fs::write(&p, text).unwrap();
    p
}

/// Found by a red team: a `.git` a step makes in a subdirectory of a
/// checkout (`src/.git` with a `core.fsmonitor`) is the repository of the
/// user's next `git` in `src/`, which runs it outside any sandbox. Below a
/// host checkout — one the write path holds, or a write path inside one —
/// it is removed (landlock tier) or refuses the commit (namespaces tier),
/// at any depth and as a `gitdir:` file too; an ordinary file in `src/`
/// lands, and a `git clone` into a write path outside every checkout is
/// the step's output.
#[test]
fn a_repository_made_inside_a_checkout_is_refused() {
    let t = "a_repository_made_inside_a_checkout_is_refused";
    let Some(env) = Env::new(t) else {
        return;
    };
    if !need_tool(t, "git") {
        return;
    }
    let out = env.dir.path().join("out");
    let at = out.display();
    let setup = format!(
        "cd {at} && git init -q -b main proj && mkdir proj/src && echo x > proj/src/a.c && git -C proj add . && git -C proj -c user.name=t -c user.email=t@t commit -qm init && mkdir plain && chown -R {}:{} {at}",
        env.user.uid, env.user.gid
    );
    assert_exit(&capture(Command::new("sh").args(["-c", &setup])), 0);
    let repo = "mkdir -p $1/objects $1/refs && echo 'ref: refs/heads/main' > $1/HEAD && printf '[core]\\n\\tfsmonitor = id\\n' > $1/config";
    let plants = [
        (
            "proj/src/.git",
            format!("set -- {at}/proj/src/.git; {repo}"),
        ),
        (
            "proj/src/a/b/.git",
            format!("set -- {at}/proj/src/a/b/.git; {repo}"),
        ),
        (
            "proj/src/.git",
            format!("echo 'gitdir: {at}/plain' > {at}/proj/src/.git"),
        ),
        // No `.git` at all: git takes a directory with a HEAD and objects
        // for a (bare) repository, and `core.worktree` gives it one.
        (
            "proj/src/HEAD",
            format!("set -- {at}/proj/src; {repo}; printf '\\tworktree = .\\n' >> $1/config"),
        ),
    ];
    let mut tiers = vec![("landlock", "host", "it was removed")];
    if namespaces_work(&env) {
        tiers.push(("namespaces", "none", "refusing to commit"));
    } else {
        skip(
            t,
            "namespaces tier: unprivileged user namespaces are refused here",
        );
    }
    for (tier, ns, refusal) in tiers {
        let policy = with_usr_local(&env, &format!("nested-{tier}"), ns);
        let sh = |cwd: &Path, script: &str| {
            let mut c = env.wrap(tier, &policy, &["sh", "-c", script]);
            c.current_dir(cwd);
            output_timeout(&mut c, std::time::Duration::from_secs(60))
        };
        for (what, plant) in &plants {
            let o = sh(&out, &format!("echo made > {at}/proj/src/new.c && {plant}"));
            assert_exit(&o, 1);
            let e = text(&o.stderr);
            assert!(
                e.contains(refusal) && e.contains(what.trim_end_matches("/HEAD")),
                "{tier}: {what}: {e}"
            );
            assert!(!out.join(what).exists(), "{tier}: {what} stayed");
            if tier == "namespaces" {
                assert!(
                    !out.join("proj/src/new.c").exists(),
                    "{tier}: {what}: committed"
                );
            }
            // The user's own git sees the checkout's repository there.
            let git = format!("cd {at}/proj/src && git rev-parse --absolute-git-dir");
            let o = capture(env.user.cmd("sh").args(["-c", &git]));
            assert_eq!(
                text(&o.stdout).trim(),
                format!("{at}/proj/.git"),
                "{tier}: {what}"
            );
            let _ = fs::remove_dir_all(out.join("proj/src/a"));
            let _ = fs::remove_dir_all(out.join("proj/src/objects"));
            let _ = fs::remove_dir_all(out.join("proj/src/refs"));
            for f in ["new.c", "config", "HEAD"] {
                let _ = fs::remove_file(out.join("proj/src").join(f));
            }
        }
        // A write path inside the checkout is held whole (`--rw ./src`).
        let inline = |script: &str| {
            let mut c = env.user.cmd(&env.sandboy);
            c.args([
                "wrap",
                "--isolation",
                tier,
                "--ro",
                "/etc",
                "--exec",
                "/usr/bin",
            ])
            .args(["--rw", "./src", "--", "sh", "-c", script])
            .current_dir(out.join("proj"));
            output_timeout(&mut c, std::time::Duration::from_secs(60))
        };
        let o = inline(&format!("set -- src/x/.git; {repo}"));
        assert_exit(&o, 1);
        assert!(
            text(&o.stderr).contains("src/x/.git"),
            "{tier}: {}",
            text(&o.stderr)
        );
        assert!(
            !out.join("proj/src/x/.git").exists(),
            "{tier}: {}",
            text(&o.stderr)
        );
        let _ = fs::remove_dir_all(out.join("proj/src/x"));
        // Allowed: an ordinary file lands, in the checkout and below the
        // write path inside it; a clone outside every checkout lands.
        let o = inline("echo ok > src/b.c");
        assert_exit(&o, 0);
        let clone = format!(
            "echo made > {at}/proj/src/new.c && HOME={at}/plain git clone -q --no-hardlinks {at}/proj {at}/plain/clone-{tier}"
        );
        let o = sh(&out, &clone);
        assert_exit(&o, 0);
        assert!(out.join("proj/src/new.c").is_file() && out.join("proj/src/b.c").is_file());
        assert!(
            out.join(format!("plain/clone-{tier}/.git/HEAD")).is_file(),
            "{tier}"
        );
        assert!(
            out.join(format!("plain/clone-{tier}/src/a.c")).is_file(),
            "{tier}"
        );
        for f in ["proj/src/new.c", "proj/src/b.c"] {
            fs::remove_file(out.join(f)).unwrap();
        }
    }
}

/// A red team's follow-up: a step under `--rw . --rw ../out2` made a
/// repository in `out2` (a write path outside every checkout, where
/// repositories are output) and replaced `proj/src` with a link to it; the
/// user's next `git` in `proj/src` ran its `core.fsmonitor` outside any
/// sandbox. A link the step makes below a checkout into a repository other
/// than its own is removed (landlock tier) or refuses the commit
/// (namespaces tier), in another write path or beside the checkout in the
/// same one (`--rw ..`); links to a system file, within the checkout and
/// to a directory without a `.git` land.
#[test]
fn a_link_into_a_repository_made_in_another_write_path_is_refused() {
    let t = "a_link_into_a_repository_made_in_another_write_path_is_refused";
    let Some(env) = Env::new(t) else {
        return;
    };
    let out = env.dir.path().join("out");
    let at = out.display();
    let reset = format!(
        "cd {at} && rm -rf proj/src proj/evil proj/lib proj/python proj/store out2 evil && mkdir -p proj/.git/objects proj/src out2 && echo 'ref: refs/heads/main' > proj/.git/HEAD && echo x > proj/src/a.c && chown -R {}:{} {at}",
        env.user.uid, env.user.gid
    );
    let repo = "mkdir -p $1/.git/objects $1/sub && echo 'ref: refs/heads/main' > $1/.git/HEAD && printf '[core]\\n\\tfsmonitor = id\\n' > $1/.git/config";
    let refused = [
        (
            "../out2",
            format!("set -- ../out2/r; {repo}; rm -r src && ln -s ../out2/r src"),
            "proj/src",
        ),
        (
            "../out2",
            format!("set -- ../out2/r; {repo}; ln -s {at}/out2/r/sub src/deep"),
            "proj/src/deep",
        ),
        (
            "..",
            format!("set -- ../evil; {repo}; ln -s ../evil evil"),
            "proj/evil",
        ),
    ];
    let mut tiers = vec![("landlock", "it was removed")];
    if namespaces_work(&env) {
        tiers.push(("namespaces", "refusing to commit"));
    } else {
        skip(
            t,
            "namespaces tier: unprivileged user namespaces are refused here",
        );
    }
    for (tier, refusal) in tiers {
        let run = |rw: &str, script: &str| {
            let mut c = env.user.cmd(&env.sandboy);
            c.args(["wrap", "--isolation", tier, "--ro", "/etc"])
                .args(["--exec", "/usr/bin", "--rw", ".", "--rw", rw])
                .args(["--", "sh", "-c", script])
                .current_dir(out.join("proj"));
            output_timeout(&mut c, std::time::Duration::from_secs(60))
        };
        for (rw, script, link) in &refused {
            assert_exit(&capture(Command::new("sh").args(["-c", &reset])), 0);
            let o = run(rw, &format!("echo made > src/new.c; {script}"));
            assert_exit(&o, 1);
            let e = text(&o.stderr);
            assert!(
                e.contains(refusal) && e.contains(link),
                "{tier}: {link}: {e}"
            );
            let left = fs::symlink_metadata(out.join(link));
            assert!(!left.is_ok_and(|m| m.is_symlink()), "{tier}: {link} stayed");
            if tier == "namespaces" {
                assert!(!out.join("proj/src/new.c").exists(), "{tier}: committed");
            }
        }
        // Allowed: a venv-style link to a system file, a link within the
        // checkout, a link to a store without a `.git` in the other path.
        assert_exit(&capture(Command::new("sh").args(["-c", &reset])), 0);
        let o = run(
            "../out2",
            "ln -s /usr/bin/env python && ln -s src lib && mkdir ../out2/store && ln -s ../out2/store store",
        );
        assert_exit(&o, 0);
        for link in ["python", "lib", "store"] {
            let m = fs::symlink_metadata(out.join("proj").join(link));
            assert!(m.is_ok_and(|m| m.is_symlink()), "{tier}: {link}");
        }
    }
}

/// Inline flags are anchored and checked like a policy file's relative
/// entries: a checkout's committed `out -> ..` does not make `--rw ./out`
/// grant the directory above it (a red team read `~/.ssh` and wrote
/// `~/.bashrc` this way); a real `out` directory is granted.
#[test]
fn an_inline_flag_never_leaves_the_checkout_through_its_symlinks() {
    let t = "an_inline_flag_never_leaves_the_checkout_through_its_symlinks";
    let Some(env) = Env::new(t) else {
        return;
    };
    let cwd = env.dir.path().join("cwd");
    let run = |tier: &str| {
        let mut c = env.user.cmd(&env.sandboy);
        c.args([
            "wrap",
            "--isolation",
            tier,
            "--ro",
            "/etc",
            "--exec",
            "/usr/bin",
        ])
        .args([
            "--rw",
            "./out",
            "--",
            "sh",
            "-c",
            "echo made > out/g; echo ran",
        ])
        .current_dir(&cwd);
        capture(&mut c)
    };
    for tier in TIERS {
        // Allowed: a real directory of the checkout.
        fs::create_dir_all(cwd.join("out")).unwrap();
        env.user.chown(&cwd.join("out"));
        assert_exit(&run(tier), 0);
        assert_eq!(fs::read_to_string(cwd.join("out/g")).unwrap(), "made\n");
        // Refused: the checkout's `out -> ..`, located in the flags.
        fs::remove_dir_all(cwd.join("out")).unwrap();
        std::os::unix::fs::symlink("..", cwd.join("out")).unwrap();
        let o = run(tier);
        assert_exit(&o, 2);
        let e = text(&o.stderr);
        assert!(
            e.contains("<command-line flags>:")
                && e.contains("\"./out\" leaves the working directory"),
            "{tier}: {e}"
        );
        assert_eq!(text(&o.stdout), "", "{tier}: the step ran");
        assert!(
            !env.dir.path().join("g").exists(),
            "{tier}: written through the link"
        );
        fs::remove_file(cwd.join("out")).unwrap();
    }
}

/// A refusal names what the step wrote, and the step chooses those names:
/// a hook named `x\r\e[2K\e[1A…sandboy: step passed` erased the refusal
/// line and forged another. Both tiers' lines show it escaped; an
/// ordinary name is shown as it is.
#[test]
fn a_refusal_shows_the_steps_names_escaped() {
    let t = "a_refusal_shows_the_steps_names_escaped";
    let Some(env) = Env::new(t) else {
        return;
    };
    let out = env.dir.path().join("out");
    for d in ["esc/.git/hooks", "esc/.git/objects", "esc/.git/modules"] {
        fs::create_dir_all(out.join(d)).unwrap();
    }
    fs::write(out.join("esc/.git/HEAD"), "ref: refs/heads/main\n").unwrap();
    fs::write(out.join("esc/.git/config"), "[core]\n").unwrap();
    let chown = format!("{}:{}", env.user.uid, env.user.gid);
    assert_exit(
        &capture(Command::new("chown").args(["-R", &chown]).arg(&out)),
        0,
    );
    let name = "x\r\x1b[2K\x1b[1A\x1b[2Ksandboy: step passed\x1b[8m";
    let git = out.join("esc/.git");
    let mut tiers = vec![(
        "landlock",
        "host",
        format!("printf id > \"{}/hooks/{name}\"", git.display()),
    )];
    if namespaces_work(&env) {
        let module = format!("{}/modules/{name}", git.display());
        tiers.push((
            "namespaces",
            "none",
            format!("mkdir -p \"{module}\" && echo '[core]' > \"{module}/config\""),
        ));
    }
    for (tier, ns, plant) in &tiers {
        let policy = env.policy(&format!("esc-{tier}"), ns, "");
        let o = capture(&mut env.wrap(tier, &policy, &["sh", "-c", plant]));
        assert_exit(&o, 1);
        let e = text(&o.stderr);
        assert!(
            !e.contains('\x1b') && !e.contains('\r'),
            "{tier}: raw: {e:?}"
        );
        assert!(
            e.contains("x\\u{d}\\u{1b}[2K\\u{1b}[1A\\u{1b}[2Ksandboy: step passed\\u{1b}[8m"),
            "{tier}: {e}"
        );
    }
    // Counterpart: an ordinary name, as it is.
    let policy = env.policy("esc-plain", "host", "");
    let plant = format!("echo id > {}/hooks/pre-commit", git.display());
    let o = capture(&mut env.wrap("landlock", &policy, &["sh", "-c", &plant]));
    assert_exit(&o, 1);
    assert!(
        text(&o.stderr).contains("/esc/.git/hooks/pre-commit;"),
        "{}",
        text(&o.stderr)
    );
}
