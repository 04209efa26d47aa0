//! The escape suite (issue 4): one escape attempt per probe run, inside a
//! busybox container confined by sandboy from a policy that the test writes
//! and `sandboy-spec-gen` turns into `config.json` (policy → spec → runtime,
//! end to end). Every refusal is paired with an allowed counterpart in the
//! same test, so a test cannot pass because the attempt was broken anyway.
//!
//! The probe (`tests/probes/probe.c`) prints `ok`, `ok (ECONNREFUSED)` or
//! `errno=NAME`; errno names are asserted exactly.

use std::fs;
use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use sandboy_tests::*;

/// How long one container run may take before the harness kills it.
const RUN_LIMIT: Duration = Duration::from_secs(90);

// ---------------------------------------------------------------------------
// Probe binary

/// The static probe: `$CARGO_TARGET_DIR/probes/probe`, `<repo>/target/probes/probe`,
/// else built here with gcc (None when gcc is missing).
fn probe_bin() -> Option<PathBuf> {
    static PROBE: OnceLock<Option<PathBuf>> = OnceLock::new();
    PROBE
        .get_or_init(|| {
            let src = repo().join("tests/probes/probe.c");
            let fresh = |p: &Path| {
                let (Ok(bin), Ok(src)) = (fs::metadata(p), fs::metadata(&src)) else {
                    return false;
                };
                match (bin.modified(), src.modified()) {
                    (Ok(b), Ok(s)) => b >= s,
                    _ => true,
                }
            };
            let candidates = [
                target_dir().join("probes/probe"),
                repo().join("target/probes/probe"),
            ];
            if let Some(p) = candidates.iter().find(|p| fresh(p)) {
                return Some(p.clone());
            }
            which("gcc")?;
            let out = target_dir().join("probes/probe");
            fs::create_dir_all(out.parent().unwrap()).ok()?;
            let tmp = out.with_extension(format!("tmp-{}", std::process::id()));
            let st = Command::new("gcc")
                .args(["-static", "-O2", "-Wall", "-o"])
                .arg(&tmp)
                .arg(&src)
                .status()
                .ok()?;
            assert!(st.success(), "gcc failed to build {}", src.display());
            fs::rename(&tmp, &out).unwrap();
            Some(out)
        })
        .clone()
}

/// Root, busybox and the probe: false (and a recorded skip) if missing.
fn ready(test: &str) -> bool {
    if !need_root(test) {
        return false;
    }
    if !Path::new("/bin/busybox").is_file() {
        skip(test, "busybox-static is not installed");
        return false;
    }
    if probe_bin().is_none() {
        skip(test, "no probe binary and gcc is not installed to build it");
        return false;
    }
    true
}

// ---------------------------------------------------------------------------
// A confined busybox container made from a policy

/// [`ready`], then [`Sandbox::new`] of `policy`; `None` after the recorded
/// skip when the machine is not ready.
fn sandbox(test: &str, policy: &str) -> Option<Sandbox> {
    ready(test).then(|| Sandbox::new(policy))
}

/// A busybox bundle whose config.json is generated from a test policy.
///
/// Host side (the policy's directory): `outside/` and `work/`, for
/// `[[mount]]`s a policy may bind at `/outside` (writable by DAC, in no
/// allowlist) and `/work`. Rootfs: `/bin/probe`, `/data/f`,
/// `/data/probe-copy` (an executable outside the exec list), `/secret/s`
/// (in no list).
struct Sandbox {
    rt: Runtime,
    bundle: Bundle,
    host: TempDir,
}

impl Sandbox {
    /// `policy` is a policy without `[process]` (the helper adds one; each
    /// run then sets `process.args`).
    ///
    /// spec-gen binds a `rw` `[[mount]]` outside every write path read-only
    /// (issue 14); the Landlock tests need a place that mount and DAC leave
    /// writable but no allowlist covers, so a policy bind at `/outside` is
    /// switched back to `rw` in config.json (a hand-written config, as an
    /// engine could pass): `ro` becomes `rw`, and its recursive form `rro`
    /// goes. [`Sandbox::generated`] keeps spec-gen's config.
    fn new(policy: &str) -> Self {
        let s = Self::generated(policy);
        s.bundle.edit(|c| {
            for m in c["mounts"].as_array_mut().unwrap() {
                if m["destination"] == "/outside" {
                    let opts = m["options"].as_array_mut().unwrap();
                    opts.retain(|o| o != "rro");
                    for o in opts {
                        if o == "ro" {
                            *o = "rw".into();
                        }
                    }
                }
            }
        });
        s
    }

    /// The bundle exactly as spec-gen generated it from `policy`.
    fn generated(policy: &str) -> Self {
        Self::generated_with(policy, "")
    }

    /// [`Sandbox::generated`] with `process` (TOML lines) added to the
    /// `[process]` table the helper writes.
    fn generated_with(policy: &str, process: &str) -> Self {
        let host = TempDir::new("escape-policy");
        let outside = host.path().join("outside");
        let work = host.path().join("work");
        fs::create_dir_all(&outside).unwrap();
        fs::create_dir_all(&work).unwrap();
        for (dir, files) in [
            (&outside, &["target", "victim", "a"][..]),
            (&work, &["file", "victim", "a"][..]),
        ] {
            for f in files {
                fs::write(dir.join(f), format!("{f}-content\n")).unwrap();
            }
        }
        // A symlink inside the writable /work pointing out of every
        // allowlist, and one pointing inside (its counterpart).
        std::os::unix::fs::symlink("/outside/target", work.join("escape")).unwrap();
        std::os::unix::fs::symlink("/work/file", work.join("inner")).unwrap();

        let bundle = Bundle::busybox(&["/bin/true"]);
        let rootfs = bundle.rootfs();
        let probe = probe_bin().expect("probe checked by ready()");
        fs::copy(&probe, rootfs.join("bin/probe")).unwrap();
        for d in ["data", "secret", "outside"] {
            fs::create_dir_all(rootfs.join(d)).unwrap();
        }
        fs::write(rootfs.join("data/f"), "data-content\n").unwrap();
        fs::copy(&probe, rootfs.join("data/probe-copy")).unwrap();
        fs::write(rootfs.join("secret/s"), "secret-content\n").unwrap();

        let policy_path = host.path().join("owen.policy.toml");
        fs::write(
            &policy_path,
            format!("{policy}\n[process]\nargs = [\"/bin/true\"]\ncwd = \"/\"\n{process}"),
        )
        .unwrap();
        bundle.generate(&policy_path);
        Sandbox {
            rt: Runtime::sandboy(),
            bundle,
            host,
        }
    }

    fn outside(&self) -> PathBuf {
        self.host.path().join("outside")
    }

    fn work(&self) -> PathBuf {
        self.host.path().join("work")
    }

    fn bundle_arg(&self) -> &str {
        self.bundle.path().to_str().unwrap()
    }

    /// Set `process.args` in config.json.
    fn set_args(&self, args: &[&str]) {
        self.bundle
            .edit(|c| c["process"]["args"] = serde_json::json!(args));
    }

    /// `sandboy [global…] run [flags…] --bundle B ID` with `args` as the
    /// payload (not yet spawned).
    fn run_cmd(&self, id: &str, global: &[&str], flags: &[&str], args: &[&str]) -> Command {
        self.set_args(args);
        let mut c = self.rt.cmd();
        c.args(global)
            .arg("run")
            .args(flags)
            .args(["--bundle", self.bundle_arg(), id]);
        c
    }

    /// Run the payload in a fresh container; the container is deleted and
    /// its cgroups removed afterwards, whatever happened.
    fn run(&self, args: &[&str]) -> Output {
        let id = unique_id("esc");
        let _c = Cleanup::new(&self.rt, &id);
        output_timeout(&mut self.run_cmd(&id, &[], &[], args), RUN_LIMIT)
    }

    /// Run `script` with `/bin/sh -c` in a fresh container.
    fn sh(&self, script: &str) -> Output {
        self.run(&["/bin/sh", "-c", script])
    }

    /// Start `/bin/sleep 60` detached as container `id` and wait until it
    /// runs; the returned guard removes it.
    fn sleeper(&self, id: &str) -> Cleanup<'_> {
        let c = Cleanup::new(&self.rt, id);
        let o = output_timeout(
            &mut self.run_cmd(id, &[], &["--detach"], &["/bin/sleep", "60"]),
            RUN_LIMIT,
        );
        assert_exit(&o, 0);
        self.rt.wait_status(id, "running");
        c
    }

    /// Run the probe and assert its one-line verdict exactly.
    #[track_caller]
    fn expect(&self, probe_args: &[&str], want: &str) {
        let mut args = vec!["/bin/probe"];
        args.extend_from_slice(probe_args);
        let o = self.run(&args);
        assert_eq!(
            text(&o.stdout).trim(),
            want,
            "probe {probe_args:?}: exit {:?}; stderr: {}",
            o.status.code(),
            text(&o.stderr)
        );
        let code = if want.starts_with("ok") { 0 } else { 1 };
        assert_exit(&o, code);
    }
}

/// Deletes the container (`delete --force`) and removes its cgroups when
/// dropped, whatever happened.
struct Cleanup<'a> {
    rt: &'a Runtime,
    id: String,
}

impl<'a> Cleanup<'a> {
    fn new(rt: &'a Runtime, id: &str) -> Self {
        Cleanup {
            rt,
            id: id.to_owned(),
        }
    }
}

impl Drop for Cleanup<'_> {
    fn drop(&mut self) {
        drop(self.rt.guard(&self.id));
        remove_cgroup_tree(&format!("sandboy/{}", self.id));
    }
}

/// A free TCP port on 127.0.0.1 (bound and released).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// JSON log lines of `--log FILE --log-format json`.
fn log_lines(path: &Path) -> Vec<serde_json::Value> {
    fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// The warn-level log lines mentioning `id` and `word` (case-insensitive).
fn warn_lines_with(path: &Path, id: &str, word: &str) -> Vec<String> {
    log_lines(path)
        .into_iter()
        .filter(|v| matches!(v["level"].as_str(), Some("warning") | Some("warn")))
        .map(|v| v.to_string())
        .filter(|l| l.contains(id) && l.to_lowercase().contains(word))
        .collect()
}

/// /work is a host bind in the write list, /outside a `rw` bind in none,
/// /tmp a write-path tmpfs; only /bin executes (syscalls: the default deny
/// list, errno).
const FS_POLICY: &str = r#"
version = 1
name = "escape-fs"

[landlock]
mode = "enforce"

[fs]
read = ["/etc", "/data"]
exec = ["/bin"]
write = ["/tmp", "/work"]

[[mount]]
source = "./work"
destination = "/work"
options = ["rbind", "rw"]

[[mount]]
source = "./outside"
destination = "/outside"
options = ["rbind", "rw"]
"#;

// ---------------------------------------------------------------------------
// Filesystem

#[test]
fn fs_write_and_create_only_inside_write_allowlist() {
    let t = "fs_write_and_create_only_inside_write_allowlist";
    let Some(s) = sandbox(t, FS_POLICY) else {
        return;
    };
    // /outside is a rw bind mount (DAC and mount allow it): only Landlock refuses.
    s.expect(&["write", "/outside/target"], "errno=EACCES");
    s.expect(&["write", "/work/file"], "ok");
    s.expect(&["create", "/outside/new"], "errno=EACCES");
    s.expect(&["create", "/work/new"], "ok");
    s.expect(&["create", "/tmp/new"], "ok");
    assert_eq!(
        fs::read_to_string(s.outside().join("target")).unwrap(),
        "target-content\n"
    );
    assert!(!s.outside().join("new").exists());
    assert_eq!(
        fs::read_to_string(s.work().join("file")).unwrap(),
        "xile-content\n"
    );
    assert!(s.work().join("new").exists());
}

#[test]
fn fs_unlink_and_rename_only_inside_write_allowlist() {
    let t = "fs_unlink_and_rename_only_inside_write_allowlist";
    let Some(s) = sandbox(t, FS_POLICY) else {
        return;
    };
    s.expect(&["unlink", "/outside/victim"], "errno=EACCES");
    s.expect(&["unlink", "/work/victim"], "ok");
    s.expect(&["rename", "/outside/a", "/outside/b"], "errno=EACCES");
    s.expect(&["rename", "/work/a", "/work/b"], "ok");
    assert!(s.outside().join("victim").exists());
    assert!(s.outside().join("a").exists() && !s.outside().join("b").exists());
    assert!(!s.work().join("victim").exists());
    assert!(!s.work().join("a").exists() && s.work().join("b").exists());
}

#[test]
fn fs_read_and_exec_only_inside_allowlists() {
    let t = "fs_read_and_exec_only_inside_allowlists";
    let Some(s) = sandbox(t, FS_POLICY) else {
        return;
    };
    s.expect(&["read", "/secret/s"], "errno=EACCES");
    s.expect(&["read", "/outside/target"], "errno=EACCES");
    s.expect(&["read", "/data/f"], "ok");
    s.expect(&["read", "/work/file"], "ok");
    // /data is readable, not executable; /bin is executable.
    s.expect(&["exec", "/data/probe-copy"], "errno=EACCES");
    let o = s.run(&["/bin/probe", "exec", "/bin/true"]);
    assert_exit(&o, 0);
    assert_eq!(
        text(&o.stdout),
        "",
        "exec of /bin/true printed: {}",
        text(&o.stderr)
    );
}

#[test]
fn fs_symlink_out_of_allowed_tree_does_not_help() {
    let t = "fs_symlink_out_of_allowed_tree_does_not_help";
    let Some(s) = sandbox(t, FS_POLICY) else {
        return;
    };
    // /work/escape -> /outside/target: Landlock judges the resolved path.
    s.expect(&["write", "/work/escape"], "errno=EACCES");
    s.expect(&["read", "/work/escape"], "errno=EACCES");
    // /work/inner -> /work/file: the same kind of link, pointing inside.
    s.expect(&["write", "/work/inner"], "ok");
    s.expect(&["read", "/work/inner"], "ok");
    assert_eq!(
        fs::read_to_string(s.outside().join("target")).unwrap(),
        "target-content\n"
    );
}

#[test]
fn fs_hide_masks_content_inside_allowed_tree() {
    let t = "fs_hide_masks_content_inside_allowed_tree";
    if !ready(t) {
        return;
    }
    let policy = r#"
version = 1
name = "escape-hide"
[landlock]
mode = "enforce"
[fs]
read = ["/etc", "/data"]
exec = ["/bin"]
write = ["/tmp"]
hide = ["/data/hidden.txt", "/data/hidden-dir"]
"#;
    let s = Sandbox::new(policy);
    let data = s.bundle.rootfs().join("data");
    fs::write(data.join("hidden.txt"), "hidden-content\n").unwrap();
    fs::write(data.join("shown.txt"), "shown-content\n").unwrap();
    for d in ["hidden-dir", "shown-dir"] {
        fs::create_dir_all(data.join(d)).unwrap();
        fs::write(data.join(d).join("inner.txt"), "inner\n").unwrap();
    }
    let o = s.run(&["/bin/cat", "/data/hidden.txt"]);
    assert_exit(&o, 0);
    assert_eq!(text(&o.stdout), "", "hidden file shows content");
    let o = s.run(&["/bin/cat", "/data/shown.txt"]);
    assert_exit(&o, 0);
    assert_eq!(text(&o.stdout), "shown-content\n");
    let o = s.run(&["/bin/ls", "-A", "/data/hidden-dir"]);
    assert_exit(&o, 0);
    assert_eq!(text(&o.stdout), "", "hidden dir lists entries");
    let o = s.run(&["/bin/ls", "-A", "/data/shown-dir"]);
    assert_exit(&o, 0);
    assert_eq!(text(&o.stdout), "inner.txt\n");
}

// ---------------------------------------------------------------------------
// Network

#[test]
fn net_tcp_connect_and_bind_only_listed_ports() {
    let t = "net_tcp_connect_and_bind_only_listed_ports";
    if !ready(t) {
        return;
    }
    // Host netns: the container reaches the test's own listeners.
    let listed = TcpListener::bind("127.0.0.1:0").unwrap();
    let unlisted = TcpListener::bind("127.0.0.1:0").unwrap();
    let (lp, up) = (
        listed.local_addr().unwrap().port(),
        unlisted.local_addr().unwrap().port(),
    );
    let closed = free_port();
    let (bind_ok, bind_no) = (free_port(), free_port());
    let policy = host_net_policy(
        "escape-net",
        &format!("connect = [{lp}, {closed}]\nbind = [{bind_ok}]"),
    );
    let s = Sandbox::new(&policy);
    let (lp, up, closed) = (lp.to_string(), up.to_string(), closed.to_string());
    s.expect(&["connect", &lp], "ok");
    s.expect(&["connect", &up], "errno=EACCES");
    s.expect(&["connect", &closed], "ok (ECONNREFUSED)");
    s.expect(&["bind", &bind_ok.to_string()], "ok");
    s.expect(&["bind", &bind_no.to_string()], "errno=EACCES");
}

/// Own network namespace (loopback only), port 8080 listed for both.
const NET_NONE_POLICY: &str = r#"
version = 1
name = "escape-net-none"
[landlock]
mode = "enforce"
[fs]
exec = ["/bin"]
[net]
namespace = "none"
connect = [8080]
bind = [8080]
"#;

#[test]
fn net_none_bind_rules_apply_in_own_netns() {
    let t = "net_none_bind_rules_apply_in_own_netns";
    let Some(s) = sandbox(t, NET_NONE_POLICY) else {
        return;
    };
    s.expect(&["bind", "8080"], "ok");
    s.expect(&["bind", "8081"], "errno=EACCES");
    s.expect(&["connect", "8081"], "errno=EACCES");
}

/// SPEC §4: `namespace = "none"` is "own netns, loopback only": a listed
/// port on 127.0.0.1 must be reachable (refused, since nothing listens),
/// not unreachable.
#[test]
fn net_none_has_a_working_loopback() {
    let t = "net_none_has_a_working_loopback";
    let Some(s) = sandbox(t, NET_NONE_POLICY) else {
        return;
    };
    s.expect(&["connect", "8080"], "ok (ECONNREFUSED)");
}

fn abstract_policy(scope: &str) -> String {
    host_net_policy("escape-abstract", &format!("scope = {scope}"))
}

/// A policy on the host network that executes only /bin, with `net` (the
/// rest of its `[net]` table).
fn host_net_policy(name: &str, net: &str) -> String {
    format!(
        r#"
version = 1
name = "{name}"
[landlock]
mode = "enforce"
[fs]
exec = ["/bin"]
[net]
namespace = "host"
{net}
"#
    )
}

#[test]
fn scope_abstract_unix_socket_outside_domain_is_refused() {
    use std::os::linux::net::SocketAddrExt;
    let t = "scope_abstract_unix_socket_outside_domain_is_refused";
    if !ready(t) {
        return;
    }
    // Bound by the test process on the host, in the netns the container shares.
    let name = unique_id("sandboy-escape-abstract");
    let addr = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
    let _listener = std::os::unix::net::UnixListener::bind_addr(&addr).unwrap();

    let scoped = Sandbox::new(&abstract_policy(r#"["abstract-unix-socket", "signal"]"#));
    scoped.expect(&["abstract-connect", &name], "errno=EPERM");
    // Same socket, same netns, scope not requested: reachable.
    let open = Sandbox::new(&abstract_policy(r#"["signal"]"#));
    open.expect(&["abstract-connect", &name], "ok");
    // A name nobody bound: refused by the kernel, not by Landlock.
    open.expect(
        &["abstract-connect", &format!("{name}-none")],
        "errno=ECONNREFUSED",
    );
}

#[test]
fn scope_signal_outside_domain_is_refused() {
    let t = "scope_signal_outside_domain_is_refused";
    if !ready(t) {
        return;
    }
    let policy = |scope: &str| {
        format!(
            r#"
version = 1
name = "escape-signal"
[landlock]
mode = "enforce"
[fs]
read = ["/dev"]
exec = ["/bin"]
[net]
scope = {scope}
"#
        )
    };
    for (scope, want_init) in [
        (r#"["abstract-unix-socket", "signal"]"#, "errno=EPERM"),
        (r#"["abstract-unix-socket"]"#, "ok"),
    ] {
        let s = Sandbox::new(&policy(scope));
        let id = unique_id("esc-sig");
        let _c = s.sleeper(&id);
        // `exec` restricts itself with its own Landlock domain: the init
        // (pid 1) is outside it.
        let o = s.rt.run(&["exec", &id, "/bin/probe", "kill", "1", "0"]);
        assert_eq!(
            text(&o.stdout).trim(),
            want_init,
            "scope {scope}: {}",
            text(&o.stderr)
        );
        // Its own child is inside its domain: always allowed.
        let o = s.rt.run(&[
            "exec",
            &id,
            "/bin/sh",
            "-c",
            "/bin/sleep 30 </dev/null & /bin/probe kill $! 9",
        ]);
        assert_eq!(
            text(&o.stdout).trim(),
            "ok",
            "scope {scope}: {}",
            text(&o.stderr)
        );
    }
}

// ---------------------------------------------------------------------------
// Syscalls

/// The default-deny entries the probe can call, as probe names.
const DENIED: &[&str] = &[
    "ptrace",
    "mount",
    "mount_setattr",
    "fsconfig",
    "umount2",
    "unshare-user",
    "unshare-mount",
    "setns",
    "bpf",
    "keyctl",
    "add_key",
    "io_uring_setup",
    "open_by_handle_at",
    "perf_event_open",
    "kexec_load",
    "init_module",
    "userfaultfd",
];

fn syscall_policy(action: &str, allow: &str) -> String {
    format!(
        r#"
version = 1
name = "escape-syscalls"
[landlock]
mode = "enforce"
[fs]
exec = ["/bin"]
[syscalls]
default_deny = true
allow = {allow}
action = "{action}"
"#
    )
}

/// Runs `probe syscall NAME` for each name in one container (a busybox
/// shell loop) and returns `(name, exit status, verdict)`.
fn syscall_table(s: &Sandbox, names: &[&str]) -> Vec<(String, i32, String)> {
    let script = format!(
        "for s in {}; do r=$(/bin/probe syscall $s); echo \"$s $? $r\"; done",
        names.join(" ")
    );
    let o = s.run(&["/bin/sh", "-c", &script]);
    assert_exit(&o, 0);
    let rows: Vec<(String, i32, String)> = text(&o.stdout)
        .lines()
        .map(|l| {
            let mut it = l.splitn(3, ' ');
            let name = it.next().unwrap_or_default().to_owned();
            let code = it.next().and_then(|c| c.parse().ok()).unwrap_or(-1);
            (name, code, it.next().unwrap_or_default().trim().to_owned())
        })
        .collect();
    assert_eq!(
        rows.len(),
        names.len(),
        "output: {}\n{}",
        text(&o.stdout),
        text(&o.stderr)
    );
    rows
}

/// Every `DENIED` syscall gets `denied` (exit code, verdict) from `s`, and
/// its counterpart `personality` (in no deny list) runs.
#[track_caller]
fn assert_denied_but_personality(s: &Sandbox, denied: (i32, &str)) {
    let mut names = DENIED.to_vec();
    names.push("personality");
    for (name, code, verdict) in syscall_table(s, &names) {
        if name == "personality" {
            assert_eq!((code, verdict.as_str()), (0, "ok"), "{name}");
        } else {
            assert_eq!((code, verdict.as_str()), denied, "{name}");
        }
    }
}

#[test]
fn syscalls_default_deny_returns_eperm() {
    let t = "syscalls_default_deny_returns_eperm";
    let Some(s) = sandbox(t, &syscall_policy("errno", "[]")) else {
        return;
    };
    assert_denied_but_personality(&s, (1, "errno=EPERM"));
}

#[test]
fn syscalls_kill_action_kills_with_sigsys() {
    let t = "syscalls_kill_action_kills_with_sigsys";
    let Some(s) = sandbox(t, &syscall_policy("kill", "[]")) else {
        return;
    };
    // The probe as the container's init: `sandboy run` reports 128 + SIGSYS.
    let o = s.run(&["/bin/probe", "syscall", "ptrace"]);
    assert_exit(&o, 128 + libc::SIGSYS);
    assert_eq!(text(&o.stdout), "");
    let o = s.run(&["/bin/probe", "syscall", "personality"]);
    assert_exit(&o, 0);
    assert_eq!(text(&o.stdout).trim(), "ok");
    assert_denied_but_personality(&s, (128 + libc::SIGSYS, ""));
}

#[test]
fn syscalls_allow_removes_entries_from_default_deny() {
    let t = "syscalls_allow_removes_entries_from_default_deny";
    if !ready(t) {
        return;
    }
    // With the entries allowed, the harmless arguments fail in the kernel
    // with the syscall's own errno, not the profile's EPERM or SIGSYS.
    let s = Sandbox::new(&syscall_policy(
        "kill",
        r#"["ptrace", "keyctl", "perf_event_open"]"#,
    ));
    let rows = syscall_table(&s, &["ptrace", "keyctl", "perf_event_open", "mount"]);
    let got: Vec<(&str, i32, &str)> = rows
        .iter()
        .map(|(n, c, v)| (n.as_str(), *c, v.as_str()))
        .collect();
    assert_eq!(
        got,
        [
            ("ptrace", 1, "errno=ESRCH"),
            ("keyctl", 1, "errno=EOPNOTSUPP"),
            ("perf_event_open", 1, "errno=EFAULT"),
            ("mount", 128 + libc::SIGSYS, ""),
        ]
    );
}

// ---------------------------------------------------------------------------
// File descriptors

/// The fd the caller of `sandboy run` leaks (no CLOEXEC).
const LEAKED_FD: i32 = 42;

fn run_with_leaked_fd(s: &Sandbox, flags: &[&str]) -> Output {
    let id = unique_id("esc-fd");
    let _c = Cleanup::new(&s.rt, &id);
    let leak = fs::File::open("/dev/null").unwrap();
    let raw = std::os::fd::AsRawFd::as_raw_fd(&leak);
    let mut cmd = s.run_cmd(&id, &[], flags, &["/bin/probe", "fds"]);
    // SAFETY: dup2 is async-signal-safe and touches only the child's fds.
    unsafe {
        cmd.pre_exec(move || {
            if libc::dup2(raw, LEAKED_FD) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    output_timeout(&mut cmd, RUN_LIMIT)
}

#[test]
fn fds_leaked_by_caller_are_not_visible_unless_preserved() {
    let t = "fds_leaked_by_caller_are_not_visible_unless_preserved";
    if !ready(t) {
        return;
    }
    let s = Sandbox::new(
        r#"
version = 1
name = "escape-fds"
[landlock]
mode = "enforce"
[fs]
read = ["/proc"]
exec = ["/bin"]
"#,
    );
    let o = run_with_leaked_fd(&s, &[]);
    assert_exit(&o, 0);
    assert_eq!(
        text(&o.stdout).trim(),
        "0 1 2",
        "stderr: {}",
        text(&o.stderr)
    );
    let preserve = (LEAKED_FD - 2).to_string();
    let o = run_with_leaked_fd(&s, &["--preserve-fds", &preserve]);
    assert_exit(&o, 0);
    let fds: Vec<String> = text(&o.stdout)
        .split_whitespace()
        .map(String::from)
        .collect();
    assert!(
        fds.contains(&LEAKED_FD.to_string()),
        "preserved fd missing: {fds:?}"
    );
}

// ---------------------------------------------------------------------------
// Fail closed

/// The payload of the fail-closed cases: leaves `work/started` on the host
/// when it starts (/work is writable), and `outside/marker` only if it runs
/// without Landlock (`/outside` is writable by DAC but in no allowlist).
const MARKER_SCRIPT: &str =
    "echo started > /work/started && echo escaped > /outside/marker && echo payload-ran";

/// Replace the Landlock annotation's mode and add raw access bit 1<<40 (no
/// Landlock ABI has it) to its first rule.
fn ask_for_bit_40(s: &Sandbox, mode: &str) {
    s.bundle.edit(|c| {
        let key = "dev.sandboy.landlock";
        let mut ll: serde_json::Value =
            serde_json::from_str(c["annotations"][key].as_str().unwrap()).unwrap();
        ll["mode"] = mode.into();
        ll["fs"][0]["access"]
            .as_array_mut()
            .unwrap()
            .push(1_099_511_627_776u64.into());
        c["annotations"][key] = ll.to_string().into();
    });
}

#[test]
fn fail_closed_landlock_right_above_kernel_abi() {
    let t = "fail_closed_landlock_right_above_kernel_abi";
    if !ready(t) {
        return;
    }
    // enforce: create fails, nothing started, nothing left.
    let s = Sandbox::new(FS_POLICY);
    ask_for_bit_40(&s, "enforce");
    s.set_args(&["/bin/sh", "-c", MARKER_SCRIPT]);
    let id = unique_id("esc-abi");
    let _c = Cleanup::new(&s.rt, &id);
    let o = output_timeout(
        s.rt.cmd().args(["create", "--bundle", s.bundle_arg(), &id]),
        RUN_LIMIT,
    );
    eprintln!("enforce create: {}", text(&o.stderr));
    // A runtime failure (the kernel cannot enforce it), not a config error.
    assert_exit(&o, 1);
    let err = text(&o.stderr);
    assert!(
        err.contains("raw access bit 1<<40"),
        "message does not name the right: {err}"
    );
    assert!(
        err.contains("\"enforce\""),
        "message does not name the mode: {err}"
    );
    assert!(
        err.contains("best-effort"),
        "message does not say how to fix: {err}"
    );
    let st = s.rt.run(&["state", &id]);
    assert!(!st.status.success());
    assert_stderr_contains(&st, "container does not exist");
    assert!(!s.rt.root.path().join(&id).exists(), "state dir left");
    assert_eq!(cgroups_named(&id), Vec::<PathBuf>::new(), "cgroups left");
    assert_eq!(pids_mentioning(&id), Vec::<i32>::new(), "processes left");
    assert!(
        !s.work().join("started").exists(),
        "enforce: the payload started"
    );
    assert!(
        !s.outside().join("marker").exists(),
        "enforce: the payload escaped"
    );

    // best-effort counterpart: starts, warns, and the rest is still enforced.
    let s = Sandbox::new(FS_POLICY);
    ask_for_bit_40(&s, "best-effort");
    let id = unique_id("esc-abi-be");
    let _c = Cleanup::new(&s.rt, &id);
    let log = s.host.path().join("log.json");
    let g = ["--log", log.to_str().unwrap(), "--log-format", "json"];
    let o = output_timeout(
        &mut s.run_cmd(&id, &g, &[], &["/bin/sh", "-c", MARKER_SCRIPT]),
        RUN_LIMIT,
    );
    assert_exit_stderr(&o, 1, "can't create /outside/marker: Permission denied");
    assert!(
        s.work().join("started").exists(),
        "best-effort: the payload did not start"
    );
    assert!(
        !s.outside().join("marker").exists(),
        "best-effort: the payload escaped"
    );
    assert!(
        !warn_lines_with(&log, "", "best-effort").is_empty(),
        "no best-effort warning: {}",
        fs::read_to_string(&log).unwrap_or_default()
    );
}

#[test]
fn fail_closed_seccomp_blocking_landlock_never_runs_unconfined() {
    let t = "fail_closed_seccomp_blocking_landlock_never_runs_unconfined";
    if !ready(t) {
        return;
    }
    // spec-gen refuses such a policy outright ...
    let host = TempDir::new("escape-nd");
    let p = host.path().join("p.toml");
    fs::write(
        &p,
        "version = 1\nname = \"nd\"\n[syscalls]\ndeny = [\"landlock_restrict_self\"]\n\
         [process]\nargs = [\"/bin/true\"]\n",
    )
    .unwrap();
    let o = capture(
        Command::new(spec_gen_bin())
            .args(["generate", "--bundle", "-", "--policy"])
            .arg(&p),
    );
    assert_exit_stderr(&o, 2, "landlock_restrict_self");

    // ... so the profile is hand-written into config.json.
    for with_landlock in [true, false] {
        let s = Sandbox::new(FS_POLICY);
        s.bundle.edit(|c| {
            c["linux"]["seccomp"]["syscalls"].as_array_mut().unwrap().push(serde_json::json!({
                "names": ["landlock_create_ruleset", "landlock_add_rule", "landlock_restrict_self"],
                "action": "SCMP_ACT_ERRNO",
                "errnoRet": 1
            }));
            if !with_landlock {
                c["annotations"]
                    .as_object_mut()
                    .unwrap()
                    .remove("dev.sandboy.landlock");
            }
        });
        let o = s.run(&["/bin/sh", "-c", MARKER_SCRIPT]);
        eprintln!(
            "landlock={with_landlock}: exit {:?}; stdout {:?}; stderr {:?}",
            o.status.code(),
            text(&o.stdout),
            text(&o.stderr)
        );
        let marker = s.outside().join("marker");
        if with_landlock {
            assert!(
                !marker.exists(),
                "payload ran without Landlock: {}",
                text(&o.stderr)
            );
            assert!(
                !text(&o.stdout).contains("payload-ran"),
                "{}",
                text(&o.stdout)
            );
            // Either it refused to start, or (Landlock is applied before
            // seccomp) it ran confined and its escape was refused.
            if s.work().join("started").exists() {
                assert_exit_stderr(&o, 1, "can't create /outside/marker: Permission denied");
            } else {
                assert_ne!(o.status.code(), Some(0));
            }
        } else {
            // Counterpart: without the annotation the same payload leaves the
            // marker, so its absence above means confinement.
            assert_exit(&o, 0);
            assert!(marker.exists(), "marker not written: {}", text(&o.stderr));
        }
    }
}

// ---------------------------------------------------------------------------
// Exhaustion

fn limits_policy(limits: &str) -> String {
    format!(
        r#"
version = 1
name = "escape-limits"
[landlock]
mode = "enforce"
[fs]
exec = ["/bin"]
[limits]
{limits}
"#
    )
}

/// `forks=N errno=EAGAIN` → N.
fn forks(o: &Output) -> u64 {
    let out = text(&o.stdout);
    assert!(
        out.trim_end().ends_with("errno=EAGAIN"),
        "fork bomb: {out} {}",
        text(&o.stderr)
    );
    out.split_whitespace()
        .find_map(|w| w.strip_prefix("forks="))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no fork count: {out}"))
}

#[test]
fn exhaustion_fork_bomb_stops_at_pids_limit() {
    let t = "exhaustion_fork_bomb_stops_at_pids_limit";
    if !ready(t) {
        return;
    }
    let start = Instant::now();
    let s = Sandbox::new(&limits_policy("pids = 64\nmemory = \"256MiB\""));
    let o = s.run(&["/bin/probe", "forkbomb"]);
    assert_exit(&o, 1);
    let n = forks(&o);
    eprintln!("pids = 64: {n} forks");
    // The init plus its children never exceed 64 processes.
    assert!((32..64).contains(&n), "pids = 64 allowed {n} forks");
    // Counterpart: a larger limit lets more through, so the limit stopped it.
    let s = Sandbox::new(&limits_policy("pids = 128\nmemory = \"256MiB\""));
    let o = s.run(&["/bin/probe", "forkbomb"]);
    assert_exit(&o, 1);
    let m = forks(&o);
    eprintln!("pids = 128: {m} forks");
    assert!((64..128).contains(&m), "pids = 128 allowed {m} forks");
    assert!(start.elapsed() < Duration::from_secs(120), "host sluggish");
}

#[test]
fn exhaustion_memory_bomb_is_oom_killed_and_reported() {
    let t = "exhaustion_memory_bomb_is_oom_killed_and_reported";
    let Some(s) = sandbox(t, &limits_policy("memory = \"64MiB\"\npids = 64")) else {
        return;
    };
    // Counterpart: well under the limit.
    let o = s.run(&["/bin/probe", "membomb", "16"]);
    assert_exit(&o, 0);
    assert_eq!(text(&o.stdout).trim(), "ok");

    let id = unique_id("esc-oom");
    let _c = Cleanup::new(&s.rt, &id);
    let log = s.host.path().join("oom.json");
    let g = ["--log", log.to_str().unwrap(), "--log-format", "json"];
    let o = output_timeout(
        &mut s.run_cmd(&id, &g, &[], &["/bin/probe", "membomb", "1024"]),
        RUN_LIMIT,
    );
    assert_exit(&o, 137);
    let lines = warn_lines_with(&log, &id, "oom");
    eprintln!("oom report: {lines:?}");
    assert!(
        !lines.is_empty(),
        "no warn log line with \"oom\" and the container id; log:\n{}",
        fs::read_to_string(&log).unwrap_or_default()
    );
}

/// On cgroup v1 the kernel charges TCP buffers to a container only under a
/// `memory.kmem.tcp` limit: a red team's 64 MiB container held 262 MiB of
/// socket memory. A policy's memory limit is its TCP limit too; a
/// container without one keeps the kernel's unlimited.
#[test]
fn a_policys_memory_limit_bounds_tcp_buffers_on_cgroup_v1() {
    let t = "a_policys_memory_limit_bounds_tcp_buffers_on_cgroup_v1";
    let Some(s) = sandbox(t, &limits_policy("memory = \"64MiB\"\npids = 64")) else {
        return;
    };
    if !Path::new("/sys/fs/cgroup/memory/memory.kmem.tcp.limit_in_bytes").exists() {
        skip(
            t,
            "no cgroup v1 memory.kmem.tcp here (cgroup v2 charges socket memory to memory.max)",
        );
        return;
    }
    let tcp_limit = |b: &Bundle, id: &str| {
        let _c = Cleanup::new(&s.rt, id);
        b.edit(|c| c["process"]["args"] = serde_json::json!(["/bin/sleep", "30"]));
        s.rt.create_and_start(b, id);
        let file = format!("/sys/fs/cgroup/memory/sandboy/{id}/memory.kmem.tcp.limit_in_bytes");
        fs::read_to_string(&file).unwrap_or_else(|e| panic!("{file}: {e}"))
    };
    let id = unique_id("esc-tcp");
    assert_eq!(tcp_limit(&s.bundle, &id).trim(), (64u64 << 20).to_string());
    let plain = Bundle::busybox(&["/bin/true"]);
    let id = unique_id("esc-tcp-plain");
    let unlimited: u64 = tcp_limit(&plain, &id).trim().parse().unwrap();
    assert!(unlimited > 1 << 60, "{unlimited}");
}

fn timeout_log_ok(log: &Path, id: &str) {
    assert!(
        !warn_lines_with(log, id, "timeout").is_empty(),
        "no warn log line with \"timeout\" and the id; log:\n{}",
        fs::read_to_string(log).unwrap_or_default()
    );
}

#[test]
fn exhaustion_cpu_spin_is_killed_at_timeout_run_and_detached() {
    let t = "exhaustion_cpu_spin_is_killed_at_timeout_run_and_detached";
    let Some(s) = sandbox(t, &limits_policy("timeout = \"2s\"\npids = 16")) else {
        return;
    };
    let log = s.host.path().join("timeout.json");
    let g = ["--log", log.to_str().unwrap(), "--log-format", "json"];

    // Counterpart: a payload that ends in time is not killed nor reported.
    let id = unique_id("esc-quick");
    let _c0 = Cleanup::new(&s.rt, &id);
    let o = output_timeout(&mut s.run_cmd(&id, &g, &[], &["/bin/true"]), RUN_LIMIT);
    assert_exit(&o, 0);
    std::thread::sleep(Duration::from_millis(2500));
    assert!(
        warn_lines_with(&log, &id, "timeout").is_empty(),
        "quick payload reported as timed out"
    );

    // Foreground run.
    let id = unique_id("esc-spin");
    let _c1 = Cleanup::new(&s.rt, &id);
    let start = Instant::now();
    let o = output_timeout(
        &mut s.run_cmd(&id, &g, &[], &["/bin/probe", "spin"]),
        RUN_LIMIT,
    );
    assert_exit(&o, 137);
    let took = start.elapsed();
    assert!(
        took >= Duration::from_millis(1900) && took < Duration::from_secs(15),
        "{took:?}"
    );
    timeout_log_ok(&log, &id);

    // Detached run: the watcher outlives `run -d`.
    let id = unique_id("esc-spin-d");
    let _c2 = Cleanup::new(&s.rt, &id);
    let o = output_timeout(
        &mut s.run_cmd(&id, &g, &["--detach"], &["/bin/probe", "spin"]),
        RUN_LIMIT,
    );
    assert_exit(&o, 0);
    let start = Instant::now();
    loop {
        let st = s.rt.run(&["state", &id]);
        assert!(st.status.success(), "state: {}", text(&st.stderr));
        let v: serde_json::Value = serde_json::from_slice(&st.stdout).unwrap();
        if v["status"] == "stopped" {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(12),
            "detached spinner still {}",
            v["status"]
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    timeout_log_ok(&log, &id);
}

#[test]
fn exec_into_a_container_is_as_confined_as_its_init() {
    // libcontainer rebuilds an exec'd process's spec without linux.seccomp;
    // sandboy must still apply the container's profile (and its Landlock
    // ruleset) to it.
    let t = "exec_into_a_container_is_as_confined_as_its_init";
    let Some(s) = sandbox(t, &syscall_policy("errno", "[]")) else {
        return;
    };
    let id = unique_id("esc-exec");
    let _c = s.sleeper(&id);
    for name in DENIED {
        let o = s.rt.run(&["exec", &id, "/bin/probe", "syscall", name]);
        assert_eq!(
            text(&o.stdout).trim(),
            "errno=EPERM",
            "exec {name}: {}",
            text(&o.stderr)
        );
    }
    // Counterpart: an allowed call from the same exec'd process works.
    let o =
        s.rt.run(&["exec", &id, "/bin/probe", "syscall", "personality"]);
    assert_eq!(text(&o.stdout).trim(), "ok", "{}", text(&o.stderr));
    // The --process form gets the same confinement.
    let pf = s.host.path().join("process.json");
    fs::write(
        &pf,
        serde_json::json!({"args": ["/bin/probe", "syscall", "ptrace"], "cwd": "/",
            "user": {"uid": 0, "gid": 0}, "env": ["PATH=/bin"], "noNewPrivileges": true})
        .to_string(),
    )
    .unwrap();
    let o = s.rt.run(&["exec", "--process", pf.to_str().unwrap(), &id]);
    assert_eq!(text(&o.stdout).trim(), "errno=EPERM", "{}", text(&o.stderr));
}

// ---------------------------------------------------------------------------
// Issue 14: the ways around the policy that a deny list of names missed

fn with_syscalls(policy: &str, syscalls: &str) -> String {
    format!("{policy}\n[syscalls]\n{syscalls}\n")
}

/// Runs `probe ARGS` lines in one container (a busybox shell loop) and
/// returns each line's verdict, in order.
fn probe_table(s: &Sandbox, cases: &[&str]) -> Vec<String> {
    let script: String = cases
        .iter()
        .map(|c| format!("/bin/probe {c} 2>&1 | head -1; "))
        .collect();
    let o = s.run(&["/bin/sh", "-c", &script]);
    assert_exit(&o, 0);
    let rows: Vec<String> = text(&o.stdout)
        .lines()
        .map(|l| l.trim().to_owned())
        .collect();
    assert_eq!(
        rows.len(),
        cases.len(),
        "{}\n{}",
        text(&o.stdout),
        text(&o.stderr)
    );
    rows
}

#[track_caller]
fn expect_table(s: &Sandbox, cases: &[(&str, &str)]) {
    let args: Vec<&str> = cases.iter().map(|c| c.0).collect();
    let got = probe_table(s, &args);
    let want: Vec<&str> = cases.iter().map(|c| c.1).collect();
    let pairs: Vec<String> = args
        .iter()
        .zip(&got)
        .zip(&want)
        .filter(|((_, g), w)| g != *w)
        .map(|((a, g), w)| format!("probe {a}: got {g:?}, want {w:?}"))
        .collect();
    assert!(pairs.is_empty(), "{}", pairs.join("\n"));
}

#[test]
fn clone_with_namespace_flags_is_refused_plain_clone_and_fork_work() {
    let t = "clone_with_namespace_flags_is_refused_plain_clone_and_fork_work";
    if !ready(t) {
        return;
    }
    let s = Sandbox::generated(FS_POLICY);
    expect_table(
        &s,
        &[
            // CLONE_NEWUSER needs no privilege: only the guard refuses it.
            ("clone 10000000", "errno=EPERM"),
            ("clone 10020000", "errno=EPERM"),
            ("clone 50000000", "errno=EPERM"),
            ("clone3 0", "errno=ENOSYS"),
            ("clone3 10000000", "errno=ENOSYS"),
            ("syscall unshare-user", "errno=EPERM"),
            // Counterparts: clone without CLONE_NEW*, threads' flags, fork.
            ("clone 0", "ok"),
            ("clone 400", "ok"), // CLONE_FILES
            ("fork", "ok"),
        ],
    );
    // The guard's opt-in: the same user namespace is then made.
    let s = Sandbox::generated(&with_syscalls(FS_POLICY, r#"allow = ["clone-namespaces"]"#));
    expect_table(
        &s,
        &[
            ("clone 10000000", "ok"),
            ("clone3 10000000", "ok"),
            ("syscall unshare-user", "errno=EPERM"),
        ],
    );
    // action = "kill": the policy's action applies to the flags rule.
    let s = Sandbox::generated(&with_syscalls(FS_POLICY, r#"action = "kill""#));
    let o = s.run(&["/bin/probe", "clone", "10000000"]);
    assert_exit(&o, 128 + libc::SIGSYS);
    let o = s.run(&["/bin/probe", "clone", "0"]);
    assert_exit(&o, 0);
}

#[test]
fn setuid_modes_are_refused_and_a_host_user_gets_no_privilege() {
    use std::os::unix::fs::PermissionsExt;
    let t = "setuid_modes_are_refused_and_a_host_user_gets_no_privilege";
    if !ready(t) {
        return;
    }
    let s = Sandbox::generated(FS_POLICY);
    expect_table(
        &s,
        &[
            ("create-mode /work/suid 4755", "errno=EPERM"),
            ("create-mode /work/sgid 2755", "errno=EPERM"),
            ("create-mode /work/plain 0755", "ok"),
            ("openat2 /data/f", "errno=ENOSYS"),
            ("read /data/f", "ok"),
        ],
    );
    // The plant: a copy of the probe in the host-backed write path.
    let o = s.sh(
        "cp /bin/probe /work/p && /bin/probe chmod /work/p 4755; /bin/probe chmod /work/p 2755; \
         /bin/probe chmod /work/p 6755; /bin/probe chmod /work/p 0755",
    );
    assert_exit(&o, 0);
    assert_eq!(
        text(&o.stdout).lines().collect::<Vec<_>>(),
        ["errno=EPERM", "errno=EPERM", "errno=EPERM", "ok"],
        "{}",
        text(&o.stderr)
    );
    let planted = s.work().join("p");
    let mode = fs::metadata(&planted).unwrap().permissions().mode();
    assert_eq!(mode & 0o7777, 0o755, "planted mode {mode:o}");
    // From the host: an unprivileged host user runs the planted file.
    let as_nobody = |p: &Path| {
        let o = capture(Command::new(p).arg("euid").uid(65534).gid(65534));
        text(&o.stdout).trim().to_owned()
    };
    assert_eq!(as_nobody(&planted), "euid=65534");
    // Counterpart: the same file made setuid-root by the host itself does
    // give the host user euid 0, so the check above can see a plant.
    let control = s.work().join("control");
    fs::copy(&planted, &control).unwrap();
    fs::set_permissions(&control, fs::Permissions::from_mode(0o4755)).unwrap();
    assert_eq!(as_nobody(&control), "euid=0");
}

#[test]
fn rw_mount_outside_write_paths_is_read_only_metadata_included() {
    let t = "rw_mount_outside_write_paths_is_read_only_metadata_included";
    if !ready(t) {
        return;
    }
    let s = Sandbox::generated(FS_POLICY);
    let o = s.sh(
        "/bin/probe chmod /outside/target 0600; /bin/probe write /outside/target; \
         touch /outside/target 2>&1; echo touch=$?; \
         /bin/probe chmod /work/file 0600; touch /work/file; echo touch=$?",
    );
    assert_exit(&o, 0);
    let out = text(&o.stdout);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "errno=EROFS", "{out}");
    assert_eq!(lines[1], "errno=EROFS", "{out}");
    assert!(lines.contains(&"touch=1"), "{out}");
    assert_eq!(&lines[lines.len() - 2..], ["ok", "touch=0"], "{out}");
    use std::os::unix::fs::PermissionsExt;
    let m = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_ne!(m(&s.outside().join("target")), 0o600);
    assert_eq!(m(&s.work().join("file")), 0o600);
}

/// A container given CAP_SYS_ADMIN (an engine's `--cap-add SYS_ADMIN`)
/// could clear a read-only bind's RDONLY with mount_setattr(2), which
/// neither the `mount` deny nor Landlock sees, and then chmod the host's
/// files the bind shows (Landlock does not handle metadata writes). The
/// default deny list refuses mount_setattr; the write path's chmod is the
/// allowed counterpart.
#[test]
fn mount_attributes_stay_with_cap_sys_admin() {
    let t = "mount_attributes_stay_with_cap_sys_admin";
    if !ready(t) {
        return;
    }
    let s = Sandbox::generated(FS_POLICY);
    s.bundle.edit(|c| {
        for set in c["process"]["capabilities"]
            .as_object_mut()
            .unwrap()
            .values_mut()
        {
            set.as_array_mut().unwrap().push("CAP_SYS_ADMIN".into());
        }
    });
    let o = s.sh(
        "/bin/probe syscall mount_setattr:/outside; /bin/probe syscall open_tree_attr:/outside; \
         /bin/probe chmod /outside/target 0777; /bin/probe chmod /work/file 0600",
    );
    // open_tree_attr (Linux 6.15) clears the flag on a detached copy: a red
    // team chmodded the host's file through it.
    assert_eq!(
        text(&o.stdout).lines().collect::<Vec<_>>(),
        ["errno=EPERM", "errno=EPERM", "errno=EROFS", "ok"],
        "{}",
        text(&o.stderr)
    );
    use std::os::unix::fs::PermissionsExt;
    let m = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(m(&s.outside().join("target")), 0o644);
    assert_eq!(m(&s.work().join("file")), 0o600);
}

#[test]
fn code_outside_exec_paths_cannot_be_mapped_or_run() {
    let t = "code_outside_exec_paths_cannot_be_mapped_or_run";
    if !ready(t) {
        return;
    }
    let s = Sandbox::generated(FS_POLICY);
    let o = s.sh(
        "cp /bin/probe /tmp/p && cp /bin/probe /work/p && \
         /bin/probe mmap-exec /tmp/p; /bin/probe mmap-exec /work/p; /bin/probe mmap-exec /bin/probe; \
         /bin/probe memfd-exec /bin/probe exec; /bin/probe memfd-exec /bin/probe plain; \
         /bin/probe exec /tmp/p",
    );
    assert_exit(&o, 1); // the last attempt's refusal
    assert_eq!(
        text(&o.stdout).lines().collect::<Vec<_>>(),
        [
            "errno=EPERM",  // noexec tmpfs
            "errno=EPERM",  // noexec bind
            "ok",           // counterpart: an exec path
            "errno=EPERM",  // memfd_create(MFD_EXEC) refused
            "errno=EACCES", // vm.memfd_noexec = 2: a memfd never executes
            "errno=EACCES"  // Landlock: /tmp is not an exec path
        ],
        "{}",
        text(&o.stderr)
    );
    // Counterpart: a write path that is also an exec path is not noexec.
    let s =
        Sandbox::generated(&FS_POLICY.replace(r#"exec = ["/bin"]"#, r#"exec = ["/bin", "/tmp"]"#));
    let o = s.sh("cp /bin/probe /tmp/p && /bin/probe mmap-exec /tmp/p; /tmp/p hello");
    assert_exit(&o, 0);
    assert_eq!(text(&o.stdout).lines().collect::<Vec<_>>(), ["ok", "hello"]);
}

/// Host network, TCP connect to `port` allowed, bind to none.
fn tcp_policy(port: u16, extra: &str) -> String {
    host_net_policy(
        "escape-14-net",
        &format!("connect = [{port}]\nbind = []\n{extra}"),
    )
}

#[test]
fn tcp_fast_open_mptcp_and_unbound_listen_are_refused() {
    let t = "tcp_fast_open_mptcp_and_unbound_listen_are_refused";
    if !ready(t) {
        return;
    }
    let listed = TcpListener::bind("127.0.0.1:0").unwrap();
    let unlisted = TcpListener::bind("127.0.0.1:0").unwrap();
    let lp = listed.local_addr().unwrap().port();
    let up = unlisted.local_addr().unwrap().port().to_string();
    let s = Sandbox::generated(&tcp_policy(lp, ""));
    let lps = lp.to_string();
    expect_table(
        &s,
        &[
            (&format!("fastopen {up}"), "errno=EOPNOTSUPP"),
            ("tfo-connect", "errno=ENOPROTOOPT"),
            (&format!("mptcp {up}"), "errno=EPROTONOSUPPORT"),
            ("listen-unbound", "errno=EACCES"),
            (&format!("connect {up}"), "errno=EACCES"),
            // Counterpart: plain TCP to the listed port.
            (&format!("connect {lps}"), "ok"),
        ],
    );
    // No [net] rule on the host network means no network: Landlock
    // refuses TCP, and the guards close what its hooks do not see (a red
    // team's MPTCP connect went through this policy), UDP, vsock and
    // sock_diag included.
    let ruleless =
        "version = 1\nname = \"open-net\"\n[fs]\nexec = [\"/bin\"]\n[net]\nnamespace = \"host\"\n";
    let send = format!("udp-send {}", lp);
    expect_table(
        &Sandbox::generated(ruleless),
        &[
            (&format!("mptcp {up}"), "errno=EPROTONOSUPPORT"),
            (&format!("fastopen {up}"), "errno=EOPNOTSUPP"),
            ("tfo-connect", "errno=ENOPROTOOPT"),
            ("listen-unbound", "errno=EACCES"),
            (&format!("connect {up}"), "errno=EACCES"),
            (&send, "errno=EPERM"),
            ("socket 40 1 0", "errno=EPERM"), // AF_VSOCK
            ("socket 16 3 4", "errno=EPERM"), // NETLINK_SOCK_DIAG
        ],
    );
    // Counterpart: with Landlock off nothing restricts the host network,
    // and the same primitives reach the unlisted port.
    let open = Sandbox::generated(&ruleless.replace("[fs]", "[landlock]\nmode = \"off\"\n[fs]"));
    expect_table(
        &open,
        &[
            (&format!("mptcp {up}"), "ok"),
            ("tfo-connect", "ok"),
            ("listen-unbound", "ok"),
            (&format!("connect {up}"), "ok"),
        ],
    );
}

#[test]
fn socket_families_and_udp_need_the_policy() {
    let t = "socket_families_and_udp_need_the_policy";
    if !ready(t) {
        return;
    }
    let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let uport = udp.local_addr().unwrap().port();
    let tcp = TcpListener::bind("127.0.0.1:0").unwrap();
    let tport = tcp.local_addr().unwrap().port();
    let cases_denied: &[(&str, &str)] = &[
        ("socket 40 1 0", "errno=EPERM"),      // AF_VSOCK
        ("socket 17 3 0", "errno=EPERM"),      // AF_PACKET
        ("socket 2 3 1", "errno=EPERM"),       // raw ICMP
        ("socket 2 524291 1", "errno=EPERM"),  // SOCK_RAW | SOCK_CLOEXEC
        ("socket 2 2 1", "errno=EPERM"),       // ICMP datagram (ping)
        ("socket 2 1 132", "errno=EPERM"),     // SCTP
        ("socket 16 3 4", "errno=EPERM"),      // NETLINK_SOCK_DIAG
        ("socket 31 1 0", "errno=EPERM"),      // AF_BLUETOOTH
        ("socket 2 2 0", "errno=EPERM"),       // UDP
        ("socket 10 526338 0", "errno=EPERM"), // UDP6, NONBLOCK | CLOEXEC
    ];
    let allowed: &[(&str, &str)] = &[
        ("socket 16 3 0", "ok"), // NETLINK_ROUTE (getaddrinfo, ip)
        ("socket 2 1 0", "ok"),  // TCP
        ("socket 10 1 6", "ok"), // TCP6
        ("socket 1 1 0", "ok"),  // AF_UNIX
    ];
    let s = Sandbox::generated(&tcp_policy(tport, ""));
    let mut cases = cases_denied.to_vec();
    cases.extend_from_slice(allowed);
    let send = format!("udp-send {uport}");
    cases.push((&send, "errno=EPERM"));
    expect_table(&s, &cases);
    // Own network namespace: vsock is not namespaced, so still refused.
    let none = Sandbox::generated(
        "version = 1\nname = \"none-net\"\n[fs]\nexec = [\"/bin\"]\n[net]\nnamespace = \"none\"\n",
    );
    expect_table(
        &none,
        &[("socket 40 1 0", "errno=EPERM"), ("socket 2 1 0", "ok")],
    );
    // `udp = [port]` opens UDP (all ports: seccomp cannot see them).
    let s = Sandbox::generated(&tcp_policy(tport, &format!("udp = [{uport}]")));
    expect_table(
        &s,
        &[
            (&send, "ok"),
            ("socket 2 2 0", "ok"),
            ("socket 2 2 1", "errno=EPERM"),
        ],
    );
    let mut buf = [0u8; 4];
    udp.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    assert_eq!(udp.recv(&mut buf).unwrap(), 1, "datagram not received");
    // `[syscalls] allow` opens a family group.
    let s = Sandbox::generated(&format!(
        "{}\n[syscalls]\nallow = [\"socket-netlink\"]\n",
        tcp_policy(tport, "")
    ));
    expect_table(
        &s,
        &[("socket 16 3 4", "ok"), ("socket 40 1 0", "errno=EPERM")],
    );
}

#[test]
fn mount_through_image_symlink_into_proc_is_refused() {
    let t = "mount_through_image_symlink_into_proc_is_refused";
    if !ready(t) {
        return;
    }
    let s = Sandbox::generated(FS_POLICY);
    let rootfs = s.bundle.rootfs();
    std::os::unix::fs::symlink("/proc/sys/kernel", rootfs.join("evil")).unwrap();
    std::os::unix::fs::symlink("../data", rootfs.join("fine")).unwrap();
    let work = s.work();
    let add_mount = |dest: &str| {
        s.bundle.edit(|c| {
            c["mounts"].as_array_mut().unwrap().push(serde_json::json!({
                "destination": dest, "type": "bind", "source": work, "options": ["rbind", "ro"]
            }))
        })
    };
    add_mount("/evil");
    let id = unique_id("esc-procmnt");
    let _c = Cleanup::new(&s.rt, &id);
    let o = output_timeout(&mut s.run_cmd(&id, &[], &[], &["/bin/true"]), RUN_LIMIT);
    assert_exit(&o, 2);
    let err = text(&o.stderr);
    assert!(err.contains("/evil") && err.contains("/proc"), "{err}");
    assert!(!s.rt.root.path().join(&id).exists(), "state dir left");
    assert_eq!(cgroups_named(&id), Vec::<PathBuf>::new(), "cgroups left");
    // Counterpart: a symlink that stays out of /proc is followed.
    s.bundle.edit(|c| {
        c["mounts"].as_array_mut().unwrap().pop();
    });
    add_mount("/fine");
    let o = s.run(&["/bin/cat", "/data/file"]);
    assert_exit(&o, 0);
    assert_eq!(text(&o.stdout), "file-content\n");
}

// ---------------------------------------------------------------------------
// Issue 14: disk caps and what the log says

/// /tmp is a container-own tmpfs write path; `limits` goes into [limits].
fn disk_policy(limits: &str) -> String {
    format!(
        r#"
version = 1
name = "escape-disk"
[landlock]
mode = "enforce"
[fs]
exec = ["/bin"]
write = ["/tmp"]
[limits]
{limits}
"#
    )
}

/// `files=N errno=…` → (N, the errno verdict).
fn files_made(o: &Output) -> (u64, String) {
    let out = text(&o.stdout);
    let rest = out
        .trim()
        .strip_prefix("files=")
        .unwrap_or_else(|| panic!("{out}"));
    let (n, verdict) = rest.split_once(' ').unwrap_or_else(|| panic!("{out}"));
    (n.parse().unwrap(), verdict.to_owned())
}

#[test]
fn write_path_tmpfs_is_capped_by_disk_and_inodes() {
    let t = "write_path_tmpfs_is_capped_by_disk_and_inodes";
    if !ready(t) {
        return;
    }
    let s = Sandbox::generated(&disk_policy("disk = \"8MiB\"\ninodes = 64"));
    s.expect(&["fallocate", "/tmp/small", "4"], "ok");
    s.expect(&["fallocate", "/tmp/big", "64"], "errno=ENOSPC");
    let o = s.run(&["/bin/probe", "inodes", "/tmp"]);
    assert_exit(&o, 1);
    let (n, verdict) = files_made(&o);
    assert_eq!(verdict, "errno=ENOSPC");
    assert!((60..=64).contains(&n), "files before the inode cap: {n}");
    // Without [limits] disk the default (1 GiB) holds: 64 MiB fits, 2 GiB not.
    let s = Sandbox::generated(&disk_policy(""));
    s.expect(&["fallocate", "/tmp/fits", "64"], "ok");
    s.expect(&["fallocate", "/tmp/big", "2048"], "errno=ENOSPC");
}

#[test]
fn sigsys_kills_and_refused_execs_are_warn_events_with_the_id() {
    let t = "sigsys_kills_and_refused_execs_are_warn_events_with_the_id";
    let Some(s) = sandbox(t, &syscall_policy("kill", "[]")) else {
        return;
    };
    let log = s.host.path().join("log.json");
    let g = ["--log", log.to_str().unwrap(), "--log-format", "json"];
    let run = |args: &[&str]| {
        let id = unique_id("esc-log");
        let _c = Cleanup::new(&s.rt, &id);
        let o = output_timeout(&mut s.run_cmd(&id, &g, &[], args), RUN_LIMIT);
        let sigsys = !warn_lines_with(&log, &id, "sigsys").is_empty();
        let exec = !warn_lines_with(&log, &id, "execve").is_empty();
        (o.status.code(), sigsys, exec)
    };
    assert_eq!(
        run(&["/bin/probe", "syscall", "ptrace"]),
        (Some(128 + libc::SIGSYS), true, false)
    );
    assert_eq!(
        run(&["/bin/probe", "syscall", "personality"]),
        (Some(0), false, false)
    );
    // /data is in no exec list: execve refused, 126; /bin/true runs.
    assert_eq!(
        run(&["/data/probe-copy", "hello"]),
        (Some(126), false, true)
    );
    assert_eq!(run(&["/bin/true"]), (Some(0), false, false));
}

// ---------------------------------------------------------------------------
// Container root is not host root (issue 14)

/// A policy binding the host's `outside/` read-only at /outside.
const USERNS_POLICY: &str = r#"
version = 1
name = "escape-userns"
[fs]
read = ["/etc", "/proc", "/outside"]
exec = ["/bin"]
write = ["/tmp"]
[[mount]]
source = "./outside"
destination = "/outside"
options = ["rbind", "ro"]
[net]
namespace = "none"
"#;

/// Make `outside/root-only` (mode 0600, host root's) in `s`'s host dir.
fn root_only_file(s: &Sandbox) {
    use std::os::unix::fs::PermissionsExt;
    let private = s.outside().join("root-only");
    fs::write(&private, "host root only\n").unwrap();
    fs::set_permissions(&private, fs::Permissions::from_mode(0o600)).unwrap();
}

#[test]
fn generated_bundle_runs_container_root_as_an_unused_host_id() {
    let t = "generated_bundle_runs_container_root_as_an_unused_host_id";
    if !ready(t) {
        return;
    }
    // A host file only host root may read, in a directory bound into both.
    let mapped = Sandbox::generated(USERNS_POLICY);
    root_only_file(&mapped);

    // Inside, the process is uid 0 of a user namespace whose ids are host
    // ids 1879048192.. (nobody's): the host's root-only file is refused by
    // its owner, a world-readable one next to it is read.
    let o = mapped.sh("cat /proc/self/uid_map /proc/self/gid_map; id -u");
    assert_exit(&o, 0);
    let maps: Vec<Vec<String>> = text(&o.stdout)
        .lines()
        .map(|l| l.split_whitespace().map(str::to_owned).collect())
        .collect();
    assert_eq!(
        maps,
        [
            vec!["0", "1879048192", "65536"],
            vec!["0", "1879048192", "65536"],
            vec!["0"],
        ]
    );
    mapped.expect(&["read", "/outside/root-only"], "errno=EACCES");
    mapped.expect(&["read", "/outside/target"], "ok");

    // On the host the container's process is that unused id, not root.
    let id = unique_id("esc-userns");
    let _c = mapped.sleeper(&id);
    let pid = mapped.rt.state(&id)["pid"].as_i64().unwrap();
    let status = fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let uid = status.lines().find(|l| l.starts_with("Uid:")).unwrap();
    assert_eq!(uid.split_whitespace().nth(1), Some("1879048192"), "{uid}");

    // The allowed counterpart: with `userns = false` the same container
    // is host root, and reads the root-only file.
    let host_ids = Sandbox::generated_with(USERNS_POLICY, "userns = false\n");
    root_only_file(&host_ids);
    host_ids.expect(&["read", "/outside/root-only"], "ok");
}

/// A policy named `name` with the `[fs]` lines `fs` and the host's
/// `work/` bound read-write at /work (the shared checkout of these tests).
fn work_policy(name: &str, fs: &str) -> String {
    format!(
        "version = 1\nname = \"{name}\"\n[fs]\n{fs}\n[[mount]]\nsource = \"./work\"\ndestination = \"/work\"\noptions = [\"rbind\", \"rw\"]\n"
    )
}

// ---------------------------------------------------------------------------
// A write subpath's bind source through a planted symlink (red team)

fn subpath_policy() -> String {
    work_policy(
        "escape-subpath",
        "read = [\"/work\"]\nexec = [\"/bin\"]\nwrite = [\"/tmp\", \"/work/out\"]",
    )
}

#[test]
fn a_subpath_bind_never_follows_a_link_planted_in_its_checkout() {
    let t = "a_subpath_bind_never_follows_a_link_planted_in_its_checkout";
    if !ready(t) {
        return;
    }
    let s = Sandbox::generated(&subpath_policy());
    let out = s.work().join("out");
    fs::create_dir_all(&out).unwrap();
    // Generated again now that the host directory exists: spec-gen binds
    // it (without one, a tmpfs holds the write path).
    s.bundle.generate(&s.host.path().join("owen.policy.toml"));
    // Allowed: the real subdirectory is bound writable, and only it.
    let o = s.sh("echo made > /work/out/f && cat /work/out/f; echo x > /work/file; echo rc=$?");
    assert_exit(&o, 0);
    assert_eq!(text(&o.stdout).lines().next(), Some("made"));
    assert_eq!(fs::read_to_string(out.join("f")).unwrap(), "made\n");
    assert_eq!(
        fs::read_to_string(s.work().join("file")).unwrap(),
        "file-content\n"
    );

    // Refused: an earlier step (or the repository) made `out` a link to a
    // host directory outside every mount; create names the link, exit 2,
    // and nothing is written there.
    fs::remove_dir_all(&out).unwrap();
    std::os::unix::fs::symlink(s.outside(), &out).unwrap();
    let o = s.sh("echo pwned > /work/out/target");
    assert_exit(&o, 2);
    assert!(
        text(&o.stderr).contains("goes through a symlink below"),
        "{}",
        text(&o.stderr)
    );
    assert_eq!(
        fs::read_to_string(s.outside().join("target")).unwrap(),
        "target-content\n"
    );
}

// ---------------------------------------------------------------------------
// Host mounts nested below a bind's source (red team)

/// The same bundle as a hand-written config.json would have it: the
/// recursive mount options spec-gen adds (`rro`, `rnosuid`, …) taken out,
/// so only the runtime's own restriction of a policy container's binds
/// stands between the step and the nested mount.
fn without_recursive_options(s: &Sandbox) {
    s.bundle.edit(|c| {
        for m in c["mounts"].as_array_mut().unwrap() {
            if let Some(opts) = m["options"].as_array_mut() {
                opts.retain(|o| {
                    !matches!(o.as_str(), Some("rro" | "rnosuid" | "rnodev" | "rnoexec"))
                });
            }
        }
    });
}

/// A host mount nested in a read-only bind's source (a cache volume, a
/// tmpfs in the checkout) was writable inside: libcontainer makes only a
/// bind's top mount read-only, Landlock does not govern chmod or utimes,
/// and with the writable /work/out there is no user namespace, so the
/// step chmodded and touched host root's file. Refused (EROFS) as spec-gen
/// renders the bind and as a hand-written config.json has it; reading the
/// nested file and writing /work/out are the allowed counterparts.
#[test]
fn a_read_only_bind_is_read_only_in_host_mounts_nested_below_it() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let t = "a_read_only_bind_is_read_only_in_host_mounts_nested_below_it";
    if !ready(t) {
        return;
    }
    let s = Sandbox::generated(&subpath_policy());
    fs::create_dir_all(s.work().join("out")).unwrap();
    fs::write(s.work().join("out/f"), "out\n").unwrap();
    // Generated again now that work/out exists: spec-gen binds it writable.
    s.bundle.generate(&s.host.path().join("owen.policy.toml"));
    let _cache = TmpfsMount::new(&s.work().join("cache"));
    let secret = s.work().join("cache/secret");
    fs::write(&secret, "host root only\n").unwrap();
    fs::set_permissions(&secret, fs::Permissions::from_mode(0o600)).unwrap();
    let before = fs::metadata(&secret).unwrap();
    for hand_written in [false, true] {
        if hand_written {
            without_recursive_options(&s);
        }
        let o = s.sh(
            "/bin/probe chmod /work/cache/secret 0666; /bin/probe utime /work/cache/secret; \
             /bin/probe read /work/cache/secret; /bin/probe write /work/out/f; \
             /bin/probe chmod /work/out/f 0600",
        );
        assert_eq!(
            text(&o.stdout).lines().collect::<Vec<_>>(),
            ["errno=EROFS", "errno=EROFS", "ok", "ok", "ok"],
            "hand-written: {hand_written}; {}",
            text(&o.stderr)
        );
        let after = fs::metadata(&secret).unwrap();
        assert_eq!(after.mode(), before.mode(), "hand-written: {hand_written}");
        assert_eq!(
            after.mtime(),
            before.mtime(),
            "hand-written: {hand_written}"
        );
        let out = s.work().join("out/f");
        assert_eq!(fs::metadata(&out).unwrap().mode() & 0o777, 0o600);
        fs::set_permissions(&out, fs::Permissions::from_mode(0o644)).unwrap();
    }
}

/// A host mount made below a read-only bind's source after the container
/// started: under the default (`rslave`) propagation it arrived with the
/// host's own flags, past `rro`, and container root (host root: the
/// writable bind leaves no user namespace) chmodded a host root file on it.
/// A policy container's mounts are private, so it never arrives; the
/// write path and the bind's own files are the allowed counterparts.
#[test]
fn a_host_mount_made_after_start_never_reaches_a_policy_container() {
    use std::os::unix::fs::PermissionsExt;
    let t = "a_host_mount_made_after_start_never_reaches_a_policy_container";
    if !ready(t) {
        return;
    }
    let s = Sandbox::generated(&subpath_policy());
    // The source is a shared mount, as every mount is on a systemd host.
    let _work = TmpfsMount::new(&s.work());
    let shared = Command::new("mount")
        .arg("--make-shared")
        .arg(s.work())
        .status()
        .unwrap();
    assert!(shared.success(), "mount --make-shared");
    fs::create_dir_all(s.work().join("out")).unwrap();
    fs::create_dir_all(s.work().join("late")).unwrap();
    fs::write(s.work().join("out/f"), "out\n").unwrap();
    s.bundle.generate(&s.host.path().join("owen.policy.toml"));
    let id = unique_id("esc-late");
    let _c = s.sleeper(&id);
    let _late = TmpfsMount::new(&s.work().join("late"));
    let secret = s.work().join("late/secret");
    fs::write(&secret, "host root only\n").unwrap();
    fs::set_permissions(&secret, fs::Permissions::from_mode(0o600)).unwrap();
    let probe = |args: &[&str]| {
        let o = output_timeout(
            s.rt.cmd().args(["exec", &id, "/bin/probe"]).args(args),
            RUN_LIMIT,
        );
        text(&o.stdout).trim().to_string()
    };
    let chmod = probe(&["chmod", "/work/late/secret", "0666"]);
    assert!(
        chmod.starts_with("errno="),
        "chmod of the late mount: {chmod}"
    );
    assert_eq!(
        fs::metadata(&secret).unwrap().permissions().mode() & 0o777,
        0o600
    );
    assert_eq!(probe(&["write", "/work/out/f"]), "ok", "the write path");
    assert_eq!(
        probe(&["read", "/work/out/f"]),
        "ok",
        "the bind's own files"
    );
}

/// Below a writable bind a nested host mount kept exec (and suid, dev):
/// code a step put there could be mapped executable although the write
/// path is `noexec`. Refused as generated and hand-written; a policy that
/// lists the write path in `exec` runs the same file (the counterpart).
#[test]
fn a_host_mount_nested_below_a_noexec_write_path_is_noexec() {
    let t = "a_host_mount_nested_below_a_noexec_write_path_is_noexec";
    if !ready(t) {
        return;
    }
    let nested_probe = |s: &Sandbox| {
        let probe = probe_bin().expect("probe checked by ready()");
        fs::copy(probe, s.work().join("nested/p")).unwrap();
    };
    let s = Sandbox::generated(FS_POLICY);
    let _nested = TmpfsMount::new(&s.work().join("nested"));
    nested_probe(&s);
    for hand_written in [false, true] {
        if hand_written {
            without_recursive_options(&s);
        }
        let o = s.sh("/bin/probe mmap-exec /work/nested/p; /bin/probe mmap-exec /bin/probe");
        assert_eq!(
            text(&o.stdout).lines().collect::<Vec<_>>(),
            ["errno=EPERM", "ok"],
            "hand-written: {hand_written}; {}",
            text(&o.stderr)
        );
    }
    let runs =
        Sandbox::generated(&FS_POLICY.replace(r#"exec = ["/bin"]"#, r#"exec = ["/bin", "/work"]"#));
    let _nested = TmpfsMount::new(&runs.work().join("nested"));
    nested_probe(&runs);
    let o = runs.sh("/bin/probe mmap-exec /work/nested/p; /work/nested/p hello");
    assert_exit(&o, 0);
    assert_eq!(text(&o.stdout).lines().collect::<Vec<_>>(), ["ok", "hello"]);
}

// ---------------------------------------------------------------------------
// File capabilities and device nodes planted in a rw bind (red team)

fn plant_policy() -> String {
    work_policy(
        "escape-plant",
        "read = [\"/work\"]\nexec = [\"/bin\"]\nwrite = [\"/tmp\", \"/work\"]",
    )
}

/// The bundle with an engine's capability sets (podman's and
/// containerd's defaults hold CAP_SETFCAP and CAP_MKNOD), and its policy's
/// Landlock ruleset or none.
fn with_engine_caps(s: &Sandbox, policy: bool) {
    s.bundle.edit(|c| {
        let caps = serde_json::json!([
            "CAP_CHOWN",
            "CAP_DAC_OVERRIDE",
            "CAP_FOWNER",
            "CAP_SETFCAP",
            "CAP_MKNOD"
        ]);
        for set in ["bounding", "effective", "permitted"] {
            c["process"]["capabilities"][set] = caps.clone();
        }
        if !policy {
            c["annotations"]
                .as_object_mut()
                .unwrap()
                .remove("dev.sandboy.landlock");
        }
        // The host devices cgroup rule of an engine: any character device
        // may be made.
        c["linux"]["resources"]["devices"] =
            serde_json::json!([{"allow": true, "type": "c", "access": "m"}]);
    });
}

#[test]
fn a_policy_container_plants_no_file_capability_or_device_node() {
    let t = "a_policy_container_plants_no_file_capability_or_device_node";
    if !ready(t) {
        return;
    }
    let s = Sandbox::generated(&plant_policy());
    with_engine_caps(&s, true);
    fs::copy(probe_bin().unwrap(), s.work().join("tool")).unwrap();
    // Refused: the xattr that makes a file-capability binary, and a device
    // node host users could open (the bind's nosuid/nodev hold only inside).
    s.expect(&["setfcap", "/work/tool"], "errno=EPERM");
    s.expect(&["mknod-char", "/work/mem"], "errno=EPERM");
    assert!(!s.work().join("mem").exists());
    // Allowed: other xattrs and special files in the same bind.
    s.expect(&["setxattr", "/work/file"], "ok");
    s.expect(&["create", "/work/new"], "ok");
    // The same container without a policy (as runc runs it) keeps the
    // engine's capabilities: the refusal above is the policy's.
    let plain = Sandbox::generated(&plant_policy());
    with_engine_caps(&plain, false);
    fs::copy(probe_bin().unwrap(), plain.work().join("tool")).unwrap();
    plain.expect(&["setfcap", "/work/tool"], "ok");
}

/// The annotations `sandboy-spec-gen annotate --format yaml` prints for
/// the sandbox's policy, as an engine would pass them.
fn annotated(s: &Sandbox) -> serde_json::Map<String, serde_json::Value> {
    let o = capture(
        Command::new(spec_gen_bin())
            .args(["annotate", "--format", "yaml"])
            .arg(s.host.path().join("owen.policy.toml")),
    );
    assert_exit(&o, 0);
    text(&o.stdout)
        .lines()
        .filter_map(|l| l.strip_prefix("    ")?.split_once(": '"))
        .map(|(k, v)| {
            let v = v.strip_suffix('\'').unwrap().replace("''", "'");
            (k.to_owned(), serde_json::Value::String(v))
        })
        .collect()
}

#[test]
fn an_engines_container_keeps_the_whole_policy_given_as_annotations() {
    let t = "an_engines_container_keeps_the_whole_policy_given_as_annotations";
    if !ready(t) {
        return;
    }
    // plant_policy() with a hidden file.
    let policy = plant_policy().replacen(
        "write = [\"/tmp\", \"/work\"]\n",
        "write = [\"/tmp\", \"/work\"]\nhide = [\"/work/victim\"]\n",
        1,
    );
    let s = Sandbox::generated(&policy);
    let ann = annotated(&s);
    assert!(ann.contains_key("dev.sandboy.policy.text"), "{ann:?}");
    // The engine's spec: its own allow-all profile, the policy only as
    // annotations.
    let engine = |whole_policy: bool| {
        let mut ann = ann.clone();
        if !whole_policy {
            ann.remove("dev.sandboy.policy.text");
        }
        s.bundle.edit(|c| {
            c["linux"]["seccomp"] = serde_json::json!({"defaultAction": "SCMP_ACT_ALLOW"});
            c["annotations"] = serde_json::Value::Object(ann);
        });
    };
    fs::copy(probe_bin().unwrap(), s.work().join("tool")).unwrap();
    // Refused: the whole policy travels with the annotations, its seccomp
    // profile (the setuid-modes guard) installed after the engine's.
    engine(true);
    s.expect(&["chmod", "/work/tool", "4755"], "errno=EPERM");
    s.expect(&["chmod", "/work/tool", "0755"], "ok");
    // And its hide path: the victim reads empty, its neighbour does not.
    let o = s.sh("wc -c < /work/victim; wc -c < /work/file");
    let counts: Vec<String> = text(&o.stdout)
        .split_whitespace()
        .map(str::to_owned)
        .collect();
    assert_eq!(counts, ["0", "13"], "{}", text(&o.stderr));
    // With Landlock's annotation alone the engine's profile decides: the
    // bit is set (what `annotate` printed before the policy's text).
    engine(false);
    s.expect(&["chmod", "/work/tool", "4755"], "ok");
    use std::os::unix::fs::PermissionsExt;
    let mode = fs::metadata(s.work().join("tool"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o4000, 0o4000);
    fs::remove_file(s.work().join("tool")).unwrap();
}

// ---------------------------------------------------------------------------
// A recycled init pid (red team)

#[test]
fn a_recycled_init_pid_is_a_stopped_container_never_signalled_or_entered() {
    let t = "a_recycled_init_pid_is_a_stopped_container_never_signalled_or_entered";
    if !ready(t) {
        return;
    }
    let b = Bundle::busybox(&["/bin/true"]);
    let rt = Runtime::sandboy();
    let id = unique_id("recycled");
    let _g = rt.guard(&id);
    // The init exits at once and is reaped, as an engine's shim (a child
    // subreaper) reaps it.
    let o = capture(
        Command::new(probe_bin().unwrap())
            .arg("reap")
            .arg(&rt.bin)
            .arg("--root")
            .arg(rt.root.path())
            .args([
                "run",
                "--detach",
                "--bundle",
                b.path().to_str().unwrap(),
                &id,
            ]),
    );
    assert_exit(&o, 0);
    // `state` says pid 0 once stopped; the saved state keeps the init's.
    let saved: serde_json::Value =
        serde_json::from_slice(&fs::read(rt.root.path().join(&id).join("state.json")).unwrap())
            .unwrap();
    let pid = saved["pid"].as_i64().unwrap();
    let gone = Instant::now() + Duration::from_secs(10);
    while Path::new(&format!("/proc/{pid}")).exists() && Instant::now() < gone {
        std::thread::sleep(Duration::from_millis(20));
    }
    // Allowed counterpart first: an exited init is a stopped container.
    assert_eq!(rt.state(&id)["status"], "stopped");
    // Another process now has the init's pid.
    let o = capture(Command::new(probe_bin().unwrap()).args(["at-pid", &pid.to_string()]));
    if text(&o.stdout).trim() != "ok" {
        skip(
            t,
            &format!("cannot make a process with pid {pid}: {}", text(&o.stdout)),
        );
        return;
    }
    let alive = || {
        // SAFETY: signal 0 only checks that the pid exists.
        unsafe { libc::kill(pid as i32, 0) == 0 }
    };
    // Refused: the state stays stopped, kill and exec are refused, and the
    // victim lives.
    assert_eq!(rt.state(&id)["status"], "stopped");
    let o = rt.run(&["kill", &id, "KILL"]);
    assert_exit(&o, 1);
    let o = rt.run(&["exec", &id, "/bin/true"]);
    assert_exit(&o, 1);
    assert!(
        text(&o.stderr).contains("not running"),
        "{}",
        text(&o.stderr)
    );
    assert!(alive(), "the victim was killed");
    // SAFETY: a plain kill(2) of the victim this test made.
    unsafe { libc::kill(pid as i32, libc::SIGKILL) };
}

// ---------------------------------------------------------------------------
// A rule path replaced by a symlink inside a write path (red team)

fn tools_policy() -> String {
    work_policy(
        "escape-tools",
        "read = [\"/etc\"]\nexec = [\"/bin\", \"/work/tools\"]\nwrite = [\"/tmp\", \"/work\"]",
    )
}

#[test]
fn a_rule_path_a_step_replaced_by_a_symlink_grants_nothing_more() {
    let t = "a_rule_path_a_step_replaced_by_a_symlink_grants_nothing_more";
    if !ready(t) {
        return;
    }
    let s = Sandbox::generated(&tools_policy());
    let tools = s.work().join("tools");
    fs::create_dir_all(&tools).unwrap();
    fs::copy(probe_bin().unwrap(), tools.join("probe")).unwrap();
    // Allowed: the real directory's programs run; the image's /secret
    // stays out of reach.
    let o = s.run(&["/work/tools/probe", "read", "/secret/s"]);
    assert_eq!(
        text(&o.stdout).trim(),
        "errno=EACCES",
        "{}",
        text(&o.stderr)
    );
    // Refused: a step replaced the rule path by a link to `/` (it has
    // write on /work); the next container would have had read and exec on
    // everything. It does not start, naming the link.
    fs::remove_dir_all(&tools).unwrap();
    std::os::unix::fs::symlink("/", &tools).unwrap();
    let o = s.run(&["/bin/probe", "read", "/secret/s"]);
    assert_ne!(o.status.code(), Some(0));
    assert!(!text(&o.stdout).contains("ok"), "{}", text(&o.stdout));
    assert!(
        text(&o.stderr).contains("symlink below /work"),
        "{}",
        text(&o.stderr)
    );
    // The same checkout bound read-only to a later step, which may not
    // write it: the link is still someone's (an earlier step's, the
    // repository's), and still refused.
    let ro = work_policy(
        "escape-tools-ro",
        "read = [\"/etc\", \"/work/tools\"]\nexec = [\"/bin\"]\nwrite = [\"/tmp\"]",
    )
    .replace("\"rbind\", \"rw\"", "\"rbind\", \"ro\"");
    let s2 = Sandbox::generated(&ro);
    fs::create_dir_all(s2.work()).unwrap();
    std::os::unix::fs::symlink("/", s2.work().join("tools")).unwrap();
    let o = s2.run(&["/bin/probe", "read", "/secret/s"]);
    assert_ne!(o.status.code(), Some(0));
    assert!(
        text(&o.stderr).contains("symlink below /work"),
        "{}",
        text(&o.stderr)
    );
    // Its allowed counterpart: a real directory there is granted.
    fs::remove_file(s2.work().join("tools")).unwrap();
    fs::create_dir_all(s2.work().join("tools")).unwrap();
    fs::write(s2.work().join("tools/f"), "f\n").unwrap();
    let o = s2.run(&["/bin/probe", "read", "/work/tools/f"]);
    assert_eq!(text(&o.stdout).trim(), "ok", "{}", text(&o.stderr));
}

// ---------------------------------------------------------------------------
// A hidden file moved from under its mask (red team)

fn hide_policy() -> String {
    work_policy("escape-hide-pinned", "read = [\"/work\"]\nexec = [\"/bin\"]\nwrite = [\"/tmp\", \"/work\"]\nhide = [\"/work/config/.env\"]")
}

#[test]
fn a_hidden_files_directory_cannot_be_moved_from_under_its_mask() {
    let t = "a_hidden_files_directory_cannot_be_moved_from_under_its_mask";
    if !ready(t) {
        return;
    }
    let s = Sandbox::generated(&hide_policy());
    for d in ["config", "other"] {
        fs::create_dir_all(s.work().join(d)).unwrap();
    }
    fs::write(s.work().join("config/.env"), "DB_PASSWORD=hunter2\n").unwrap();
    // Refused: renaming the hidden file's directory (a mount point now);
    // allowed: renaming its sibling. The hidden file reads empty.
    let o = s.sh("mv /work/config /work/c2 2>/tmp/err; echo config=$?; \
         mv /work/other /work/o2; echo other=$?; wc -c < /work/config/.env");
    assert_exit(&o, 0);
    let lines: Vec<String> = text(&o.stdout)
        .lines()
        .map(|l| l.trim().to_owned())
        .collect();
    assert_eq!(lines, ["config=1", "other=0", "0"], "{}", text(&o.stderr));
    assert!(s.work().join("config/.env").exists());
    assert!(s.work().join("o2").is_dir());
    // The next container still finds the secret where the policy hides it.
    let o = s.sh("wc -c < /work/config/.env; cat /work/c2/.env 2>/tmp/err; true");
    assert_eq!(text(&o.stdout).trim(), "0");
}

/// The pins above a hidden path are made by the runtime from one fd each,
/// inside the rootfs, no symlink followed. Handed to libcontainer as binds
/// by path, a sibling container sharing the checkout that swapped the
/// pinned directory with a link to a host directory (renameat2
/// RENAME_EXCHANGE in a loop) won 2 of 9 creates: that host directory,
/// bound read-write in the container (a red team). Under the same swapping
/// now, every container either runs with nothing of the host directory or
/// is refused, naming the pin; without it the same container runs.
#[test]
fn a_pin_above_a_hidden_path_never_binds_what_a_sibling_swaps_in() {
    let t = "a_pin_above_a_hidden_path_never_binds_what_a_sibling_swaps_in";
    if !ready(t) {
        return;
    }
    use std::sync::atomic::{AtomicBool, Ordering};
    let s = Sandbox::generated(&hide_policy());
    fs::create_dir_all(s.work().join("config")).unwrap();
    fs::write(s.work().join("config/.env"), "DB_PASSWORD=hunter2\n").unwrap();
    let host = TempDir::new("pin-host");
    fs::write(host.path().join("HOSTMARK"), "host-only\n").unwrap();
    std::os::unix::fs::symlink(host.path(), s.work().join("l")).unwrap();
    let probe = "cat /work/config/HOSTMARK /work/config/.env 2>/dev/null; \
        echo x > /work/config/WROTE 2>/dev/null; true";
    // Allowed: without the sibling, the container runs.
    assert_exit(&s.sh(probe), 0);
    let stop = std::sync::Arc::new(AtomicBool::new(false));
    let flipper = {
        let stop = stop.clone();
        let (a, b) = (
            std::ffi::CString::new(
                s.work()
                    .join("config")
                    .into_os_string()
                    .into_encoded_bytes(),
            )
            .unwrap(),
            std::ffi::CString::new(s.work().join("l").into_os_string().into_encoded_bytes())
                .unwrap(),
        );
        std::thread::spawn(move || {
            let mut swaps = 0u64;
            while !stop.load(Ordering::Relaxed) {
                // SAFETY: two valid C strings; renameat2 only reads them.
                let r = unsafe {
                    libc::syscall(
                        libc::SYS_renameat2,
                        libc::AT_FDCWD,
                        a.as_ptr(),
                        libc::AT_FDCWD,
                        b.as_ptr(),
                        libc::RENAME_EXCHANGE,
                    )
                };
                swaps += u64::from(r == 0);
            }
            swaps
        })
    };
    let (mut ran, mut refused) = (0, 0);
    for _ in 0..25 {
        let o = s.sh(probe);
        let out = text(&o.stdout);
        assert!(
            !out.contains("host-only"),
            "the host directory was bound: {out}"
        );
        assert!(!out.contains("hunter2"), "the hidden file was read: {out}");
        assert!(
            !host.path().join("WROTE").exists(),
            "the container wrote the host directory"
        );
        match o.status.code() {
            Some(0) => ran += 1,
            _ => {
                let err = text(&o.stderr);
                // The pin's refusal, or libcontainer's mask finding no
                // file where the link stood.
                assert!(err.contains("/work/config"), "{err}");
                refused += 1;
            }
        }
    }
    stop.store(true, Ordering::Relaxed);
    let swaps = flipper.join().unwrap();
    eprintln!("{t}: {ran} ran, {refused} refused, {swaps} swaps");
    assert!(swaps > 100, "the sibling swapped only {swaps} times");
    // The runtime left nothing behind for the refused ones.
    assert_eq!(
        fs::read_dir(s.rt.root.path())
            .unwrap()
            .flatten()
            .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
            .count(),
        0
    );
}

/// No handle on the host's procfs reaches a container: libcontainer's
/// path library cached one, made in the runtime before the clone, and a
/// created container's init held it (fd 17) until its `execve`. A red
/// team's process with `CAP_SYS_PTRACE`, in a container sharing that pid
/// namespace (a pod), walked `/proc/<init>/fd/17/<host pid>/root` to the
/// host's `/` and wrote a host file. Now the created init's fds hold no
/// procfs; the capability itself still works (the init's fds are listed).
#[test]
fn a_created_containers_init_holds_no_handle_on_the_hosts_procfs() {
    let t = "a_created_containers_init_holds_no_handle_on_the_hosts_procfs";
    if !ready(t) {
        return;
    }
    let rt = Runtime::sandboy();
    let marker = TempDir::new("procfs-marker");
    fs::write(marker.path().join("HOSTMARK"), "host-only\n").unwrap();
    let a = Bundle::busybox(&["sleep", "60"]);
    a.edit(|c| {
        add_capability(c, "CAP_SYS_PTRACE");
    });
    let ida = unique_id("procfs-a");
    let _ga = rt.guard(&ida);
    assert_exit(&rt.run_detached(&a, &ida), 0);
    let apid = rt.state(&ida)["pid"].as_i64().unwrap();
    let b = Bundle::busybox(&["true"]);
    b.edit(|c| {
        for ns in c["linux"]["namespaces"].as_array_mut().unwrap() {
            if ns["type"] == "pid" {
                ns["path"] = serde_json::json!(format!("/proc/{apid}/ns/pid"));
            }
        }
    });
    let idb = unique_id("procfs-b");
    let _gb = rt.guard(&idb);
    assert_exit(&rt.create(&b, &idb), 0);
    let scan = format!(
        "n=0; for f in /proc/[0-9]*/fd/*; do n=$((n+1)); \
           for d in $f/[0-9]*; do cat $d/root{}/HOSTMARK 2>/dev/null; done; \
         done; echo fds=$n",
        marker.path().display()
    );
    let o = rt.run(&["exec", &ida, "sh", "-c", &scan]);
    assert_exit(&o, 0);
    let out = text(&o.stdout);
    assert!(
        !out.contains("host-only"),
        "a host file read through a procfs handle: {out}"
    );
    // Allowed: with CAP_SYS_PTRACE the other init's fds are there to walk.
    let fds: u32 = out
        .trim()
        .rsplit_once("fds=")
        .and_then(|(_, n)| n.parse().ok())
        .unwrap_or(0);
    assert!(fds >= 3, "no fds listed: {out}");

    // The other way round: a created container with a pid namespace of
    // its own, and a container with CAP_SYS_PTRACE that joins it.
    let v = Bundle::busybox(&["true"]);
    let idv = unique_id("procfs-v");
    let _gv = rt.guard(&idv);
    assert_exit(&rt.create(&v, &idv), 0);
    let vpid = rt.state(&idv)["pid"].as_i64().unwrap();
    let attacker = Bundle::busybox(&["sh", "-c", &scan]);
    attacker.edit(|c| {
        add_capability(c, "CAP_SYS_PTRACE");
        for ns in c["linux"]["namespaces"].as_array_mut().unwrap() {
            if ns["type"] == "pid" {
                ns["path"] = serde_json::json!(format!("/proc/{vpid}/ns/pid"));
            }
        }
    });
    let idt = unique_id("procfs-t");
    let _gt = rt.guard(&idt);
    let o = rt.run(&["run", "--bundle", attacker.path().to_str().unwrap(), &idt]);
    assert_exit(&o, 0);
    let out = text(&o.stdout);
    assert!(
        !out.contains("host-only"),
        "a host file read through a procfs handle: {out}"
    );
    assert!(out.contains("fds="), "{out}");
}

/// A hidden path through a link in a writable bind is refused: the mask
/// follows the link, the pins above it did not, and a red team renamed
/// the directory the link pointed to (`mv /work/d /work/e`) and read the
/// secret there from the next container. The real path runs.
#[test]
fn a_hidden_path_through_a_link_in_a_writable_bind_is_refused() {
    let t = "a_hidden_path_through_a_link_in_a_writable_bind_is_refused";
    if !ready(t) {
        return;
    }
    let linked = hide_policy().replace("/work/config/.env", "/work/link/.env");
    let s = Sandbox::generated(&linked);
    fs::create_dir_all(s.work().join("config")).unwrap();
    fs::write(s.work().join("config/.env"), "DB_PASSWORD=hunter2\n").unwrap();
    std::os::unix::fs::symlink("config", s.work().join("link")).unwrap();
    let o = s.sh("cat /work/config/.env; mv /work/config /work/c2");
    assert_exit_stderr(&o, 2, "goes through a link");
    assert!(!text(&o.stdout).contains("hunter2"));
    assert!(s.work().join("config/.env").exists());
    // Allowed: the real path, hidden and pinned.
    let s2 = Sandbox::generated(&hide_policy());
    fs::create_dir_all(s2.work().join("config")).unwrap();
    fs::write(s2.work().join("config/.env"), "DB_PASSWORD=hunter2\n").unwrap();
    let o = s2.sh("wc -c < /work/config/.env");
    assert_exit(&o, 0);
    assert_eq!(text(&o.stdout).trim(), "0");
}

#[test]
fn a_rootfs_out_of_a_mapped_roots_reach_keeps_host_ids_or_is_refused() {
    let t = "a_rootfs_out_of_a_mapped_roots_reach_keeps_host_ids_or_is_refused";
    if !ready(t) {
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    let b = Bundle::busybox(&["/bin/true"]);
    fs::set_permissions(b.path(), fs::Permissions::from_mode(0o700)).unwrap();
    let host = TempDir::new("userns-reach");
    let policy = host.path().join("p.toml");
    fs::write(
        &policy,
        "version = 1\n[fs]\nexec = [\"/bin\"]\n[process]\nargs = [\"/bin/true\"]\n",
    )
    .unwrap();
    // A 0700 bundle directory (`mktemp -d`): generate keeps host ids and
    // says why; the container runs.
    let o = capture(
        Command::new(spec_gen_bin())
            .args(["generate", "--policy"])
            .arg(&policy)
            .arg("--bundle")
            .arg(b.path()),
    );
    assert_exit(&o, 0);
    assert!(
        text(&o.stderr).contains("out of a mapped root's reach"),
        "{}",
        text(&o.stderr)
    );
    assert!(b.config()["linux"]["uidMappings"].is_null());
    let rt = Runtime::sandboy();
    let id = unique_id("reach");
    let _g = rt.guard(&id);
    assert_exit(
        &rt.run(&["run", "--bundle", b.path().to_str().unwrap(), &id]),
        0,
    );
    // A user namespace asked for all the same: one clear error, exit 2.
    b.edit(|c| {
        c["linux"]["namespaces"]
            .as_array_mut()
            .unwrap()
            .push(serde_json::json!({"type": "user"}));
        let map = serde_json::json!([{"containerID": 0, "hostID": 1879048192u32, "size": 65536}]);
        c["linux"]["uidMappings"] = map.clone();
        c["linux"]["gidMappings"] = map;
    });
    let id = unique_id("reach-refused");
    let _g = rt.guard(&id);
    let o = rt.run(&["run", "--bundle", b.path().to_str().unwrap(), &id]);
    assert_exit(&o, 2);
    assert!(text(&o.stderr).contains("chmod o+x"), "{}", text(&o.stderr));
    // Searchable: it runs mapped.
    fs::set_permissions(b.path(), fs::Permissions::from_mode(0o755)).unwrap();
    let id = unique_id("reach-ok");
    let _g = rt.guard(&id);
    assert_exit(
        &rt.run(&["run", "--bundle", b.path().to_str().unwrap(), &id]),
        0,
    );
}

/// The image's code never runs in the runtime's own processes. The init and
/// an exec'd process are clones of the runtime, and a spec without `HOME`
/// makes libcontainer look the user up with glibc inside the container,
/// before Landlock and seccomp: glibc read the image's `nsswitch.conf`
/// (`passwd: evil`) and loaded its `libnss_evil.so.2`, whose constructor
/// then made a user namespace every policy denies (found in stop 35).
/// Refused by design: the lookups are pinned to glibc's own `files`
/// service (`host::nss`), so the module never loads, in the init or in an
/// exec. Counterpart: `HOME` still comes from the image's `/etc/passwd`
/// (`/root`), and the payload's own `unshare` is refused by the policy.
#[test]
fn an_images_nss_modules_never_run_in_the_init_or_an_exec() {
    let t = "an_images_nss_modules_never_run_in_the_init_or_an_exec";
    if !ready(t) || !need_tool(t, "gcc") {
        return;
    }
    let s = Sandbox::generated(&syscall_policy("errno", "[]"));
    let module = s.host.path().join("libnss_evil.so.2");
    let st = Command::new("gcc")
        .args(["-shared", "-fPIC", "-O2", "-Wall", "-o"])
        .arg(&module)
        .arg(repo().join("tests/probes/nss_evil.c"))
        .status()
        .unwrap();
    assert!(st.success(), "gcc failed to build the NSS module");
    let rootfs = s.bundle.rootfs();
    for dir in [
        "lib",
        "usr/lib",
        "lib/x86_64-linux-gnu",
        "usr/lib/x86_64-linux-gnu",
    ] {
        fs::create_dir_all(rootfs.join(dir)).unwrap();
        fs::copy(&module, rootfs.join(dir).join("libnss_evil.so.2")).unwrap();
    }
    fs::write(
        rootfs.join("etc/nsswitch.conf"),
        "passwd: evil\ngroup: evil\n",
    )
    .unwrap();
    s.bundle.edit(|c| {
        let env = c["process"]["env"].as_array_mut().unwrap();
        env.retain(|e| !e.as_str().unwrap_or("").starts_with("HOME="));
    });
    let o = s.sh("echo HOME=$HOME; /bin/probe syscall unshare-user");
    assert!(
        !text(&o.stderr).contains("nss module ran"),
        "the image's module ran in the init: {}",
        text(&o.stderr)
    );
    assert_eq!(
        text(&o.stdout),
        "HOME=/root\nerrno=EPERM\n",
        "{}",
        text(&o.stderr)
    );
    let id = unique_id("esc-nss");
    let _c = s.sleeper(&id);
    let o = s.rt.run(&["exec", &id, "/bin/sh", "-c", "echo HOME=$HOME"]);
    assert!(
        !text(&o.stderr).contains("nss module ran"),
        "the image's module ran in an exec: {}",
        text(&o.stderr)
    );
    assert_eq!(text(&o.stdout), "HOME=/root\n", "{}", text(&o.stderr));
}

/// startContainer hooks run in the container, from the image's files, and
/// libcontainer runs them after its start signal but before the executor
/// confines the payload: a hook's `unshare(CLONE_NEWUSER)`, which the
/// policy denies, succeeded (found in stop 35; runc installs its seccomp
/// filter before these hooks too). With such hooks the init confines
/// itself first, so a hook gets the payload's own answer (EPERM), while it
/// still runs and writes where the policy lets it (its output is there
/// for the payload to read).
#[test]
fn start_container_hooks_run_confined_like_the_payload() {
    let t = "start_container_hooks_run_confined_like_the_payload";
    if !ready(t) {
        return;
    }
    let policy = syscall_policy("errno", "[]")
        .replace("exec = [\"/bin\"]", "exec = [\"/bin\"]\nwrite = [\"/tmp\"]");
    let s = Sandbox::generated(&policy);
    s.bundle.edit(|c| {
        c["hooks"] = serde_json::json!({"startContainer": [{
            "path": "/bin/sh",
            "args": ["sh", "-c", "/bin/probe syscall unshare-user > /tmp/hook.out 2>&1; true"]
        }]});
    });
    let o = s.sh("cat /tmp/hook.out; /bin/probe syscall unshare-user");
    assert_eq!(
        text(&o.stdout),
        "errno=EPERM\nerrno=EPERM\n",
        "the hook's line first, then the payload's: {}",
        text(&o.stderr)
    );
    // A hook outside [fs] exec is refused like any program, and `run` says
    // why the container never ran its process.
    s.bundle.edit(|c| {
        c["hooks"] = serde_json::json!({"startContainer": [{"path": "/data/probe-copy", "args": ["probe", "hello"]}]});
    });
    let o = s.sh("echo payload ran");
    assert_exit(&o, 1);
    assert_eq!(text(&o.stdout), "", "the payload ran");
    assert!(
        text(&o.stderr).contains("init failed before its process ran")
            && text(&o.stderr).contains("Permission denied"),
        "{}",
        text(&o.stderr)
    );
}

/// A red team's other user planted `sb.log -> /etc/nologin` in a shared
/// directory: root's `sandboy --log sb.log list` created the file the link
/// named and appended to it, and a FIFO there hung it. The log opens no
/// link, no FIFO or device, and no file with other names (a hard link);
/// each is one line, exit 1, the target untouched. A regular file (new or
/// the engine's existing one) is appended to.
#[test]
fn the_log_file_is_never_a_planted_link_fifo_or_hard_link() {
    let t = "the_log_file_is_never_a_planted_link_fifo_or_hard_link";
    if !need_root(t) {
        return;
    }
    let rt = Runtime::sandboy();
    let dir = TempDir::new("logplant");
    let victim = dir.path().join("victim");
    let log = dir.path().join("sb.log");
    let run = || {
        let mut c = rt.cmd();
        c.args(["--log", log.to_str().unwrap(), "state", "missing"]);
        output_timeout(&mut c, std::time::Duration::from_secs(10))
    };
    let plants: [(&str, &dyn Fn()); 3] = [
        ("symbolic link", &|| {
            std::os::unix::fs::symlink(&victim, &log).unwrap()
        }),
        ("hard link", &|| {
            fs::write(&victim, "kept\n").unwrap();
            fs::hard_link(&victim, &log).unwrap()
        }),
        ("not a regular file", &|| {
            let c = std::ffi::CString::new(log.to_str().unwrap()).unwrap();
            // SAFETY: mkfifo(3) with a valid NUL-terminated path.
            assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        }),
    ];
    for (why, plant) in plants {
        let _ = fs::remove_file(&victim);
        plant();
        let o = run();
        assert_exit(&o, 1);
        let e = text(&o.stderr);
        assert_eq!(e.lines().count(), 1, "{why}: {e}");
        assert!(
            e.contains("cannot open log file") && e.contains(why),
            "{why}: {e}"
        );
        let left = fs::read_to_string(&victim).unwrap_or_default();
        assert!(left.is_empty() || left == "kept\n", "{why}: {left}");
        fs::remove_file(&log).unwrap();
    }
    // Allowed: a new file, then the same file again.
    for n in 1..=2 {
        assert_exit(&run(), 1);
        let lines = fs::read_to_string(&log).unwrap();
        assert_eq!(lines.lines().count(), n, "{lines}");
        assert!(lines.contains("container does not exist"), "{lines}");
    }
}

/// A red team's engine container with `CAP_SYS_PTRACE` (a common
/// `--cap-add`) polled `/proc/*/root/<host path>` while root ran `exec`
/// into it (a health check): libcontainer's exec init is in the
/// container's pid namespace from its clone on and joined the mount
/// namespace only later, so for a moment its `root` was the host's `/`;
/// 2,700 reads and a written host file over 20 execs (runc: none). The
/// exec now joins the mount namespace before the pid namespace
/// (vendor/libcontainer/SANDBOY.md). The scan also opens every fd of
/// every process as a procfs of the host's pid namespace (the cached
/// handle an init must not inherit, `host::procfs`). The scan still
/// reaches the container's own files through its own root (the allowed
/// case), and every exec runs.
#[test]
fn an_exec_never_shows_the_host_root_to_the_container() {
    let t = "an_exec_never_shows_the_host_root_to_the_container";
    if !ready(t) {
        return;
    }
    let rt = Runtime::sandboy();
    let marker = TempDir::new("exec-root-marker");
    fs::write(marker.path().join("HOSTMARK"), "host-only\n").unwrap();
    let host_path = format!("{}/HOSTMARK", marker.path().display());
    // Allowed: the exec'd processes' own files through their roots.
    let b = Bundle::busybox(&["/bin/probe", "root-scan", "6", &host_path, "/bin/probe"]);
    fs::copy(probe_bin().unwrap(), b.path().join("rootfs/bin/probe")).unwrap();
    b.edit(|c| {
        add_capability(c, "CAP_SYS_PTRACE");
    });
    let id = unique_id("exec-root");
    let _g = rt.guard(&id);
    let log = b.path().join("scan.out");
    let mut scan = rt.cmd();
    scan.args(["run", "--bundle", b.path().to_str().unwrap(), &id])
        .stdout(fs::File::create(&log).unwrap());
    let mut scan = scan.spawn().unwrap();
    let started = Instant::now();
    while !fs::read_to_string(&log)
        .unwrap_or_default()
        .contains("scanning")
    {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the scan did not start"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    for _ in 0..20 {
        let o = rt.run(&["exec", &id, "/bin/probe", "hello"]);
        assert_exit(&o, 0);
        assert_eq!(text(&o.stdout), "hello\n");
    }
    assert!(scan.wait().unwrap().success());
    let out = fs::read_to_string(&log).unwrap();
    assert!(out.contains("hits=0 peers=some"), "{out}");
    assert_eq!(
        fs::read_to_string(marker.path().join("HOSTMARK")).unwrap(),
        "host-only\n"
    );
}
