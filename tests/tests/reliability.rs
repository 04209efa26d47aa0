//! Kill it anywhere, race it: nothing lost, nothing left behind (issue #19),
//! and a state root other users cannot read (#14).
//!
//! * Every lifecycle command is SIGKILLed at moments spread uniformly over
//!   its measured duration; after each trial `list` works, `state` answers
//!   (or names the broken state), `delete --force` succeeds, and no process,
//!   cgroup, mount, state directory, shadow bundle, wrap workdir or
//!   supervisor of the container is left.
//! * 64 concurrent `create`s of one id: one winner, 63 "exists".
//! * A state.json cut at several offsets is still deletable with --force.
//! * Modes: root 0700, state and shadow files 0600; another user is refused.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Instant;

use sandboy_tests::*;

/// Trials per command: ≥ 20 in `make test`, `SANDBOY_KILL_TRIALS` (200 in
/// `make soak`) otherwise.
fn trials() -> u32 {
    std::env::var("SANDBOY_KILL_TRIALS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20)
}

/// A long-running busybox bundle whose container gets a supervisor (the
/// timeout annotation) and a shadow bundle (no cgroupsPath), so every
/// kind of leftover can occur.
fn bundle() -> Bundle {
    let b = Bundle::busybox(&["sh", "-c", "while :; do sleep 1; done"]);
    b.edit(|v| {
        v["annotations"]["dev.sandboy.timeout"] = "600s".into();
        if let Some(l) = v["linux"].as_object_mut() {
            l.remove("cgroupsPath");
        }
    });
    b
}

/// What one container left behind, by kind.
#[derive(Default, Debug, Clone, Copy, PartialEq)]
struct Debris {
    processes: usize,
    cgroups: usize,
    mounts: usize,
    state_dirs: usize,
    shadow_bundles: usize,
    wrap_dirs: usize,
    lock_files: usize,
}

impl Debris {
    fn of(rt: &Runtime, id: &str) -> Self {
        let root = rt.root.path();
        let present = |p: PathBuf| usize::from(p.exists());
        Debris {
            // The runtime's own processes, the intermediate, the init before
            // its execve and the supervisor all carry the id in their
            // command line; the payload is found through its cgroups.
            processes: pids_mentioning(id).len(),
            cgroups: cgroups_named(id).len(),
            mounts: mounts_mentioning(id).len(),
            state_dirs: present(root.join(id)),
            shadow_bundles: present(root.join(".bundles").join(id)),
            wrap_dirs: present(root.join(".wrap").join(id)),
            lock_files: present(root.join(".locks").join(id)),
        }
    }

    fn add(&mut self, o: Debris) {
        self.processes += o.processes;
        self.cgroups += o.cgroups;
        self.mounts += o.mounts;
        self.state_dirs += o.state_dirs;
        self.shadow_bundles += o.shadow_bundles;
        self.wrap_dirs += o.wrap_dirs;
        self.lock_files += o.lock_files;
    }

    fn is_clean(&self) -> bool {
        *self == Debris::default()
    }
}

/// Forcefully remove what a failed trial left, so later tests start clean.
fn scrub(id: &str) {
    // The payload's processes do not name the id: found via the cgroups.
    let mut pids = pids_mentioning(id);
    for cg in cgroups_named(id) {
        let _ = fs::write(cg.join("freezer.state"), "THAWED");
        let procs = fs::read_to_string(cg.join("cgroup.procs")).unwrap_or_default();
        pids.extend(procs.lines().filter_map(|l| l.parse::<i32>().ok()));
    }
    std::thread::sleep(std::time::Duration::from_millis(50));
    for pid in pids {
        // SAFETY: kill(2) with a pid read from /proc; no memory involved.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    remove_cgroup_tree(&format!("sandboy/{id}"));
}

/// Bring a container into the state the killed command starts from.
#[derive(Clone, Copy)]
enum Before {
    Nothing,
    Created,
    Running,
    Paused,
}

fn prepare(rt: &Runtime, b: &Bundle, id: &str, before: Before) {
    match before {
        Before::Nothing => {}
        Before::Created => assert_exit(&rt.create(b, id), 0),
        Before::Running => rt.create_and_start(b, id),
        Before::Paused => {
            rt.create_and_start(b, id);
            assert_exit(&rt.run(&["pause", id]), 0);
        }
    }
}

/// Start `args` (with `{id}` replaced) under `rt`; stdio to /dev/null so a
/// detached container holds nothing of the test's.
fn spawn(rt: &Runtime, b: &Bundle, args: &[&str], id: &str) -> std::process::Child {
    let args: Vec<String> = args
        .iter()
        .map(|a| {
            a.replace("{id}", id)
                .replace("{bundle}", b.path().to_str().unwrap())
        })
        .collect();
    rt.cmd()
        .args(&args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn sandboy")
}

/// The trial's checks after the kill: `list` works, `state` answers (or
/// names the broken state), `delete --force` succeeds. Problems found.
fn check_after(rt: &Runtime, id: &str) -> Vec<String> {
    let mut problems = Vec::new();
    let list = rt.run(&["list", "--format", "json"]);
    if !list.status.success() {
        problems.push(format!("list failed: {}", text(&list.stderr)));
    }
    let state = rt.run(&["state", id]);
    let err = text(&state.stderr);
    let clear = err.contains("does not exist") || err.contains("is corrupt");
    if !state.status.success() && !clear {
        problems.push(format!("state: unclear failure: {err}"));
    }
    let del = rt.run(&["delete", "--force", id]);
    if !del.status.success() {
        problems.push(format!("delete --force failed: {}", text(&del.stderr)));
    }
    problems
}

/// SIGKILL `args` at [`trials`] moments spread over its measured duration.
fn kill_trials(name: &str, before: Before, args: &[&str]) {
    if !need_root(name) || need_sandboy(name).is_none() {
        return;
    }
    let rt = Runtime::sandboy();
    let b = bundle();
    // One normal run to measure the command's duration.
    let id = unique_id(&format!("rel-{name}"));
    prepare(&rt, &b, &id, before);
    let t = Instant::now();
    let st = spawn(&rt, &b, args, &id).wait().unwrap();
    let duration = t.elapsed();
    assert!(st.success(), "{name}: a normal run failed");
    assert_exit(&rt.run(&["delete", "--force", &id]), 0);

    let mut total = Debris::default();
    let mut failures = Vec::new();
    let mut exited_first = 0;
    let n = trials();
    for i in 0..n {
        let id = unique_id(&format!("rel-{name}"));
        prepare(&rt, &b, &id, before);
        let mut child = spawn(&rt, &b, args, &id);
        std::thread::sleep(duration * i / n);
        if matches!(child.try_wait(), Ok(Some(_))) {
            exited_first += 1;
        }
        let _ = child.kill();
        let _ = child.wait();
        for p in check_after(&rt, &id) {
            failures.push(format!("trial {i} ({:?}): {p}", duration * i / n));
        }
        let d = Debris::of(&rt, &id);
        if !d.is_clean() {
            failures.push(format!("trial {i}: left {d:?}"));
            scrub(&id);
            let _ = rt.run(&["delete", "--force", &id]);
            std::thread::sleep(std::time::Duration::from_millis(200));
            remove_cgroup_tree(&format!("sandboy/{id}"));
        }
        total.add(d);
    }
    eprintln!(
        "{name}: {n} trials over {duration:?} ({exited_first} finished before the kill); left behind: {total:?}"
    );
    assert!(failures.is_empty(), "{name}:\n{}", failures.join("\n"));
    assert!(total.is_clean());
}

#[test]
fn kill_create() {
    kill_trials(
        "create",
        Before::Nothing,
        &["create", "--bundle", "{bundle}", "{id}"],
    );
}

#[test]
fn kill_start() {
    kill_trials("start", Before::Created, &["start", "{id}"]);
}

#[test]
fn kill_run_detach() {
    kill_trials(
        "run-detach",
        Before::Nothing,
        &["run", "--detach", "--bundle", "{bundle}", "{id}"],
    );
}

#[test]
fn kill_exec() {
    kill_trials("exec", Before::Running, &["exec", "{id}", "true"]);
}

#[test]
fn kill_delete() {
    kill_trials("delete", Before::Running, &["delete", "--force", "{id}"]);
}

#[test]
fn kill_kill() {
    kill_trials("kill", Before::Running, &["kill", "{id}", "TERM"]);
}

#[test]
fn kill_pause_resume() {
    kill_trials("pause", Before::Running, &["pause", "{id}"]);
    kill_trials("resume", Before::Paused, &["resume", "{id}"]);
}

#[test]
fn kill_update() {
    kill_trials(
        "update",
        Before::Running,
        &["update", "--memory", "64M", "{id}"],
    );
}

#[test]
fn concurrent_creates_of_one_id_have_one_winner() {
    let name = "concurrent_creates_of_one_id_have_one_winner";
    if !need_root(name) || need_sandboy(name).is_none() {
        return;
    }
    let rt = Runtime::sandboy();
    let b = bundle();
    let id = unique_id("rel-race");
    let _g = rt.guard(&id);
    let children: Vec<_> = (0..64)
        .map(|_| {
            let out = TempDir::new("race");
            let child = rt
                .cmd()
                .args(["create", "--bundle", b.path().to_str().unwrap(), &id])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(fs::File::create(out.path().join("err")).unwrap())
                .spawn()
                .unwrap();
            (child, out)
        })
        .collect();
    let mut winners = 0;
    let mut exists = 0;
    let mut other = Vec::new();
    for (mut child, out) in children {
        let st = child.wait().unwrap();
        let err = fs::read_to_string(out.path().join("err")).unwrap_or_default();
        match st.code() {
            Some(0) => winners += 1,
            Some(1) if err.contains(&format!("container with id exists: {id}")) => exists += 1,
            code => other.push(format!("{code:?}: {err}")),
        }
    }
    eprintln!(
        "64 creates: {winners} won, {exists} said exists, {} other",
        other.len()
    );
    assert_eq!((winners, exists), (1, 63), "other outcomes: {other:#?}");
    // The winner's container is whole: it starts and runs.
    assert_exit(&rt.run(&["start", &id]), 0);
    assert_eq!(rt.status(&id), "running");
    assert_exit(&rt.run(&["delete", "--force", &id]), 0);
    let d = Debris::of(&rt, &id);
    assert!(d.is_clean(), "left {d:?}");
}

#[test]
fn truncated_state_is_reported_and_force_deletable() {
    let name = "truncated_state_is_reported_and_force_deletable";
    if !need_root(name) || need_sandboy(name).is_none() {
        return;
    }
    let rt = Runtime::sandboy();
    let b = bundle();
    for cut in [0.0, 0.01, 0.25, 0.5, 0.9, 0.999] {
        let id = unique_id("rel-cut");
        let _g = rt.guard(&id);
        rt.create_and_start(&b, &id);
        let pid = rt.state(&id)["pid"].as_i64().unwrap() as i32;
        let file = rt.root.path().join(&id).join("state.json");
        let bytes = fs::read(&file).unwrap();
        let at = (bytes.len() as f64 * cut) as usize;
        fs::write(&file, &bytes[..at]).unwrap();

        let st = rt.run(&["state", &id]);
        assert_exit(&st, 1);
        let err = text(&st.stderr);
        assert!(
            err.contains("is corrupt (truncated?)") && err.contains("delete --force"),
            "cut at {at}: {err}"
        );
        assert_exit(&rt.run(&["list"]), 0);
        // Without --force the broken state is refused, named the same way.
        assert_exit(&rt.run(&["delete", &id]), 1);
        assert_exit(&rt.run(&["delete", "--force", &id]), 0);
        assert!(
            !Path::new(&format!("/proc/{pid}")).exists()
                || fs::read_to_string(format!("/proc/{pid}/stat"))
                    .is_ok_and(|s| s.contains(") Z ")),
            "cut at {at}: init {pid} survived"
        );
        let d = Debris::of(&rt, &id);
        assert!(d.is_clean(), "cut at {at} of {}: left {d:?}", bytes.len());
    }
}

/// `delete` returns only once the container's supervisor is gone: it
/// waits for it (the kill trials once found one still running right after
/// a successful `delete --force`), and kills one that hangs. Here the
/// supervisor is stopped with SIGSTOP, so it can only be killed; the
/// allowed counterpart is the plain delete of a container whose
/// supervisor exits by itself.
#[test]
fn delete_leaves_no_supervisor() {
    let name = "delete_leaves_no_supervisor";
    if !need_root(name) || need_sandboy(name).is_none() {
        return;
    }
    let rt = Runtime::sandboy();
    let b = bundle();
    for hung in [false, true] {
        let id = unique_id("rel-sup");
        let _g = rt.guard(&id);
        rt.create_and_start(&b, &id);
        let record = fs::read_to_string(rt.root.path().join(&id).join("supervisor"))
            .expect("create records its supervisor");
        let pid: i32 = record.split_whitespace().next().unwrap().parse().unwrap();
        assert!(pids_mentioning(&id).contains(&pid), "{record}: not running");
        if hung {
            // SAFETY: kill(2) of the pid the runtime recorded.
            assert_eq!(unsafe { libc::kill(pid, libc::SIGSTOP) }, 0);
        }
        let t = Instant::now();
        let del = rt.run(&["delete", "--force", &id]);
        assert_exit(&del, 0);
        let warned = text(&del.stderr).contains("the supervisor outlived its container");
        assert_eq!(warned, hung, "{}", text(&del.stderr));
        let d = Debris::of(&rt, &id);
        assert!(
            d.is_clean(),
            "hung={hung}: left {d:?} after {:?}",
            t.elapsed()
        );
    }
}

fn mode(p: &Path) -> u32 {
    fs::metadata(p)
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
        .permissions()
        .mode()
        & 0o7777
}

#[test]
fn state_root_is_private() {
    let name = "state_root_is_private";
    if !need_root(name) || need_sandboy(name).is_none() {
        return;
    }
    let rt = Runtime::sandboy();
    // The harness made the root 0755, as an older sandboy did: narrowed.
    fs::set_permissions(rt.root.path(), fs::Permissions::from_mode(0o755)).unwrap();
    let b = bundle();
    b.edit(|v| {
        v["process"]["env"]
            .as_array_mut()
            .unwrap()
            .push("API_TOKEN=s3cret".into())
    });
    let id = unique_id("rel-modes");
    let _g = rt.guard(&id);
    assert_exit(&rt.create(&b, &id), 0);
    let root = rt.root.path();
    assert_eq!(mode(root), 0o700, "state root");
    assert_eq!(mode(&root.join(&id)), 0o700, "state dir");
    assert_eq!(mode(&root.join(&id).join("state.json")), 0o600);
    let shadow = root.join(".bundles").join(&id);
    assert_eq!(mode(&shadow), 0o700, "shadow bundle dir");
    for f in fs::read_dir(&shadow).unwrap().flatten() {
        assert_eq!(mode(&f.path()), 0o600, "{}", f.path().display());
    }
    // A fresh root is made 0700 too (by a command that makes containers;
    // `list` only reads, and makes none).
    let fresh = TempDir::new("fresh-root");
    let fresh_root = fresh.path().join("r");
    let at_fresh = |args: &[&str]| {
        capture(
            Command::new(sandboy_bin())
                .arg("--root")
                .arg(&fresh_root)
                .args(args),
        )
    };
    assert_exit(&at_fresh(&["list"]), 0);
    assert!(!fresh_root.exists(), "list made a state root");
    let fresh_id = unique_id("rel-fresh");
    let bundle_dir = b.path().to_str().unwrap().to_owned();
    assert_exit(
        &at_fresh(&["create", "--bundle", &bundle_dir, &fresh_id]),
        0,
    );
    assert_eq!(mode(&fresh_root), 0o700, "fresh state root");
    assert_exit(&at_fresh(&["delete", "--force", &fresh_id]), 0);

    // Another user: refused with permission denied, root's list works.
    if !need_tool(name, "useradd") || !need_tool(name, "runuser") {
        return;
    }
    let user = OtherUser::new();
    // The user must reach the binary and the root's parent (/tmp/...).
    let parent = root.parent().unwrap();
    assert!(mode(parent) & 0o005 == 0o005 || parent == Path::new("/tmp"));
    for args in [vec!["list"], vec!["state", id.as_str()]] {
        let o = capture(
            Command::new("runuser")
                .args(["-u", &user.name, "--"])
                .arg(sandboy_bin())
                .arg("--root")
                .arg(root)
                .args(&args),
        );
        assert_exit(&o, 1);
        let err = text(&o.stderr);
        assert!(err.contains("permission denied"), "{args:?}: {err}");
        assert!(!text(&o.stdout).contains(&id), "{args:?} leaked the id");
    }
    let o = rt.run(&["list", "--quiet"]);
    assert_exit(&o, 0);
    assert!(text(&o.stdout).contains(&id), "root's own list");
}

/// A throwaway unprivileged host user, removed on drop.
struct OtherUser {
    name: String,
}

impl OtherUser {
    fn new() -> Self {
        let name = format!("sbrel{}", std::process::id() % 100000);
        let st = Command::new("useradd")
            .args(["--no-create-home", "--shell", "/bin/false", &name])
            .status()
            .unwrap();
        assert!(st.success(), "useradd {name}");
        OtherUser { name }
    }
}

impl Drop for OtherUser {
    fn drop(&mut self) {
        let _ = Command::new("userdel").arg(&self.name).status();
    }
}

// ---------------------------------------------------------------------
// Races (#19): commands on one container at once, `delete` against the
// init's own exit, two runtimes in one --root.

/// Rounds of the race tests (bounded: each round is one container).
const RACE_ROUNDS: u32 = 4;

/// Every outcome of a racing command is a clean one: exit 0 or 1, and a
/// failure says why (no panic, no signal, no empty message).
fn judge(what: &str, o: &std::process::Output) -> Option<String> {
    let err = text(&o.stderr);
    match o.status.code() {
        Some(0) if !err.contains("panicked") => None,
        Some(1) if !err.trim().is_empty() && !err.contains("panicked") => None,
        code => Some(format!("{what}: exit {code:?}: {err}")),
    }
}

/// Record what `id` left under `label`, and scrub it so later rounds and
/// tests start clean.
fn note_debris(rt: &Runtime, id: &str, label: &str, problems: &mut Vec<String>) {
    let d = Debris::of(rt, id);
    if !d.is_clean() {
        problems.push(format!("{label}: left {d:?}"));
        scrub(id);
    }
}

/// The freezer state of the container's v1 cgroup, if it has one.
fn freezer_state(id: &str) -> Option<String> {
    cgroups_named(id)
        .into_iter()
        .find(|p| p.starts_with("/sys/fs/cgroup/freezer"))
        .and_then(|p| fs::read_to_string(p.join("freezer.state")).ok())
        .map(|s| s.trim().to_owned())
}

/// What `state` says now: `Some(status)`, or `None` for "does not exist";
/// any other answer is a problem.
fn status_or_gone(rt: &Runtime, id: &str) -> Result<Option<String>, String> {
    let o = rt.run(&["state", id]);
    if o.status.success() {
        let v: serde_json::Value = serde_json::from_slice(&o.stdout)
            .map_err(|e| format!("state printed garbage ({e}): {}", text(&o.stdout)))?;
        return Ok(v["status"].as_str().map(String::from));
    }
    let err = text(&o.stderr);
    if err.contains("does not exist") {
        Ok(None)
    } else {
        Err(format!("state: {err}"))
    }
}

#[test]
fn concurrent_commands_on_one_container() {
    let name = "concurrent_commands_on_one_container";
    if !need_root(name) || need_sandboy(name).is_none() {
        return;
    }
    let rt = Runtime::sandboy();
    let b = bundle();
    let mut problems = Vec::new();
    for round in 0..RACE_ROUNDS {
        let id = unique_id("race-ops");
        let _g = rt.guard(&id);
        rt.create_and_start(&b, &id);
        // Odd rounds include a `delete --force`: the container may go.
        let mut ops: Vec<Vec<&str>> = vec![
            vec!["pause", &id],
            vec!["resume", &id],
            vec!["pause", &id],
            vec!["resume", &id],
            vec!["kill", &id, "TERM"],
            vec!["kill", "--all", &id, "CONT"],
            vec!["delete", &id],
            vec!["state", &id],
            vec!["state", &id],
            vec!["ps", &id],
        ];
        if round % 2 == 1 {
            ops.push(vec!["delete", "--force", &id]);
        }
        let execs = ["exec", &id, "true"];
        std::thread::scope(|s| {
            let exec_threads: Vec<_> = (0..3)
                .map(|_| {
                    s.spawn(|| {
                        (0..3)
                            .map(|_| {
                                output_timeout(
                                    rt.cmd().args(execs),
                                    std::time::Duration::from_secs(60),
                                )
                            })
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            let others: Vec<_> = ops
                .iter()
                .map(|args| {
                    let rt = &rt;
                    s.spawn(move || {
                        (0..3)
                            .map(|_| (args.clone(), rt.run(args)))
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            for t in others {
                for (args, o) in t.join().unwrap() {
                    let what = args.join(" ");
                    problems.extend(judge(&what, &o).map(|p| format!("round {round}: {p}")));
                    if args[0] == "state" && o.status.success() {
                        if let Err(e) = serde_json::from_slice::<serde_json::Value>(&o.stdout) {
                            problems.push(format!("round {round}: state printed garbage: {e}"));
                        }
                    }
                    let err = text(&o.stderr);
                    if err.contains("corrupt") {
                        problems.push(format!("round {round}: {what}: {err}"));
                    }
                }
            }
            // Consistent: the status `state` reports is the freezer's.
            match status_or_gone(&rt, &id) {
                Ok(Some(st)) => {
                    let want = if st == "paused" { "FROZEN" } else { "THAWED" };
                    let frozen = freezer_state(&id);
                    if frozen.as_deref() != Some(want) {
                        problems.push(format!(
                            "round {round}: state says {st}, freezer says {frozen:?}"
                        ));
                    }
                }
                Ok(None) => {
                    if round % 2 == 0 {
                        problems.push(format!("round {round}: gone without a delete --force"));
                    }
                }
                Err(e) => problems.push(format!("round {round}: {e}")),
            }
            // An exec that reached a frozen cgroup waits for the thaw.
            let _ = rt.run(&["resume", &id]);
            for t in exec_threads {
                for o in t.join().unwrap() {
                    // `kill TERM` ends the init (and `delete --force` the
                    // container): an exec'd process then dies with its pid
                    // namespace, and exec reports it as runc does, 128+9.
                    if o.status.code() == Some(137) {
                        continue;
                    }
                    problems.extend(judge("exec", &o).map(|p| format!("round {round}: {p}")));
                }
            }
        });
        let del = rt.run(&["delete", "--force", &id]);
        problems.extend(judge("final delete --force", &del).map(|p| format!("round {round}: {p}")));
        if !del.status.success() {
            problems.push(format!("round {round}: final delete --force failed"));
        }
        note_debris(&rt, &id, &format!("round {round}"), &mut problems);
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn delete_races_the_inits_exit() {
    let name = "delete_races_the_inits_exit";
    if !need_root(name) || need_sandboy(name).is_none() {
        return;
    }
    let rt = Runtime::sandboy();
    // The init exits right after start; a supervisor (timeout) and a
    // shadow bundle (no cgroupsPath) exit and go with it.
    let b = short_bundle();
    let mut problems = Vec::new();
    let rounds = 5 * RACE_ROUNDS;
    for round in 0..rounds {
        let id = unique_id("race-exit");
        let _g = rt.guard(&id);
        rt.create_and_start(&b, &id);
        // From "right away" to "after the exit", spread over the rounds.
        std::thread::sleep(std::time::Duration::from_millis(u64::from(round)));
        let force = round % 2 == 1;
        let args: &[&str] = if force {
            &["delete", "--force", &id]
        } else {
            &["delete", &id]
        };
        let o = rt.run(args);
        problems.extend(judge(&args.join(" "), &o).map(|p| format!("round {round}: {p}")));
        if !o.status.success() {
            let err = text(&o.stderr);
            if force || !err.contains("that is not stopped") {
                problems.push(format!("round {round}: {}: {err}", args.join(" ")));
            }
            // Refused while the init still ran: it is stopped soon.
            rt.wait_status(&id, "stopped");
            let again = rt.run(&["delete", &id]);
            if !again.status.success() {
                problems.push(format!(
                    "round {round}: delete once stopped: {}",
                    text(&again.stderr)
                ));
            }
        }
        match status_or_gone(&rt, &id) {
            Ok(None) => {}
            Ok(Some(st)) => {
                problems.push(format!("round {round}: still there ({st}) after delete"))
            }
            Err(e) => problems.push(format!("round {round}: {e}")),
        }
        note_debris(&rt, &id, &format!("round {round}"), &mut problems);
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn shared_root_list_and_state_while_others_create_and_delete() {
    let name = "shared_root_list_and_state_while_others_create_and_delete";
    if !need_root(name) || need_sandboy(name).is_none() {
        return;
    }
    let rt = Runtime::sandboy();
    let b = bundle();
    let stable = unique_id("race-stable");
    let _g = rt.guard(&stable);
    rt.create_and_start(&b, &stable);
    let done = std::sync::atomic::AtomicBool::new(false);
    let mut problems = Vec::new();
    let (mut lists, mut states) = (0, 0);
    std::thread::scope(|s| {
        let workers: Vec<_> = (0..4)
            .map(|_| {
                s.spawn(|| {
                    let mut ids = Vec::new();
                    for _ in 0..3 {
                        let id = unique_id("race-root");
                        let mut p = Vec::new();
                        for args in [
                            vec!["create", "--bundle", b.path().to_str().unwrap(), &id],
                            vec!["start", &id],
                            vec!["pause", &id],
                            vec!["resume", &id],
                            vec!["delete", "--force", &id],
                        ] {
                            let o = rt.run(&args);
                            if !o.status.success() {
                                p.push(format!("{}: {}", args.join(" "), text(&o.stderr)));
                            }
                        }
                        ids.push(id);
                        if !p.is_empty() {
                            return (ids, p);
                        }
                    }
                    (ids, Vec::new())
                })
            })
            .collect();
        let reader = s.spawn(|| {
            let mut p = Vec::new();
            let (mut lists, mut states) = (0, 0);
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                let o = rt.run(&["list", "--format", "json"]);
                lists += 1;
                match serde_json::from_slice::<serde_json::Value>(&o.stdout) {
                    Ok(v) if o.status.success() => {
                        let listed = v.as_array().is_some_and(|a| {
                            a.iter()
                                .any(|c| c["id"] == stable.as_str() && c["status"] == "running")
                        });
                        if !listed {
                            p.push(format!("list lacks the running {stable}: {v}"));
                        }
                    }
                    r => p.push(format!(
                        "list: exit {:?}, {r:?}: {} {}",
                        o.status.code(),
                        text(&o.stdout),
                        text(&o.stderr)
                    )),
                }
                let o = rt.run(&["list", "--quiet"]);
                if !o.status.success() || !text(&o.stdout).lines().any(|l| l == stable) {
                    p.push(format!(
                        "list --quiet: {} {}",
                        text(&o.stdout),
                        text(&o.stderr)
                    ));
                }
                match status_or_gone(&rt, &stable) {
                    Ok(Some(st)) if st == "running" => {}
                    r => p.push(format!("state {stable}: {r:?}")),
                }
                states += 1;
            }
            (p, lists, states)
        });
        let mut all_ids = Vec::new();
        for w in workers {
            let (ids, p) = w.join().unwrap();
            all_ids.extend(ids);
            problems.extend(p);
        }
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        let (p, l, st) = reader.join().unwrap();
        problems.extend(p);
        (lists, states) = (l, st);
        for id in all_ids {
            let _ = rt.run(&["delete", "--force", &id]);
            note_debris(&rt, &id, &id, &mut problems);
        }
    });
    eprintln!("shared root: {lists} lists and {states} states while 12 containers came and went");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn runc_state_in_the_same_root_is_left_alone() {
    let name = "runc_state_in_the_same_root_is_left_alone";
    if !need_root(name) || need_sandboy(name).is_none() {
        return;
    }
    let Some(runc) = which("runc") else {
        return skip(name, "runc is not installed");
    };
    let rt = Runtime::sandboy();
    let root = rt.root.path().to_str().unwrap().to_owned();
    let b = Bundle::busybox(&["sh", "-c", "while :; do sleep 1; done"]);
    let ours = unique_id("race-ours");
    let _g = rt.guard(&ours);
    rt.create_and_start(&b, &ours);
    let theirs = unique_id("race-runc");
    let runc_cmd = |args: &[&str]| capture(Command::new(&runc).arg("--root").arg(&root).args(args));
    // runc's own cleanup, whatever happens below.
    struct RuncGuard<'a>(&'a dyn Fn(&[&str]) -> std::process::Output, &'a str);
    impl Drop for RuncGuard<'_> {
        fn drop(&mut self) {
            let _ = (self.0)(&["delete", "--force", self.1]);
        }
    }
    let _rg = RuncGuard(&runc_cmd, &theirs);
    let bundle = b.path().to_str().unwrap();
    assert_exit(
        &runc_cmd(&["run", "--detach", "--bundle", bundle, &theirs]),
        0,
    );

    // list: ours listed, theirs named on stderr as another runtime's.
    let o = rt.run(&["list", "--format", "json"]);
    assert_exit(&o, 0);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("list JSON");
    let ids: Vec<&str> = v
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["id"].as_str())
        .collect();
    assert!(
        ids.contains(&ours.as_str()) && !ids.contains(&theirs.as_str()),
        "{ids:?}"
    );
    let err = text(&o.stderr);
    assert!(
        err.contains(&theirs) && err.contains("another runtime"),
        "list stderr: {err}"
    );
    let o = rt.run(&["list"]);
    assert_exit(&o, 0);
    assert!(text(&o.stdout).contains(&ours));

    // state, delete, delete --force, kill: refused, naming the owner.
    for args in [
        vec!["state", theirs.as_str()],
        vec!["delete", theirs.as_str()],
        vec!["delete", "--force", theirs.as_str()],
        vec!["kill", theirs.as_str(), "KILL"],
    ] {
        let o = rt.run(&args);
        assert_exit(&o, 1);
        let err = text(&o.stderr);
        assert!(
            err.contains("another runtime") && err.contains("runc"),
            "{args:?}: {err}"
        );
    }
    // Untouched: runc still sees its container running and deletes it.
    let o = runc_cmd(&["state", &theirs]);
    assert_exit(&o, 0);
    let st: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        st["status"], "running",
        "runc's container after sandboy's refusals"
    );
    assert_exit(&runc_cmd(&["delete", "--force", &theirs]), 0);
    // Our own container is whole.
    assert_eq!(rt.status(&ours), "running");
    assert_exit(&rt.run(&["delete", "--force", &ours]), 0);
    let d = Debris::of(&rt, &ours);
    assert!(d.is_clean(), "left {d:?}");
}

// ---------------------------------------------------------------------
// A broken environment (#19): a full or read-only state root, a cgroup
// hierarchy refusing mkdir, /proc with hidepid. Each refusal next to the
// same command passing once the environment is whole again. The damage
// is done in a private mount namespace (`unshare -m`), never to the host.

/// Run `script` (sh) in a private mount namespace with `SB` (the sandboy
/// binary), `OUT` (a directory for results) and `vars` in its environment.
/// Results: `OUT/<case>.rc`, `.err` and `.left` (state-root paths naming
/// the id) as the script's `try CASE ARGS…` helper writes them.
fn in_private_ns(script: &str, vars: &[(&str, &str)]) -> (TempDir, Output) {
    let out = TempDir::new("ns-out");
    let helper = r#"
try() { c=$1; shift
  "$SB" --root "$ROOT" "$@" >"$OUT/$c.out" 2>"$OUT/$c.err" </dev/null; echo $? >"$OUT/$c.rc"
  find "$ROOT" | grep -F -- "$ID" >"$OUT/$c.left"; true; }
"#;
    let mut cmd = Command::new("unshare");
    cmd.args(["-m", "--propagation", "private", "sh", "-c"])
        .arg(format!("{helper}{script}"))
        .env("SB", sandboy_bin())
        .env("OUT", out.path());
    for (k, v) in vars {
        cmd.env(k, v);
    }
    let o = output_timeout(&mut cmd, std::time::Duration::from_secs(120));
    (out, o)
}

/// One case's (exit status, stderr, leftovers) from [`in_private_ns`].
fn case(out: &TempDir, name: &str) -> (i32, String, String) {
    let read = |ext: &str| fs::read_to_string(out.path().join(format!("{name}.{ext}")));
    let rc = read("rc")
        .unwrap_or_else(|e| panic!("case {name} did not run: {e}"))
        .trim()
        .parse()
        .unwrap();
    (
        rc,
        read("err").unwrap_or_default(),
        read("left").unwrap_or_default(),
    )
}

/// Cases that must fail with exit 1, a one-line error containing each of
/// `says`, and nothing of the id left in the state root; then cases that
/// must pass.
fn judge_cases(out: &TempDir, failing: &[&str], says: &[&str], passing: &[&str]) -> Vec<String> {
    let mut problems = Vec::new();
    for name in failing {
        let (rc, err, left) = case(out, name);
        let clear = err.trim().lines().count() == 1 && says.iter().all(|s| err.contains(s));
        if rc != 1 || !clear || !left.is_empty() {
            problems.push(format!("{name}: exit {rc}, stderr {err:?}, left {left:?}"));
        }
    }
    for name in passing {
        let (rc, err, _) = case(out, name);
        if rc != 0 {
            problems.push(format!("{name} (normal counterpart): exit {rc}: {err}"));
        }
    }
    problems
}

/// A short-lived bundle with a supervisor and a shadow bundle, so a create
/// writes every kind of state-root file.
fn short_bundle() -> Bundle {
    let b = Bundle::busybox(&["true"]);
    b.edit(|v| {
        v["annotations"]["dev.sandboy.timeout"] = "600s".into();
        v["linux"].as_object_mut().unwrap().remove("cgroupsPath");
    });
    b
}

/// No process, cgroup or mount of `id` is left (state-root leftovers are
/// judged inside the namespace, where that root lives).
fn host_debris(id: &str) -> Vec<String> {
    let mut left = Vec::new();
    let pids = pids_mentioning(id);
    if !pids.is_empty() {
        left.push(format!("processes {pids:?}"));
    }
    let cgroups = cgroups_named(id);
    if !cgroups.is_empty() {
        left.push(format!("cgroups {cgroups:?}"));
        scrub(id);
    }
    left
}

#[test]
fn full_or_read_only_state_root_fails_cleanly() {
    let name = "full_or_read_only_state_root_fails_cleanly";
    if !need_root(name) || need_sandboy(name).is_none() || !need_tool(name, "unshare") {
        return;
    }
    let b = short_bundle();
    let root = TempDir::new("tiny-root");
    let id = unique_id("broken-root");
    let script = r#"
set -u
mount -t tmpfs -o size=1m,nr_inodes=200,mode=0700 tmpfs "$ROOT" || exit 90
"$SB" --root "$ROOT" list >/dev/null    # a root in use before
cat /dev/zero >"$ROOT/fill" 2>/dev/null # no space left
try full-create create --bundle "$BUNDLE" "$ID-a"
try full-run run --bundle "$BUNDLE" "$ID-b"
rm "$ROOT/fill"; i=0; while touch "$ROOT/i$i" 2>/dev/null; do i=$((i+1)); done # no inode left
try inodes-create create --bundle "$BUNDLE" "$ID-c"
find "$ROOT" -name 'i[0-9]*' -delete
mount -o remount,ro "$ROOT" || exit 91
try ro-create create --bundle "$BUNDLE" "$ID-d"
try ro-run run --detach --bundle "$BUNDLE" "$ID-e"
try ro-list list
mount -o remount,rw "$ROOT" || exit 92
try ok-run run --bundle "$BUNDLE" "$ID-f"
try ok-create create --bundle "$BUNDLE" "$ID-g"
try ok-delete delete --force "$ID-g"
"#;
    let (out, o) = in_private_ns(
        script,
        &[
            ("ROOT", root.path().to_str().unwrap()),
            ("BUNDLE", b.path().to_str().unwrap()),
            ("ID", &id),
        ],
    );
    assert_exit(&o, 0);
    let mut problems = judge_cases(
        &out,
        &["full-create", "full-run", "inodes-create"],
        &[
            "No space left on device",
            "the state root's filesystem is full",
        ],
        &["ro-list", "ok-run", "ok-create", "ok-delete"],
    );
    problems.extend(judge_cases(
        &out,
        &["ro-create", "ro-run"],
        &["Read-only file system", "use a writable --root"],
        &[],
    ));
    problems.extend(host_debris(&id));
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn cgroup_hierarchy_refusing_mkdir_fails_cleanly() {
    let name = "cgroup_hierarchy_refusing_mkdir_fails_cleanly";
    if !need_root(name) || need_sandboy(name).is_none() || !need_tool(name, "unshare") {
        return;
    }
    let v1 = Path::new("/sys/fs/cgroup/memory/cgroup.procs").exists();
    let v2 = Path::new("/sys/fs/cgroup/unified/cgroup.max.descendants").exists();
    if !v1 || !v2 {
        return skip(
            name,
            "needs the hybrid layout (v1 memory, v2 at /sys/fs/cgroup/unified)",
        );
    }
    let b = short_bundle();
    let root = TempDir::new("cg-root");
    let id = unique_id("broken-cg");
    // v2: a parent of our own that allows no descendants (its path in the
    // unified hierarchy, entered as a pure v2 view as cgroup_v2.rs does).
    let parent = format!("sbrace-{id}");
    let v2_bundle = short_bundle();
    v2_bundle.edit(|v| v["linux"]["cgroupsPath"] = format!("/{parent}/{id}-v2").into());
    let script = r#"
set -u
# v1: the memory hierarchy read-only in this namespace only.
mount -o remount,bind,ro /sys/fs/cgroup/memory || exit 90
try v1-create create --bundle "$BUNDLE" "$ID-v1"
try v1-run run --bundle "$BUNDLE" "$ID-v1r"
mount -o remount,bind,rw /sys/fs/cgroup/memory || exit 91
try v1-ok run --bundle "$BUNDLE" "$ID-v1ok"
# v2: cgroup.max.descendants=0 on the parent.
mount --bind /sys/fs/cgroup/unified /sys/fs/cgroup || exit 92
mkdir "/sys/fs/cgroup/$PARENT" && echo 0 >"/sys/fs/cgroup/$PARENT/cgroup.max.descendants" || exit 93
try v2-create create --bundle "$V2BUNDLE" "$ID-v2"
echo max >"/sys/fs/cgroup/$PARENT/cgroup.max.descendants"
try v2-ok run --bundle "$V2BUNDLE" "$ID-v2"
rmdir "/sys/fs/cgroup/$PARENT"
"#;
    let (out, o) = in_private_ns(
        script,
        &[
            ("ROOT", root.path().to_str().unwrap()),
            ("BUNDLE", b.path().to_str().unwrap()),
            ("V2BUNDLE", v2_bundle.path().to_str().unwrap()),
            ("PARENT", &parent),
            ("ID", &id),
        ],
    );
    let _ = fs::remove_dir(format!("/sys/fs/cgroup/unified/{parent}"));
    assert_exit(&o, 0);
    let mut problems = judge_cases(
        &out,
        &["v1-create", "v1-run"],
        &[
            "failed to create dir /sys/fs/cgroup/memory/sandboy/",
            "Read-only file system",
        ],
        &["v1-ok"],
    );
    problems.extend(judge_cases(
        &out,
        &["v2-create"],
        &[
            &format!("failed to create dir /sys/fs/cgroup/{parent}/"),
            "Resource temporarily unavailable",
        ],
        &["v2-ok"],
    ));
    problems.extend(host_debris(&id));
    assert!(!Path::new(&format!("/sys/fs/cgroup/unified/{parent}")).exists());
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn proc_with_hidepid_still_serves_root() {
    let name = "proc_with_hidepid_still_serves_root";
    if !need_root(name) || need_sandboy(name).is_none() || !need_tool(name, "unshare") {
        return;
    }
    let b = bundle();
    let short = short_bundle();
    let root = TempDir::new("hidepid-root");
    let id = unique_id("hidepid");
    // A proc instance of its own (hidepid is per instance since Linux
    // 5.8), so the host's /proc keeps its options.
    let script = r#"
set -u
mount -t proc -o hidepid=2 proc /proc || exit 90
grep -q 'hidepid=invisible' /proc/self/mountinfo || exit 91
try run run --bundle "$SHORT" "$ID-run"
try create create --bundle "$BUNDLE" "$ID"
try start start "$ID"
try exec exec "$ID" true
try pause pause "$ID"
try resume resume "$ID"
try state state "$ID"
try list list
try ps ps "$ID"
try delete delete --force "$ID"
"#;
    let (out, o) = in_private_ns(
        script,
        &[
            ("ROOT", root.path().to_str().unwrap()),
            ("BUNDLE", b.path().to_str().unwrap()),
            ("SHORT", short.path().to_str().unwrap()),
            ("ID", &id),
        ],
    );
    assert_exit(&o, 0);
    let mut problems = judge_cases(
        &out,
        &[],
        &[],
        &[
            "run", "create", "start", "exec", "pause", "resume", "state", "list", "ps", "delete",
        ],
    );
    problems.extend(host_debris(&id));
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn execs_leave_no_notify_sockets() {
    let name = "execs_leave_no_notify_sockets";
    if !need_root(name) || need_sandboy(name).is_none() {
        return;
    }
    let rt = Runtime::sandboy();
    let b = bundle();
    let id = unique_id("exec-sockets");
    let _g = rt.guard(&id);
    rt.create_and_start(&b, &id);
    let sockets = || {
        fs::read_dir(rt.root.path().join(&id))
            .unwrap()
            .flatten()
            .filter(|e| {
                e.file_name()
                    .to_string_lossy()
                    .starts_with("tenant-notify-")
            })
            .count()
    };
    // Concurrent execs: none may lose its socket to another's cleanup.
    let failed: Vec<String> = std::thread::scope(|s| {
        let threads: Vec<_> = (0..4)
            .map(|_| {
                s.spawn(|| {
                    (0..5)
                        .map(|_| rt.run(&["exec", &id, "true"]))
                        .filter(|o| !o.status.success())
                        .map(|o| text(&o.stderr))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        threads
            .into_iter()
            .flat_map(|t| t.join().unwrap())
            .collect()
    });
    assert!(failed.is_empty(), "concurrent execs failed: {failed:#?}");
    for _ in 0..10 {
        assert_exit(&rt.run(&["exec", &id, "true"]), 0);
    }
    let o = rt.run(&["exec", &id, "sh", "-c", "exit 7"]);
    assert_exit(&o, 7);
    assert_eq!(
        sockets(),
        0,
        "30 execs left notify sockets in the state dir"
    );
}
