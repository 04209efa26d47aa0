//! Denial reports (issue 16): real refusals inside busybox containers
//! confined from a policy, reported from the kernel's real audit records by
//! the per-container supervisor into `denials.jsonl`, `run --report`,
//! `events` and `run`'s summary line.
//!
//! Kernel auditing is a node-wide switch: every test takes the harness's
//! [`AuditState`], sets the state it needs through sandboy's operator switch
//! (`--audit=enable`) or directly, and restores the state it found.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use sandboy_tests::audit::{self, AuditState};
use sandboy_tests::*;

/// [`ready`], then the audit switch taken ([`AuditState::take`]) for the
/// test's lifetime; `None` after the recorded skip.
fn ready_with_audit(test: &str, enabled: Option<u32>) -> Option<AuditState> {
    ready(test).then(|| AuditState::take(enabled))
}

// ---------------------------------------------------------------------------
// A confined container

fn probe() -> Option<PathBuf> {
    let p = target_dir().join("probes/probe");
    p.is_file().then_some(p)
}

fn ready(test: &str) -> bool {
    if !need_root(test) {
        return false;
    }
    if !std::path::Path::new("/bin/busybox").is_file() {
        skip(test, "busybox-static is not installed");
        return false;
    }
    if probe().is_none() {
        skip(test, "no probe binary: run `make probes`");
        return false;
    }
    true
}

const POLICY: &str = r#"version = 1
name = "denials"
[fs]
read = ["/bin", "/dev"]
exec = ["/bin"]
write = ["/tmp"]
[net]
namespace = "none"
connect = [81]
bind = [8081]
[syscalls]
default_deny = true
deny = ["personality"]
"#;

/// A busybox bundle from `policy`, with the probe at /bin/probe, a file
/// /data/f and an executable /data/probe-copy outside every list, and a
/// writable rootfs (so that only Landlock refuses writes). seccomp filters
/// are installed with SECCOMP_FILTER_FLAG_LOG, so errno verdicts are
/// audited too.
struct Confined {
    rt: Runtime,
    bundle: Bundle,
    _host: TempDir,
}

impl Confined {
    fn new(policy: &str) -> Self {
        let host = TempDir::new("denials");
        let bundle = Bundle::busybox(&["/bin/true"]);
        let rootfs = bundle.rootfs();
        let probe = probe().unwrap();
        fs::copy(&probe, rootfs.join("bin/probe")).unwrap();
        fs::create_dir_all(rootfs.join("data")).unwrap();
        fs::write(rootfs.join("data/f"), "f\n").unwrap();

        fs::copy(&probe, rootfs.join("data/probe-copy")).unwrap();
        let path = host.path().join("p.toml");
        fs::write(
            &path,
            // Host ids: the rootfs is made writable below, and its files
            // are the host's, which a mapped root could not write.
            format!("{policy}\n[process]\nargs = [\"/bin/true\"]\ncwd = \"/\"\nuserns = false\n"),
        )
        .unwrap();
        bundle.generate(&path);
        bundle.edit(|c| {
            c["root"]["readonly"] = false.into();
            c["linux"]["seccomp"]["flags"] = serde_json::json!(["SECCOMP_FILTER_FLAG_LOG"]);
        });
        Confined {
            rt: Runtime::sandboy(),
            bundle,
            _host: host,
        }
    }

    /// `run --report R` of `args`: (exit code, report lines, stderr).
    fn run(&self, global: &[&str], args: &[&str]) -> (i32, Vec<serde_json::Value>, String) {
        self.bundle
            .edit(|c| c["process"]["args"] = serde_json::json!(args));
        let id = unique_id("deny");
        let _g = self.rt.guard(&id);
        let report = self._host.path().join(format!("{id}.jsonl"));
        let o = output_timeout(
            self.rt
                .cmd()
                .args(global)
                .arg("run")
                .arg("--report")
                .arg(&report)
                .args(["--bundle", self.bundle.path().to_str().unwrap(), &id]),
            Duration::from_secs(90),
        );
        remove_cgroup_tree(&format!("sandboy/{id}"));
        let lines = read_lines(&report);
        (o.status.code().unwrap_or(-1), lines, text(&o.stderr))
    }
}

fn read_lines(path: &std::path::Path) -> Vec<serde_json::Value> {
    fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("report line {l:?}: {e}")))
        .collect()
}

/// The report's essentials: (kind, target, comm, allow).
fn essentials(lines: &[serde_json::Value]) -> Vec<(String, String, String, Option<String>)> {
    essentials_of(lines, true)
}

/// As [`essentials`]; with `whole` false, a line may lack its pid and comm:
/// when the kernel's audit backlog overflows it drops the SYSCALL record that
/// names the process, and the report says its counts are lower bounds.
fn essentials_of(
    lines: &[serde_json::Value],
    whole: bool,
) -> Vec<(String, String, String, Option<String>)> {
    lines
        .iter()
        .map(|d| {
            assert!(
                !whole || d["pid"].as_i64().is_some_and(|p| p > 0),
                "pid in {d}"
            );
            assert!(d["count"].as_u64().is_some_and(|c| c >= 1), "count in {d}");
            (
                d["kind"].as_str().unwrap().to_owned(),
                d["target"].as_str().unwrap().to_owned(),
                d["comm"].as_str().unwrap_or("").to_owned(),
                d["allow"].as_str().map(str::to_owned),
            )
        })
        .collect()
}

fn one(kind: &str, target: &str, allow: &str) -> Vec<(String, String, String, Option<String>)> {
    vec![(
        kind.into(),
        target.into(),
        "probe".into(),
        Some(allow.into()),
    )]
}

// ---------------------------------------------------------------------------

#[test]
fn each_kind_of_refusal_gives_exactly_its_report_line() {
    let test = "each_kind_of_refusal_gives_exactly_its_report_line";
    let Some(_audit) = ready_with_audit(test, None) else {
        return;
    };
    let c = Confined::new(POLICY);
    let on = ["--audit=enable"];
    let cases: &[(&[&str], &str, &str, &str)] = &[
        (
            &["read", "/data/f"],
            "read",
            "/data/f",
            r#"add "/data/f" to [fs] read"#,
        ),
        (
            &["write", "/data/f"],
            "write",
            "/data/f",
            r#"add "/data/f" to [fs] write"#,
        ),
        (
            &["create", "/data/new"],
            "create",
            "/data",
            r#"add "/data" to [fs] write"#,
        ),
        (
            &["exec", "/data/probe-copy"],
            "exec",
            "/data/probe-copy",
            r#"add "/data/probe-copy" to [fs] exec"#,
        ),
        (
            &["connect", "80"],
            "connect",
            "80",
            "add 80 to [net] connect",
        ),
        (&["bind", "8080"], "bind", "8080", "add 8080 to [net] bind"),
        (
            &["syscall", "ptrace"],
            "syscall",
            "ptrace",
            r#"remove "ptrace" from the default deny with [syscalls] allow = ["ptrace"]"#,
        ),
        (
            &["syscall", "personality"],
            "syscall",
            "personality",
            r#"remove "personality" from [syscalls] deny"#,
        ),
    ];
    for (probe_args, kind, target, allow) in cases {
        let mut args = vec!["/bin/probe"];
        args.extend_from_slice(probe_args);
        let (code, lines, stderr) = c.run(&on, &args);
        assert_eq!(code, 1, "{probe_args:?} was refused; stderr: {stderr}");
        assert_eq!(
            essentials(&lines),
            one(kind, target, allow),
            "{probe_args:?}: {stderr}"
        );
        assert!(
            stderr.contains(&format!("sandboy: 1 refusal: {kind} {target}")),
            "{probe_args:?} summary: {stderr}"
        );
    }
    // The allowed counterparts: same probe, nothing refused, no report line.
    for allowed in [
        &["read", "/bin/busybox"][..],
        &["create", "/tmp/y"],
        &["exec", "/bin/true"],
        &["connect", "81"],
        &["bind", "8081"],
    ] {
        let mut args = vec!["/bin/probe"];
        args.extend_from_slice(allowed);
        let (code, lines, stderr) = c.run(&on, &args);
        assert_eq!(code, 0, "{allowed:?}: {stderr}");
        assert!(lines.is_empty(), "{allowed:?} reported {lines:?}");
        assert!(!stderr.contains("refusal"), "{allowed:?}: {stderr}");
    }
    let (code, lines, stderr) = c.run(
        &on,
        &[
            "/bin/sh",
            "-c",
            "/bin/probe create /tmp/z && /bin/probe write /tmp/z",
        ],
    );
    assert_eq!((code, lines.len()), (0, 0), "write in [fs] write: {stderr}");
    // The guard's ENOSYS for clone3 nudges libc to clone (every threaded
    // program meets it): no refusal, while clone3 itself still fails.
    let (code, lines, stderr) = c.run(
        &on,
        &[
            "/bin/sh",
            "-c",
            "/bin/probe clone3 0 | grep -q ENOSYS && /bin/probe clone 0",
        ],
    );
    assert_eq!(
        (code, lines.len()),
        (0, 0),
        "clone3 nudge: {lines:?} {stderr}"
    );
    assert!(!stderr.contains("refusal"), "clone3 nudge: {stderr}");
}

#[test]
fn a_refusal_by_a_child_gone_before_its_record_is_read_is_reported() {
    let test = "a_refusal_by_a_child_gone_before_its_record_is_read_is_reported";
    let Some(_audit) = ready_with_audit(test, None) else {
        return;
    };
    let c = Confined::new(POLICY);
    // The shell forks the probe, which is refused and exits at once: its
    // /proc entry is gone when the supervisor reads the record, so only
    // the container's audit session can say whose it is.
    let (code, lines, stderr) = c.run(
        &["--audit=enable"],
        &[
            "/bin/sh",
            "-c",
            "/bin/probe syscall personality; /bin/probe syscall ptrace; true",
        ],
    );
    assert_eq!(code, 0, "{stderr}");
    let mut got = essentials(&lines);
    got.sort();
    let mut want = one(
        "syscall",
        "personality",
        r#"remove "personality" from [syscalls] deny"#,
    );
    want.extend(one(
        "syscall",
        "ptrace",
        r#"remove "ptrace" from the default deny with [syscalls] allow = ["ptrace"]"#,
    ));
    want.sort();
    assert_eq!(got, want, "{stderr}");
    // Its allowed counterpart, also from children: nothing reported.
    let (code, lines, stderr) = c.run(
        &["--audit=enable"],
        &[
            "/bin/sh",
            "-c",
            "/bin/probe fork; /bin/probe read /bin/busybox; true",
        ],
    );
    assert_eq!((code, lines.len()), (0, 0), "{lines:?} {stderr}");
}

#[test]
fn a_kill_verdict_is_reported_as_the_syscall_that_killed() {
    let test = "a_kill_verdict_is_reported_as_the_syscall_that_killed";
    let Some(_audit) = ready_with_audit(test, None) else {
        return;
    };
    let c = Confined::new(&POLICY.replace(
        "deny = [\"personality\"]",
        "deny = [\"personality\"]\naction = \"kill\"",
    ));
    let (code, lines, stderr) = c.run(&["--audit=enable"], &["/bin/probe", "syscall", "ptrace"]);
    assert_eq!(code, 128 + libc::SIGSYS, "{stderr}");
    let e = essentials(&lines);
    assert_eq!(
        e,
        one(
            "syscall",
            "ptrace",
            r#"remove "ptrace" from the default deny with [syscalls] allow = ["ptrace"]"#
        )
    );
    assert_eq!(lines[0]["blocker"], "seccomp.kill");
}

#[test]
fn two_containers_refusing_at_once_each_see_only_their_own() {
    let test = "two_containers_refusing_at_once_each_see_only_their_own";
    let Some(_audit) = ready_with_audit(test, Some(1)) else {
        return;
    };
    let a = Confined::new(POLICY);
    let b = Confined::new(POLICY);
    // Each refuses the same thing many times, in a loop, at the same time.
    let loop_of = |what: &str| {
        vec![
            "/bin/sh".to_owned(),
            "-c".to_owned(),
            format!("i=0; while [ $i -lt 20 ]; do /bin/probe {what}; i=$((i+1)); done"),
        ]
    };
    let (ra, rb) = std::thread::scope(|s| {
        let ja = s.spawn(|| {
            let args = loop_of("read /data/f");
            a.run(&[], &args.iter().map(String::as_str).collect::<Vec<_>>())
        });
        let jb = s.spawn(|| {
            let args = loop_of("connect 80");
            b.run(&[], &args.iter().map(String::as_str).collect::<Vec<_>>())
        });
        (ja.join().unwrap(), jb.join().unwrap())
    });
    assert_eq!(
        essentials(&ra.1),
        one("read", "/data/f", r#"add "/data/f" to [fs] read"#),
        "{}",
        ra.2
    );
    assert_eq!(
        essentials(&rb.1),
        one("connect", "80", "add 80 to [net] connect"),
        "{}",
        rb.2
    );
    // Each loop's count; fewer only when the kernel's audit backlog
    // overflowed (records lost at the source), which the log then says.
    for (lines, stderr) in [(&ra.1, &ra.2), (&rb.1, &rb.2)] {
        let count = lines[0]["count"].as_u64().unwrap();
        assert!((1..=20).contains(&count), "count {count}");
        assert!(
            count == 20 || stderr.contains("lower bounds"),
            "count {count}: {stderr}"
        );
    }
}

#[test]
fn a_detached_container_reports_through_events_and_its_state_dir() {
    let test = "a_detached_container_reports_through_events_and_its_state_dir";
    let Some(_audit) = ready_with_audit(test, Some(1)) else {
        return;
    };
    let c = Confined::new(POLICY);
    c.bundle.edit(|j| {
        j["process"]["args"] = serde_json::json!([
            "/bin/sh",
            "-c",
            "/bin/probe read /data/f; exec /bin/sleep 30"
        ])
    });
    let id = unique_id("deny-detached");
    let _g = c.rt.guard(&id);
    c.rt.create_and_start(&c.bundle, &id);
    // create and start have exited; only the supervisor is left to report.
    let report = c.rt.root.path().join(&id).join("denials.jsonl");
    let deadline = Instant::now() + Duration::from_secs(20);
    while read_lines(&report).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let lines = read_lines(&report);
    assert_eq!(
        essentials(&lines),
        one("read", "/data/f", r#"add "/data/f" to [fs] read"#)
    );
    assert_eq!(
        fs::metadata(&report).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let o = c.rt.run(&["events", "--stats", &id]);
    assert_exit(&o, 0);
    let denials = sandboy_tests::audit::denial_events(&o.stdout);
    assert_eq!(denials.len(), 1, "{}", text(&o.stdout));
    assert_eq!(denials[0]["id"], id.as_str());
    assert_eq!(denials[0]["data"]["kind"], "read");
    assert_eq!(denials[0]["data"]["target"], "/data/f");
    assert_exit(&c.rt.run(&["delete", "--force", &id]), 0);
    assert!(!report.exists(), "the report goes with the state dir");
    remove_cgroup_tree(&format!("sandboy/{id}"));
}

#[test]
fn with_audit_off_and_not_allowed_one_warning_and_the_container_runs() {
    let test = "with_audit_off_and_not_allowed_one_warning_and_the_container_runs";
    let Some(_audit) = ready_with_audit(test, Some(0)) else {
        return;
    };
    let c = Confined::new(POLICY);
    let (code, lines, stderr) = c.run(&["--audit=if-enabled"], &["/bin/probe", "read", "/data/f"]);
    assert_eq!(code, 1, "{stderr}");
    assert!(lines.is_empty(), "{lines:?}");
    let warns: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("denial reports are unavailable"))
        .collect();
    assert_eq!(warns.len(), 1, "{stderr}");
    assert!(warns[0].contains("--audit=enable"), "{}", warns[0]);
    assert_eq!(audit::enabled(), 0, "if-enabled never switches audit on");
    // --audit=off: no warning, no report, still runs.
    let (code, lines, stderr) = c.run(&["--audit=off"], &["/bin/probe", "read", "/bin/busybox"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(lines.is_empty());
    assert!(!stderr.contains("unavailable"), "{stderr}");
}

#[test]
fn a_loop_of_denials_is_one_line_and_one_warning_and_the_loop_completes() {
    let test = "a_loop_of_denials_is_one_line_and_one_warning_and_the_loop_completes";
    let Some(_audit) = ready_with_audit(test, Some(1)) else {
        return;
    };
    let c = Confined::new(POLICY);
    // 20,000 refused opens from the shell itself (no exec per attempt).
    let (code, lines, stderr) = c.run(
        &[],
        &[
            "/bin/sh",
            "-c",
            "exec 2>&-; i=0; while [ $i -lt 20000 ]; do true </data/f; i=$((i+1)); done; echo done",
        ],
    );
    assert_eq!(code, 0, "{stderr}");
    let lost = stderr.contains("lower bounds");
    let mut e = essentials_of(&lines, !lost);
    if lost {
        // The process may be unnamed when its records were dropped.
        e.iter_mut()
            .filter(|l| l.2.is_empty())
            .for_each(|l| l.2 = "sh".to_owned());
    }
    assert_eq!(
        e,
        vec![(
            "read".to_owned(),
            "/data/f".to_owned(),
            "sh".to_owned(),
            Some(r#"add "/data/f" to [fs] read"#.to_owned())
        )]
    );
    let count = lines[0]["count"].as_u64().unwrap();
    assert!((1..=20_000).contains(&count), "count {count}");
    let warns = stderr
        .lines()
        .filter(|l| l.contains("refused: read /data/f"))
        .count();
    assert_eq!(warns, 1, "one warning per distinct refusal: {stderr}");
    if count < 20_000 {
        // The kernel's audit backlog (64 records here) overflowed: the log
        // says the count is a lower bound.
        assert!(stderr.contains("lower bounds"), "{stderr}");
    }
    eprintln!("loop of 20000 refusals: {count} recorded");
}

/// A process added with `exec` is filtered like the init, with the audit
/// log flag when the container's refusals are collected: its seccomp
/// refusal reaches the report next to the init's allowed syscall.
#[test]
fn an_exec_d_process_refusal_is_reported() {
    let test = "an_exec_d_process_refusal_is_reported";
    let Some(_audit) = ready_with_audit(test, Some(1)) else {
        return;
    };
    let c = Confined::new(POLICY);
    c.bundle.edit(|j| {
        // The runtime, not the profile, must ask for the log flag.
        j["linux"]["seccomp"]["flags"] = serde_json::json!([]);
        j["process"]["args"] = serde_json::json!(["/bin/sleep", "30"]);
    });
    let id = unique_id("deny-exec");
    let _g = c.rt.guard(&id);
    c.rt.create_and_start(&c.bundle, &id);
    // Allowed counterpart first: an exec'd process making allowed calls
    // (fork, wait) reports nothing.
    let o = c.rt.run(&["exec", &id, "/bin/probe", "fork"]);
    assert_exit(&o, 0);
    let o = c.rt.run(&["exec", &id, "/bin/probe", "syscall", "ptrace"]);
    assert_exit(&o, 1);
    assert!(
        text(&o.stdout).contains("EPERM") || text(&o.stderr).contains("EPERM"),
        "{o:?}"
    );
    let report = c.rt.root.path().join(&id).join("denials.jsonl");
    let deadline = Instant::now() + Duration::from_secs(20);
    while read_lines(&report).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(
        essentials(&read_lines(&report)),
        one(
            "syscall",
            "ptrace",
            r#"remove "ptrace" from the default deny with [syscalls] allow = ["ptrace"]"#
        )
    );
    // A child of an exec'd process, gone before its record is read: the
    // exec's audit session names it.
    let o = c.rt.run(&[
        "exec",
        &id,
        "/bin/sh",
        "-c",
        "/bin/probe syscall personality; true",
    ]);
    assert_exit(&o, 0);
    let deadline = Instant::now() + Duration::from_secs(20);
    while read_lines(&report).len() < 2 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let lines = essentials(&read_lines(&report));
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert_eq!(
        lines[1..],
        one(
            "syscall",
            "personality",
            r#"remove "personality" from [syscalls] deny"#
        )[..]
    );
    assert_exit(&c.rt.run(&["delete", "--force", &id]), 0);
    remove_cgroup_tree(&format!("sandboy/{id}"));
}

/// `sandboy-spec-gen suggest POLICY --report REPORT` (the diff on stdout).
fn suggest(policy: &Path, report: &Path) -> Output {
    capture(
        Command::new(spec_gen_bin())
            .arg("suggest")
            .arg(policy)
            .arg("--report")
            .arg(report),
    )
}

/// `sandboy-spec-gen suggest` on the reports of refused probes: the diff
/// adds exactly what was refused (nothing else widens), the suggested
/// policy lets the same probes through, and a probe of something not
/// reported stays refused. A corrupted report is a located error.
#[test]
fn suggest_allows_what_was_refused_and_nothing_else() {
    let test = "suggest_allows_what_was_refused_and_nothing_else";
    let Some(_audit) = ready_with_audit(test, Some(1)) else {
        return;
    };
    let probes: &[&[&str]] = &[
        &["/bin/probe", "read", "/data/f"],
        &["/bin/probe", "create", "/out/new"],
        &["/bin/probe", "connect", "80"],
        &["/bin/probe", "syscall", "ptrace"],
        &["/bin/probe", "syscall", "personality"],
    ];
    // A directory of its own for the write (a container's write path is a
    // fresh tmpfs, which over /data would hide /data/f).
    let with_out = |c: Confined| {
        fs::create_dir_all(c.bundle.rootfs().join("out")).unwrap();
        c
    };
    let c = with_out(Confined::new(POLICY));
    let mut report = String::new();
    for p in probes {
        let (code, lines, stderr) = c.run(&[], p);
        assert_eq!(code, 1, "{p:?} was not refused: {stderr}");
        assert_eq!(lines.len(), 1, "{p:?}: {lines:?}");
        report.push_str(&format!("{}\n", lines[0]));
    }
    let host = c._host.path();
    let report_path = host.join("all.jsonl");
    fs::write(&report_path, &report).unwrap();
    let policy = host.join("p.toml");
    let o = suggest(&policy, &report_path);
    assert_exit(&o, 0);
    let diff = text(&o.stdout);
    let mut changed: Vec<&str> = diff
        .lines()
        .filter(|l| {
            (l.starts_with('+') || l.starts_with('-'))
                && !l.starts_with("+++")
                && !l.starts_with("---")
        })
        .collect();
    changed.sort();
    assert_eq!(
        changed,
        [
            "+allow = [\"ptrace\"]",
            "+connect = [81, 80]",
            "+read = [\"/bin\", \"/dev\", \"/data/f\"]",
            "+write = [\"/tmp\", \"/out\"]",
            "-connect = [81]",
            "-deny = [\"personality\"]",
            "-read = [\"/bin\", \"/dev\"]",
            "-write = [\"/tmp\"]",
        ],
        "{diff}"
    );

    // Applied, the same probes pass; what was not reported stays refused.
    let o = capture(
        Command::new(spec_gen_bin())
            .args(["suggest", "--write", "--report"])
            .arg(&report_path)
            .arg(&policy),
    );
    assert_exit(&o, 0);
    let suggested = fs::read_to_string(&policy).unwrap();
    let body = suggested.split("\n[process]").next().unwrap();
    let after = with_out(Confined::new(body));
    for p in probes {
        let (code, lines, stderr) = after.run(&[], p);
        assert!(lines.is_empty(), "{p:?} still refused: {lines:?}");
        // The syscall probes' harmless arguments fail the call anyway
        // (EINVAL, EFAULT); the sandbox no longer refuses it.
        if p[1] != "syscall" {
            assert_eq!(code, 0, "{p:?} still refused: {stderr}");
        }
    }
    for (p, kind) in [
        (&["/bin/probe", "read", "/data/probe-copy"][..], "read"),
        (&["/bin/probe", "connect", "82"][..], "connect"),
        (&["/bin/probe", "syscall", "mount"][..], "syscall"),
    ] {
        let (code, lines, _) = after.run(&[], p);
        assert_eq!(code, 1, "{p:?} was let through");
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert_eq!(lines[0]["kind"], kind);
    }

    // A corrupted report: located, exit 2, the policy untouched.
    fs::write(
        &report_path,
        format!("{report}{{\"kind\": \"read\", \"target\"\n"),
    )
    .unwrap();
    let o = suggest(&policy, &report_path);
    assert_exit(&o, 2);
    let err = text(&o.stderr);
    let at = format!("{}:6:", report_path.display());
    assert!(err.contains(&at), "not located at line 6: {err}");
    assert_eq!(fs::read_to_string(&policy).unwrap(), suggested);
}

/// The node configuration's `audit` key is the default for `--audit`
/// (docs/node.md); the flag still overrides it.
#[test]
fn the_node_config_audit_key_is_the_default_and_the_flag_overrides_it() {
    let test = "the_node_config_audit_key_is_the_default_and_the_flag_overrides_it";
    if !ready(test) {
        return;
    }
    let _audit = AuditState::take(Some(0));
    let c = Confined::new(POLICY);
    let config = |mode: &str| {
        let path = c._host.path().join(format!("config-{mode}.toml"));
        fs::write(&path, format!("audit = \"{mode}\"\n")).unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).unwrap();
        path.to_str().unwrap().to_owned()
    };
    let (on, off) = (config("enable"), config("off"));

    // audit = "enable": audit is switched on and the refusal is reported.
    let (code, lines, stderr) = c.run(&["--config", &on], &["/bin/probe", "read", "/data/f"]);
    assert_eq!(code, 1, "{stderr}");
    assert_eq!(
        essentials(&lines),
        one("read", "/data/f", r#"add "/data/f" to [fs] read"#),
        "{stderr}"
    );
    assert_eq!(audit::enabled(), 1, "audit = \"enable\" switches audit on");

    // audit = "off": no report and no warning, although audit is now on.
    let (code, lines, stderr) = c.run(&["--config", &off], &["/bin/probe", "read", "/data/f"]);
    assert_eq!(code, 1, "{stderr}");
    assert!(lines.is_empty(), "{lines:?}");
    assert!(!stderr.contains("unavailable"), "{stderr}");

    // The flag overrides the key.
    let (code, lines, stderr) = c.run(
        &["--config", &off, "--audit=enable"],
        &["/bin/probe", "read", "/data/f"],
    );
    assert_eq!(code, 1, "{stderr}");
    assert_eq!(lines.len(), 1, "{lines:?} {stderr}");
}
