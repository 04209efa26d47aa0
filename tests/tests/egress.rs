//! Egress by host name (issue 17): `[net] allow` through the gateway the
//! supervisor serves in the container's own network namespace. Everything
//! stays on this machine: the upstream servers listen on 127.77.0.0/24 and
//! 127.78.0.1, and the test host names reach them through a hosts file
//! bound over /etc/hosts in a private mount namespace (`unshare -m`) around
//! each sandboy command, which the supervisor's resolver reads.

use std::fs;
use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use sandboy_tests::egress::World;
use sandboy_tests::*;

fn run(cmd: &mut Command) -> Output {
    output_timeout(cmd, Duration::from_secs(120))
}

/// `sandboy wrap --policy P --id ID --report R -- sh -c SCRIPT`, run.
fn wrap_reporting(
    w: &World,
    rt: &Runtime,
    policy: &Path,
    id: &str,
    report_file: &Path,
    script: &str,
) -> Output {
    run(&mut w.sandboy(
        rt,
        &[
            "wrap",
            "--policy",
            policy.to_str().unwrap(),
            "--id",
            id,
            "--report",
            report_file.to_str().unwrap(),
            "--",
            "sh",
            "-c",
            script,
        ],
    ))
}

/// The report's entries as `target -> allow`.
fn report(path: &Path) -> Vec<(String, Option<String>)> {
    fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|d| d["kind"] == "egress")
        .map(|d| {
            (
                d["target"].as_str().unwrap().to_string(),
                d["allow"].as_str().map(String::from),
            )
        })
        .collect()
}

fn has(lines: &str, want: &str) {
    assert!(
        lines.lines().any(|l| l.trim() == want),
        "missing {want:?} in:\n{lines}"
    );
}

fn has_all(lines: &str, want: &[&str]) {
    for w in want {
        has(lines, w);
    }
}

/// The report's entry for `target`: its `allow`.
fn entry(got: &[(String, Option<String>)], target: &str) -> Option<String> {
    got.iter()
        .find(|(t, _)| t == target)
        .unwrap_or_else(|| panic!("no report entry {target}: {got:?}"))
        .1
        .clone()
}

/// The refused unlisted name is reported with the `allow` line that would
/// permit it and the client that asked (`comm`, found by its socket in the
/// step's network namespace by the supervisor, from what the gateway's
/// process sent it).
fn reported_with_client(report_file: &Path, target: &str, comm: &str) {
    let allow = entry(&report(report_file), target);
    assert_eq!(
        allow.as_deref(),
        Some(format!("[net] allow = [\"{target}\"]").as_str())
    );
    let raw = fs::read_to_string(report_file).unwrap();
    let d = raw
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|d| d["target"] == target)
        .unwrap();
    assert_eq!(d["comm"], comm, "{d}");
    assert!(d["pid"].as_i64().is_some_and(|p| p > 0), "{d}");
}

/// Allowed and refused destinations from host tools, under root `wrap`
/// (a container on the host's filesystem, so curl, python and git exist).
#[test]
fn wrap_allows_listed_names_and_refuses_the_rest() {
    let Some(w) = World::start("wrap_allows_listed_names_and_refuses_the_rest") else {
        return;
    };
    let rt = Runtime::sandboy();
    let out = w.out();
    // Root wrap runs the step as nobody (no SUDO_UID here): its write path
    // is nobody's.
    std::os::unix::fs::chown(&out, Some(65534), Some(65534)).unwrap();
    let probe = repo().join("tests/egress/probe.py");
    let git = which("git");
    if let Some(git) = &git {
        // A dumb-HTTP repository under the web root.
        let src = w.dir.path().join("src");
        fs::create_dir_all(&src).unwrap();
        fs::write(src.join("README"), "cloned through the gateway\n").unwrap();
        let sh = format!(
            "cd {} && {g} init -q && {g} add README && {g} -c user.email=t@t -c user.name=t commit -qm init && {g} clone -q --bare . {}/www/repo.git && {g} --git-dir {}/www/repo.git update-server-info",
            src.display(),
            w.dir.path().display(),
            w.dir.path().display(),
            g = git.display()
        );
        assert_exit(&capture(Command::new("sh").arg("-c").arg(&sh)), 0);
    }
    let policy = w.dir.path().join("p.toml");
    fs::write(
        &policy,
        format!(
            r#"version = 1
name = "egress-wrap"
[fs]
read = ["/usr", "/lib", "/lib64", "/etc", "/bin", "/proc", "{probe}"]
exec = ["/usr", "/bin", "/lib", "/lib64"]
write = ["{out}", "/dev/null"]
{net}
[process]
args = ["true"]
env = ["HOME={out}", "PATH=/usr/local/bin:/usr/bin:/bin"]
"#,
            probe = probe.parent().unwrap().display(),
            out = out.display(),
            net = w.net()
        ),
    )
    .unwrap();
    let (h, s, t, o) = (w.http, w.https, w.tcp, w.other);
    let p = format!("/usr/bin/python3 {}", probe.display());
    let code = "curl -s -m 20 -o /dev/null -w '%{http_code}\\n'";
    let clone = if git.is_some() {
        format!("git clone -q http://web.egress.test:{h}/repo.git {}/clone && echo git $(cat {}/clone/README)", out.display(), out.display())
    } else {
        "echo git skipped".into()
    };
    let script = format!(
        r#"
echo proxy $(curl -sS -m 20 http://web.egress.test:{h}/index.html)
echo proxy-tls $(curl -sS -m 20 -k https://tls.egress.test:{s}/index.html)
echo urllib $(/usr/bin/python3 -c "import urllib.request; print(urllib.request.urlopen('http://web.egress.test:{h}/index.html').read().decode())")
echo direct $(curl -sS -m 20 --noproxy '*' http://web.egress.test:{h}/index.html)
echo direct-tls $(curl -sS -m 20 --noproxy '*' -k https://tls.egress.test:{s}/index.html)
{p} banner tcp.egress.test {t}
echo wildcard $({code} http://a.wild.egress.test:{h}/index.html)
echo cidr-literal $({code} http://127.77.0.1:{h}/index.html)
{clone}
echo unlisted $({code} http://bad.egress.test:{o}/index.html)
echo denied $({code} http://no.wild.egress.test:{h}/index.html)
echo literal $({code} http://127.78.0.1:{o}/index.html)
echo port $({code} http://web.egress.test:{s}/index.html)
echo internal $({code} http://inner.egress.test:{h}/index.html)
curl -sS -m 20 --noproxy '*' http://bad.egress.test:{o}/ >/dev/null 2>&1; echo direct-unlisted $?
{p} sni tls.egress.test {s} tls.egress.test
{p} sni tls.egress.test {s} other.egress.test
echo dns-a $({p} dns web.egress.test 1)
echo dns-nx $({p} dns nope.egress.test 1)
echo dns-txt $({p} dns web.egress.test 16)
echo dns-any $({p} dns web.egress.test 255)
echo udp $({p} socket 2 2 0)
echo udp6 $({p} socket 10 2 0)
echo raw $({p} socket 2 3 1)
echo packet $({p} socket 17 3 0)
echo tcp-socket $({p} socket 2 1 0)
"#
    );
    let report_file = w.dir.path().join("report.jsonl");
    let id = unique_id("egress-wrap");
    let out = wrap_reporting(&w, &rt, &policy, &id, &report_file, &script);
    let stdout = text(&out.stdout);
    eprintln!("{stdout}\n{}", text(&out.stderr));
    assert_exit(&out, 0);
    // Allowed: through the proxy variables, and with them ignored (the
    // DNS stub's synthetic address), for HTTP, TLS and a server-first TCP.
    for l in [
        "proxy hello from upstream",
        "proxy-tls hello from upstream",
        "urllib hello from upstream",
        "direct hello from upstream",
        "direct-tls hello from upstream",
        "banner banner echo hi",
        "wildcard 200",
        "cidr-literal 200",
        "connect 200 tls ok",
    ] {
        has(&stdout, l);
    }
    if git.is_some() {
        has(&stdout, "git cloned through the gateway");
    } else {
        skip(
            "wrap_allows_listed_names_and_refuses_the_rest (git clone)",
            "git is not installed",
        );
    }
    // Refused: each answered 403 by the proxy, and reported.
    for l in [
        "unlisted 403",
        "denied 403",
        "literal 403",
        "port 403",
        "internal 403",
        "connect 200 tls failed",
    ] {
        has(&stdout, l);
    }
    // No name for an unlisted host: curl cannot resolve it (exit 6).
    has(&stdout, "direct-unlisted 6");
    has(&stdout, "dns-a rcode=0 answers=1");
    has(&stdout, "dns-nx rcode=3 answers=0");
    has(&stdout, "dns-txt rcode=5 answers=0");
    has(&stdout, "dns-any rcode=5 answers=0");
    // UDP, raw and packet sockets are refused by seccomp with EPERM (as
    // the issue says); TCP sockets are not.
    has_all(
        &stdout,
        &[
            "udp errno=EPERM",
            "udp6 errno=EPERM",
            "raw errno=EPERM",
            "packet errno=EPERM",
            "tcp-socket ok",
        ],
    );
    reported_with_client(&report_file, &format!("bad.egress.test:{o}"), "curl");
    let got = report(&report_file);
    assert_eq!(entry(&got, &format!("no.wild.egress.test:{h}")), None);
    assert_eq!(
        entry(&got, &format!("127.78.0.1:{o}")).as_deref(),
        Some(format!("[net] allow_cidr = [\"127.78.0.1/32:{o}\"]").as_str())
    );
    for t in [
        format!("web.egress.test:{s}"),
        format!("inner.egress.test:{h}"),
        format!("tls.egress.test:{s} sni=other.egress.test"),
        "nope.egress.test".into(),
        "bad.egress.test".into(),
    ] {
        entry(&got, &t);
    }
    assert!(
        text(&out.stderr).contains("egress refused"),
        "no warn event"
    );
    assert!(pids_mentioning(&id).is_empty(), "processes left for {id}");
}

/// The container's gateway process (`sandboy-egress`, forked by its
/// supervisor), once it is there: exactly one. It takes that name only
/// once it has dropped its privileges and confined itself.
fn gateway_pid(id: &str) -> i32 {
    for _ in 0..400 {
        let found: Vec<i32> = pids_mentioning(id)
            .into_iter()
            .filter(|p| {
                fs::read_to_string(format!("/proc/{p}/comm"))
                    .is_ok_and(|c| c.trim() == "sandboy-egress")
            })
            .collect();
        assert!(
            found.len() <= 1,
            "more than one gateway for {id}: {found:?}"
        );
        if let [pid] = found[..] {
            return pid;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("no gateway process for {id}");
}

/// A field of /proc/<pid>/status, its words joined by one space.
fn status_field(status: &str, name: &str) -> String {
    status
        .lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
        .map(|v| v.split_whitespace().collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

/// What the host sees of the gateway process of a root container: it
/// runs as nobody with no capability in any set (bounding and ambient
/// included) and no supplementary group; and as [`assert_confined`] says.
/// Its parent, the supervisor, is still root (it looks refused clients up
/// in root-owned /proc/<pid>/fd).
fn assert_deprivileged(pid: i32) {
    let status = assert_confined(pid, 65534, 65534);
    let zero = "0000000000000000";
    for (name, want) in [("Groups", ""), ("CapBnd", zero)] {
        assert_eq!(
            status_field(&status, name),
            want,
            "{name} of gateway {pid}:\n{status}"
        );
    }
    let parent: i32 = status_field(&status, "PPid").parse().unwrap();
    let sup = fs::read_to_string(format!("/proc/{parent}/status")).unwrap();
    assert_eq!(
        status_field(&sup, "Uid"),
        "0 0 0 0",
        "supervisor {parent}:\n{sup}"
    );
}

/// The gateway process `pid` runs as `uid`/`gid` with no capability in
/// its permitted, effective, inheritable and ambient sets, no_new_privs and
/// one seccomp filter, not dumpable (its /proc files are root's). Landlock
/// is not shown in /proc: the gateway checks it itself before it serves (a
/// path no rule grants must be refused), and serves nothing otherwise.
/// Returns its status.
fn assert_confined(pid: i32, uid: u32, gid: u32) -> String {
    let status = fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let zero = "0000000000000000";
    let (uids, gids) = (
        format!("{uid} {uid} {uid} {uid}"),
        format!("{gid} {gid} {gid} {gid}"),
    );
    for (name, want) in [
        ("Uid", uids.as_str()),
        ("Gid", gids.as_str()),
        ("CapInh", zero),
        ("CapPrm", zero),
        ("CapEff", zero),
        ("CapAmb", zero),
        ("NoNewPrivs", "1"),
        ("Seccomp", "2"),
        ("Seccomp_filters", "1"),
    ] {
        assert_eq!(
            status_field(&status, name),
            want,
            "{name} of gateway {pid}:\n{status}"
        );
    }
    use std::os::unix::fs::MetadataExt;
    // A dumpable process owns its /proc files (the directory itself keeps
    // its euid either way).
    let fds = fs::metadata(format!("/proc/{pid}/fd")).unwrap();
    assert_eq!(fds.uid(), 0, "gateway {pid} is dumpable");
    status
}

/// A busybox bundle generated from an egress policy running `script`.
/// A `sleep 600` container `id` created (not started) through the
/// world's resolver view; its bundle.
fn create_detached(w: &World, rt: &Runtime, id: &str) -> Bundle {
    let bundle = busybox_bundle(w, "sleep 600");
    assert_exit(
        &run(&mut w.sandboy(
            rt,
            &["create", "--bundle", bundle.path().to_str().unwrap(), id],
        )),
        0,
    );
    bundle
}

fn busybox_bundle(w: &World, script: &str) -> Bundle {
    let bundle = Bundle::busybox(&["true"]);
    if let Some(probe) = [target_dir().join("probes/probe")]
        .into_iter()
        .find(|p| p.exists())
    {
        fs::copy(probe, bundle.rootfs().join("bin/probe")).unwrap();
    }
    let policy = w.dir.path().join(format!("{}.toml", unique_id("bb")));
    fs::write(
        &policy,
        format!(
            "version = 1\nname = \"egress-run\"\n[fs]\nread = [\"/etc\"]\nexec = [\"/bin\"]\nwrite = [\"/tmp\"]\n{}\n[process]\nargs = [\"/bin/sh\", \"-c\", {script:?}]\n",
            w.net()
        ),
    )
    .unwrap();
    bundle.generate(&policy);
    bundle
}

/// `run` of an OCI bundle: busybox wget through the proxy variables; an
/// unlisted name refused and summarised; UDP and raw sockets refused.
#[test]
fn run_reaches_allowed_names_only() {
    let Some(w) = World::start("run_reaches_allowed_names_only") else {
        return;
    };
    let rt = Runtime::sandboy();
    // It waits (at most 60 s) for the test to have looked at the gateway.
    let script = format!(
        "echo ok $(wget -q -O - http://web.egress.test:{}/index.html); wget -q -O - http://bad.egress.test:{}/ 2>&1; echo bad $?; [ -x /bin/probe ] && echo udp $(/bin/probe udp-send 9) raw $(/bin/probe socket 2 3 1); i=0; while [ ! -e /tmp/seen ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done; true",
        w.http, w.other
    );
    let bundle = busybox_bundle(&w, &script);
    let id = unique_id("egress-run");
    let _g = rt.guard(&id);
    let rep = w.dir.path().join("run-report.jsonl");
    let child = w
        .sandboy(
            &rt,
            &[
                "run",
                "--bundle",
                bundle.path().to_str().unwrap(),
                "--report",
                rep.to_str().unwrap(),
                &id,
            ],
        )
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let gateway = gateway_pid(&id);
    assert_deprivileged(gateway);
    let init = rt.state(&id)["pid"].as_i64().unwrap();
    fs::write(format!("/proc/{init}/root/tmp/seen"), b"").unwrap();
    let o = child.wait_with_output().unwrap();
    let stdout = text(&o.stdout);
    assert_exit(&o, 0);
    assert!(
        !Path::new(&format!("/proc/{gateway}")).exists(),
        "gateway {gateway} outlived its container"
    );
    has(&stdout, "ok hello from upstream");
    assert!(stdout.contains("403"), "{stdout}");
    assert!(!stdout.contains("bad 0"), "{stdout}");
    if target_dir().join("probes/probe").exists() {
        has(&stdout, "udp errno=EPERM raw errno=EPERM");
    } else {
        skip(
            "run_reaches_allowed_names_only (socket probes)",
            "the C probe is not built (make probes)",
        );
    }
    assert!(
        text(&o.stderr).contains(&format!("egress bad.egress.test:{}", w.other)),
        "{}",
        text(&o.stderr)
    );
    reported_with_client(&rep, &format!("bad.egress.test:{}", w.other), "wget");
    assert!(pids_mentioning(&id).is_empty(), "processes left for {id}");
}

/// A detached container: the gateway outlives `create`, serves `exec`s
/// after `start`, reports into the state directory, and is gone (process
/// and sockets) after `delete`.
#[test]
fn detached_container_keeps_its_gateway_until_delete() {
    let Some(w) = World::start("detached_container_keeps_its_gateway_until_delete") else {
        return;
    };
    let rt = Runtime::sandboy();
    let id = unique_id("egress-detached");
    let g = rt.guard(&id);
    let _bundle = create_detached(&w, &rt, &id);
    let supervisors = pids_mentioning(&id);
    assert!(!supervisors.is_empty(), "no supervisor after create");
    // The gateway's own process is among them, de-privileged.
    let gateway = gateway_pid(&id);
    assert!(
        supervisors.contains(&gateway),
        "{gateway} not in {supervisors:?}"
    );
    assert_deprivileged(gateway);
    assert_exit(&rt.run(&["start", &id]), 0);
    let fetch = |url: String| {
        rt.run(&[
            "exec",
            &id,
            "sh",
            "-c",
            &format!("http_proxy=http://127.0.0.1:3128 wget -q -O - {url} 2>&1; echo rc=$?"),
        ])
    };
    let ok = fetch(format!("http://web.egress.test:{}/index.html", w.http));
    has(&text(&ok.stdout), "hello from upstream");
    let bad = fetch(format!("http://bad.egress.test:{}/", w.other));
    assert!(!text(&bad.stdout).contains("rc=0"), "{}", text(&bad.stdout));
    let state_report = rt.root.path().join(&id).join("denials.jsonl");
    let want = format!("bad.egress.test:{}", w.other);
    for _ in 0..100 {
        if report(&state_report).iter().any(|(t, _)| *t == want) {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        report(&state_report).iter().any(|(t, _)| *t == want),
        "no report entry in {}",
        state_report.display()
    );
    // Fail closed: once the gateway's process is gone (killed here), the
    // allowed host is not reached any more — nothing else serves the
    // sockets (the supervisor kept no copy) — and the container runs on.
    // SAFETY: kill(2) of a pid found above, with no pointers.
    assert_eq!(unsafe { libc::kill(gateway, libc::SIGKILL) }, 0);
    for _ in 0..100 {
        if !Path::new(&format!("/proc/{gateway}")).exists() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        !Path::new(&format!("/proc/{gateway}")).exists(),
        "gateway {gateway} not reaped"
    );
    let gone = fetch(format!("http://web.egress.test:{}/index.html", w.http));
    let gone = text(&gone.stdout);
    assert!(
        !gone.contains("hello from upstream") && !gone.contains("rc=0"),
        "{gone}"
    );
    assert_eq!(rt.status(&id), "running");
    assert_exit(&rt.run(&["delete", "--force", &id]), 0);
    drop(g);
    for pid in supervisors {
        for _ in 0..100 {
            if !Path::new(&format!("/proc/{pid}")).exists() {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        assert!(
            !Path::new(&format!("/proc/{pid}")).exists(),
            "supervisor {pid} outlived delete"
        );
    }
    assert!(pids_mentioning(&id).is_empty(), "processes left for {id}");
    assert!(!rt.root.path().join(&id).exists(), "state left for {id}");
    assert!(
        !rt.root.path().join(".bundles").join(&id).exists(),
        "shadow bundle (resolver files) left for {id}"
    );
}

/// The gateway's process dies with its supervisor (PR_SET_PDEATHSIG, set
/// after its id change): a supervisor killed outright leaves no gateway
/// serving the container's sockets; delete still cleans up.
#[test]
fn the_gateway_dies_with_its_supervisor() {
    let Some(w) = World::start("the_gateway_dies_with_its_supervisor") else {
        return;
    };
    let rt = Runtime::sandboy();
    let id = unique_id("egress-orphan");
    let g = rt.guard(&id);
    let _bundle = create_detached(&w, &rt, &id);
    let gateway = gateway_pid(&id);
    let status = fs::read_to_string(format!("/proc/{gateway}/status")).unwrap();
    let supervisor: i32 = status_field(&status, "PPid").parse().unwrap();
    // SAFETY: kill(2) of the supervisor found above, with no pointers.
    assert_eq!(unsafe { libc::kill(supervisor, libc::SIGKILL) }, 0);
    // Dead: gone, or a zombie until whoever inherited it reaps it.
    let dead = || {
        fs::read_to_string(format!("/proc/{gateway}/stat")).map_or(true, |st| {
            st.rsplit_once(") ")
                .is_some_and(|(_, rest)| rest.starts_with('Z') || rest.starts_with('X'))
        })
    };
    for _ in 0..100 {
        if dead() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        dead(),
        "gateway {gateway} outlived its supervisor {supervisor}"
    );
    assert_exit(&rt.run(&["delete", "--force", &id]), 0);
    drop(g);
    assert!(pids_mentioning(&id).is_empty(), "processes left for {id}");
}

/// A config.json whose egress annotation was edited by hand is refused
/// before anything exists (exit 2), and so is one on the host's network.
#[test]
fn bad_egress_annotation_is_a_config_error() {
    if !need_root("bad_egress_annotation_is_a_config_error") {
        return;
    }
    let rt = Runtime::sandboy();
    let bundle = Bundle::busybox(&["true"]);
    bundle.edit(|c| {
        c["annotations"]["dev.sandboy.egress"] =
            serde_json::json!(r#"{"allow":["*.com:443"],"proxy_port":3128}"#);
        // The bundle's own network namespace (busybox.sh has one; a second
        // entry is refused as runc refuses it).
    });
    let id = unique_id("egress-bad");
    let _g = rt.guard(&id);
    let o = rt.create(&bundle, &id);
    assert_exit(&o, 2);
    assert!(
        text(&o.stderr).contains("dev.sandboy.egress"),
        "{}",
        text(&o.stderr)
    );
    assert!(!rt.root.path().join(&id).exists());
    bundle.edit(|c| {
        c["annotations"]["dev.sandboy.egress"] =
            serde_json::json!(r#"{"allow":["a.example.com:443"],"proxy_port":3128}"#);
        c["linux"]["namespaces"]
            .as_array_mut()
            .unwrap()
            .retain(|n| n["type"] != "network");
    });
    let o = rt.create(&bundle, &id);
    assert_exit(&o, 2);
    assert!(
        text(&o.stderr).contains("new network namespace"),
        "{}",
        text(&o.stderr)
    );
}

/// A bundle with only the egress annotation (as an engine passes it, with
/// no sandboy seccomp profile of its own): the runtime's egress guard
/// refuses UDP (the stub's port included), ICMP and raw sockets with
/// EPERM in the init and in every `exec`; TCP sockets stay open.
#[test]
fn annotation_alone_gets_the_socket_guard_in_init_and_exec() {
    let test = "annotation_alone_gets_the_socket_guard_in_init_and_exec";
    if !need_root(test) {
        return;
    }
    let probe = target_dir().join("probes/probe");
    if !probe.exists() {
        return skip(test, "the C probe is not built (make probes)");
    }
    let rt = Runtime::sandboy();
    let script = "echo init $(probe udp-send 9) $(probe udp-send 53) $(probe socket 2 2 1) $(probe socket 2 3 1) $(probe socket 2 1 0) > /tmp/init.txt; sleep 600";
    let bundle = Bundle::busybox(&["sh", "-c", script]);
    fs::copy(&probe, bundle.rootfs().join("bin/probe")).unwrap();
    bundle.edit(|c| {
        c["annotations"]["dev.sandboy.egress"] =
            serde_json::json!(r#"{"allow":["a.example.com:443"],"proxy_port":3128}"#);
        // The bundle's own network namespace (busybox.sh has one; a second
        // entry is refused as runc refuses it).
        c["process"]["env"]
            .as_array_mut()
            .unwrap()
            .push(serde_json::json!("PATH=/bin:/usr/bin"));
    });
    let id = unique_id("egress-guard");
    let _g = rt.guard(&id);
    assert_exit(&rt.create(&bundle, &id), 0);
    assert_exit(&rt.run(&["start", &id]), 0);
    let o = rt.run(&[
        "exec",
        &id,
        "sh",
        "-c",
        "echo exec $(probe udp-send 9) $(probe udp-send 53) $(probe socket 10 2 0) $(probe socket 2 3 1) $(probe socket 2 1 0)",
    ]);
    assert_exit(&o, 0);
    has(
        &text(&o.stdout),
        "exec errno=EPERM errno=EPERM errno=EPERM errno=EPERM ok",
    );
    let init = rt.state(&id)["pid"].as_i64().unwrap();
    let file = format!("/proc/{init}/root/tmp/init.txt");
    for _ in 0..200 {
        if fs::read_to_string(&file).is_ok_and(|t| t.ends_with('\n')) {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    has(
        &fs::read_to_string(&file).unwrap_or_default(),
        "init errno=EPERM errno=EPERM errno=EPERM errno=EPERM ok",
    );
}

/// Unprivileged `wrap`, namespaces tier: the step's own network namespace
/// gets the gateway, served by the wrap process outside it (as the user,
/// unconfined). Each refusal next to its allowed counterpart; the report
/// names the refused client; nothing is left once the step has ended.
#[test]
fn unprivileged_wrap_has_the_gateway_in_the_namespaces_tier() {
    let test = "unprivileged_wrap_has_the_gateway_in_the_namespaces_tier";
    let Some(w) = World::start(test) else {
        return;
    };
    let Some(bin) = need_sandboy(test) else {
        return;
    };
    let probe_bin = target_dir().join("probes/probe");
    if !probe_bin.is_file() {
        return skip(test, "the C probe is not built (make probes)");
    }
    let Some(user) = TestUser::create(test) else {
        return;
    };
    let sandboy = user.reachable_copy(&bin, &w.dir);
    let c_probe = user.reachable_copy(&probe_bin, &w.dir);
    let out = w.out();
    user.chown(&out);
    let py = repo().join("tests/egress/probe.py");
    let policy = w.dir.path().join("u.toml");
    fs::write(
        &policy,
        format!(
            r#"version = 1
name = "egress-unprivileged"
[landlock]
mode = "enforce"
[fs]
read = ["/usr", "/lib", "/lib64", "/etc", "/bin", "/proc", "{py}"]
exec = ["/usr", "/bin", "/lib", "/lib64", "{bin}"]
write = ["/dev/null"]
{net}
"#,
            py = py.parent().unwrap().display(),
            bin = c_probe.parent().unwrap().display(),
            net = w.net()
        ),
    )
    .unwrap();
    let (h, s, o) = (w.http, w.https, w.other);
    let code = "curl -s -m 20 -o /dev/null -w '%{http_code}\\n'";
    let (p, c) = (
        format!("/usr/bin/python3 {}", py.display()),
        c_probe.display(),
    );
    let script = format!(
        r#"
echo proxy $(curl -sS -m 20 http://web.egress.test:{h}/index.html)
echo proxy-tls $(curl -sS -m 20 -k https://tls.egress.test:{s}/index.html)
echo direct $(curl -sS -m 20 --noproxy '*' http://web.egress.test:{h}/index.html)
echo unlisted $({code} http://bad.egress.test:{o}/index.html)
echo port $({code} http://web.egress.test:{s}/index.html)
curl -sS -m 20 --noproxy '*' http://bad.egress.test:{o}/ >/dev/null 2>&1; echo direct-unlisted $?
echo dns-a $({p} dns web.egress.test 1)
echo dns-nx $({p} dns nope.egress.test 1)
echo udp $({c} udp-send 9)
echo udp-stub $({c} udp-send 53)
echo tcp-socket $({c} socket 2 1 0)
echo raw $({c} socket 2 3 1)
echo resolv $(cat /etc/resolv.conf)
echo uid $(id -u)
read seen || true
"#
    );
    let report_file = out.join("report.jsonl");
    let id = unique_id("egress-u");
    // The step waits on its stdin for the test to have looked at the
    // gateway's process: confined too, as the user.
    let mut child = w
        .as_user(&user, &sandboy)
        .args(["wrap", "--isolation", "namespaces", "--id", &id, "--policy"])
        .arg(&policy)
        .arg("--report")
        .arg(&report_file)
        .args(["--", "sh", "-c", &script])
        .current_dir(w.dir.path())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let gateway = gateway_pid(&id);
    let status = assert_confined(gateway, user.uid, user.gid);
    let parent: i32 = status_field(&status, "PPid").parse().unwrap();
    let watchdog = fs::read_to_string(format!("/proc/{parent}/status")).unwrap();
    assert_eq!(
        status_field(&watchdog, "Uid"),
        format!("{u} {u} {u} {u}", u = user.uid)
    );
    drop(child.stdin.take());
    let o_ = child.wait_with_output().unwrap();
    let stdout = text(&o_.stdout);
    let stderr = text(&o_.stderr);
    eprintln!("{stdout}\n{stderr}");
    assert_exit(&o_, 0);
    // Allowed, through the proxy variables and through the DNS stub.
    has_all(
        &stdout,
        &[
            "proxy hello from upstream",
            "proxy-tls hello from upstream",
            "direct hello from upstream",
            "dns-a rcode=0 answers=1",
            "tcp-socket ok",
            "resolv nameserver 127.0.0.53 options use-vc",
            &format!("uid {}", user.uid),
        ],
    );
    // Refused: an unlisted name and a listed name on an unlisted port
    // (403 from the proxy), an unlisted name without proxy (no address),
    // UDP and raw sockets (seccomp, EPERM).
    has_all(
        &stdout,
        &[
            "unlisted 403",
            "port 403",
            "direct-unlisted 6",
            "dns-nx rcode=3 answers=0",
            "udp errno=EPERM",
            "udp-stub errno=EPERM",
            "raw errno=EPERM",
        ],
    );
    reported_with_client(&report_file, &format!("bad.egress.test:{o}"), "curl");
    let got = report(&report_file);
    for t in [
        format!("web.egress.test:{s}"),
        "bad.egress.test".into(),
        "nope.egress.test".into(),
    ] {
        entry(&got, &t);
    }
    assert!(
        !got.iter()
            .any(|(t, _)| t == &format!("web.egress.test:{h}")),
        "an allowed destination was reported: {got:?}"
    );
    assert!(stderr.contains("egress refused"), "no warn event");
    assert!(stderr.contains(&id), "the warn events carry the id");
    assert!(!stderr.contains("its process ended"), "{stderr}");
    assert!(stderr.contains("refusals: "), "no summary");
    // Nothing left: the gateway's process ended with the wrap process.
    assert!(
        user.processes().is_empty(),
        "processes left: {:?}",
        user.processes()
    );
    assert!(pids_mentioning(&id).is_empty(), "processes left for {id}");
    // Nor when the step is killed at its deadline with a connection open
    // through the gateway and a background process still running.
    let id = unique_id("egress-u-timeout");
    let hold = format!(
        "sleep 60 & curl -s -m 60 http://web.egress.test:{h}/index.html >/dev/null; python3 -c \"import socket,time; s=socket.create_connection(('127.0.0.1', 3128)); time.sleep(60)\""
    );
    let o_ = run(w
        .as_user(&user, &sandboy)
        .args([
            "wrap",
            "--isolation",
            "namespaces",
            "--timeout",
            "2s",
            "--id",
            &id,
            "--policy",
        ])
        .arg(&policy)
        .args(["--", "sh", "-c", &hold])
        .current_dir(w.dir.path()));
    assert_exit(&o_, 137);
    assert!(
        user.processes().is_empty(),
        "processes left after the deadline: {:?}",
        user.processes()
    );
}

/// The landlock tier has no network namespace of its own, so no gateway:
/// under `enforce` a policy with host rules is refused (exit 2, one clear
/// error, nothing run or left); under `best-effort` it runs without them,
/// with a warning, and the step keeps only `[net] connect`. The namespaces
/// tier serves the same policy (test above).
#[test]
fn the_landlock_tier_refuses_host_rules_under_enforce() {
    let test = "the_landlock_tier_refuses_host_rules_under_enforce";
    let Some(bin) = need_sandboy(test) else {
        return;
    };
    let Some(user) = TestUser::create(test) else {
        return;
    };
    let dir = TempDir::new("egress-u");
    let sandboy = user.reachable_copy(&bin, &dir);
    let policy = |mode: &str| {
        let p = dir.path().join(format!("{mode}.toml"));
        fs::write(
            &p,
            format!("version = 1\nname = \"u\"\n[landlock]\nmode = \"{mode}\"\n[fs]\nread = [\"/usr\", \"/lib\", \"/lib64\", \"/etc\", \"/bin\"]\nexec = [\"/usr\", \"/bin\", \"/lib\", \"/lib64\"]\n[net]\nallow = [\"example.com:443\"]\n[process]\nargs = [\"true\"]\n"),
        )
        .unwrap();
        p
    };
    let (enforce, best) = (policy("enforce"), policy("best-effort"));
    let wrap = |p: &Path| {
        let mut c = user.cmd(&sandboy);
        c.args(["wrap", "--isolation", "landlock", "--policy"])
            .arg(p)
            .args(["--", "sh", "-c", "echo ran"])
            .current_dir(dir.path());
        run(&mut c)
    };
    let o = wrap(&enforce);
    assert_exit(&o, 2);
    let err = text(&o.stderr);
    assert!(
        err.contains("need the egress gateway")
            && err.contains("landlock tier")
            && err.contains("enforce.toml")
            && err.contains("--isolation namespaces"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "one error line: {err}");
    assert!(!text(&o.stdout).contains("ran"), "the step ran");
    assert!(user.processes().is_empty(), "processes left");
    let o = wrap(&best);
    assert_exit(&o, 0);
    has(&text(&o.stdout), "ran");
    assert!(
        text(&o.stderr).contains("not enforced by the landlock tier"),
        "{}",
        text(&o.stderr)
    );
}

/// Found by trying this build: a node policy (`dev.sandboy.policy=<name>`,
/// docs/node.md) owns the egress annotation as it owns Landlock's. Its
/// `[net] allow` gets the gateway, as a generated bundle's does; applied
/// onto a spec on the host's network it is refused (its port rules would
/// reach every host address); and a bundle's own `dev.sandboy.egress` no
/// longer survives the policy to open a gateway to the host from a
/// loopback-only container.
#[test]
fn a_node_policy_owns_egress() {
    let Some(w) = World::start("a_node_policy_owns_egress") else {
        return;
    };
    let rt = Runtime::sandboy();
    let policies = w.dir.path().join("policies");
    fs::create_dir_all(&policies).unwrap();
    fs::write(
        policies.join("egress.toml"),
        format!(
            "version = 1\n[fs]\nread = [\"/etc\"]\nexec = [\"/bin\"]\nwrite = [\"/tmp\"]\n{}",
            w.net()
        ),
    )
    .unwrap();
    fs::write(
        policies.join("db.toml"),
        "version = 1\n[fs]\nread = [\"/etc\"]\nexec = [\"/bin\"]\nwrite = [\"/tmp\"]\n[net]\nnamespace = \"none\"\nconnect = [5432]\n",
    )
    .unwrap();
    let config = w.dir.path().join("config.toml");
    fs::write(
        &config,
        format!("policy_dir = \"{}\"\n", policies.display()),
    )
    .unwrap();
    let cfg = config.to_str().unwrap();
    let engine = |script: &str, ann: &[(&str, &str)]| {
        let b = Bundle::busybox(&["sh", "-c", script]);
        b.edit(|c| {
            for (k, v) in ann {
                c["annotations"][*k] = serde_json::json!(v);
            }
        });
        b
    };
    let run_in = |b: &Bundle, id: &str| {
        let _g = rt.guard(id);
        run(&mut w.sandboy(
            &rt,
            &[
                "--config",
                cfg,
                "run",
                "--bundle",
                b.path().to_str().unwrap(),
                id,
            ],
        ))
    };

    // The policy's allow list, served: a listed name answers, another not.
    let script = format!(
        "echo ok $(wget -q -O - http://web.egress.test:{}/index.html); wget -q -O - http://bad.egress.test:{}/ >/dev/null 2>&1; echo bad $?",
        w.http, w.other
    );
    let b = engine(&script, &[("dev.sandboy.policy", "egress")]);
    let o = run_in(&b, &unique_id("node-egress"));
    assert_exit(&o, 0);
    has(&text(&o.stdout), "ok hello from upstream");
    assert!(!text(&o.stdout).contains("bad 0"), "{}", text(&o.stdout));

    // On the host's network: refused before anything exists.
    for policy in ["egress", "db"] {
        let b = engine("true", &[("dev.sandboy.policy", policy)]);
        b.edit(|c| {
            let ns = c["linux"]["namespaces"].as_array_mut().unwrap();
            ns.retain(|n| n["type"] != "network");
        });
        let id = unique_id("node-hostnet");
        let o = run_in(&b, &id);
        assert_exit(&o, 2);
        assert!(
            text(&o.stderr).contains("host's network"),
            "{}",
            text(&o.stderr)
        );
        assert!(!rt.root.path().join(&id).exists(), "state left for {id}");
    }

    // A raw egress annotation under a loopback-only policy opens nothing:
    // no gateway answers on the port the bundle chose.
    let raw = format!(
        "{{\"allow\":[],\"deny\":[],\"allow_cidr\":[\"127.77.0.0/24:{}\"],\"proxy_port\":5432}}",
        w.http
    );
    let script = format!(
        "printf 'CONNECT 127.77.0.1:{} HTTP/1.1\\r\\n\\r\\n' | nc 127.0.0.1 5432 2>&1; echo done",
        w.http
    );
    let b = engine(
        &script,
        &[("dev.sandboy.policy", "db"), ("dev.sandboy.egress", &raw)],
    );
    let o = run_in(&b, &unique_id("node-rawegress"));
    assert_exit(&o, 0);
    let out = text(&o.stdout);
    assert!(out.ends_with("done\n") && !out.contains("200"), "{out}");
}

/// `script` under root `wrap` with the test policy (host tools: python3
/// and tests/egress/probe.py as `$P`); its stdout (exit 0 asserted) and
/// the report's entries.
fn wrap_probes(w: &World, name: &str, script: &str) -> (String, Vec<(String, Option<String>)>) {
    let rt = Runtime::sandboy();
    let probe = repo().join("tests/egress/probe.py");
    let policy = w.dir.path().join(format!("{name}.toml"));
    fs::write(
        &policy,
        format!(
            r#"version = 1
name = "{name}"
[fs]
read = ["/usr", "/lib", "/lib64", "/etc", "/bin", "{probes}"]
exec = ["/usr", "/bin", "/lib", "/lib64"]
write = ["/dev/null"]
{net}
[process]
args = ["true"]
env = ["PATH=/usr/local/bin:/usr/bin:/bin", "P=/usr/bin/python3 {probe}"]
"#,
            probes = probe.parent().unwrap().display(),
            probe = probe.display(),
            net = w.net()
        ),
    )
    .unwrap();
    let report_file = w.dir.path().join(format!("{name}.jsonl"));
    let id = unique_id(name);
    let out = wrap_reporting(w, &rt, &policy, &id, &report_file, script);
    let stdout = text(&out.stdout);
    eprintln!("{stdout}\n{}", text(&out.stderr));
    assert_exit(&out, 0);
    assert!(pids_mentioning(&id).is_empty(), "processes left for {id}");
    (stdout, report(&report_file))
}

/// `deny` is not passed by a name a resolver decodes into the denied one
/// (red team: glibc reads `\115ecret` as `secret` and `\s` as `s`). The
/// test's hosts file stands in for that resolver: it gives the escaped
/// spellings of the denied `no.wild.egress.test` its address, so a gateway
/// that matched them as text (the wildcard `*.wild.egress.test` allows one
/// label, and `\110o` is one) reached the denied upstream. Through the
/// proxy and through the DNS stub (a label with a backslash, or a '.',
/// inside it), they are refused and reported with nothing to allow, while
/// the allowed `a.wild.egress.test` next to them is reached.
#[test]
fn escaped_names_do_not_pass_deny() {
    let Some(w) = World::start("escaped_names_do_not_pass_deny") else {
        return;
    };
    let hosts = w.dir.path().join("hosts");
    let mut h = fs::read_to_string(&hosts).unwrap();
    h.push_str("127.77.0.1 \\110o.wild.egress.test \\no.wild.egress.test\n");
    fs::write(&hosts, h).unwrap();
    let p = w.http;
    let script = format!(
        r#"
echo allowed $($P connect a.wild.egress.test {p})
echo denied $($P connect no.wild.egress.test {p})
echo decimal $($P connect '\110o.wild.egress.test' {p})
echo char $($P connect '\no.wild.egress.test' {p})
echo dns-allowed $($P labels 1 a wild egress test)
echo dns-decimal $($P labels 1 '\110o' wild egress test)
echo dns-char $($P labels 1 '\no' wild egress test)
echo dns-dot $($P labels 1 a.wild egress test)
"#
    );
    let (stdout, got) = wrap_probes(&w, "egress-escaped", &script);
    has_all(
        &stdout,
        &[
            "allowed 200 hello from upstream",
            "denied 403",
            "decimal 403",
            "char 403",
            "dns-allowed rcode=0 answers=1",
            "dns-decimal rcode=3 answers=0",
            "dns-char rcode=3 answers=0",
            "dns-dot rcode=3 answers=0",
        ],
    );
    // Nothing may permit them (a '\' or '.' inside a label is shown
    // escaped, as DNS writes it).
    for t in [
        format!("no.wild.egress.test:{p}"),
        format!("\\110o.wild.egress.test:{p}"),
        format!("\\no.wild.egress.test:{p}"),
        "\\\\110o.wild.egress.test".into(),
        "\\\\no.wild.egress.test".into(),
        "a\\.wild.egress.test".into(),
    ] {
        assert_eq!(entry(&got, &t), None, "{t}");
    }
}

/// A name the step chose never writes the report's `allow` line (red
/// team: a DNS label `pkg:443", "*.attacker.test:443", "*` made it suggest
/// `*.attacker.test`, one with newlines a `[fs] write = ["/"]` table). A
/// crafted name gets none; an unlisted host name gets a rule the runtime
/// parsed, for the policy's allowed ports (a query names no port).
#[test]
fn a_crafted_name_writes_no_allow_line() {
    let Some(w) = World::start("a_crafted_name_writes_no_allow_line") else {
        return;
    };
    let script = r#"
echo unlisted $($P labels 1 unlisted egress test)
echo quoted $($P labels 1 'pkg:443", "*.attacker.test:443", "*' attacker test)
echo lines $($P labels 1 "$(printf 'x\n[fs]\nwrite = ["/"]\n#')" test)
"#;
    let (stdout, got) = wrap_probes(&w, "egress-crafted", script);
    has_all(
        &stdout,
        &[
            "unlisted rcode=3 answers=0",
            "quoted rcode=3 answers=0",
            "lines rcode=3 answers=0",
        ],
    );
    let mut ports = vec![w.http, w.https, w.tcp];
    ports.sort_unstable();
    ports.dedup();
    let rules: Vec<String> = ports
        .iter()
        .map(|p| format!("\"unlisted.egress.test:{p}\""))
        .collect();
    assert_eq!(
        entry(&got, "unlisted.egress.test").as_deref(),
        Some(format!("[net] allow = [{}]", rules.join(", ")).as_str())
    );
    let crafted: Vec<_> = got
        .iter()
        .filter(|(t, _)| t.contains("attacker") || t.contains("[fs]"))
        .collect();
    assert_eq!(crafted.len(), 2, "{got:?}");
    for (t, allow) in crafted {
        assert_eq!(allow, &None, "{t}");
        assert!(!t.contains('\n') && !t.contains(' '), "{t:?}");
    }
}
