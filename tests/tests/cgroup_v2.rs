//! cgroup v2 code paths, differential against runc.
//!
//! This host is hybrid (controllers on v1, an empty unified hierarchy at
//! /sys/fs/cgroup/unified). Every runtime command here runs in its own
//! private mount namespace where that unified hierarchy is bind-mounted over
//! /sys/fs/cgroup: runtimes then detect a pure cgroup v2 host and take their
//! v2 paths for real (cgroup creation, process placement, the freezer,
//! cgroup.procs, the eBPF device filter, removal) in the kernel's real
//! unified hierarchy. What the view cannot show: controllers bound to v1
//! here (memory, pids, cpu, io), so resource limits are tested on v1 only.

use std::fs;
use std::path::{Path, PathBuf};

use sandboy_tests::*;

/// A runtime whose every call sees the pure-v2 view.
fn in_v2_view(name: &str, bin: &Path, dir: &TempDir) -> Runtime {
    use std::os::unix::fs::PermissionsExt;
    let wrapper = dir.path().join(format!("{name}-v2"));
    fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\nexec unshare -m --propagation private sh -c \
             'mount --bind /sys/fs/cgroup/unified /sys/fs/cgroup && exec \"$@\"' sh '{}' \"$@\"\n",
            bin.display()
        ),
    )
    .unwrap();
    fs::set_permissions(&wrapper, fs::Permissions::from_mode(0o755)).unwrap();
    Runtime::new(name, wrapper)
}

/// sandboy and runc in the view (with the directory holding their
/// wrappers), or `None` after recording a skip.
fn runtimes(test: &str) -> Option<(TempDir, Vec<Runtime>)> {
    if !need_root(test) || !need_tool(test, "unshare") {
        return None;
    }
    let dir = TempDir::new("v2view");
    let unified = Path::new("/sys/fs/cgroup/unified/cgroup.procs");
    let pure_v2 = Path::new("/sys/fs/cgroup/cgroup.procs");
    if !unified.exists() && !pure_v2.exists() {
        skip(test, "no cgroup v2 hierarchy on this host");
        return None;
    }
    if pure_v2.exists() {
        // Already a pure v2 host: no view needed.
        let mut v = vec![Runtime::sandboy()];
        v.extend(Runtime::runc());
        return Some((dir, v));
    }
    let mut v = vec![in_v2_view("sandboy", &sandboy_bin(), &dir)];
    match which("runc") {
        Some(runc) => v.push(in_v2_view("runc", &runc, &dir)),
        None => skip(&format!("{test} (runc side)"), "runc is not installed"),
    }
    Some((dir, v))
}

/// The unified-hierarchy directory of a process, seen from the host.
fn v2_cgroup_of(pid: i64) -> PathBuf {
    let text = fs::read_to_string(format!("/proc/{pid}/cgroup")).unwrap();
    let rel = text
        .lines()
        .find_map(|l| l.strip_prefix("0::"))
        .expect("a cgroup v2 line");
    PathBuf::from(format!("{}{rel}", v2_root()))
}

/// Where the unified hierarchy is mounted, seen from the host.
fn v2_root() -> &'static str {
    if Path::new("/sys/fs/cgroup/unified").is_dir() {
        "/sys/fs/cgroup/unified"
    } else {
        "/sys/fs/cgroup"
    }
}

#[test]
fn lifecycle_on_cgroup_v2_matches_runc() {
    let Some((_dir, rts)) = runtimes("lifecycle_on_cgroup_v2_matches_runc") else {
        return;
    };
    let mut seen = Vec::new();
    for rt in &rts {
        let b = Bundle::busybox(&["sh", "-c", "touch /tmp/ready; sleep 1000"]);
        let id = unique_id("v2life");
        let _g = rt.guard(&id);
        assert_exit(&rt.create(&b, &id), 0);
        let st = rt.state(&id);
        assert_eq!(st["status"], "created", "{}", rt.name);
        let pid = st["pid"].as_i64().unwrap();
        let cg = v2_cgroup_of(pid);
        assert!(cg.join("cgroup.procs").exists(), "{}: {cg:?}", rt.name);
        // The container's cgroup is its own, not the caller's.
        assert_ne!(
            cg,
            v2_cgroup_of(i64::from(std::process::id())),
            "{}",
            rt.name
        );
        assert_exit(&rt.run(&["start", &id]), 0);
        rt.wait_status(&id, "running");

        // The v2 freezer.
        assert_exit(&rt.run(&["pause", &id]), 0);
        let paused = (
            rt.status(&id),
            fs::read_to_string(cg.join("cgroup.freeze")).unwrap(),
        );
        assert_exit(&rt.run(&["resume", &id]), 0);
        let resumed = (
            rt.status(&id),
            fs::read_to_string(cg.join("cgroup.freeze")).unwrap(),
        );

        // exec joins the same cgroup; ps lists from cgroup.procs.
        let o = rt.run(&["exec", &id, "sh", "-c", "grep ^0:: /proc/self/cgroup"]);
        assert_exit(&o, 0);
        let exec_cg = text(&o.stdout).trim().to_owned();
        // Statistics from the v2 files present (runc's shape), even
        // though most controllers are not enabled for the cgroup.
        let o = rt.run(&["events", "--stats", &id]);
        assert_exit(&o, 0);
        let ev: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_runc_stats_shape(&rt.name, &ev["data"]);
        let hugetlb = ev["data"]["hugetlb"].clone();
        let o = rt.run(&["ps", "--format", "json", &id]);
        assert_exit(&o, 0);
        let pids: Vec<i64> = serde_json::from_slice(&o.stdout).unwrap();
        assert!(
            pids.contains(&pid),
            "{}: ps {pids:?} lacks init {pid}",
            rt.name
        );

        assert_exit(&rt.run(&["kill", &id, "KILL"]), 0);
        rt.wait_status(&id, "stopped");
        assert_exit(&rt.run(&["delete", &id]), 0);
        assert!(!cg.exists(), "{}: {cg:?} left after delete", rt.name);
        assert_exit(&rt.run(&["state", &id]), 1);
        seen.push((
            paused,
            resumed,
            // The bundle has no cgroup namespace: the exec'd process sees
            // the host path of the init's cgroup.
            exec_cg.ends_with(&*cg.file_name().unwrap().to_string_lossy()),
            hugetlb,
        ));
    }
    let want = (
        ("paused".to_owned(), "1\n".to_owned()),
        ("running".to_owned(), "0\n".to_owned()),
        true,
        // The same huge page sizes (and no failures) as runc reports.
        seen[seen.len() - 1].3.clone(),
    );
    for s in &seen {
        assert_eq!(*s, want);
    }
}

/// linux.resources.devices on v2: an eBPF program. A container that holds
/// CAP_MKNOD makes device nodes freely (runc's default `m` for all), but
/// opens only what the rules allow, bit by bit.
#[test]
fn device_rules_on_cgroup_v2_are_enforced_like_runc() {
    let Some((_dir, rts)) = runtimes("device_rules_on_cgroup_v2_are_enforced_like_runc") else {
        return;
    };
    let script = "\
        mknod /dev/fuse2 c 10 229; mknod /dev/lc c 10 237; mknod /dev/vcs2 c 7 0; \
        (exec 3</dev/fuse2) && echo fuse-open; \
        (exec 3</dev/lc) && echo lc-read; \
        (exec 3>/dev/lc) && echo lc-write; \
        (exec 3</dev/vcs2) && echo vcs-open; \
        (echo x >/dev/null) && echo null-write; \
        true";
    let mut outputs = Vec::new();
    for rt in &rts {
        let b = Bundle::busybox(&["sh", "-c", script]);
        b.edit(|c| {
            add_capability(c, "CAP_MKNOD");
            c["linux"]["resources"]["devices"] = serde_json::json!([
                {"allow": false, "access": "rwm"},
                {"allow": true, "type": "c", "major": 10, "minor": 229, "access": "rwm"},
                {"allow": true, "type": "c", "major": 10, "minor": 237, "access": "rw"},
                {"allow": false, "type": "c", "major": 10, "minor": 237, "access": "w"}
            ]);
        });
        let id = unique_id("v2dev");
        let _g = rt.guard(&id);
        let o = rt.run(&["run", "-b", b.path().to_str().unwrap(), &id]);
        assert_exit(&o, 0);
        let denied = text(&o.stderr)
            .lines()
            .filter(|l| l.contains("Operation not permitted"))
            .count();
        outputs.push((rt.name.clone(), text(&o.stdout), denied));
    }
    for (name, stdout, denied) in &outputs {
        assert_eq!(
            stdout, "fuse-open\nlc-read\nnull-write\n",
            "{name}: allowed opens"
        );
        // lc-write and vcs-open refused by the device filter (EPERM).
        assert_eq!(*denied, 2, "{name}: refused opens");
    }
}

/// Bad device rules are a config error before anything exists.
#[test]
fn bad_device_rules_on_cgroup_v2_leave_nothing_behind() {
    let Some((_dir, rts)) = runtimes("bad_device_rules_on_cgroup_v2_leave_nothing_behind") else {
        return;
    };
    let rt = &rts[0];
    let b = Bundle::busybox(&["true"]);
    b.edit(|c| {
        c["linux"]["resources"]["devices"] =
            serde_json::json!([{"allow": true, "type": "c", "major": 1, "access": "rwx"}]);
    });
    let id = unique_id("v2bad");
    let o = rt.run(&["run", "-b", b.path().to_str().unwrap(), &id]);
    assert_exit(&o, 2);
    let err = text(&o.stderr);
    assert!(
        err.contains(
            "config.json: linux.resources.devices[0]: access \"rwx\": 'x' is not one of r, w, m"
        ),
        "{err}"
    );
    assert!(!rt.root.path().join(&id).exists(), "state dir left");
    assert!(cgroups_named(&id).is_empty(), "cgroup left");
}

/// A memory limit on v2 lands in `memory.max` when the hierarchy offers the
/// memory controller; where it does not (the view on a hybrid host), the
/// container is refused rather than run without its limit, as by runc, and
/// nothing is left behind.
#[test]
fn memory_limit_on_cgroup_v2_is_applied_or_refused_like_runc() {
    let Some((_dir, rts)) = runtimes("memory_limit_on_cgroup_v2_is_applied_or_refused_like_runc")
    else {
        return;
    };
    let offered = fs::read_to_string(format!("{}/cgroup.controllers", v2_root())).unwrap();
    let has_memory = offered.split_whitespace().any(|c| c == "memory");
    for rt in &rts {
        let b = Bundle::busybox(&["true"]);
        b.edit(|c| c["linux"]["resources"]["memory"] = serde_json::json!({"limit": 100663296}));
        let id = unique_id("v2mem");
        let _g = rt.guard(&id);
        let o = rt.create(&b, &id);
        if has_memory {
            assert_exit(&o, 0);
            let cg = v2_cgroup_of(rt.state(&id)["pid"].as_i64().unwrap());
            let max = fs::read_to_string(cg.join("memory.max")).unwrap();
            assert_eq!(max.trim(), "100663296", "{}", rt.name);
        } else {
            assert_exit(&o, 1);
            assert!(
                text(&o.stderr).contains("memory.max"),
                "{}: {}",
                rt.name,
                text(&o.stderr)
            );
            assert!(cgroups_named(&id).is_empty(), "{}: cgroup left", rt.name);
            assert!(pids_mentioning(&id).is_empty(), "{}: process left", rt.name);
        }
    }
}

/// Add a user namespace mapping container root to host uid/gid 100000.
fn with_user_namespace(c: &mut serde_json::Value) {
    c["linux"]["namespaces"]
        .as_array_mut()
        .unwrap()
        .push(serde_json::json!({"type": "user"}));
    let map = serde_json::json!([{"containerID": 0, "hostID": 100000, "size": 65536}]);
    c["linux"]["uidMappings"] = map.clone();
    c["linux"]["gidMappings"] = map;
}

/// A user namespace on v2: libcontainer flags such containers for the
/// systemd manager, which libcgroups only honours for relative paths, so
/// with sandboy's absolute default the container runs on cgroupfs v2.
#[test]
fn user_namespace_on_cgroup_v2_runs_like_runc() {
    let Some((_dir, rts)) = runtimes("user_namespace_on_cgroup_v2_runs_like_runc") else {
        return;
    };
    let mut outputs = Vec::new();
    for rt in &rts {
        let b = Bundle::busybox(&[
            "sh",
            "-c",
            "cat /proc/self/uid_map /proc/self/gid_map; id -u; touch /tmp/x && echo tmp-ok",
        ]);
        b.edit(with_user_namespace);
        let id = unique_id("v2user");
        let _g = rt.guard(&id);
        let o = rt.run(&["run", "-b", b.path().to_str().unwrap(), &id]);
        assert_exit(&o, 0);
        let squeezed: Vec<String> = text(&o.stdout)
            .lines()
            .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
            .collect();
        outputs.push(squeezed);
        assert!(cgroups_named(&id).is_empty(), "{}: cgroup left", rt.name);
    }
    for out in &outputs {
        assert_eq!(
            *out,
            ["0 100000 65536", "0 100000 65536", "0", "tmp-ok"],
            "{outputs:?}"
        );
    }
}

/// A relative cgroupsPath with a user namespace would need the systemd
/// manager on v2: a config error naming the path, nothing left behind.
#[test]
fn relative_cgroups_path_with_user_namespace_on_cgroup_v2_is_refused() {
    let Some((_dir, rts)) =
        runtimes("relative_cgroups_path_with_user_namespace_on_cgroup_v2_is_refused")
    else {
        return;
    };
    let rt = &rts[0];
    let b = Bundle::busybox(&["true"]);
    let id = unique_id("v2rel");
    b.edit(|c| {
        with_user_namespace(c);
        c["linux"]["cgroupsPath"] = format!("machine.slice:sandboy:{id}").into();
    });
    let o = rt.run(&["run", "-b", b.path().to_str().unwrap(), &id]);
    assert_exit(&o, 2);
    let err = text(&o.stderr);
    assert!(
        err.contains("linux.cgroupsPath \"machine.slice:sandboy:")
            && err.contains("give an absolute path"),
        "{err}"
    );
    assert!(!rt.root.path().join(&id).exists(), "state dir left");
    assert!(cgroups_named(&id).is_empty(), "cgroup left");
}
