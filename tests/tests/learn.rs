//! Learn mode (issue 16). `sandboy wrap --learn`: a real multi-step build
//! (make → cc → cc1, as, collect2/ld, and a shell) run observed by an
//! ordinary user the test creates, the policy it writes, and that policy
//! enforced: the same build passes confined, and the build with one new
//! read added is refused. `sandboy run --learn`: a busybox container's
//! script learned the same way, its policy rendered by `sandboy-spec-gen`
//! and run confined, and a read it never made refused and reported.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use sandboy_tests::*;

const MAKEFILE: &str = "a: a.c\n\tcc -o a a.c && echo built > log\n";
const C: &str = "#include <stdio.h>\nint main(void) { puts(\"hi\"); return 0; }\n";

#[test]
fn learned_policy_runs_the_build_and_refuses_what_is_new() {
    let test = "learned_policy_runs_the_build_and_refuses_what_is_new";
    if !need_tool(test, "make") || !need_tool(test, "cc") {
        return;
    }
    let Some(sandboy_bin) = need_sandboy(test) else {
        return;
    };
    let Some(user) = TestUser::create(test) else {
        return;
    };
    let dir = TempDir::new("learn");
    let sandboy = user.reachable_copy(&sandboy_bin, &dir);
    let src = dir.path().join("src");
    fs::create_dir_all(&src).unwrap();
    fs::write(src.join("a.c"), C).unwrap();
    fs::write(src.join("Makefile"), MAKEFILE).unwrap();
    // A variant reading one more (world-readable) file through the shell.
    fs::write(
        src.join("Makefile.new"),
        MAKEFILE.replace("> log", "> log && read x < /etc/debian_version"),
    )
    .unwrap();
    // The whole checkout is the user's, as a real one is (the namespaces
    // tier's staged writes cannot copy up a directory of an unmapped owner).
    user.chown(dir.path());
    user.chown(&src);
    for f in ["a.c", "Makefile", "Makefile.new"] {
        user.chown(&src.join(f));
    }
    let learned = src.join("learned.toml");
    let wrap = |args: &[&str]| {
        let mut c = user.cmd(&sandboy);
        c.arg("wrap").args(args).current_dir(&src);
        capture(&mut c)
    };

    // Observed: the build runs unconfined and the policy is written.
    let o = wrap(&["--learn", learned.to_str().unwrap(), "--", "make"]);
    assert_exit(&o, 0);
    assert!(src.join("a").is_file(), "the build did not run");
    let policy = fs::read_to_string(&learned).unwrap();
    assert!(
        policy.starts_with("# Learned by `sandboy wrap --learn`"),
        "{policy}"
    );
    assert!(policy.contains("default_deny = true"), "{policy}");
    assert!(
        !policy.contains("/etc/debian_version") && !policy.contains("\"/etc\""),
        "{policy}"
    );
    let check = capture(Command::new(spec_gen_bin()).arg("check").arg(&learned));
    assert_exit(&check, 0);

    // Confined by what was learned: the same build passes.
    for f in ["a", "log"] {
        fs::remove_file(src.join(f)).unwrap();
    }
    let o = wrap(&["--policy", learned.to_str().unwrap(), "--", "make"]);
    assert_exit(&o, 0);
    assert!(src.join("a").is_file() && src.join("log").is_file());

    // The variant touches something new: refused (EACCES from Landlock),
    // while the file itself is readable to the user outside the sandbox.
    assert_exit(&capture(user.cmd("cat").arg("/etc/debian_version")), 0);
    for f in ["a", "log"] {
        fs::remove_file(src.join(f)).unwrap();
    }
    let o = wrap(&[
        "--policy",
        learned.to_str().unwrap(),
        "--",
        "make",
        "-f",
        "Makefile.new",
    ]);
    assert!(!o.status.success(), "the new read was let through");
    let err = text(&o.stderr);
    assert!(
        err.contains("/etc/debian_version") && err.contains("Permission denied"),
        "{err}"
    );

    // Bad input: a base policy with an error is a located error, exit 2,
    // and nothing is learned.
    let bad = src.join("bad.toml");
    fs::write(&bad, "version = 1\n[fs]\nread = 3\n").unwrap();
    user.chown(&bad);
    let out = src.join("never.toml");
    let o = wrap(&[
        "--learn",
        out.to_str().unwrap(),
        "--policy",
        bad.to_str().unwrap(),
        "--",
        "true",
    ]);
    assert_exit_stderr(&o, 2, "bad.toml:3:");
    assert!(!out.exists());
}

/// A home directory is never learned (issue 14, found by a red team): a
/// step that reads three dotfiles of `$HOME` and creates one there once
/// got `write = ["<home>"]`, and with it `~/.ssh`. The learned policy
/// keeps the files it read, grants no home, and a confined read of the
/// key is refused while the same user reads it outside.
#[test]
fn a_learned_policy_never_grants_a_home_directory() {
    let test = "a_learned_policy_never_grants_a_home_directory";
    let Some(sandboy_bin) = need_sandboy(test) else {
        return;
    };
    let Some(user) = TestUser::create(test) else {
        return;
    };
    let dir = TempDir::new("learn-home");
    let sandboy = user.reachable_copy(&sandboy_bin, &dir);
    let home = std::path::PathBuf::from(format!("/home/{}", user.name));
    let key = home.join(".ssh/id_ed25519");
    let sh = |script: &str| capture(user.cmd("sh").args(["-c", script]).current_dir(&home));
    assert_exit(
        &sh("mkdir -p .ssh && echo KEY > .ssh/id_ed25519 && chmod 700 .ssh && chmod 600 .ssh/id_ed25519 && touch .a .b .c"),
        0,
    );
    let learned = home.join("learned.toml");
    let o = capture(
        user.cmd(&sandboy)
            .args(["wrap", "--learn"])
            .arg(&learned)
            .args([
                "--",
                "sh",
                "-c",
                "cat .a .b .c && echo x > .cache-x && ln -s .ssh k && cat k/id_ed25519 && ln -s / r && cat r/etc/hostname \
                 && mkdir -p .local/bin && echo x > .local/bin/ls && echo '[core]' >> .gitconfig \
                 && rm \"$(mktemp)\" && mkdir -p src/out && echo y > src/out/f",
            ])
            .current_dir(&home),
    );
    assert_exit(&o, 0);
    let policy = fs::read_to_string(&learned).unwrap();
    let home_s = home.display().to_string();
    assert!(
        !policy.contains(&format!("\"{home_s}\"")) && !policy.contains("\"/home\""),
        "a home directory was granted:\n{policy}"
    );
    assert!(policy.contains(&format!("\"{home_s}/.a\"")), "{policy}");
    // Through symlinks, a path is what it reaches: `r -> /` is not granted
    // as `<home>/r` (the whole file system), `k -> .ssh` not at all.
    assert!(
        !policy.contains(&format!("{home_s}/r")) && !policy.contains(&format!("{home_s}/k")),
        "a symlink's name was granted:\n{policy}"
    );
    assert!(policy.contains("\"/etc/hostname\""), "{policy}");
    // Writes that tools run later outside any sandbox (a red team planted
    // ~/.local/bin/ls and a core.fsmonitor), and the host's shared /tmp,
    // are never learned; a plain directory of the home is.
    let write = policy
        .lines()
        .find(|l| l.starts_with("write = "))
        .unwrap_or_default();
    for never in [".local", ".gitconfig", ".cache-x"] {
        assert!(
            !write.contains(&format!("{home_s}/{never}")),
            "{never} was granted:\n{policy}"
        );
    }
    assert!(!write.contains("\"/tmp\""), "{policy}");
    assert!(write.contains(&format!("\"{home_s}/src")), "{policy}");
    let o = capture(
        user.cmd(&sandboy)
            .args(["wrap", "--policy"])
            .arg(&learned)
            .arg("--")
            .arg("cat")
            .arg(&key)
            .current_dir(&home),
    );
    assert!(
        !o.status.success() && !text(&o.stdout).contains("KEY"),
        "{}",
        text(&o.stdout)
    );
    assert!(
        text(&o.stderr).contains("Permission denied"),
        "{}",
        text(&o.stderr)
    );
    // Counterpart: the user reads it outside the sandbox.
    assert_eq!(text(&sh("cat .ssh/id_ed25519").stdout), "KEY\n");
}

/// A name the step touched, made a link to `/` only after the call was
/// observed (a missing name read first; a real file read, then swapped):
/// never granted, since applying the policy would follow the link (a red
/// team read `~/.ssh` with a policy learned that way). What the step
/// really read is still learned and runs.
#[test]
fn a_name_linked_after_it_was_observed_is_never_granted() {
    let test = "a_name_linked_after_it_was_observed_is_never_granted";
    let Some(sandboy_bin) = need_sandboy(test) else {
        return;
    };
    let Some(user) = TestUser::create(test) else {
        return;
    };
    let dir = TempDir::new("learn-link");
    let sandboy = user.reachable_copy(&sandboy_bin, &dir);
    let home = std::path::PathBuf::from(format!("/home/{}", user.name));
    let sh = |script: &str| capture(user.cmd("sh").args(["-c", script]).current_dir(&home));
    assert_exit(
        &sh("mkdir -p .ssh && echo KEY > .ssh/id_ed25519 && chmod 700 .ssh && chmod 600 .ssh/id_ed25519"),
        0,
    );
    // Directly in a shared directory, as a step's scratch name would be
    // (its write is never learned, so nothing subsumes the read); whole
    // paths (`--collapse 0`), so no cut hides the name behind a directory.
    let l = format!("/var/tmp/sandboy-learn-link-{}-l", std::process::id());
    let s_ = format!("/var/tmp/sandboy-learn-link-{}-s", std::process::id());
    // Removed even when an assertion fails.
    struct Names([String; 2]);
    impl Drop for Names {
        fn drop(&mut self) {
            for n in &self.0 {
                let _ = fs::remove_file(n);
            }
        }
    }
    let _names = Names([l.clone(), s_.clone()]);
    let steps = [
        (
            "missing",
            format!("cat {l} 2>/dev/null; cat /etc/hostname >/dev/null; ln -s / {l}"),
        ),
        (
            "swapped",
            format!("echo d > {s_} && cat {s_} >/dev/null && cat /etc/hostname >/dev/null && rm {s_} && ln -s / {s_}"),
        ),
    ];
    for (case, step) in steps {
        let learned = home.join(format!("{case}.toml"));
        let o = capture(
            user.cmd(&sandboy)
                .args(["wrap", "--collapse", "0", "--learn"])
                .arg(&learned)
                .args(["--", "sh", "-c", &step])
                .current_dir(&home),
        );
        assert_exit(&o, 0);
        let policy = fs::read_to_string(&learned).unwrap();
        let read = policy
            .lines()
            .find(|l| l.starts_with("read = "))
            .unwrap_or_default();
        assert!(
            !read.contains("sandboy-learn-link"),
            "{case}: a link's name was granted:\n{policy}"
        );
        assert!(read.contains("\"/etc/hostname\""), "{case}: {policy}");
        let confined = |path: &str| {
            capture(
                user.cmd(&sandboy)
                    .args(["wrap", "--policy"])
                    .arg(&learned)
                    .args(["--", "cat", path])
                    .current_dir(&home),
            )
        };
        let key = confined(&format!("{}/.ssh/id_ed25519", home.display()));
        assert!(
            !key.status.success() && !text(&key.stdout).contains("KEY"),
            "{case}: {}",
            text(&key.stdout)
        );
        // Counterpart: what the step read runs under the learned policy.
        assert_exit(&confined("/etc/hostname"), 0);
    }
}

/// The script a learning container runs: a read, a directory made (`-p`:
/// a mkdir of the existing /out first, which needs no rule) and a file
/// written in a writable directory (by relative paths: resolved against
/// the container's cwd), execs by path (not busybox applets of the
/// shell), and the file read back.
const SCRIPT: &str = "read u < /etc/passwd && cd /out && mkdir -p /out/sub && echo hi > sub/f && /bin/cat sub/f && echo \"user $u\" | /bin/cut -c1-9";

/// The base policy `run --learn` extends: what the container is, no file
/// access at all.
const BASE: &str = r#"version = 1
name = "learn-run"
[net]
namespace = "none"
[syscalls]
default_deny = true
"#;

fn process(script: &str) -> String {
    // Host ids: `bundle_from` makes the rootfs writable, and its files are
    // the host's, which a mapped root could not write.
    format!("[process]\nargs = [\"/bin/sh\", \"-c\", {script:?}]\ncwd = \"/\"\nuserns = false\n")
}

/// A busybox bundle rendered from `policy` with a writable rootfs, holding
/// /out (empty) and /srv/secret (outside anything the script touches).
fn bundle_from(policy: &Path) -> Bundle {
    let b = Bundle::busybox(&["/bin/true"]);
    fs::create_dir_all(b.rootfs().join("out")).unwrap();
    fs::create_dir_all(b.rootfs().join("srv")).unwrap();
    fs::write(b.rootfs().join("srv/secret"), "not learned\n").unwrap();
    b.generate(policy);
    b.edit(|c| c["root"]["readonly"] = false.into());
    b
}

/// Root and busybox-static, or the recorded skip.
fn ready(test: &str) -> bool {
    if !need_root(test) {
        return false;
    }
    if !Path::new("/bin/busybox").is_file() {
        skip(test, "busybox-static is not installed");
        return false;
    }
    true
}

#[test]
fn run_learn_writes_a_policy_the_container_passes_and_refuses_what_is_new() {
    let test = "run_learn_writes_a_policy_the_container_passes_and_refuses_what_is_new";
    if !ready(test) {
        return;
    }
    let host = TempDir::new("learn-run");
    let base = host.path().join("base.toml");
    fs::write(&base, format!("{BASE}{}", process(SCRIPT))).unwrap();
    let learning = bundle_from(&base);
    let rt = Runtime::sandboy();

    // Observed: the script runs (no rule of the base policy allows any of
    // it) and the policy is written, to a path relative to the caller.
    let id = unique_id("learn-run");
    let _g = rt.guard(&id);
    let o = output_timeout(
        rt.cmd()
            .current_dir(host.path())
            .args(["run", "--learn", "learned.toml", "--policy"])
            .arg(&base)
            .args(["--bundle", learning.path().to_str().unwrap(), &id]),
        Duration::from_secs(90),
    );
    assert_exit(&o, 0);
    assert_eq!(text(&o.stdout), "hi\nuser root\n");
    assert!(
        !text(&o.stderr).contains("protected path"),
        "mkdir of an existing directory learned: {}",
        text(&o.stderr)
    );
    assert!(!rt.root.path().join(&id).exists(), "state left after run");
    let learned = host.path().join("learned.toml");
    let policy = fs::read_to_string(&learned).expect("the learned policy");
    assert!(
        policy.starts_with("# Learned by `sandboy run --learn` at "),
        "{policy}"
    );
    assert!(policy.contains("(as the container sees them)"), "{policy}");
    assert!(policy.contains("name = \"learn-run\""), "{policy}");
    assert!(policy.contains("default_deny = true"), "{policy}");
    // Container paths, each list exactly what the script touched: no
    // read under a write entry, no host path, nothing protected.
    for line in [
        r#"read = ["/etc/passwd"]"#,
        r#"write = ["/out"]"#,
        // The applets are links to busybox: rules name what paths
        // resolve to (a link to `/` must not pass as its own name).
        r#"exec = ["/bin/busybox"]"#,
    ] {
        assert!(
            policy.lines().any(|l| l == line),
            "no {line:?} in\n{policy}"
        );
    }
    assert_exit(
        &capture(Command::new(spec_gen_bin()).arg("check").arg(&learned)),
        0,
    );

    // Confined by what was learned (rendered by sandboy-spec-gen): the
    // same script passes.
    let confined = |script: &str| {
        let b = bundle_from(&learned);
        b.edit(|c| c["process"]["args"] = serde_json::json!(["/bin/sh", "-c", script]));
        let id = unique_id("learned");
        let _g = rt.guard(&id);
        let report = host.path().join(format!("{id}.jsonl"));
        let o = output_timeout(
            rt.cmd()
                .args(["run", "--report", report.to_str().unwrap()])
                .args(["--bundle", b.path().to_str().unwrap(), &id]),
            Duration::from_secs(90),
        );
        remove_cgroup_tree(&format!("sandboy/{id}"));
        let lines: Vec<serde_json::Value> = fs::read_to_string(&report)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        (o, lines)
    };
    let _audit = sandboy_tests::audit::AuditState::take(Some(1));
    let (o, lines) = confined(SCRIPT);
    assert_exit(&o, 0);
    assert_eq!(text(&o.stdout), "hi\nuser root\n");
    assert_eq!(lines, Vec::<serde_json::Value>::new(), "refusals");

    // The same script plus a read of a path it never read: refused
    // (EACCES from Landlock) and reported, the rest as before.
    let (o, lines) = confined(&format!("{SCRIPT}; cat /srv/secret"));
    assert_exit(&o, 1);
    assert_eq!(text(&o.stdout), "hi\nuser root\n");
    assert_stderr_contains(&o, "can't open '/srv/secret': Permission denied");
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(lines[0]["kind"], "read");
    assert_eq!(lines[0]["target"], "/srv/secret");
    assert_eq!(lines[0]["allow"], r#"add "/srv/secret" to [fs] read"#);
}

#[test]
fn run_learn_bad_input_is_refused_and_leaves_nothing() {
    let test = "run_learn_bad_input_is_refused_and_leaves_nothing";
    if !ready(test) {
        return;
    }
    let host = TempDir::new("learn-bad");
    let base = host.path().join("base.toml");
    fs::write(&base, format!("{BASE}{}", process("true"))).unwrap();
    let b = bundle_from(&base);
    let bundle = b.path().to_str().unwrap();
    let out = host.path().join("never.toml");
    let out = out.to_str().unwrap();
    let rt = Runtime::sandboy();
    let id = unique_id("learn-bad");
    let _g = rt.guard(&id);

    // Detached: nobody would be there to see the policy written.
    let o = rt.run(&["run", "--detach", "--learn", out, "--bundle", bundle, &id]);
    assert_exit_stderr(&o, 2, "--learn");
    assert_stderr_contains(&o, "--detach");
    // create: learning is `run`'s.
    let o = rt.run(&["create", "--learn", out, "--bundle", bundle, &id]);
    assert_exit_stderr(&o, 2, "use `sandboy run --learn OUT.toml");
    // A base policy with an error: located, exit 2, nothing created.
    let bad = host.path().join("bad.toml");
    fs::write(&bad, "version = 1\n[fs]\nread = 3\n").unwrap();
    let o = rt.run(&[
        "run",
        "--learn",
        out,
        "--policy",
        bad.to_str().unwrap(),
        "--bundle",
        bundle,
        &id,
    ]);
    assert_exit_stderr(&o, 2, "bad.toml:3:");
    // A node that applies a policy to every container: learning would
    // bypass it, so it is refused.
    let node = TempDir::new("learn-node");
    let policies = node.path().join("policies");
    fs::create_dir_all(&policies).unwrap();
    for d in [node.path(), policies.as_path()] {
        fs::set_permissions(d, fs::Permissions::from_mode(0o755)).unwrap();
    }
    fs::write(policies.join("gate.toml"), BASE).unwrap();
    let config = node.path().join("config.toml");
    fs::write(
        &config,
        format!(
            "policy_dir = \"{}\"\ndefault_policy = \"gate\"\n",
            policies.display()
        ),
    )
    .unwrap();
    let o = rt.run(&[
        "--config",
        config.to_str().unwrap(),
        "run",
        "--learn",
        out,
        "--bundle",
        bundle,
        &id,
    ]);
    assert_exit_stderr(&o, 2, "applies a policy to every container");
    assert!(!Path::new(out).exists());
    assert!(!rt.root.path().join(&id).exists(), "state left behind");
    assert_eq!(cgroups_named(&id), Vec::<std::path::PathBuf>::new());
}

/// A process exec'd into a container being learned would have no watcher:
/// refused with the reason (exit 1); the container killed, the policy of
/// what it did until then is still written.
#[test]
fn run_learn_refuses_exec_and_writes_the_policy_of_a_killed_container() {
    let test = "run_learn_refuses_exec_and_writes_the_policy_of_a_killed_container";
    if !ready(test) {
        return;
    }
    let host = TempDir::new("learn-exec");
    let base = host.path().join("base.toml");
    fs::write(
        &base,
        format!(
            "{BASE}{}",
            process("read h < /etc/hostname; exec /bin/sleep 60")
        ),
    )
    .unwrap();
    let b = bundle_from(&base);
    let out = host.path().join("learned.toml");
    let rt = Runtime::sandboy();
    let id = unique_id("learn-exec");
    let _g = rt.guard(&id);
    let mut run = rt
        .cmd()
        .args(["run", "--learn", out.to_str().unwrap()])
        .args(["--bundle", b.path().to_str().unwrap(), &id])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    rt.wait_status(&id, "running");
    let o = rt.run(&["exec", &id, "/bin/true"]);
    assert_exit_stderr(&o, 1, "is being learned (run --learn)");
    assert_exit(&rt.run(&["kill", &id, "KILL"]), 0);
    let status = run.wait().unwrap();
    assert_eq!(status.code(), Some(137));
    let policy = fs::read_to_string(&out).expect("the learned policy");
    assert!(
        policy.lines().any(|l| l == r#"read = ["/etc/hostname"]"#),
        "{policy}"
    );
    assert!(
        policy.lines().any(|l| l == r#"exec = ["/bin/busybox"]"#),
        "{policy}"
    );
}

/// As root, `wrap --learn` runs the command as plain root `wrap` would:
/// the sudo caller (a red team's `sudo sandboy wrap --learn` step ran as
/// host root and read /etc/shadow), else nobody.
#[test]
fn root_learns_as_the_sudo_caller() {
    let test = "root_learns_as_the_sudo_caller";
    let Some(sandboy) = need_sandboy(test) else {
        return;
    };
    let Some(user) = TestUser::create(test) else {
        return;
    };
    let dir = TempDir::new("learn-sudo");
    fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o755)).unwrap();
    let out = dir.path().join("p.toml");
    let o = capture(
        Command::new(&sandboy)
            .args(["wrap", "--learn"])
            .arg(&out)
            .args(["--", "sh", "-c", "id -u; cat /etc/shadow"])
            .env("SUDO_UID", user.uid.to_string())
            .env("SUDO_GID", user.gid.to_string())
            .current_dir(dir.path()),
    );
    assert_eq!(
        text(&o.stdout),
        format!("{}\n", user.uid),
        "{}",
        text(&o.stderr)
    );
    assert!(
        text(&o.stderr).contains("Permission denied"),
        "{}",
        text(&o.stderr)
    );
    assert!(out.is_file(), "no policy written");
    // Counterpart: root itself reads it.
    assert_exit(&capture(Command::new("cat").arg("/etc/shadow")), 0);
}
