//! A step holding the caller's terminal must not type into it: `ioctl`
//! TIOCSTI pushes bytes into a terminal's input queue, which the caller's
//! shell reads as commands once the step has exited (the CVE-2017-5226
//! class; this host allows it, `dev.tty.legacy_tiocsti = 1`). The seccomp
//! guard `tty-inject` of the built-in deny list refuses it with EPERM
//! (docs/security.md); each case runs the probe on a real pty and pairs
//! the refusal with TIOCGWINSZ on the same terminal, which works.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use sandboy_tests::*;

/// python3's pty module as the terminal: runs argv on a new pty (its
/// controlling terminal) and prints what the pty showed, then the status.
const DRIVER: &str = r#"
import os, pty, select, sys
pid, fd = pty.fork()
if pid == 0:
    os.execvp(sys.argv[1], sys.argv[1:])
out = b""
while True:
    try:
        r, _, _ = select.select([fd], [], [], 60)
        if not r:
            break
        d = os.read(fd, 4096)
    except OSError:
        break
    if not d:
        break
    out += d
_, st = os.waitpid(pid, 0)
sys.stdout.write(out.decode(errors="replace"))
sys.exit(os.waitstatus_to_exitcode(st))
"#;

/// `cmd` on a pty: (exit status, what the terminal showed).
fn on_pty(cmd: &Command) -> (i32, String) {
    let mut driver = Command::new("python3");
    driver
        .args(["-c", DRIVER])
        .arg(cmd.get_program())
        .args(cmd.get_args());
    if let Some(dir) = cmd.get_current_dir() {
        driver.current_dir(dir);
    }
    let o = output_timeout(&mut driver, std::time::Duration::from_secs(90));
    (o.status.code().unwrap_or(-1), text(&o.stdout))
}

/// The three probes on one terminal, each checked: the push refused with
/// EPERM (also with garbage in the request's upper half), nothing typed
/// into the terminal (an accepted push echoes `#`), the size query fine.
fn assert_refused_on_pty(what: &str, cmd: impl Fn(&[&str]) -> Command) {
    for args in [&["tty-push"][..], &["tty-push", "high"]] {
        let (code, shown) = on_pty(&cmd(args));
        assert_eq!(code, 1, "{what} {args:?}: {shown}");
        assert!(shown.contains("errno=EPERM"), "{what} {args:?}: {shown}");
        assert!(
            !shown.contains('#'),
            "{what} {args:?}: typed into the tty: {shown}"
        );
    }
    let (code, shown) = on_pty(&cmd(&["tty-size"]));
    assert_eq!(code, 0, "{what} tty-size: {shown}");
    assert!(shown.contains("ok"), "{what} tty-size: {shown}");
}

fn probe_bin(test: &str) -> Option<PathBuf> {
    let p = target_dir().join("probes/probe");
    if !p.is_file() {
        skip(test, "the probe is not built (make probes)");
        return None;
    }
    if which("python3").is_none() {
        skip(test, "python3 (the pty driver) is not installed");
        return None;
    }
    Some(p)
}

fn write_policy(path: &Path, bin: &Path, namespace: &str) {
    fs::write(
        path,
        format!(
            "version = 1\n[fs]\nread = [\"/etc\", \"/proc\"]\nexec = [\"/usr/bin\", \"{}\"]\n[net]\nnamespace = \"{namespace}\"\n",
            bin.display()
        ),
    )
    .unwrap();
    fs::set_permissions(path, fs::Permissions::from_mode(0o644)).unwrap();
}

/// A test user with copies of the probe and of sandboy it can run.
struct Unprivileged {
    user: TestUser,
    dir: TempDir,
    probe: PathBuf,
    sandboy: PathBuf,
}

impl Unprivileged {
    fn new(test: &str) -> Option<Self> {
        let probe_bin = probe_bin(test)?;
        let sandboy_bin = need_sandboy(test)?;
        let user = TestUser::create(test)?;
        let dir = TempDir::new("tty");
        let probe = user.reachable_copy(&probe_bin, &dir);
        let sandboy = user.reachable_copy(&sandboy_bin, &dir);
        Some(Unprivileged {
            user,
            dir,
            probe,
            sandboy,
        })
    }
}

#[test]
fn unprivileged_wrap_cannot_type_into_the_callers_terminal() {
    let test = "unprivileged_wrap_cannot_type_into_the_callers_terminal";
    let Some(Unprivileged {
        user,
        dir,
        probe,
        sandboy,
    }) = Unprivileged::new(test)
    else {
        return;
    };
    let bin = probe.parent().unwrap();
    for (tier, namespace) in [("landlock", "host"), ("namespaces", "none")] {
        let policy = dir.path().join(format!("{tier}.toml"));
        write_policy(&policy, bin, namespace);
        assert_refused_on_pty(tier, |args| {
            let mut c = user.cmd(&sandboy);
            c.args(["wrap", "--isolation", tier, "--policy"])
                .arg(&policy)
                .arg("--")
                .arg(&probe)
                .args(args)
                .current_dir(dir.path());
            c
        });
    }
}

#[test]
fn root_wrap_and_containers_cannot_type_into_the_callers_terminal() {
    let test = "root_wrap_and_containers_cannot_type_into_the_callers_terminal";
    if !need_root(test) {
        return;
    }
    let Some(probe_bin) = probe_bin(test) else {
        return;
    };
    let dir = TempDir::new("tty-root");
    fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o755)).unwrap();
    let bin = dir.path().join("bin");
    fs::create_dir_all(&bin).unwrap();
    fs::set_permissions(&bin, fs::Permissions::from_mode(0o755)).unwrap();
    let probe = bin.join("probe");
    fs::copy(&probe_bin, &probe).unwrap();
    let policy = dir.path().join("root.toml");
    write_policy(&policy, &bin, "none");
    assert_refused_on_pty("root wrap", |args| {
        let mut c = Command::new(sandboy_bin());
        c.args(["wrap", "--policy"])
            .arg(&policy)
            .arg("--")
            .arg(&probe)
            .args(args)
            .current_dir(dir.path());
        c
    });

    // An OCI container from a generated bundle, its stdio the pty.
    let rt = Runtime::sandboy();
    let bundle = Bundle::busybox(&["/bin/true"]);
    fs::copy(&probe_bin, bundle.rootfs().join("bin/probe")).unwrap();
    let container_policy = dir.path().join("container.toml");
    fs::write(
        &container_policy,
        "version = 1\n[fs]\nread = [\"/bin\", \"/dev\"]\nexec = [\"/bin\"]\n[net]\nnamespace = \"none\"\n[process]\nargs = [\"/bin/true\"]\ncwd = \"/\"\n",
    )
    .unwrap();
    bundle.generate(&container_policy);
    let ids = std::cell::RefCell::new(Vec::new());
    assert_refused_on_pty("container", |args| {
        bundle.edit(|c| {
            let mut argv = vec![serde_json::json!("/bin/probe")];
            argv.extend(args.iter().map(|a| serde_json::json!(a)));
            c["process"]["args"] = serde_json::Value::Array(argv);
        });
        let id = unique_id("tty");
        let mut c = rt.cmd();
        c.args(["run", "--bundle", bundle.path().to_str().unwrap(), &id]);
        ids.borrow_mut().push(id);
        c
    });
    for id in ids.into_inner() {
        rt.run(&["delete", "--force", &id]);
        remove_cgroup_tree(&format!("sandboy/{id}"));
    }
}

/// Issue 15, found by trying this build: a step that takes the terminal's
/// foreground and sets TOSTOP made the watchdog's first log line stop it
/// (SIGTTOU), and with it the timeout and the restore of held files. The
/// watchdog ignores the terminal's job-control stops: the step is killed
/// at its deadline and the timeout is reported on the terminal.
#[test]
fn a_step_in_the_terminals_foreground_still_meets_its_timeout() {
    let test = "a_step_in_the_terminals_foreground_still_meets_its_timeout";
    let Some(u) = Unprivileged::new(test) else {
        return;
    };
    let policy = u.dir.path().join("fg.toml");
    write_policy(&policy, u.probe.parent().unwrap(), "host");
    let body = fs::read_to_string(&policy).unwrap() + "[limits]\ntimeout = \"2s\"\n";
    fs::write(&policy, body).unwrap();
    let run = |args: &[&str]| {
        let mut c = u.user.cmd(&u.sandboy);
        c.args(["wrap", "--isolation", "landlock", "--policy"])
            .arg(&policy)
            .arg("--")
            .arg(&u.probe)
            .args(args)
            .current_dir(u.dir.path());
        let started = std::time::Instant::now();
        let (code, shown) = on_pty(&c);
        (code, shown, started.elapsed())
    };
    let (code, shown, took) = run(&["tty-fg"]);
    assert!(shown.contains("foreground"), "{shown}");
    assert_eq!(code, 137, "{shown}");
    assert!(shown.contains("timeout"), "{shown}");
    assert!(
        took < std::time::Duration::from_secs(30),
        "{took:?}: {shown}"
    );
    // Allowed: a step that stays in the background of its terminal runs.
    let (code, shown, _) = run(&["tty-size"]);
    assert_eq!(code, 0, "{shown}");
}
