//! Rootless containers (docs/rootless.md): a real unprivileged user made
//! for the test runs `sandboy run` of a `sandboy spec --rootless` bundle
//! and of a `sandboy-spec-gen generate --rootless` bundle, next to `runc
//! run` of the same bundles (exit status, output, the uid map seen inside),
//! and rootless podman with sandboy next to podman with runc.
//!
//! This host is hybrid (cgroup v1 controllers). libcontainer 0.7's v1
//! manager cannot skip a cgroup an ordinary user may not create, so there
//! sandboy refuses a rootless container with the reason (asserted below);
//! the runs themselves happen in a private mount namespace where the empty
//! unified hierarchy is bind-mounted over /sys/fs/cgroup (as in
//! cgroup_v2.rs), made by root, then entered as the user: both runtimes see
//! a pure cgroup v2 host and take their rootless v2 paths for real.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use sandboy_tests::*;

struct Env {
    user: TestUser,
    dir: TempDir,
    sandboy: PathBuf,
    spec_gen: PathBuf,
    /// The user's XDG_RUNTIME_DIR (0700, its own).
    xdg: PathBuf,
}

impl Env {
    fn new(test: &str) -> Option<Env> {
        let sandboy_bin = need_sandboy(test)?;
        if !Path::new("/sys/fs/cgroup/unified").is_dir() {
            skip(
                test,
                "no unified hierarchy at /sys/fs/cgroup/unified for the v2 view",
            );
            return None;
        }
        let user = TestUser::create(test)?;
        let dir = TempDir::new("rootless");
        let sandboy = user.reachable_copy(&sandboy_bin, &dir);
        let spec_gen = user.reachable_copy(&spec_gen_bin(), &dir);
        let xdg = dir.path().join("xdg");
        fs::create_dir_all(&xdg).unwrap();
        fs::set_permissions(&xdg, fs::Permissions::from_mode(0o700)).unwrap();
        user.chown(&xdg);
        Some(Env {
            user,
            dir,
            sandboy,
            spec_gen,
            xdg,
        })
    }

    /// A busybox bundle the user owns, its config.json removed.
    fn bundle(&self) -> Bundle {
        let b = Bundle::busybox(&["true"]);
        fs::remove_file(b.config_path()).unwrap();
        let st = Command::new("chown")
            .arg("-R")
            .arg(format!("{}:{}", self.user.uid, self.user.gid))
            .arg(b.path())
            .status()
            .unwrap();
        assert!(st.success());
        b
    }

    /// `prog args…` as the user, in `cwd`, with its XDG_RUNTIME_DIR.
    fn as_user(&self, cwd: &Path, prog: &Path, args: &[&str]) -> Output {
        let mut c = self.user.cmd("env");
        c.arg(format!("XDG_RUNTIME_DIR={}", self.xdg.display()))
            .arg(prog)
            .args(args)
            .current_dir(cwd)
            .stdin(Stdio::null());
        capture(&mut c)
    }

    /// `sandboy-spec-gen generate --rootless --policy POLICY --bundle BUNDLE`
    /// as the user, in `cwd`.
    fn generate_rootless(&self, cwd: &Path, policy: &Path, bundle: &str) -> Output {
        let policy = policy.display().to_string();
        let args = [
            "generate",
            "--rootless",
            "--policy",
            &policy,
            "--bundle",
            bundle,
        ];
        self.as_user(cwd, &self.spec_gen, &args)
    }

    /// `prog args…` as the user in the cgroup v2 view (see the module comment).
    fn as_user_v2(&self, cwd: &Path, prog: &Path, args: &[&str]) -> Output {
        let script = format!(
            "mount --bind /sys/fs/cgroup/unified /sys/fs/cgroup && exec runuser -u {} -- env XDG_RUNTIME_DIR={} \"$@\"",
            self.user.name,
            self.xdg.display()
        );
        let mut c = Command::new("unshare");
        c.args(["-m", "--propagation", "private", "sh", "-c", &script, "sh"])
            .arg(prog)
            .args(args)
            .current_dir(cwd)
            .stdin(Stdio::null());
        output_timeout(&mut c, std::time::Duration::from_secs(60))
    }

    /// `run` of `bundle` by sandboy and by runc (each with its own id), as
    /// the user in the v2 view: (sandboy's output, runc's, if runc exists).
    fn run_both(&self, bundle: &Bundle, test: &str) -> (Output, Option<Output>) {
        let id = unique_id("rl");
        let ours = self.as_user_v2(bundle.path(), &self.sandboy, &["run", &id]);
        let runc = which("runc").map(|runc| {
            let rid = unique_id("rlrunc");
            self.as_user_v2(bundle.path(), &runc, &["run", &rid])
        });
        if runc.is_none() {
            skip(test, "runc is not installed: no comparison");
        }
        // runc 1.1 runs from an executable memfd copy of itself, which a
        // host with vm.memfd_noexec = 2 refuses (sandboy runs in place
        // there: its binary is not the user's to write).
        let runc = runc.filter(|o| {
            let cloned = text(&o.stderr).contains("could not ensure we are a cloned binary");
            if cloned {
                skip(test, "runc cannot run rootless on this host (vm.memfd_noexec = 2 refuses its memfd copy): no comparison");
            }
            !cloned
        });
        (ours, runc)
    }
}

fn set_args(bundle: &Bundle, script: &str) {
    bundle.edit(|c| {
        c["process"]["args"] = serde_json::json!(["sh", "-c", script]);
        c["process"]["terminal"] = false.into();
    });
}

#[test]
fn spec_rootless_runs_as_runc_does() {
    let Some(env) = Env::new("spec_rootless_runs_as_runc_does") else {
        return;
    };
    let b = env.bundle();
    let o = env.as_user(b.path(), &env.sandboy, &["spec", "--rootless"]);
    assert_exit(&o, 0);
    let c = b.config();
    let want_map = format!(
        "[{{\"containerID\":0,\"hostID\":{},\"size\":1}}]",
        env.user.uid
    );
    assert_eq!(c["linux"]["uidMappings"].to_string(), want_map);
    // What libcontainer refused before: gid=5 on /dev/pts (unmapped).
    assert!(!c.to_string().contains("gid=5"), "{c}");
    set_args(&b, "cat /proc/self/uid_map; id -u; echo out; exit 3");

    let (ours, runc) = env.run_both(&b, "spec_rootless_runs_as_runc_does");
    assert_exit(&ours, 3);
    let text_ours = text(&ours.stdout);
    assert!(
        text_ours.split_whitespace().collect::<Vec<_>>()
            == ["0", &env.user.uid.to_string(), "1", "0", "out"],
        "{text_ours}"
    );
    if let Some(runc) = runc {
        assert_exit(&runc, 3);
        assert_eq!(text_ours, text(&runc.stdout));
    }
    // Nothing left in the state root.
    let left: Vec<_> = fs::read_dir(env.xdg.join("sandboy"))
        .map(|d| d.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(
        left.iter().all(|n| n.to_string_lossy().starts_with('.')),
        "{left:?}"
    );
}

#[test]
fn generated_rootless_bundle_confines_with_landlock() {
    let Some(env) = Env::new("generated_rootless_bundle_confines_with_landlock") else {
        return;
    };
    let b = env.bundle();
    let policy = env.dir.path().join("rl.toml");
    // /etc/hostname is outside `read`: Landlock refuses it (EACCES); the
    // write path right next to it is allowed.
    fs::write(
        &policy,
        r#"version = 1
name = "rl"
[process]
args = ["/bin/sh", "-c", "cat /proc/self/uid_map; echo hi > /out/f && cat /out/f; cat /etc/hostname; echo status=$?"]
[fs]
read = ["/bin", "/proc", "/out"]
exec = ["/bin"]
write = ["/out"]
"#,
    )
    .unwrap();
    fs::set_permissions(&policy, fs::Permissions::from_mode(0o644)).unwrap();
    let bundle_arg = b.path().display().to_string();
    let o = env.generate_rootless(b.path(), &policy, &bundle_arg);
    assert_exit(&o, 0);
    let c = b.config();
    assert!(c["linux"]["resources"].is_null(), "{c}");
    assert!(c["annotations"]
        .to_string()
        .contains("dev.sandboy.landlock"));

    let (ours, runc) = env.run_both(&b, "generated_rootless_bundle_confines_with_landlock");
    assert_exit(&ours, 0);
    let out = text(&ours.stdout);
    let map = format!("0 {} 1", env.user.uid);
    let first: Vec<&str> = out
        .lines()
        .next()
        .unwrap_or("")
        .split_whitespace()
        .collect();
    assert_eq!(first.join(" "), map, "{out}");
    assert!(out.contains("\nhi\n"), "allowed write: {out}");
    assert!(
        out.contains("status=1"),
        "Landlock must refuse the read: {out}"
    );
    assert_stderr_contains(&ours, "Permission denied");
    if let Some(runc) = runc {
        // runc applies no Landlock: the same read succeeds there.
        assert_exit(&runc, 0);
        let rout = text(&runc.stdout);
        assert!(rout.starts_with(out.lines().next().unwrap()), "{rout}");
        assert!(rout.contains("status=0"), "{rout}");
    }
}

#[test]
fn rootless_on_cgroup_v1_host_is_refused_with_the_reason() {
    let Some(env) = Env::new("rootless_on_cgroup_v1_host_is_refused_with_the_reason") else {
        return;
    };
    let b = env.bundle();
    assert_exit(
        &env.as_user(b.path(), &env.sandboy, &["spec", "--rootless"]),
        0,
    );
    let id = unique_id("rlv1");
    let o = env.as_user(b.path(), &env.sandboy, &["run", &id]);
    assert_exit(&o, 1);
    let err = text(&o.stderr);
    assert!(err.contains("cgroup v1 controllers"), "{err}");
    assert!(!env.xdg.join("sandboy").join(&id).exists());
}

#[test]
fn rootless_limits_are_refused_not_dropped() {
    let Some(env) = Env::new("rootless_limits_are_refused_not_dropped") else {
        return;
    };
    let b = env.bundle();
    assert_exit(
        &env.as_user(b.path(), &env.sandboy, &["spec", "--rootless"]),
        0,
    );
    b.edit(|c| c["linux"]["resources"] = serde_json::json!({"pids": {"limit": 10}}));
    let id = unique_id("rllim");
    let o = env.as_user_v2(b.path(), &env.sandboy, &["run", &id]);
    assert_exit_stderr(&o, 2, "linux.resources.pids");
    // The allowed counterpart: the same bundle without the limit runs.
    b.edit(|c| {
        c["linux"].as_object_mut().unwrap().remove("resources");
    });
    set_args(&b, "true");
    assert_exit(
        &env.as_user_v2(b.path(), &env.sandboy, &["run", &unique_id("rllim")]),
        0,
    );
    // And `generate --rootless` refuses a policy limit, naming it.
    let policy = env.dir.path().join("lim.toml");
    fs::write(
        &policy,
        "version = 1\nname = \"lim\"\n[process]\nargs = [\"/bin/true\"]\n[limits]\npids = 10\n",
    )
    .unwrap();
    fs::set_permissions(&policy, fs::Permissions::from_mode(0o644)).unwrap();
    let o = env.generate_rootless(b.path(), &policy, "-");
    assert_exit_stderr(&o, 2, "limits.pids");
}

#[test]
fn no_runtime_dir_and_no_root_is_a_usage_error() {
    let Some(env) = Env::new("no_runtime_dir_and_no_root_is_a_usage_error") else {
        return;
    };
    let mut c = env.user.cmd("env");
    c.args(["-u", "XDG_RUNTIME_DIR"])
        .arg(&env.sandboy)
        .arg("list")
        .current_dir(env.dir.path());
    let o = capture(&mut c);
    assert_exit(&o, 2);
    let err = text(&o.stderr);
    assert!(
        err.contains("--root") && err.contains("XDG_RUNTIME_DIR"),
        "{err}"
    );
    // The allowed counterpart: --root of its own works.
    let mut c = env.user.cmd("env");
    c.args(["-u", "XDG_RUNTIME_DIR"])
        .arg(&env.sandboy)
        .arg("--root")
        .arg(env.xdg.join("own"))
        .arg("list")
        .current_dir(env.dir.path());
    assert_exit(&capture(&mut c), 0);
    // `list` only reads: a root not there yet holds no container, and is
    // not made (the commands that make containers make it, 0700).
    assert!(!env.xdg.join("own").exists());
}

/// Rootless podman (which runs the runtime as root of its own user
/// namespace, passing no `--root`) with sandboy and with runc, in the v2
/// view: exit status, output and the uid map seen inside.
#[test]
fn rootless_podman_run_matches_runc() {
    let test = "rootless_podman_run_matches_runc";
    if !need_tool(test, "podman") || !need_tool(test, "runc") {
        return;
    }
    let Some(env) = Env::new(test) else {
        return;
    };
    let b = env.bundle();
    let rootfs = b.rootfs().display().to_string();
    let podman = which("podman").unwrap();
    let runc = which("runc").unwrap().display().to_string();
    let home = format!("/home/{}", env.user.name);
    let run = |runtime: &str| {
        let args = [
            &format!("HOME={home}"),
            podman.to_str().unwrap(),
            "--cgroup-manager=cgroupfs",
            "--runtime",
            runtime,
            "run",
            "--rm",
            "--network",
            "none",
            "--rootfs",
            &rootfs,
            "/bin/sh",
            "-c",
            "cat /proc/self/uid_map; echo out; exit 4",
        ];
        env.as_user_v2(Path::new("/tmp"), Path::new("/usr/bin/env"), &args)
    };
    let ours = run(env.sandboy.to_str().unwrap());
    let theirs = run(&runc);
    assert_exit(&theirs, 4);
    assert_exit(&ours, 4);
    assert_eq!(text(&ours.stdout), text(&theirs.stdout));
    assert!(text(&ours.stdout).contains("out"), "{}", text(&ours.stdout));
    // sandboy's state went to the user's XDG_RUNTIME_DIR, as runc's does.
    assert!(env.xdg.join("sandboy").is_dir());

    // run -d, exec, stop, rm: one script, so every step sees the same view.
    let name = unique_id("rlpod");
    let script = format!(
        "p='{podman} --cgroup-manager=cgroupfs --runtime {sb}'; \
         $p run -d --name {name} --network none --rootfs {rootfs} /bin/sleep 600 >/dev/null || exit 10; \
         $p exec {name} /bin/sh -c 'echo exec-ok; exit 5'; echo exec=$?; \
         $p stop -t 1 {name} >/dev/null; echo stop=$?; \
         $p inspect -f '{{{{.State.Status}}}}' {name}; \
         $p rm {name} >/dev/null; echo rm=$?",
        podman = podman.display(),
        sb = env.sandboy.display(),
    );
    let o = env.as_user_v2(
        Path::new("/tmp"),
        Path::new("/usr/bin/env"),
        &[&format!("HOME={home}"), "sh", "-c", &script],
    );
    assert_exit(&o, 0);
    let out = text(&o.stdout);
    assert_eq!(
        out.split_whitespace().collect::<Vec<_>>(),
        ["exec-ok", "exec=5", "stop=0", "exited", "rm=0"],
        "{out}\n{}",
        text(&o.stderr)
    );
}

/// `delete --force` of a created (never started) rootless container kills
/// its init: a rootless container has no cgroup of its own to signal
/// through, so the init is signalled directly.
#[test]
fn rootless_delete_force_kills_a_created_init() {
    let Some(env) = Env::new("rootless_delete_force_kills_a_created_init") else {
        return;
    };
    let b = env.bundle();
    assert_exit(
        &env.as_user(b.path(), &env.sandboy, &["spec", "--rootless"]),
        0,
    );
    set_args(&b, "exec sleep 1000");
    let id = unique_id("rldel");
    let script = format!(
        r#"S='{s}'
"$S" create --bundle . {id} </dev/null >/dev/null 2>&1 || {{ echo CREATE-FAILED; exit 1; }}
pid=$("$S" state {id} | sed -n 's/.*"pid": *\([0-9]*\).*/\1/p')
[ -n "$pid" ] || {{ echo NO-PID; exit 1; }}
"$S" delete --force {id} || echo DELETE-FAILED
sleep 0.3
st=$(awk '{{print $3}}' /proc/$pid/stat 2>/dev/null)
if [ -n "$st" ] && [ "$st" != Z ]; then echo "ALIVE $pid"; kill -9 $pid; else echo GONE; fi
"$S" state {id} >/dev/null 2>&1 && echo STATE-LEFT
"#,
        s = env.sandboy.display()
    );
    let o = env.as_user_v2(b.path(), Path::new("/bin/sh"), &["-c", &script]);
    let out = text(&o.stdout);
    assert_eq!(out.trim(), "GONE", "{out}\n{}", text(&o.stderr));
}

/// The user's first subordinate range in `file` (/etc/subuid or /etc/subgid).
fn sub_range(user: &str, file: &str) -> Option<(u64, u64)> {
    fs::read_to_string(file).ok()?.lines().find_map(|l| {
        let mut f = l.split(':');
        (f.next()? == user).then_some(())?;
        Some((f.next()?.parse().ok()?, f.next()?.parse().ok()?))
    })
}

#[test]
fn missing_newuidmap_for_mapped_ranges_is_a_clear_error() {
    let name = "missing_newuidmap_for_mapped_ranges_is_a_clear_error";
    let Some(env) = Env::new(name) else {
        return;
    };
    if which("newuidmap").is_none() || which("newgidmap").is_none() {
        return skip(
            name,
            "newuidmap/newgidmap (uidmap) are not installed: no counterpart",
        );
    }
    let (Some(uids), Some(gids)) = (
        sub_range(&env.user.name, "/etc/subuid"),
        sub_range(&env.user.name, "/etc/subgid"),
    ) else {
        return skip(
            name,
            "the test user has no /etc/subuid or /etc/subgid range",
        );
    };
    let b = env.bundle();
    assert_exit(
        &env.as_user(b.path(), &env.sandboy, &["spec", "--rootless"]),
        0,
    );
    // Root inside is the user; 1..1000 inside are its subordinate ids.
    b.edit(|c| {
        let map = |own: u32, (start, _): (u64, u64)| {
            serde_json::json!([
                {"containerID": 0, "hostID": own, "size": 1},
                {"containerID": 1, "hostID": start, "size": 1000}
            ])
        };
        c["linux"]["uidMappings"] = map(env.user.uid, uids);
        c["linux"]["gidMappings"] = map(env.user.gid, gids);
    });
    set_args(&b, "cat /proc/self/uid_map");
    let env_prog = Path::new("/usr/bin/env");
    let sandboy = env.sandboy.to_str().unwrap();
    // Counterpart: with newuidmap on PATH the ranges are mapped.
    let id = unique_id("rlmap");
    let ok = env.as_user_v2(
        b.path(),
        env_prog,
        &["PATH=/usr/bin:/bin", sandboy, "run", &id],
    );
    assert_exit(&ok, 0);
    assert!(
        text(&ok.stdout).lines().count() == 2,
        "two ranges mapped: {}",
        text(&ok.stdout)
    );
    // Without it on PATH: one clear error, exit 1, nothing left.
    let id = unique_id("rlnomap");
    let o = env.as_user_v2(
        b.path(),
        env_prog,
        &["PATH=/nonexistent", sandboy, "run", &id],
    );
    assert_exit(&o, 1);
    let err = text(&o.stderr);
    assert!(
        err.contains("newuidmap") && err.contains("PATH") && err.trim().lines().count() == 1,
        "{err}"
    );
    assert!(!env.xdg.join("sandboy").join(&id).exists(), "state left");
    assert!(cgroups_named(&id).is_empty(), "cgroups left");
    assert!(pids_mentioning(&id).is_empty(), "processes left");
}

#[test]
fn rootless_timeout_kills_the_container_without_a_cgroup() {
    let Some(env) = Env::new("rootless_timeout_kills_the_container_without_a_cgroup") else {
        return;
    };
    // Refused: running past `[limits] timeout`; a rootless container has
    // no cgroup to kill through, so the supervisor kills its init (a red
    // team's step ran its whole 20 s past a 3 s timeout, exit 0).
    let b = env.bundle();
    let o = env.as_user(b.path(), &env.sandboy, &["spec", "--rootless"]);
    assert_exit(&o, 0);
    set_args(&b, "echo started; sleep 20; echo finished");
    b.edit(|c| c["annotations"] = serde_json::json!({"dev.sandboy.timeout": "2s"}));
    let id = unique_id("rl-timeout");
    let o = env.as_user_v2(b.path(), &env.sandboy, &["run", &id]);
    assert_exit(&o, 137);
    assert_eq!(text(&o.stdout), "started\n");
    // Allowed: the same step within its timeout ends as it chose.
    set_args(&b, "echo started; sleep 0.1; echo finished");
    let id = unique_id("rl-in-time");
    let o = env.as_user_v2(b.path(), &env.sandboy, &["run", &id]);
    assert_exit(&o, 0);
    assert_eq!(text(&o.stdout), "started\nfinished\n");
}
