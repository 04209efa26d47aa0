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
