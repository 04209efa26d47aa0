//! podman 4.3 (with conmon) driving sandboy, configured by
//! `deploy/podman/containers.conf`.
//!
//! Every test has its own podman storage (`--root`), run root (`--runroot`),
//! tmpdir, cgroup parent, and sandboy state root. The runtime podman sees is
//! a two-line wrapper around the binary under test (`$SANDBOY_BIN`) that
//! records each invocation (printed when a test fails) and pins sandboy's
//! `--root` to the test's directory: podman's own `--runtime-flag root=…` is
//! not handed to the `podman container cleanup` that conmon runs on exit, so
//! it cannot keep the state private.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use sandboy_tests::*;

const TIMEOUT: Duration = Duration::from_secs(90);

/// Shell for the wrapper: keep a copy of the last `create`'s config.json
/// (what podman handed to the runtime) as DIR/last-config.json.
const KEEP_CONFIG: &str = r#"prev=; for a in "$@"; do [ "$prev" = --bundle ] && cp "$a/config.json" 'DIR/last-config.json'; prev=$a; done
"#;

struct Podman {
    dir: TempDir,
    /// sandboy with the state root the wrapper pins.
    sandboy: Runtime,
    /// The wrapper podman runs as its OCI runtime (named `sandboy`, so
    /// `runtime_supports_json` matches it by name).
    runtime: PathBuf,
    /// Private cgroup parent, removed on drop.
    cgroup_parent: String,
}

impl Podman {
    fn setup(test: &str) -> Option<Podman> {
        Self::setup_with(test, "")
    }

    /// `setup` with more global flags for sandboy in the wrapper (e.g.
    /// `--config FILE`).
    fn setup_with(test: &str, flags: &str) -> Option<Podman> {
        if !need_root(test) || !need_tool(test, "podman") || !need_tool(test, "conmon") {
            return None;
        }
        let bin = need_sandboy(test)?;
        let dir = TempDir::new("podman");
        let state = dir.path().join("sandboy-state");
        fs::create_dir_all(&state).unwrap();
        fs::create_dir_all(dir.path().join("bin")).unwrap();
        fs::create_dir_all(dir.path().join("tmp")).unwrap();
        let runtime = dir.path().join("bin/sandboy");
        write_runtime_wrapper(
            &runtime,
            &dir.path().join("calls.log"),
            &KEEP_CONFIG.replace("DIR", &dir.path().to_string_lossy()),
            &format!("--root '{}' {flags}", state.display()),
            &bin,
        );

        // The shipped containers.conf, with the runtime path pointing at the
        // binary under test (through the wrapper).
        let shipped = fs::read_to_string(repo().join("deploy/podman/containers.conf"))
            .expect("read deploy/podman/containers.conf");
        assert!(
            shipped.contains("\"/usr/local/bin/sandboy\""),
            "containers.conf has no sandboy runtime path"
        );
        let conf = shipped.replace(
            "\"/usr/local/bin/sandboy\"",
            &format!("\"{}\"", runtime.display()),
        );
        fs::write(dir.path().join("containers.conf"), conf).unwrap();

        let cgroup_parent = format!("/{}", unique_id("sandboy-podman"));
        Some(Podman {
            sandboy: Runtime {
                name: "sandboy".into(),
                bin,
                root: TempDir(state),
            },
            dir,
            runtime,
            cgroup_parent,
        })
    }

    fn cmd(&self) -> Command {
        let d = self.dir.path();
        let mut c = Command::new("podman");
        c.env("CONTAINERS_CONF", d.join("containers.conf"))
            .env("TMPDIR", d.join("tmp"))
            .arg("--root")
            .arg(d.join("storage"))
            .arg("--runroot")
            .arg(d.join("runroot"))
            .arg("--tmpdir")
            .arg(d.join("libpod-tmp"));
        c
    }

    fn podman(&self, args: &[&str]) -> Output {
        output_timeout(self.cmd().args(args), TIMEOUT)
    }

    /// `podman run --cgroup-parent <private> ARGS…`
    fn run(&self, args: &[&str]) -> Output {
        let mut a = vec!["run", "--cgroup-parent", &self.cgroup_parent];
        a.extend_from_slice(args);
        self.podman(&a)
    }

    /// `podman run OPTS… --rootfs ROOTFS ARGS…` (`--rootfs` makes ROOTFS
    /// the image argument: every option goes before it).
    fn run_rootfs(&self, opts: &[&str], rootfs: &Path, args: &[&str]) -> Output {
        let mut a = opts.to_vec();
        a.extend_from_slice(&["--rootfs", rootfs.to_str().unwrap()]);
        a.extend_from_slice(args);
        self.run(&a)
    }

    /// Every runtime invocation so far, one per line.
    fn calls(&self) -> String {
        fs::read_to_string(self.dir.path().join("calls.log")).unwrap_or_default()
    }

    /// Container ids sandboy was asked to create.
    fn created_ids(&self) -> Vec<String> {
        self.calls()
            .lines()
            .filter(|l| l.split_whitespace().any(|w| w == "create"))
            .filter_map(|l| l.split_whitespace().last().map(String::from))
            .collect()
    }

    /// Assert on an exit code, printing podman's streams and the runtime calls.
    #[track_caller]
    fn expect(&self, o: &Output, code: i32) {
        assert_exit_showing(o, code, "runtime calls", &self.calls());
    }

    fn inspect(&self, name: &str, format: &str) -> String {
        let o = self.podman(&["inspect", "--format", format, name]);
        self.expect(&o, 0);
        text(&o.stdout).trim().to_owned()
    }

    /// Nothing left behind by the containers this test created: no sandboy
    /// state, no cgroup, no mount, no conmon.
    fn assert_clean(&self) {
        let ids = self.created_ids();
        assert!(
            !ids.is_empty(),
            "sandboy was never asked to create a container:\n{}",
            self.calls()
        );
        // conmon and `podman container cleanup` finish asynchronously.
        let needle = self.dir.path().to_string_lossy().into_owned();
        for _ in 0..100 {
            if pids_mentioning(&needle).is_empty() {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        assert_eq!(
            pids_mentioning(&needle),
            Vec::<i32>::new(),
            "processes left behind"
        );
        for id in &ids {
            assert!(
                !self.sandboy.root.path().join(id).exists(),
                "sandboy state left for {id}"
            );
            assert_eq!(
                cgroups_named(id),
                Vec::<PathBuf>::new(),
                "cgroups left for {id}"
            );
            assert_eq!(
                mounts_mentioning(id),
                Vec::<String>::new(),
                "mounts left for {id}"
            );
        }
    }
}

impl Drop for Podman {
    fn drop(&mut self) {
        let _ = self.podman(&["rm", "--all", "--force", "--time", "0"]);
        let _ = self.podman(&["rmi", "--all", "--force"]);
        let needle = self.dir.path().to_string_lossy().into_owned();
        for pid in pids_mentioning(&needle) {
            // SAFETY: plain kill(2) on a pid that belongs to this test
            // (its command line names the test's private directory).
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        for id in self.created_ids() {
            let _ = self.sandboy.run(&["delete", "--force", &id]);
        }
        unmount_all_mentioning(&needle);
        remove_cgroup_tree(&self.cgroup_parent);
        if std::thread::panicking() {
            eprintln!("runtime calls:\n{}", self.calls());
        }
    }
}

fn busybox_rootfs() -> Bundle {
    Bundle::busybox(&[])
}

/// CSV-quote a value for podman's slice flags (`--annotation` splits on
/// commas and rejects bare quotes).
fn csv_quote(s: &str) -> String {
    format!("\"{}\"", s.replace('"', "\"\""))
}

#[test]
fn run_rm_echo_and_exit_code() {
    let Some(p) = Podman::setup("podman::run_rm_echo_and_exit_code") else {
        return;
    };
    let b = busybox_rootfs();
    let rootfs = b.rootfs();
    let rootfs = rootfs.to_str().unwrap();
    let runtime = format!("--runtime={}", p.runtime.display());

    let o = p.run(&[
        &runtime,
        "--rm",
        "--rootfs",
        rootfs,
        "echo",
        "hello from sandboy",
    ]);
    p.expect(&o, 0);
    assert_eq!(text(&o.stdout), "hello from sandboy\n");

    let o = p.run(&[
        &runtime,
        "--rm",
        "--rootfs",
        rootfs,
        "sh",
        "-c",
        "echo out; echo err >&2; exit 7",
    ]);
    p.expect(&o, 7);
    assert_eq!(text(&o.stdout), "out\n");
    assert!(
        text(&o.stderr).contains("err"),
        "stderr: {}",
        text(&o.stderr)
    );

    // A command that does not exist, or is not executable: podman maps
    // sandboy's create error to 127 / 126 (as with runc) and shows it.
    let o = p.run(&[&runtime, "--rm", "--rootfs", rootfs, "/no/such/binary"]);
    p.expect(&o, 127);
    assert!(
        text(&o.stderr).contains("/no/such/binary"),
        "stderr: {}",
        text(&o.stderr)
    );
    let o = p.run(&[&runtime, "--rm", "--rootfs", rootfs, "/etc/passwd"]);
    p.expect(&o, 126);

    let calls = p.calls();
    assert!(
        calls.contains("--log-format=json"),
        "podman did not pass --log-format=json:\n{calls}"
    );
    assert_called(&calls, &["create", "start", "delete"]);
    assert_eq!(
        text(&p.podman(&["ps", "-aq"]).stdout).trim(),
        "",
        "--rm left a container"
    );
    p.assert_clean();
}

#[test]
fn imported_image_runs() {
    let test = "podman::imported_image_runs";
    let Some(p) = Podman::setup(test) else { return };
    if !need_tool(test, "tar") {
        return;
    }
    let b = busybox_rootfs();
    let tar = b.path().join("rootfs.tar");
    let st = Command::new("tar")
        .arg("-C")
        .arg(b.rootfs())
        .arg("-cf")
        .arg(&tar)
        .arg(".")
        .status()
        .unwrap();
    assert!(st.success(), "tar of the busybox rootfs failed");
    let o = p.podman(&[
        "import",
        tar.to_str().unwrap(),
        "localhost/sandboy-busybox:test",
    ]);
    p.expect(&o, 0);

    let o = p.run(&[
        "--rm",
        "localhost/sandboy-busybox:test",
        "sh",
        "-c",
        "echo from-image; cat /etc/hostname >/dev/null; id -u",
    ]);
    p.expect(&o, 0);
    assert_eq!(text(&o.stdout), "from-image\n0\n");

    let o = p.run(&[
        "--rm",
        "-w",
        "/tmp",
        "-e",
        "GREETING=hi",
        "localhost/sandboy-busybox:test",
        "sh",
        "-c",
        "echo $GREETING; pwd; exit 3",
    ]);
    p.expect(&o, 3);
    assert_eq!(text(&o.stdout), "hi\n/tmp\n");
    p.assert_clean();
}

#[test]
fn detached_exec_logs_stop_rm() {
    let Some(p) = Podman::setup("podman::detached_exec_logs_stop_rm") else {
        return;
    };
    let b = busybox_rootfs();
    let name = unique_id("sbd");
    let o = p.run_rootfs(
        &["-d", "--name", &name],
        &b.rootfs(),
        &[
            "sh",
            "-c",
            "trap 'echo got-term; exit 0' TERM; echo started; sleep 1000 & wait",
        ],
    );
    p.expect(&o, 0);
    let id = text(&o.stdout).trim().to_owned();
    assert_eq!(id.len(), 64, "podman run -d printed {id:?}");
    assert_eq!(p.inspect(&name, "{{.State.Status}}"), "running");
    assert_eq!(p.sandboy.status(&id), "running");

    let o = p.podman(&["exec", &name, "sh", "-c", "echo in-exec; exit 3"]);
    p.expect(&o, 3);
    assert_eq!(text(&o.stdout), "in-exec\n");
    let o = p.podman(&[
        "exec",
        "-e",
        "X=42",
        "-w",
        "/tmp",
        &name,
        "sh",
        "-c",
        "echo $X $(pwd)",
    ]);
    p.expect(&o, 0);
    assert_eq!(text(&o.stdout), "42 /tmp\n");

    let o = p.podman(&["top", &name]);
    if o.status.success() {
        assert!(
            text(&o.stdout).contains("sleep"),
            "podman top: {}",
            text(&o.stdout)
        );
    }

    let o = p.podman(&["logs", &name]);
    p.expect(&o, 0);
    assert_eq!(text(&o.stdout), "started\n");

    // SIGTERM reaches the trap: stop is clean, before the 10 s escalation.
    let started = std::time::Instant::now();
    let o = p.podman(&["stop", "--time", "10", &name]);
    p.expect(&o, 0);
    assert!(
        started.elapsed() < Duration::from_secs(9),
        "stop needed the SIGKILL escalation"
    );
    assert_eq!(p.inspect(&name, "{{.State.Status}}"), "exited");
    assert_eq!(p.inspect(&name, "{{.State.ExitCode}}"), "0");
    let o = p.podman(&["logs", &name]);
    assert_eq!(text(&o.stdout), "started\ngot-term\n");
    assert!(
        p.calls()
            .lines()
            .any(|l| l.ends_with(&format!("kill {id} 15"))),
        "no `kill ID 15`:\n{}",
        p.calls()
    );

    let o = p.podman(&["rm", &name]);
    p.expect(&o, 0);
    assert_eq!(text(&p.podman(&["ps", "-aq"]).stdout).trim(), "");
    p.assert_clean();
}

#[test]
fn tty() {
    let Some(p) = Podman::setup("podman::tty") else {
        return;
    };
    let b = busybox_rootfs();
    let o = p.run(&[
        "--rm",
        "-t",
        "--rootfs",
        b.rootfs().to_str().unwrap(),
        "sh",
        "-c",
        "tty; test -t 1 && echo is-a-tty; exit 4",
    ]);
    p.expect(&o, 4);
    let out = text(&o.stdout);
    assert!(out.contains("/dev/pts/0"), "tty output: {out:?}");
    assert!(out.contains("is-a-tty"), "tty output: {out:?}");
    assert!(
        p.calls().contains("--console-socket"),
        "no --console-socket in create:\n{}",
        p.calls()
    );

    // exec -t into a detached container.
    let name = unique_id("sbt");
    let o = p.run(&[
        "-d",
        "--name",
        &name,
        "--rootfs",
        b.rootfs().to_str().unwrap(),
        "sleep",
        "1000",
    ]);
    p.expect(&o, 0);
    let o = p.podman(&[
        "exec",
        "-t",
        &name,
        "sh",
        "-c",
        "test -t 0 && echo exec-tty",
    ]);
    p.expect(&o, 0);
    assert!(
        text(&o.stdout).contains("exec-tty"),
        "exec -t output: {:?}",
        text(&o.stdout)
    );
    let o = p.podman(&["rm", "--force", "--time", "0", &name]);
    p.expect(&o, 0);
    p.assert_clean();
}

#[test]
fn pause_unpause() {
    let Some(p) = Podman::setup("podman::pause_unpause") else {
        return;
    };
    let b = busybox_rootfs();
    let name = unique_id("sbp");
    let o = p.run_rootfs(
        &["-d", "--name", &name],
        &b.rootfs(),
        &[
            "sh",
            "-c",
            "while true; do date +%s > /tmp/tick; sleep 0.2; done",
        ],
    );
    p.expect(&o, 0);
    let id = text(&o.stdout).trim().to_owned();

    let o = p.podman(&["pause", &name]);
    p.expect(&o, 0);
    assert_eq!(p.inspect(&name, "{{.State.Status}}"), "paused");
    assert_eq!(p.sandboy.status(&id), "paused");
    // A paused container runs nothing: exec is refused.
    let o = p.podman(&["exec", &name, "true"]);
    assert_ne!(
        o.status.code(),
        Some(0),
        "exec into a paused container succeeded"
    );

    let o = p.podman(&["unpause", &name]);
    p.expect(&o, 0);
    assert_eq!(p.inspect(&name, "{{.State.Status}}"), "running");
    assert_eq!(p.sandboy.status(&id), "running");
    let o = p.podman(&["exec", &name, "cat", "/tmp/tick"]);
    p.expect(&o, 0);

    let o = p.podman(&["rm", "--force", "--time", "0", &name]);
    p.expect(&o, 0);
    p.assert_clean();
}

#[test]
fn update_memory() {
    let test = "podman::update_memory";
    let Some(p) = Podman::setup(test) else { return };
    let help = p.podman(&["update", "--help"]);
    if !help.status.success() || !text(&help.stdout).contains("--memory") {
        skip(
            test,
            "this podman has no `podman update --memory` (added in 4.3)",
        );
        return;
    }
    let b = busybox_rootfs();
    let name = unique_id("sbu");
    let o = p.run(&[
        "-d",
        "--name",
        &name,
        "--memory",
        "128m",
        "--rootfs",
        b.rootfs().to_str().unwrap(),
        "sleep",
        "1000",
    ]);
    p.expect(&o, 0);
    let limit = "/sys/fs/cgroup/memory/memory.limit_in_bytes";
    let o = p.podman(&["exec", &name, "cat", limit]);
    if !o.status.success() {
        let _ = p.podman(&["rm", "--force", "--time", "0", &name]);
        skip(
            test,
            &format!(
                "no cgroup v1 memory controller in the container ({limit}): {}",
                text(&o.stderr).trim()
            ),
        );
        return;
    }
    assert_eq!(text(&o.stdout).trim(), (128u64 << 20).to_string());

    let o = p.podman(&["update", "--memory", "64m", &name]);
    p.expect(&o, 0);
    assert!(
        p.calls()
            .lines()
            .any(|l| l.split_whitespace().any(|w| w == "update") && l.contains("--resources")),
        "no update call:\n{}",
        p.calls()
    );
    let o = p.podman(&["exec", &name, "cat", limit]);
    p.expect(&o, 0);
    assert_eq!(text(&o.stdout).trim(), (64u64 << 20).to_string());

    let o = p.podman(&["rm", "--force", "--time", "0", &name]);
    p.expect(&o, 0);
    p.assert_clean();
}

/// A Landlock ruleset passed as a podman annotation (SPEC §5) confines the
/// container: writes under /tmp work, writes anywhere else are refused.
#[test]
fn landlock_annotation_confines_writes() {
    let Some(p) = Podman::setup("podman::landlock_annotation_confines_writes") else {
        return;
    };
    let b = busybox_rootfs();
    let ruleset = r#"{"mode":"enforce","fs":[{"path":"/","access":["read","exec"]},{"path":"/tmp","access":["read","write"]}],"scope":["abstract-unix-socket","signal"]}"#;
    let annotation = csv_quote(&format!("dev.sandboy.landlock={ruleset}"));
    let script = "echo allowed > /tmp/ok && cat /tmp/ok; \
                  if { echo escaped > /root/outside; } 2>&1; then echo WROTE-OUTSIDE; exit 1; fi; \
                  if mkdir /work/newdir 2>&1; then echo MKDIR-OUTSIDE; exit 1; fi; \
                  echo denied";
    let o = p.run_rootfs(
        &["--rm", "--annotation", &annotation],
        &b.rootfs(),
        &["sh", "-c", script],
    );
    // The annotation reached the runtime, verbatim.
    let config: serde_json::Value = serde_json::from_slice(
        &fs::read(p.dir.path().join("last-config.json")).expect("config.json copy"),
    )
    .unwrap();
    assert_eq!(
        config["annotations"]["dev.sandboy.landlock"].as_str(),
        Some(ruleset),
        "annotation not in config.json"
    );
    let out = text(&o.stdout);
    assert!(
        !out.contains("WROTE-OUTSIDE") && !out.contains("MKDIR-OUTSIDE"),
        "Landlock annotation not enforced: a write outside the allowed paths succeeded\nstdout: {out}\nstderr: {}",
        text(&o.stderr)
    );
    p.expect(&o, 0);
    assert!(
        out.starts_with("allowed\n"),
        "write under /tmp failed: {out}"
    );
    assert!(
        out.contains("Permission denied"),
        "no EACCES reported: {out}"
    );
    assert!(out.ends_with("denied\n"), "stdout: {out}");
    // And the rootfs on the host really was not touched.
    assert!(!b.rootfs().join("root/outside").exists());
    assert!(!b.rootfs().join("work/newdir").exists());
    p.assert_clean();
}

/// A malformed annotation is refused at create with sandboy's error, and
/// podman shows it.
#[test]
fn invalid_landlock_annotation_is_reported() {
    let Some(p) = Podman::setup("podman::invalid_landlock_annotation_is_reported") else {
        return;
    };
    let b = busybox_rootfs();
    let annotation = csv_quote(r#"dev.sandboy.landlock={"mode":"sideways","fs":[]}"#);
    let o = p.run_rootfs(
        &["--rm", "--annotation", &annotation],
        &b.rootfs(),
        &["true"],
    );
    assert_ne!(
        o.status.code(),
        Some(0),
        "a bad annotation was accepted:\n{}",
        p.calls()
    );
    let err = text(&o.stderr);
    assert!(
        err.contains("dev.sandboy.landlock"),
        "podman's error does not name the annotation: {err}"
    );
    assert_eq!(text(&p.podman(&["ps", "-aq"]).stdout).trim(), "");
    p.assert_clean();
}

#[test]
fn wasm_containers_via_annotation() {
    let Some(p) = Podman::setup("podman::wasm_containers_via_annotation") else {
        return;
    };
    let b = busybox_rootfs();
    let rootfs = b.rootfs();
    std::fs::write(
        rootfs.join("hello.wasm"),
        wat::parse_str(WASI_HELLO_P1).unwrap(),
    )
    .unwrap();
    let runtime = format!("--runtime={}", p.runtime.display());
    // A WASI program run by sandboy's wasm host.
    let o = p.run_rootfs(
        &[&runtime, "--rm", "--annotation", "run.oci.handler=wasm"],
        &rootfs,
        &["/hello.wasm"],
    );
    p.expect(&o, 3);
    assert_eq!(text(&o.stdout), "hello from wasi\n");

    // The Infer# adapter component on a report, SARIF on stdout.
    let component = components_dir().join("infersharp.wasm");
    if !component.is_file() {
        skip(
            "podman::wasm_containers_via_annotation (adapter)",
            "components not built (make components)",
        );
        return;
    }
    std::fs::create_dir_all(rootfs.join("adapters")).unwrap();
    std::fs::copy(&component, rootfs.join("adapters/infersharp.wasm")).unwrap();
    std::fs::copy(
        repo().join("bundles/fixtures/infersharp/report.json"),
        rootfs.join("report.json"),
    )
    .unwrap();
    let o = p.run_rootfs(
        &[&runtime, "--rm", "--annotation", "run.oci.handler=wasm"],
        &rootfs,
        &[
            "/adapters/infersharp.wasm",
            "--tool",
            "infersharp",
            "--artifact",
            "report.json=/report.json",
        ],
    );
    p.expect(&o, 0);
    let sarif: serde_json::Value = serde_json::from_slice(&o.stdout).expect("SARIF on stdout");
    assert_eq!(sarif["version"], "2.1.0");
    assert_eq!(
        sarif["runs"][0]["properties"]["sandboy"]["tool"],
        "infersharp"
    );
    p.assert_clean();
}

/// A policy of the node named by `--annotation dev.sandboy.policy=gate-step`
/// (the node configuration given to sandboy with --config, the policy in a
/// private root-owned directory): a write under /tmp works, one in /root
/// is refused.
#[test]
fn named_policy_annotation_is_enforced() {
    let node = TempDir::new("podman-node");
    let policies = node.path().join("policies");
    fs::create_dir_all(&policies).unwrap();
    use std::os::unix::fs::PermissionsExt;
    for d in [node.path(), policies.as_path()] {
        fs::set_permissions(d, fs::Permissions::from_mode(0o755)).unwrap();
    }
    let policy = "version = 1\n[fs]\nread = [\"/etc\", \"/proc\"]\nexec = [\"/bin\"]\nwrite = [\"/tmp\", \"/dev/null\"]\n";
    fs::write(policies.join("gate-step.toml"), policy).unwrap();
    let config = node.path().join("config.toml");
    fs::write(
        &config,
        format!("policy_dir = \"{}\"\n", policies.display()),
    )
    .unwrap();
    let Some(p) = Podman::setup_with(
        "podman::named_policy_annotation_is_enforced",
        &format!("--config '{}' ", config.display()),
    ) else {
        return;
    };
    let b = busybox_rootfs();
    let script = "echo allowed > /tmp/ok && cat /tmp/ok; \
                  if { echo escaped > /root/outside; } 2>&1; then echo WROTE-OUTSIDE; exit 1; fi; \
                  echo denied";
    let o = p.run(&[
        "--rm",
        "--annotation",
        "dev.sandboy.policy=gate-step",
        "--rootfs",
        b.rootfs().to_str().unwrap(),
        "sh",
        "-c",
        script,
    ]);
    let out = text(&o.stdout);
    assert!(!out.contains("WROTE-OUTSIDE"), "policy not enforced: {out}");
    p.expect(&o, 0);
    assert!(
        out.starts_with("allowed\n"),
        "write under /tmp failed: {out}"
    );
    assert!(out.contains("Permission denied"), "no EACCES: {out}");
    assert!(!b.rootfs().join("root/outside").exists());
    // An unknown name: podman shows sandboy's one-line error.
    let o = p.run(&[
        "--rm",
        "--annotation",
        "dev.sandboy.policy=gate-stpe",
        "--rootfs",
        b.rootfs().to_str().unwrap(),
        "true",
    ]);
    assert_ne!(o.status.code(), Some(0));
    assert_stderr_contains(&o, "did you mean \"gate-step\"?");
    p.assert_clean();
}

/// `sandboy-spec-gen annotate --format podman` prints arguments a shell
/// hands to podman verbatim (CSV- and shell-quoted), and they confine.
#[test]
fn spec_gen_annotate_output_runs_under_podman() {
    let Some(p) = Podman::setup("podman::spec_gen_annotate_output_runs_under_podman") else {
        return;
    };
    let policy = p.dir.path().join("step.toml");
    fs::write(
        &policy,
        "version = 1\n[fs]\nread = [\"/etc\", \"/proc\"]\nexec = [\"/bin\"]\nwrite = [\"/tmp\", \"/dev/null\"]\n[limits]\ntimeout = \"5m\"\n",
    )
    .unwrap();
    let o = capture(
        Command::new(spec_gen_bin())
            .args(["annotate", "--format", "podman"])
            .arg(&policy),
    );
    p.expect(&o, 0);
    let printed = text(&o.stdout);
    assert!(
        printed.contains("--annotation '\"dev.sandboy.landlock={\"\"mode\"\":"),
        "{printed}"
    );
    // What a shell makes of the printed text: the argv podman gets.
    let argv = capture(Command::new("sh").arg("-c").arg(format!(
        "set -- {}; printf '%s\\n' \"$@\"",
        printed.trim_end().replace("\\\n", " ")
    )));
    p.expect(&argv, 0);
    let args: Vec<String> = text(&argv.stdout).lines().map(String::from).collect();
    // Landlock, sha256, timeout, and the policy's seccomp profile (its
    // deny list and guards, installed after podman's own).
    assert_eq!(
        args.iter().filter(|a| *a == "--annotation").count(),
        4,
        "{args:?}"
    );
    let b = busybox_rootfs();
    let mut run: Vec<&str> = vec!["--rm"];
    run.extend(args.iter().map(String::as_str));
    let script = "echo allowed > /tmp/ok && cat /tmp/ok; \
                  if { echo escaped > /root/outside; } 2>&1; then echo WROTE-OUTSIDE; exit 1; fi; \
                  chmod 0700 /tmp/ok && echo mode-set; chmod 4755 /tmp/ok 2>/dev/null && echo SETUID-SET || echo setuid-refused";
    let rootfs = b.rootfs();
    run.extend(["--rootfs", rootfs.to_str().unwrap(), "sh", "-c", script]);
    let o = p.run(&run);
    let out = text(&o.stdout);
    assert!(!out.contains("WROTE-OUTSIDE"), "not confined: {out}");
    p.expect(&o, 0);
    assert!(
        out.starts_with("allowed\n") && out.contains("Permission denied"),
        "{out}"
    );
    // The setuid-modes guard came with the annotations: podman's profile
    // alone allows the bit; a plain mode still changes.
    assert!(out.contains("mode-set\nsetuid-refused"), "{out}");
    let config: serde_json::Value = serde_json::from_slice(
        &fs::read(p.dir.path().join("last-config.json")).expect("config.json copy"),
    )
    .unwrap();
    assert_eq!(config["annotations"]["dev.sandboy.timeout"], "300s");
    p.assert_clean();
}

/// The egress gateway under podman (issue 17): the `dev.sandboy.egress`
/// annotation passed with `--annotation` gives the container the gateway;
/// an allowed name is fetched through the proxy, an unlisted one refused.
/// Podman runs in the egress world's private mount namespace, so the
/// supervisor sandboy forks under conmon reads the test's hosts file.
#[test]
fn egress_annotation_reaches_allowed_names_only() {
    let test = "podman::egress_annotation_reaches_allowed_names_only";
    let Some(p) = Podman::setup(test) else {
        return;
    };
    let Some(w) = sandboy_tests::egress::World::start(test) else {
        return;
    };
    let b = busybox_rootfs();
    let probe = target_dir().join("probes/probe");
    if !probe.exists() {
        return skip(test, "the C probe is not built (make probes)");
    }
    std::fs::copy(&probe, b.rootfs().join("bin/probe")).unwrap();
    let annotation = csv_quote(&format!(
        r#"dev.sandboy.egress={{"allow":["web.egress.test:{h}"],"allow_cidr":["127.77.0.0/24:{h}"],"proxy_port":3128}}"#,
        h = w.http
    ));
    // Next to the allowed wget: UDP (to any port, the stub's included),
    // ICMP and raw sockets are refused with EPERM even though podman's
    // own seccomp profile allows them (sandboy adds its egress guard);
    // a TCP socket is not.
    let script = format!(
        "wget -q -O - http://web.egress.test:{}/index.html; wget -q -O - http://bad.egress.test:{}/ 2>&1; echo bad=$?; \
         echo udp $(probe udp-send 9) stub $(probe udp-send 53) udp6 $(probe socket 10 2 0) icmp $(probe socket 2 2 1) raw $(probe socket 2 3 1) tcp $(probe socket 2 1 0)",
        w.http, w.other
    );
    let inner = p.cmd();
    let mut c = w.in_hosts(std::path::Path::new("podman"));
    for (k, v) in inner.get_envs() {
        if let Some(v) = v {
            c.env(k, v);
        }
    }
    c.args(inner.get_args()).args([
        "run",
        "--cgroup-parent",
        &p.cgroup_parent,
        "--rm",
        "--annotation",
        &annotation,
        "--env",
        "http_proxy=http://127.0.0.1:3128",
        "--rootfs",
        b.rootfs().to_str().unwrap(),
        "sh",
        "-c",
        &script,
    ]);
    let o = output_timeout(&mut c, TIMEOUT);
    p.expect(&o, 0);
    let out = text(&o.stdout);
    assert!(out.contains("hello from upstream"), "stdout: {out}");
    assert!(
        out.contains("403") && !out.contains("bad=0"),
        "stdout: {out}"
    );
    assert!(
        out.lines().any(|l| l.trim()
            == "udp errno=EPERM stub errno=EPERM udp6 errno=EPERM icmp errno=EPERM raw errno=EPERM tcp ok"),
        "stdout: {out}"
    );
    p.assert_clean();
}

/// Denial reports under podman (issue 16): a detached container (`podman
/// run -d`) confined by a Landlock annotation refuses a write outside its
/// rules while the allowed write works; with kernel auditing on, its
/// supervisor — forked by sandboy's `create` under conmon, outliving it —
/// reports the refusal through `sandboy events` and as a warn event with
/// the container id in the runtime log podman passed with `--log`.
#[test]
fn detached_container_reports_denials_through_events_and_the_runtime_log() {
    let test = "podman::detached_container_reports_denials_through_events_and_the_runtime_log";
    let Some(p) = Podman::setup(test) else {
        return;
    };
    let _audit = sandboy_tests::audit::AuditState::take(Some(1));
    let b = busybox_rootfs();
    let ruleset = r#"{"mode":"enforce","fs":[{"path":"/","access":["read","exec"]},{"path":"/tmp","access":["read","write"]},{"path":"/dev/null","access":["read","write"]}]}"#;
    let annotation = csv_quote(&format!("dev.sandboy.landlock={ruleset}"));
    let script = "echo allowed > /tmp/ok && cat /tmp/ok; \
                  if { echo escaped > /root/outside; } 2>/dev/null; then echo WROTE-OUTSIDE; fi; \
                  echo refused; exec sleep 1000";
    let name = unique_id("sbdeny");
    let o = p.run_rootfs(
        &["-d", "--name", &name, "--annotation", &annotation],
        &b.rootfs(),
        &["sh", "-c", script],
    );
    p.expect(&o, 0);
    let id = text(&o.stdout).trim().to_owned();
    assert_eq!(id.len(), 64, "podman run -d printed {id:?}");

    // podman's create and start have returned: only the supervisor reports.
    let report = p.sandboy.root.path().join(&id).join("denials.jsonl");
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while !fs::read_to_string(&report)
        .unwrap_or_default()
        .contains(r#""target":"/root""#)
        && std::time::Instant::now() < deadline
    {
        std::thread::sleep(Duration::from_millis(50));
    }
    let o = p.podman(&["logs", &name]);
    p.expect(&o, 0);
    assert_eq!(text(&o.stdout), "allowed\nrefused\n", "the allowed write");
    assert!(!b.rootfs().join("root/outside").exists());

    // `sandboy events` of the podman container id, in the runtime root
    // podman's runtime uses.
    let o = p.sandboy.run(&["events", "--stats", &id]);
    p.expect(&o, 0);
    let denials = sandboy_tests::audit::denial_events(&o.stdout);
    assert_eq!(denials.len(), 1, "{}", text(&o.stdout));
    let d = &denials[0];
    assert_eq!(d["id"], id.as_str());
    assert_eq!(d["data"]["kind"], "create", "{d}");
    // Creating a file is a right on its directory: the kernel names /root.
    assert_eq!(d["data"]["target"], "/root", "{d}");
    assert_eq!(d["data"]["comm"], "sh", "{d}");
    assert_eq!(d["data"]["allow"], r#"add "/root" to [fs] write"#, "{d}");

    // The runtime log podman handed to `create`: the supervisor's warn
    // event, in logrus-shaped JSON, names the container.
    let calls = p.calls();
    let create = calls
        .lines()
        .find(|l| l.split_whitespace().any(|w| w == "create") && l.ends_with(&id))
        .unwrap_or_else(|| panic!("no create of {id}:\n{calls}"));
    let words: Vec<&str> = create.split_whitespace().collect();
    let log = words
        .iter()
        .position(|w| *w == "--log")
        .map(|i| PathBuf::from(words[i + 1]))
        .unwrap_or_else(|| panic!("podman passed no --log: {create}"));
    let logged = fs::read_to_string(&log).unwrap_or_default();
    let warned = logged
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .any(|e| {
            e["level"] == "warning"
                && e["id"] == id.as_str()
                && e["msg"]
                    .as_str()
                    .is_some_and(|m| m.starts_with("refused: create /root "))
        });
    assert!(
        warned,
        "no warn event for the refusal in {}:\n{logged}",
        log.display()
    );

    let o = p.podman(&["rm", "--force", "--time", "0", &name]);
    p.expect(&o, 0);
    p.assert_clean();
}
