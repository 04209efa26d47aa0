//! Bad input gets a clear message, the right exit code (2 usage/config,
//! 1 runtime), and leaves nothing behind: no state dir, cgroup, mount or
//! process.

use std::fs;

use sandboy_tests::*;

/// Assert nothing named after `id` survives in `rt`'s root or the cgroup tree.
fn assert_nothing_left(rt: &Runtime, id: &str) {
    let left: Vec<_> = fs::read_dir(rt.root.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n == id)
        .collect();
    assert!(left.is_empty(), "state dir left for {id}");
    let lock = rt.root.path().join(".locks").join(id);
    assert!(!lock.exists(), "lock file left for {id}");
    let shadow = rt.root.path().join(".bundles").join(id);
    assert!(!shadow.exists(), "rewritten bundle left for {id}");
    assert!(
        cgroups_named(id).is_empty(),
        "cgroups left: {:?}",
        cgroups_named(id)
    );
    assert!(
        mounts_mentioning(id).is_empty(),
        "mounts left: {:?}",
        mounts_mentioning(id)
    );
    let ps = std::process::Command::new("ps")
        .args(["-eo", "args"])
        .output()
        .unwrap();
    assert!(
        !text(&ps.stdout)
            .lines()
            .any(|l| l.contains(id) && !l.contains("ps -eo")),
        "process left for {id}"
    );
}

#[track_caller]
fn expect(o: &std::process::Output, code: i32, needles: &[&str]) {
    assert_exit(o, code);
    let err = text(&o.stderr);
    for n in needles {
        assert!(err.contains(n), "stderr lacks {n:?}: {err}");
    }
}

#[test]
fn malformed_config_json_is_located() {
    if !need_root("malformed_config_json_is_located") {
        return;
    }
    let rt = Runtime::sandboy();
    let b = Bundle::busybox(&["true"]);
    fs::write(
        b.config_path(),
        "{\n  \"ociVersion\": \"1.0.2\",\n  \"process\": {,\n}\n",
    )
    .unwrap();
    let id = unique_id("badjson");
    let o = rt.create(&b, &id);
    expect(&o, 2, &["config.json:3:", "invalid config.json"]);
    assert_nothing_left(&rt, &id);
}

#[test]
fn invalid_config_field_is_located() {
    if !need_root("invalid_config_field_is_located") {
        return;
    }
    let rt = Runtime::sandboy();
    let b = Bundle::busybox(&["true"]);
    b.edit(|c| c["process"]["args"] = 42.into());
    let id = unique_id("badfield");
    let o = rt.create(&b, &id);
    expect(&o, 2, &["config.json:", "invalid config.json"]);
    assert_nothing_left(&rt, &id);

    let b = Bundle::busybox(&["true"]);
    b.edit(|c| c["root"] = serde_json::json!({"path": "/nonexistent-rootfs"}));
    let o = rt.create(&b, &id);
    expect(&o, 2, &["root.path"]);
    assert_nothing_left(&rt, &id);
    let b = Bundle::busybox(&["true"]);
    b.edit(|c| c["process"]["args"] = serde_json::json!([]));
    expect(&rt.create(&b, &id), 2, &["process.args is empty"]);
    assert_nothing_left(&rt, &id);
    // (uid_t)-1 is "leave unchanged" to setresuid: a red team's container
    // with that user ran as root. A NUL in the environment panicked the
    // init. Next to each, the allowed counterpart.
    for (field, bad, good, said) in [
        (
            "user",
            serde_json::json!({"uid": 4294967295u32, "gid": 0}),
            serde_json::json!({"uid": 4294967294u32, "gid": 0}),
            "process.user.uid 4294967295 is (uid_t)-1",
        ),
        (
            "user",
            serde_json::json!({"uid": 0, "gid": 4294967295u32}),
            serde_json::json!({"uid": 0, "gid": 65534}),
            "process.user.gid 4294967295",
        ),
        (
            "env",
            serde_json::json!(["PATH=/bin", "A=x\u{0}y"]),
            serde_json::json!(["PATH=/bin", "A=xy"]),
            "process.env[1]",
        ),
    ] {
        let b = Bundle::busybox(&["true"]);
        b.edit(|c| c["process"][field] = bad.clone());
        expect(&rt.create(&b, &id), 2, &[said]);
        assert_nothing_left(&rt, &id);
        b.edit(|c| c["process"][field] = good.clone());
        assert_exit(&rt.create(&b, &id), 0);
        assert_exit(&rt.run(&["delete", "--force", &id]), 0);
    }
}

#[test]
fn bad_annotations_are_config_errors() {
    if !need_root("bad_annotations_are_config_errors") {
        return;
    }
    let rt = Runtime::sandboy();
    for (key, value, needle) in [
        ("dev.sandboy.landlock", "{\"fs\": [", "dev.sandboy.landlock"),
        (
            "dev.sandboy.landlock",
            "{\"mode\": \"sometimes\"}",
            "dev.sandboy.landlock",
        ),
        ("dev.sandboy.timeout", "ten minutes", "dev.sandboy.timeout"),
        ("dev.sandboy.timeout", "0s", "give a positive duration"),
        (
            "dev.sandboy.wasm.limits",
            "{\"fuel\": \"lots\"}",
            "dev.sandboy.wasm.limits",
        ),
    ] {
        let b = Bundle::busybox(&["true"]);
        b.edit(|c| c["annotations"] = serde_json::json!({ key: value }));
        let id = unique_id("badann");
        let o = rt.create(&b, &id);
        expect(&o, 2, &[needle]);
        // The JSON location is said once.
        let err = text(&o.stderr);
        assert!(err.matches(" at line ").count() <= 1, "{err}");
        assert_nothing_left(&rt, &id);
    }
}

#[test]
fn missing_bundle_unknown_and_duplicate_ids() {
    if !need_root("missing_bundle_unknown_and_duplicate_ids") {
        return;
    }
    let rt = Runtime::sandboy();
    let id = unique_id("nobundle");
    let o = rt.run(&["create", "--bundle", "/nonexistent/bundle", &id]);
    expect(&o, 2, &["/nonexistent/bundle", "--bundle"]);
    assert_nothing_left(&rt, &id);

    for cmd in [
        vec!["state"],
        vec!["start"],
        vec!["kill"],
        vec!["delete"],
        vec!["pause"],
        vec!["exec"],
    ] {
        let mut args: Vec<&str> = cmd.clone();
        args.push("no-such-container");
        if cmd[0] == "exec" {
            args.push("true");
        }
        expect(&rt.run(&args), 1, &["container does not exist"]);
    }
    // delete --force of an unknown id succeeds, as with runc.
    assert_exit(&rt.run(&["delete", "--force", "no-such-container"]), 0);

    let b = Bundle::busybox(&["sleep", "30"]);
    let id = unique_id("dup");
    let _g = rt.guard(&id);
    assert_exit(&rt.create(&b, &id), 0);
    let o = rt.create(&b, &id);
    expect(&o, 1, &["container with id exists"]);
    // The first container is untouched by the failed duplicate.
    assert_eq!(rt.status(&id), "created");
    assert_exit(&rt.run(&["delete", "--force", &id]), 0);
    assert_nothing_left(&rt, &id);
}

#[test]
fn bad_flags_and_ids_are_usage_errors() {
    let rt = Runtime::sandboy();
    expect(
        &rt.run(&["create", "--no-such-flag", "x"]),
        2,
        &["--no-such-flag"],
    );
    expect(&rt.run(&["frobnicate"]), 2, &["frobnicate"]);
    expect(&rt.run(&["state", "../etc"]), 2, &["invalid container id"]);
    expect(&rt.run(&["--log-format", "xml", "list"]), 2, &["xml"]);
    // runc-only global flags are accepted and ignored.
    assert_exit(
        &rt.run(&[
            "--criu",
            "/usr/sbin/criu",
            "--rootless",
            "false",
            "list",
            "-q",
        ]),
        0,
    );
    expect(&rt.run(&["checkpoint", "x"]), 1, &["not supported"]);
    expect(
        &rt.run(&["checkpoint", "--parent-path", "/abs", "x"]),
        2,
        &["--parent-path must be relative"],
    );
    expect(
        &rt.run(&[
            "checkpoint",
            "--image-path",
            "/nonexistent-images",
            "--parent-path",
            "./parent",
            "x",
        ]),
        2,
        &["invalid --parent-path"],
    );
}

#[test]
fn running_container_cannot_be_deleted_without_force() {
    if !need_root("running_container_cannot_be_deleted_without_force") {
        return;
    }
    let rt = Runtime::sandboy();
    let b = Bundle::busybox(&["sleep", "30"]);
    let id = unique_id("busy");
    let _g = rt.guard(&id);
    assert_exit(&rt.run_detached(&b, &id), 0);
    expect(&rt.run(&["delete", &id]), 1, &["is not stopped"]);
    expect(
        &rt.run(&["start", &id]),
        1,
        &["cannot start an already running container"],
    );
    expect(&rt.run(&["resume", &id]), 1, &["container not paused"]);
    assert_exit(&rt.run(&["delete", "--force", &id]), 0);
    assert_nothing_left(&rt, &id);
}

#[test]
fn json_log_is_what_containerd_reads() {
    let rt = Runtime::sandboy();
    let log = TempDir::new("log");
    let file = log.path().join("log.json");
    let o = rt.run(&[
        "--log",
        file.to_str().unwrap(),
        "--log-format",
        "json",
        "state",
        "missing",
    ]);
    assert_exit(&o, 1);
    let line = fs::read_to_string(&file).unwrap();
    let v: serde_json::Value = serde_json::from_str(line.lines().last().unwrap()).unwrap();
    assert_eq!(v["level"], "error");
    assert_eq!(v["msg"], "container does not exist");
    assert!(v["time"].as_str().unwrap().contains('T'));
}

/// Limits the cgroup layer would silently drop are refused before anything
/// exists (runc refuses them too, at run time).
#[test]
fn unenforceable_limits_are_refused() {
    if !need_root("unenforceable_limits_are_refused") {
        return;
    }
    let rt = Runtime::sandboy();
    let id = unique_id("limits");
    let b = Bundle::busybox(&["true"]);
    b.edit(|c| c["linux"]["resources"]["rdma"] = serde_json::json!({"mlx5_1": {"hcaHandles": 3}}));
    let o = rt.run(&["run", "--bundle", b.path().to_str().unwrap(), &id]);
    expect(
        &o,
        2,
        &["config.json: linux.resources.rdma: RDMA limits cannot be enforced"],
    );
    assert_nothing_left(&rt, &id);
    if !std::path::Path::new("/sys/fs/cgroup/cgroup.procs").exists() {
        let b = Bundle::busybox(&["true"]);
        b.edit(|c| c["linux"]["resources"]["unified"] = serde_json::json!({"pids.max": "5"}));
        let o = rt.run(&["run", "--bundle", b.path().to_str().unwrap(), &id]);
        expect(
            &o,
            2,
            &["linux.resources.unified: cgroup v2 keys cannot be applied"],
        );
        assert_nothing_left(&rt, &id);
    }
}

/// An engine that stops reading (contest drops a `delete` it does not wait
/// for) leaves the runtime a closed stderr: the failure keeps exit status 1
/// instead of turning into a panic (101) while reporting it.
#[test]
fn a_closed_stderr_keeps_the_exit_status() {
    let rt = Runtime::sandboy();
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let status = rt
        .cmd()
        .args(["delete", "no-such-container"])
        .stdout(std::process::Stdio::null())
        .stderr(writer)
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(1), "{status:?}");
}

/// A create that fails inside the init says so in one line naming the
/// container and the kernel's cause (runc's shape), not libcontainer's
/// chain of wrapped errors; the text and JSON logs carry that one line too.
#[test]
fn a_failed_create_is_one_line_with_the_id_and_cause() {
    if !need_root("a_failed_create_is_one_line_with_the_id_and_cause") {
        return;
    }
    let rt = Runtime::sandboy();
    let missing = format!("/nonexistent-{}", std::process::id());
    let b = Bundle::busybox(&["true"]);
    b.edit(|c| {
        c["mounts"].as_array_mut().unwrap().push(serde_json::json!({
            "destination": "/x", "type": "bind", "source": missing, "options": ["bind"]
        }))
    });
    let id = unique_id("oneline");
    let _g = rt.guard(&id);
    let o = rt.create(&b, &id);
    expect(&o, 1, &[&format!("create {id}:"), &missing, "(os error 2)"]);
    let err = text(&o.stderr);
    assert_eq!(err.lines().count(), 1, "more than one line: {err}");
    assert_nothing_left(&rt, &id);

    // The allowed counterpart: the same bundle without the bad mount runs.
    b.edit(|c| {
        c["mounts"]
            .as_array_mut()
            .unwrap()
            .retain(|m| m["destination"] != "/x")
    });
    let ok = unique_id("oneline-ok");
    let _g2 = rt.guard(&ok);
    assert_exit(
        &rt.run(&["run", "--bundle", b.path().to_str().unwrap(), &ok]),
        0,
    );

    // A missing executable, through --log as engines call it: one JSON line.
    let b = Bundle::busybox(&["/no-such-program"]);
    let log = b.path().join("log.json");
    let id = unique_id("oneline-log");
    let o = rt.run(&[
        "--log",
        log.to_str().unwrap(),
        "--log-format",
        "json",
        "create",
        "--bundle",
        b.path().to_str().unwrap(),
        &id,
    ]);
    assert_exit(&o, 1);
    let lines = fs::read_to_string(&log).unwrap();
    assert_eq!(lines.lines().count(), 1, "log: {lines}");
    let line: serde_json::Value = serde_json::from_str(lines.trim()).unwrap();
    assert_eq!(line["level"], "error");
    let msg = line["msg"].as_str().unwrap();
    assert!(
        msg.contains(&id) && msg.contains("/no-such-program"),
        "{msg}"
    );
    assert_nothing_left(&rt, &id);
}

/// `vm.memfd_noexec` is per pid namespace and can never be lowered: in a
/// spec sharing the host's pid namespace, applying it would raise the
/// host's for good. Refused (exit 2, nothing left, the host's value as it
/// was); the same key with the container's own pid namespace runs.
#[test]
fn a_namespaced_sysctl_outside_the_containers_namespace_is_refused() {
    if !need_root("a_namespaced_sysctl_outside_the_containers_namespace_is_refused") {
        return;
    }
    let host = || fs::read_to_string("/proc/sys/vm/memfd_noexec").unwrap_or_default();
    let before = host();
    let rt = Runtime::sandboy();
    let id = unique_id("sysctl");
    let b = Bundle::busybox(&["true"]);
    b.edit(|c| {
        c["linux"]["sysctl"] = serde_json::json!({"vm.memfd_noexec": "2"});
        let ns = c["linux"]["namespaces"].as_array_mut().unwrap();
        ns.retain(|n| n["type"] != "pid");
    });
    let o = rt.run(&["run", "--bundle", b.path().to_str().unwrap(), &id]);
    expect(
        &o,
        2,
        &["vm.memfd_noexec", "shares the host's pid namespace"],
    );
    assert_nothing_left(&rt, &id);
    assert_eq!(host(), before, "the host's vm.memfd_noexec changed");
    // Counterpart: its own pid namespace.
    let b = Bundle::busybox(&["true"]);
    b.edit(|c| c["linux"]["sysctl"] = serde_json::json!({"vm.memfd_noexec": "2"}));
    let o = rt.run(&["run", "--bundle", b.path().to_str().unwrap(), &id]);
    assert_exit(&o, 0);
    assert_eq!(host(), before, "the host's vm.memfd_noexec changed");
}

/// The state root is the caller's own: an id naming one of its own
/// directories (`.bundles`) is a usage error, and a root another user made
/// (in /tmp, before root used it) is refused rather than trusted (a red
/// team forged a container's state there, and root's delete ran its hook).
#[test]
fn the_state_root_is_the_callers_own() {
    let t = "the_state_root_is_the_callers_own";
    if !need_root(t) {
        return;
    }
    let rt = Runtime::sandboy();
    for id in [".bundles", ".locks"] {
        let o = rt.run(&["delete", "--force", id]);
        expect(&o, 2, &["may not start with '.'"]);
    }
    // An id longer than a file name may be: one usage error, not the
    // kernel's "File name too long"; the longest allowed one is just absent.
    let long = "a".repeat(201);
    expect(
        &rt.run(&["state", &long]),
        2,
        &["201 bytes long", "at most 200"],
    );
    let o = rt.run(&["state", &"a".repeat(200)]);
    assert_exit(&o, 1);
    assert!(
        text(&o.stderr).contains("does not exist"),
        "{}",
        text(&o.stderr)
    );
    let Some(user) = TestUser::create(t) else {
        return;
    };
    let dir = TempDir::new("foreign-root");
    let root = dir.path().join("r");
    fs::create_dir_all(&root).unwrap();
    user.chown(&root);
    let o = capture(
        std::process::Command::new(&rt.bin)
            .arg("--root")
            .arg(&root)
            .arg("list"),
    );
    expect(&o, 1, &["belongs to uid", "use a root of your own"]);
    // Counterpart: the same directory once it is root's.
    std::os::unix::fs::chown(&root, Some(0), Some(0)).unwrap();
    let at = |root: &std::path::Path, args: &[&str]| {
        capture(
            std::process::Command::new(&rt.bin)
                .arg("--root")
                .arg(root)
                .args(args),
        )
    };
    assert_exit(&at(&root, &["list"]), 0);
    // A directory others may write (a red team's `list --root /tmp` made
    // /tmp 0700): refused, its mode untouched; a missing root is not made
    // by the commands that only act on containers already there.
    use std::os::unix::fs::PermissionsExt;
    let shared = dir.path().join("shared");
    fs::create_dir(&shared).unwrap();
    fs::set_permissions(&shared, fs::Permissions::from_mode(0o1777)).unwrap();
    for args in [&["list"][..], &["create", "--bundle", "/nonexistent", "x"]] {
        expect(&at(&shared, args), 1, &["other users may write it"]);
        let mode = fs::metadata(&shared).unwrap().permissions().mode() & 0o7777;
        assert_eq!(mode, 0o1777, "{args:?}");
    }
    let missing = dir.path().join("missing/root");
    assert_exit(&at(&missing, &["list"]), 0);
    for args in [
        &["state", "x"][..],
        &["kill", "x"],
        &["delete", "x"],
        &["delete", "--force", "x"],
    ] {
        let o = at(&missing, args);
        assert!(
            text(&o.stderr).contains("does not exist") || o.status.success(),
            "{args:?}: {}",
            text(&o.stderr)
        );
    }
    assert!(
        !dir.path().join("missing").exists(),
        "a read-only command made the root"
    );
}

/// Run `bad` (a config.json edit) and expect exit 2 naming `said`, nothing
/// left; then `good`, its allowed counterpart, and expect `run` to exit 0.
#[track_caller]
fn refused_then_allowed(
    rt: &Runtime,
    args: &[&str],
    bad: impl FnOnce(&mut serde_json::Value),
    said: &[&str],
    good: impl FnOnce(&mut serde_json::Value),
) {
    let id = unique_id("load");
    let b = Bundle::busybox(args);
    b.edit(bad);
    let o = rt.run(&["run", "--bundle", b.path().to_str().unwrap(), &id]);
    expect(&o, 2, said);
    assert_eq!(
        text(&o.stderr).trim_end().lines().count(),
        1,
        "one line: {}",
        text(&o.stderr)
    );
    assert_nothing_left(rt, &id);
    let b = Bundle::busybox(args);
    b.edit(good);
    let o = rt.run(&["run", "--bundle", b.path().to_str().unwrap(), &id]);
    assert_exit(&o, 0);
    assert_nothing_left(rt, &id);
}

/// libcgroups joins `linux.cgroupsPath` to each hierarchy as given: a red
/// team's `/../../..<dir>` made host directories outside cgroupfs. Refused
/// at load; a path below the hierarchy runs.
#[test]
fn a_climbing_cgroups_path_is_refused_at_load() {
    if !need_root("a_climbing_cgroups_path_is_refused_at_load") {
        return;
    }
    let rt = Runtime::sandboy();
    let scratch = TempDir::new("cgclimb");
    let escaped = scratch.path().join("escaped/dir");
    let climbing = format!("/../../../../../..{}", escaped.display());
    let id = unique_id("cgok");
    let below = format!("/sandboy/{id}");
    refused_then_allowed(
        &rt,
        &["true"],
        |c| c["linux"]["cgroupsPath"] = climbing.clone().into(),
        &["linux.cgroupsPath", "climbs out of the cgroup hierarchy"],
        |c| c["linux"]["cgroupsPath"] = below.clone().into(),
    );
    assert!(!escaped.exists(), "{} was made", escaped.display());
    assert!(cgroups_named(&id).is_empty(), "{:?}", cgroups_named(&id));
}

/// One entry per namespace type (runc: "duplicated ns"): with two network
/// entries the last won, and a node policy's "new network namespace" was
/// met by the first while the container joined the host's. A joined
/// namespace's path must be a namespace file: a FIFO hung create forever.
#[test]
fn duplicate_namespaces_and_non_namespace_paths_are_refused() {
    if !need_root("duplicate_namespaces_and_non_namespace_paths_are_refused") {
        return;
    }
    let rt = Runtime::sandboy();
    let mut sleeper = std::process::Command::new("sleep")
        .arg("60")
        .spawn()
        .unwrap();
    let host_net = format!("/proc/{}/ns/net", sleeper.id());
    let host_uts = format!("/proc/{}/ns/uts", sleeper.id());
    let without = |c: &mut serde_json::Value, typ: &str| {
        let ns: Vec<serde_json::Value> = c["linux"]["namespaces"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|n| n["type"] != typ)
            .cloned()
            .collect();
        c["linux"]["namespaces"] = ns.into();
    };
    let push = |c: &mut serde_json::Value, n: serde_json::Value| {
        c["linux"]["namespaces"].as_array_mut().unwrap().push(n);
    };
    refused_then_allowed(
        &rt,
        &["true"],
        |c| {
            without(c, "network");
            push(c, serde_json::json!({"type": "network"}));
            push(c, serde_json::json!({"type": "network", "path": host_net}));
        },
        &["linux.namespaces[", "duplicated ns \"net\""],
        |c| {
            without(c, "network");
            push(c, serde_json::json!({"type": "network", "path": host_net}));
        },
    );
    let scratch = TempDir::new("nsfifo");
    let fifo = scratch.path().join("fifo");
    assert!(std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let plain = scratch.path().join("plain");
    fs::write(&plain, "").unwrap();
    for path in [&fifo, &plain] {
        let id = unique_id("nspath");
        let b = Bundle::busybox(&["true"]);
        b.edit(|c| {
            without(c, "uts");
            push(c, serde_json::json!({"type": "uts", "path": path}));
        });
        let o = output_timeout(
            rt.cmd()
                .args(["create", "--bundle", b.path().to_str().unwrap(), &id]),
            std::time::Duration::from_secs(20),
        );
        expect(
            &o,
            2,
            &["linux.namespaces[", "].path", "is not a namespace file"],
        );
        assert_nothing_left(&rt, &id);
    }
    refused_then_allowed(
        &rt,
        &["true"],
        |c| {
            without(c, "uts");
            push(c, serde_json::json!({"type": "uts", "path": plain}));
        },
        &["is not a namespace file"],
        |c| {
            without(c, "uts");
            push(c, serde_json::json!({"type": "uts", "path": host_uts}));
        },
    );
    let _ = sleeper.kill();
    let _ = sleeper.wait();
}

/// A key under sandboy's prefix that is none of its keys was ignored: a
/// misspelled `dev.sandboy.landlok` ran its container with no Landlock and
/// no seccomp. Refused with the key it most likely meant; the right key,
/// and another prefix's key, are accepted.
#[test]
fn an_unknown_sandboy_annotation_is_refused() {
    if !need_root("an_unknown_sandboy_annotation_is_refused") {
        return;
    }
    let rt = Runtime::sandboy();
    let ruleset = r#"{"mode":"enforce","fs":[{"path":"/bin","access":["read","exec"]}]}"#;
    for key in [
        "dev.sandboy.landlok",
        "dev.sandboy.Landlock",
        "dev.sandboy.landlock ",
        " DEV.SANDBOY.LANDLOCK",
    ] {
        refused_then_allowed(
            &rt,
            &["true"],
            |c| c["annotations"] = serde_json::json!({ key: ruleset }),
            &[
                "annotation",
                "is not one of sandboy's keys",
                "did you mean \"dev.sandboy.landlock\"?",
            ],
            |c| {
                c["annotations"] =
                    serde_json::json!({"dev.sandboy.landlock": ruleset, "org.example.note": "x"})
            },
        );
    }
}

/// Values the kernel or libcontainer would fail on after the container
/// exists (exit 1), or never check: refused at load naming the field, each
/// next to its allowed counterpart.
#[test]
fn config_values_are_checked_at_load() {
    if !need_root("config_values_are_checked_at_load") {
        return;
    }
    let rt = Runtime::sandboy();
    type Edit = Box<dyn Fn(&mut serde_json::Value)>;
    let cases: Vec<(Edit, &str, Edit)> = vec![
        (
            Box::new(|c| c["process"]["oomScoreAdj"] = 5000.into()),
            "process.oomScoreAdj 5000",
            Box::new(|c| c["process"]["oomScoreAdj"] = 1000.into()),
        ),
        (
            Box::new(|c| {
                c["hooks"] =
                    serde_json::json!({"createRuntime": [{"path": "/bin/true", "timeout": 0}]})
            }),
            "hooks.createRuntime[0].timeout 0",
            Box::new(|c| {
                c["hooks"] =
                    serde_json::json!({"createRuntime": [{"path": "/bin/true", "timeout": 5}]})
            }),
        ),
        (
            Box::new(|c| c["hooks"] = serde_json::json!({"poststop": [{"path": "relative/hook"}]})),
            "hooks.poststop[0].path \"relative/hook\"",
            Box::new(|c| c["hooks"] = serde_json::json!({"poststop": [{"path": "/bin/true"}]})),
        ),
        (
            Box::new(|c| c["hostname"] = "a".repeat(300).into()),
            "hostname is 300 bytes",
            Box::new(|c| c["hostname"] = "a".repeat(64).into()),
        ),
        (
            Box::new(|c| c["linux"]["resources"]["memory"] = serde_json::json!({"limit": -5})),
            "linux.resources.memory.limit -5",
            Box::new(|c| c["linux"]["resources"]["memory"] = serde_json::json!({"limit": -1})),
        ),
        (
            Box::new(|c| {
                c["process"]["rlimits"] =
                    serde_json::json!([{"type": "RLIMIT_NOFILE", "soft": 10, "hard": 10}])
            }),
            "process.rlimits[0] RLIMIT_NOFILE 10",
            Box::new(|c| {
                c["process"]["rlimits"] =
                    serde_json::json!([{"type": "RLIMIT_NOFILE", "soft": 20, "hard": 20}])
            }),
        ),
    ];
    for (bad, said, good) in cases {
        refused_then_allowed(&rt, &["true"], bad, &[said], good);
    }
}

/// A failing poststart or startContainer hook fails `run` with a runtime
/// failure (exit 1, not the init's 255), one line, and leaves nothing of
/// the id, its lock under <root>/.locks included; a passing one runs.
#[test]
fn a_failed_start_hook_leaves_nothing() {
    if !need_root("a_failed_start_hook_leaves_nothing") {
        return;
    }
    let rt = Runtime::sandboy();
    for kind in ["poststart", "startContainer"] {
        for (hook, code) in [("/bin/false", 1), ("/bin/true", 0)] {
            let id = unique_id("starthook");
            let b = Bundle::busybox(&["true"]);
            b.edit(|c| c["hooks"] = serde_json::json!({ kind: [{"path": hook}] }));
            let o = rt.run(&["run", "--bundle", b.path().to_str().unwrap(), &id]);
            assert_exit(&o, code);
            if code != 0 {
                let err = text(&o.stderr);
                assert_eq!(err.trim_end().lines().count(), 1, "{kind}: {err}");
                assert!(err.contains("hook"), "{kind}: {err}");
            }
            assert_nothing_left(&rt, &id);
        }
    }
}

/// `exec` flags are checked before anything runs: (uid_t)-1 as user or
/// group ran the process as root; an unknown capability and a relative cwd
/// were taken without a word. Each next to its allowed counterpart.
#[test]
fn exec_flags_are_checked() {
    if !need_root("exec_flags_are_checked") {
        return;
    }
    let rt = Runtime::sandboy();
    let b = Bundle::busybox(&["sleep", "60"]);
    b.edit(|c| c["process"]["user"] = serde_json::json!({"uid": 1000, "gid": 1000}));
    let id = unique_id("execflags");
    let _g = rt.guard(&id);
    assert_exit(&rt.run_detached(&b, &id), 0);
    for (flags, said, good) in [
        (
            vec!["--user", "4294967295"],
            "--user \"4294967295\": 4294967295 is (uid_t)-1",
            vec!["--user", "1001"],
        ),
        (
            vec!["--user", "1000:4294967295"],
            "4294967295 is (uid_t)-1",
            vec!["--user", "1000:1001"],
        ),
        (
            vec!["--cap", "CAP_BOGUS"],
            "--cap \"CAP_BOGUS\" is not a capability",
            vec!["--cap", "CAP_CHOWN"],
        ),
        (
            vec!["--cwd", "relative"],
            "--cwd \"relative\" must be an absolute path",
            vec!["--cwd", "/tmp"],
        ),
    ] {
        let mut args = vec!["exec"];
        args.extend(&flags);
        args.extend([id.as_str(), "id", "-u"]);
        let o = rt.run(&args);
        expect(&o, 2, &[said]);
        assert!(o.stdout.is_empty(), "it ran: {}", text(&o.stdout));
        let mut args = vec!["exec"];
        args.extend(&good);
        args.extend([id.as_str(), "id", "-u"]);
        let o = rt.run(&args);
        assert_exit(&o, 0);
        assert_ne!(text(&o.stdout).trim(), "0", "{flags:?}");
    }
}

/// `--cap` is parsed in runc's form (`CAP_MKNOD`) everywhere: the check
/// that keeps CAP_MKNOD and CAP_SETFCAP from a policy-confined container's
/// exec read only `MKNOD`, and let the usual spelling through.
#[test]
fn exec_cap_in_runcs_form_is_held_to_the_policy() {
    if !need_root("exec_cap_in_runcs_form_is_held_to_the_policy") {
        return;
    }
    let pb = PolicyBundle::new("strict");
    pb.bundle
        .edit(|c| c["process"]["args"] = serde_json::json!(["/bin/sleep", "60"]));
    let rt = Runtime::sandboy();
    let id = unique_id("execplant");
    let _g = rt.guard(&id);
    assert_exit(&rt.run_detached(&pb.bundle, &id), 0);
    for cap in ["CAP_MKNOD", "CAP_SETFCAP"] {
        let o = rt.run(&["exec", "--cap", cap, &id, "/bin/true"]);
        expect(
            &o,
            2,
            &["never given to a process of a policy-confined container"],
        );
    }
    assert_exit(
        &rt.run(&["exec", "--cap", "CAP_CHOWN", &id, "/bin/true"]),
        0,
    );
}

/// `exec -d --pid-file` that cannot write the pid file fails (exit 1) and
/// kills the process it started, as runc: its caller could not manage it.
#[test]
fn exec_with_an_unwritable_pid_file_leaves_no_process() {
    if !need_root("exec_with_an_unwritable_pid_file_leaves_no_process") {
        return;
    }
    let rt = Runtime::sandboy();
    let b = Bundle::busybox(&["sleep", "60"]);
    let id = unique_id("execpid");
    let _g = rt.guard(&id);
    assert_exit(&rt.run_detached(&b, &id), 0);
    let scratch = TempDir::new("execpid");
    let bad = scratch.path().join("nonexist/dir/pid");
    let o = rt.run(&[
        "exec",
        "-d",
        "--pid-file",
        bad.to_str().unwrap(),
        &id,
        "sleep",
        "47",
    ]);
    expect(&o, 1, &["--pid-file"]);
    let ps = rt.run(&["ps", &id]);
    assert_exit(&ps, 0);
    assert!(
        !text(&ps.stdout).contains("sleep 47"),
        "left running: {}",
        text(&ps.stdout)
    );
    let good = scratch.path().join("pid");
    let o = rt.run(&[
        "exec",
        "-d",
        "--pid-file",
        good.to_str().unwrap(),
        &id,
        "sleep",
        "48",
    ]);
    assert_exit(&o, 0);
    let pid: i32 = fs::read_to_string(&good).unwrap().trim().parse().unwrap();
    assert!(std::path::Path::new(&format!("/proc/{pid}")).exists());
    assert!(text(&rt.run(&["ps", &id]).stdout).contains("sleep 48"));
}

/// `events --interval 0s` printed stats as fast as it could (runc: "interval
/// must be greater than 0"); a positive interval streams until the
/// container stops.
#[test]
fn events_interval_zero_is_refused() {
    if !need_root("events_interval_zero_is_refused") {
        return;
    }
    let rt = Runtime::sandboy();
    let b = Bundle::busybox(&["sleep", "2"]);
    let id = unique_id("events0");
    let _g = rt.guard(&id);
    assert_exit(&rt.run_detached(&b, &id), 0);
    let o = output_timeout(
        rt.cmd().args(["events", "--interval", "0s", &id]),
        std::time::Duration::from_secs(10),
    );
    expect(&o, 2, &["--interval \"0s\" is zero"]);
    assert!(o.stdout.is_empty());
    let o = output_timeout(
        rt.cmd().args(["events", "--interval", "200ms", &id]),
        std::time::Duration::from_secs(20),
    );
    assert_exit(&o, 0);
    assert!(text(&o.stdout).contains("\"type\":\"stats\""));
}

/// `update -r` with devices replaced the container's device rules (a red
/// team's `{"allow": true}` opened every device); runc's update does not
/// change them. `unified` on a host without cgroup v2 was dropped without
/// a word. Both refused (exit 2); a pids limit is applied.
#[test]
fn update_refuses_what_it_would_not_apply() {
    if !need_root("update_refuses_what_it_would_not_apply") {
        return;
    }
    let rt = Runtime::sandboy();
    let b = Bundle::busybox(&["sleep", "60"]);
    let id = unique_id("update");
    let _g = rt.guard(&id);
    assert_exit(&rt.run_detached(&b, &id), 0);
    let scratch = TempDir::new("update");
    let file = scratch.path().join("r.json");
    let mut cases = vec![(
        r#"{"devices":[{"allow":true,"access":"rwm"}]}"#,
        "linux.resources.devices: update cannot change linux.resources.devices; runc does not either",
    )];
    if !std::path::Path::new("/sys/fs/cgroup/cgroup.procs").exists() {
        cases.push((
            r#"{"unified":{"memory.max":"1"}}"#,
            "linux.resources.unified: cgroup v2 keys cannot be applied",
        ));
    }
    for (json, said) in cases {
        fs::write(&file, json).unwrap();
        let o = rt.run(&["update", "-r", file.to_str().unwrap(), &id]);
        expect(&o, 2, &[said]);
    }
    fs::write(&file, r#"{"pids":{"limit":50}}"#).unwrap();
    assert_exit(&rt.run(&["update", "-r", file.to_str().unwrap(), &id]), 0);
    let max = cgroups_named(&id)
        .into_iter()
        .map(|d| d.join("pids.max"))
        .find(|p| p.exists())
        .expect("the container's pids cgroup");
    assert_eq!(fs::read_to_string(max).unwrap().trim(), "50");
}
