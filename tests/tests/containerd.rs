//! containerd 1.6 (runc v2 shim) driving sandboy, configured by
//! `deploy/containerd/config.toml`.
//!
//! Each test starts its own containerd (own config, root, state, gRPC and
//! ttrpc sockets, containerd namespace, runtime state root) and stops it on
//! drop, whatever happened: tasks killed and deleted, containerd terminated,
//! shims killed, mounts and cgroups removed.
//!
//! The runtime binary the shim runs is a one-line wrapper around the binary
//! under test (`$SANDBOY_BIN`) that records each invocation, printed when a
//! test fails. The shim passes `--root` itself (`--runc-root`, or the
//! runtime's `Root` option).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use sandboy_tests::*;

const TIMEOUT: Duration = Duration::from_secs(90);

/// Shell for the wrapper: keep a copy of each `create`'s config.json (what
/// the shim handed to the runtime) as DIR/configs/<id>.json.
const KEEP_CONFIG: &str = r#"prev=; b=; for a in "$@"; do [ "$prev" = --bundle ] && b=$a; prev=$a; done
[ -n "$b" ] && mkdir -p 'DIR/configs' && cp "$b/config.json" "DIR/configs/$prev.json"
"#;

struct Containerd {
    dir: TempDir,
    child: Option<Child>,
    sock: PathBuf,
    /// containerd namespace; also the parent cgroup of its containers.
    ns: String,
    /// The wrapper passed as the runc binary / BinaryName.
    runtime: PathBuf,
    /// `--runc-root` for `ctr run`; the shim appends the namespace.
    runc_root: PathBuf,
    /// Whether /run/containerd existed before: containerd 1.6 puts shim
    /// sockets in /run/containerd/s whatever the config says; the empty
    /// directories are removed again if this test made them.
    had_run_dir: bool,
}

impl Containerd {
    fn start(test: &str) -> Option<Containerd> {
        if !need_root(test)
            || !need_tool(test, "containerd")
            || !need_tool(test, "ctr")
            || !need_tool(test, "containerd-shim-runc-v2")
        {
            return None;
        }
        let bin = need_sandboy(test)?;
        let dir = TempDir::new("containerd");
        let d = dir.path().to_path_buf();
        fs::create_dir_all(d.join("bin")).unwrap();
        let runtime = d.join("bin/sandboy");
        write_runtime_wrapper(
            &runtime,
            &d.join("calls.log"),
            &KEEP_CONFIG.replace("DIR", &d.to_string_lossy()),
            "",
            &bin,
        );

        // The shipped config, made private: own root/state/sockets, and the
        // sandboy runtime entry pointing at the binary under test.
        let shipped = fs::read_to_string(repo().join("deploy/containerd/config.toml"))
            .expect("read deploy/containerd/config.toml");
        let entry = "BinaryName = \"/usr/local/bin/sandboy\"";
        assert!(
            shipped.contains(entry),
            "config.toml has no sandboy BinaryName"
        );
        // The gate handler's wrapper passes the test's node configuration
        // (never the real /etc/sandboy), as deploy/node/sandboy-gate does.
        let gate = d.join("bin/sandboy-gate");
        write_runtime_wrapper(
            &gate,
            &d.join("calls.log"),
            &KEEP_CONFIG.replace("DIR", &d.to_string_lossy()),
            &format!("--config '{}' ", d.join("node/gate.toml").display()),
            &bin,
        );
        let gate_entry = "BinaryName = \"/usr/local/bin/sandboy-gate\"";
        assert!(
            shipped.contains(gate_entry),
            "config.toml has no sandboy-gate BinaryName"
        );
        let body: String = shipped
            .replace(
                entry,
                &format!(
                    "BinaryName = \"{}\"\n        Root = \"{}\"",
                    runtime.display(),
                    d.join("cri-runtime-root").display()
                ),
            )
            .replace(
                gate_entry,
                &format!(
                    "BinaryName = \"{}\"\n        Root = \"{}\"",
                    gate.display(),
                    d.join("cri-gate-root").display()
                ),
            )
            .lines()
            .filter(|l| !l.trim_start().starts_with("version"))
            .map(|l| format!("{l}\n"))
            .collect();
        let sock = d.join("containerd.sock");
        let config = format!(
            "version = 2\nroot = \"{root}\"\nstate = \"{state}\"\n\
             [grpc]\n  address = \"{sock}\"\n[ttrpc]\n  address = \"{sock}.ttrpc\"\n\
             [debug]\n  level = \"debug\"\n\
             [plugins.\"io.containerd.internal.v1.opt\"]\n  path = \"{opt}\"\n{body}",
            root = d.join("root").display(),
            state = d.join("state").display(),
            sock = sock.display(),
            opt = d.join("opt").display(),
        );
        fs::write(d.join("config.toml"), config).unwrap();

        let had_run_dir = Path::new("/run/containerd").exists();
        let log = fs::File::create(d.join("containerd.log")).unwrap();
        let child = Command::new("containerd")
            .arg("--config")
            .arg(d.join("config.toml"))
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("spawn containerd");
        let c = Containerd {
            dir,
            child: Some(child),
            sock,
            ns: unique_id("sandboy-ctr"),
            runtime,
            runc_root: d.join("runc-root"),
            had_run_dir,
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if c.ctr(&["version"]).status.success() {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "containerd did not come up:\n{}",
                c.log()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
        Some(c)
    }

    /// A rootfs directory into containerd's image store of namespace `ns`
    /// (there is no registry here): tar, `podman import` with `changes`,
    /// save as an OCI archive, `ctr images import`. Podman's storage is
    /// private to the test and emptied afterwards.
    fn import_image(&self, ns: &str, rootfs: &Path, image: &str, changes: &[&str]) {
        let d = self.dir.path();
        let podman = |args: &[&str]| {
            let mut p = Command::new("podman");
            p.arg("--root")
                .arg(d.join("podman-storage"))
                .arg("--runroot")
                .arg(d.join("podman-run"));
            p.arg("--tmpdir").arg(d.join("podman-tmp")).args(args);
            output_timeout(&mut p, TIMEOUT)
        };
        let stem = image.replace(['/', ':'], "_");
        let tar = d.join(format!("{stem}.rootfs.tar"));
        let st = Command::new("tar")
            .arg("-C")
            .arg(rootfs)
            .arg("-cf")
            .arg(&tar)
            .arg(".")
            .status()
            .unwrap();
        assert!(st.success());
        let mut args = vec!["import"];
        for change in changes {
            args.extend(["--change", change]);
        }
        args.extend([tar.to_str().unwrap(), image]);
        self.expect(&podman(&args), 0);
        let archive = d.join(format!("{stem}.tar"));
        let archive = archive.to_str().unwrap();
        self.expect(
            &podman(&["save", "--format", "oci-archive", "-o", archive, image]),
            0,
        );
        let _ = podman(&["rmi", "--all", "--force"]);
        unmount_all_mentioning(&d.join("podman-storage").to_string_lossy());
        self.expect(&self.ctr_in(ns, &["images", "import", archive]), 0);
    }

    /// Private cgroup parent for CRI pods.
    fn pod_cgroup_parent(&self) -> String {
        format!("/{}-pods", self.ns)
    }

    fn ctr(&self, args: &[&str]) -> Output {
        self.ctr_in(&self.ns, args)
    }

    /// `ctr` in another containerd namespace (`k8s.io` for CRI).
    fn ctr_in(&self, ns: &str, args: &[&str]) -> Output {
        let mut c = Command::new("ctr");
        c.arg("--address")
            .arg(&self.sock)
            .arg("--namespace")
            .arg(ns)
            .args(args);
        output_timeout(&mut c, TIMEOUT)
    }

    /// `ctr run --runc-binary <sandboy> --runc-root <private> OPTS… ARGS…`
    fn run_with_binary(&self, opts: &[&str], args: &[&str]) -> Output {
        self.run_with(&self.runtime, opts, args)
    }

    /// `ctr run --detach` of `sh -c script` in `b`'s rootfs as task `id`.
    fn run_detached_sh(&self, b: &Bundle, id: &str, script: &str) -> Output {
        let rootfs = b.rootfs();
        let rootfs = rootfs.to_str().unwrap();
        self.run_with_binary(
            &["--detach", "--env", "PATH=/bin", "--rootfs", rootfs],
            &[id, "sh", "-c", script],
        )
    }

    /// `ctr task exec --exec-id EXEC [flags…] ID sh -c script`.
    fn exec_sh(&self, exec_id: &str, flags: &[&str], id: &str, script: &str) -> Output {
        let fifo = self.fifo_dir();
        let mut a = vec!["task", "exec", "--fifo-dir", &fifo, "--exec-id", exec_id];
        a.extend_from_slice(flags);
        a.extend_from_slice(&[id, "sh", "-c", script]);
        self.ctr(&a)
    }

    /// [`Self::run_with_binary`] with another runc binary.
    fn run_with(&self, runtime: &Path, opts: &[&str], args: &[&str]) -> Output {
        let runtime = runtime.to_str().unwrap().to_owned();
        let root = self.runc_root.to_str().unwrap().to_owned();
        let fifo = self.fifo_dir();
        let mut a = vec![
            "run",
            "--runc-binary",
            &runtime,
            "--runc-root",
            &root,
            "--fifo-dir",
            &fifo,
        ];
        a.extend_from_slice(opts);
        a.extend_from_slice(args);
        self.ctr(&a)
    }

    /// Private directory for ctr's stdio FIFOs (default: /run/containerd/fifo).
    fn fifo_dir(&self) -> String {
        self.dir.path().join("fifo").to_string_lossy().into_owned()
    }

    /// sandboy with the state root the shim uses for `ctr run`.
    fn sandboy(&self) -> Command {
        let mut c = Command::new(sandboy_bin());
        c.arg("--root").arg(self.runc_root.join(&self.ns));
        c
    }

    fn sandboy_status(&self, id: &str) -> String {
        let o = output_timeout(self.sandboy().args(["state", id]), TIMEOUT);
        self.expect(&o, 0);
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        v["status"].as_str().unwrap_or_default().to_owned()
    }

    fn calls(&self) -> String {
        fs::read_to_string(self.dir.path().join("calls.log")).unwrap_or_default()
    }

    fn log(&self) -> String {
        let log = fs::read_to_string(self.dir.path().join("containerd.log")).unwrap_or_default();
        // The interesting part is at the end.
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(40)..].join("\n")
    }

    #[track_caller]
    fn expect(&self, o: &Output, code: i32) {
        assert_exit_showing(o, code, "runtime calls", &self.calls());
    }

    /// STATUS column of `ctr task ls` for `id` (empty if not listed).
    fn task_status(&self, id: &str) -> String {
        let o = self.ctr(&["task", "ls"]);
        self.expect(&o, 0);
        text(&o.stdout)
            .lines()
            .filter_map(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                (f.first() == Some(&id)).then(|| f.last().unwrap().to_string())
            })
            .next()
            .unwrap_or_default()
    }

    fn wait_task_status(&self, id: &str, want: &str) {
        for _ in 0..100 {
            if self.task_status(id) == want {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!(
            "task {id} never reached {want} (now {:?})\n{}",
            self.task_status(id),
            self.calls()
        );
    }

    /// Nothing left behind for `ids`: no state in `root`, no cgroup, no
    /// mount, no shim.
    fn assert_clean(&self, root: &Path, ids: &[&str]) {
        let needle = self.sock.to_string_lossy().into_owned();
        let shims = || {
            pids_mentioning(&needle)
                .into_iter()
                .filter(|p| {
                    fs::read(format!("/proc/{p}/cmdline"))
                        .map(|c| String::from_utf8_lossy(&c).contains("containerd-shim"))
                        .unwrap_or(false)
                })
                .collect::<Vec<_>>()
        };
        for _ in 0..100 {
            if shims().is_empty() {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        assert_eq!(shims(), Vec::<i32>::new(), "shims left running");
        for id in ids {
            assert!(
                !root.join(id).exists(),
                "sandboy state left for {id} in {}",
                root.display()
            );
            assert_eq!(
                cgroups_named(&format!("{}/{id}", self.ns)),
                Vec::<PathBuf>::new()
            );
            let cg: Vec<PathBuf> = cgroups_named(&self.ns)
                .into_iter()
                .map(|p| p.join(id))
                .filter(|p| p.exists())
                .collect();
            assert_eq!(cg, Vec::<PathBuf>::new(), "cgroups left for {id}");
            assert_eq!(
                mounts_mentioning(&format!("/{id}/")),
                Vec::<String>::new(),
                "mounts left for {id}"
            );
        }
    }
}

impl Drop for Containerd {
    fn drop(&mut self) {
        if self.child.is_some() {
            for ns in [self.ns.as_str(), "k8s.io"] {
                let o = self.ctr_in(ns, &["task", "ls", "-q"]);
                for id in text(&o.stdout)
                    .lines()
                    .map(str::trim)
                    .filter(|l| !l.is_empty())
                {
                    let _ = self.ctr_in(ns, &["task", "kill", "--all", "--signal", "SIGKILL", id]);
                    let _ = self.ctr_in(ns, &["task", "delete", "--force", id]);
                }
                let o = self.ctr_in(ns, &["container", "ls", "-q"]);
                for id in text(&o.stdout)
                    .lines()
                    .map(str::trim)
                    .filter(|l| !l.is_empty())
                {
                    let _ = self.ctr_in(ns, &["container", "delete", id]);
                }
            }
        }
        if let Some(mut child) = self.child.take() {
            // SAFETY: kill(2) on the containerd this test started.
            unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
            let deadline = Instant::now() + Duration::from_secs(10);
            while child.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(100));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        // Shims of this containerd (their command line names its socket).
        for pid in pids_mentioning(&self.sock.to_string_lossy()) {
            // SAFETY: kill(2) on a shim started for this test's containerd.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        unmount_all_mentioning(&self.dir.path().to_string_lossy());
        if !self.had_run_dir {
            // Only empty directories go; another containerd's are kept.
            let _ = fs::remove_dir("/run/containerd/s");
            let _ = fs::remove_dir("/run/containerd");
        }
        remove_cgroup_tree(&self.ns);
        remove_cgroup_tree(&self.pod_cgroup_parent());
        if std::thread::panicking() {
            eprintln!(
                "runtime calls:\n{}\ncontainerd log (tail):\n{}",
                self.calls(),
                self.log()
            );
        }
    }
}

#[test]
fn ctr_run_with_runc_binary() {
    let Some(c) = Containerd::start("containerd::ctr_run_with_runc_binary") else {
        return;
    };
    let b = Bundle::busybox(&[]);
    let rootfs = b.rootfs();
    let rootfs = rootfs.to_str().unwrap();
    let id = unique_id("sbc");
    let o = c.run_with_binary(
        &["--rm", "--env", "PATH=/bin", "--rootfs", rootfs],
        &[
            &id,
            "sh",
            "-c",
            "echo hello from sandboy; echo err >&2; exit 5",
        ],
    );
    c.expect(&o, 5);
    assert_eq!(text(&o.stdout), "hello from sandboy\n");
    assert!(
        text(&o.stderr).contains("err"),
        "stderr: {}",
        text(&o.stderr)
    );

    // A tty: the shim hands sandboy a --console-socket.
    // ctr --tty wants a terminal of its own: script(1) gives it one.
    let id2 = unique_id("sbc");
    if !need_tool("containerd::ctr_run_with_runc_binary (tty part)", "script") {
        return;
    }
    let line = format!(
        "ctr --address '{}' --namespace '{}' run --runc-binary '{}' --runc-root '{}' --fifo-dir '{}' \
         --rm --tty --env PATH=/bin --rootfs '{rootfs}' {id2} sh -c 'test -t 0 && tty; exit 4'",
        c.sock.display(),
        c.ns,
        c.runtime.display(),
        c.runc_root.display(),
        c.fifo_dir(),
    );
    let o = output_timeout(
        Command::new("script").args(["-qec", &line, "/dev/null"]),
        TIMEOUT,
    );
    c.expect(&o, 4);
    assert!(
        text(&o.stdout).contains("/dev/pts/"),
        "tty output: {:?}",
        text(&o.stdout)
    );
    assert!(c.calls().contains("--console-socket"), "{}", c.calls());

    let calls = c.calls();
    for l in calls.lines() {
        assert!(
            l.contains("--log-format json") && l.contains("--root "),
            "shim call without --root/--log-format json: {l}"
        );
    }
    assert_called(&calls, &["create", "start", "delete"]);
    assert_eq!(text(&c.ctr(&["container", "ls", "-q"]).stdout).trim(), "");
    c.assert_clean(&c.runc_root.join(&c.ns), &[&id, &id2]);
}

#[test]
fn ctr_exec_pause_resume_kill_delete() {
    let Some(c) = Containerd::start("containerd::ctr_exec_pause_resume_kill_delete") else {
        return;
    };
    let b = Bundle::busybox(&[]);
    let id = unique_id("sbc");
    let o = c.run_detached_sh(&b, &id, "trap 'exit 3' TERM; sleep 1000 & wait");
    c.expect(&o, 0);
    c.wait_task_status(&id, "RUNNING");
    assert_eq!(c.sandboy_status(&id), "running");

    let o = c.exec_sh("e1", &[], &id, "echo in-exec; exit 3");
    c.expect(&o, 3);
    assert_eq!(text(&o.stdout), "in-exec\n");
    let o = c.exec_sh("e2", &["--cwd", "/tmp"], &id, "echo $X $(pwd)");
    c.expect(&o, 0);
    assert_eq!(text(&o.stdout), "/tmp\n");

    // ps goes through `sandboy ps --format json`.
    let o = c.ctr(&["task", "ps", &id]);
    c.expect(&o, 0);
    assert!(
        text(&o.stdout).lines().count() >= 3,
        "task ps: {}",
        text(&o.stdout)
    );
    assert!(c.calls().contains("ps --format json"), "{}", c.calls());

    let o = c.ctr(&["task", "pause", &id]);
    c.expect(&o, 0);
    assert_eq!(c.task_status(&id), "PAUSED");
    assert_eq!(c.sandboy_status(&id), "paused");
    let o = c.ctr(&["task", "resume", &id]);
    c.expect(&o, 0);
    assert_eq!(c.task_status(&id), "RUNNING");
    assert_eq!(c.sandboy_status(&id), "running");

    // SIGTERM reaches the trap: exit status 3.
    let o = c.ctr(&["task", "kill", "--signal", "SIGTERM", &id]);
    c.expect(&o, 0);
    c.wait_task_status(&id, "STOPPED");
    let o = c.ctr(&["task", "delete", &id]);
    c.expect(&o, 0);
    assert!(
        text(&o.stdout).contains("status: 3") || text(&o.stdout).is_empty(),
        "task delete: {}",
        text(&o.stdout)
    );
    let o = c.ctr(&["container", "delete", &id]);
    c.expect(&o, 0);

    // kill --all on a container with several processes.
    let id2 = unique_id("sbc");
    let o = c.run_detached_sh(&b, &id2, "sleep 1000 & sleep 1000 & wait");
    c.expect(&o, 0);
    c.wait_task_status(&id2, "RUNNING");
    let o = c.ctr(&["task", "kill", "--all", "--signal", "SIGKILL", &id2]);
    c.expect(&o, 0);
    assert!(
        c.calls().lines().any(|l| l.contains("kill --all")),
        "{}",
        c.calls()
    );
    c.wait_task_status(&id2, "STOPPED");
    c.expect(&c.ctr(&["task", "delete", &id2]), 0);
    c.expect(&c.ctr(&["container", "delete", &id2]), 0);

    c.assert_clean(&c.runc_root.join(&c.ns), &[&id, &id2]);
}

/// An image imported from an OCI archive (built with podman from the
/// busybox rootfs) runs through containerd's snapshotter and sandboy.
#[test]
fn ctr_imported_image_runs() {
    let test = "containerd::ctr_imported_image_runs";
    if !need_tool(test, "podman") || !need_tool(test, "tar") {
        return;
    }
    let Some(c) = Containerd::start(test) else {
        return;
    };
    let b = Bundle::busybox(&[]);
    let image = "localhost/sandboy-busybox:test";
    c.import_image(&c.ns, &b.rootfs(), image, &[]);
    let id = unique_id("sbc");
    let o = c.run_with_binary(
        &["--rm"],
        &[
            image,
            &id,
            "sh",
            "-c",
            "echo from-image; cat /etc/hostname; exit 2",
        ],
    );
    c.expect(&o, 2);
    assert_eq!(text(&o.stdout), "from-image\nsandboy\n");
    c.assert_clean(&c.runc_root.join(&c.ns), &[&id]);
}

/// Just enough of a CRI client to drive containerd's CRI plugin without
/// crictl or gRPC crates: protobuf encoded by hand (field numbers from
/// cri-api's runtime/v1 `api.proto`), gRPC over a fresh HTTP/2 connection
/// per call (prior knowledge, HPACK literals without Huffman coding).
mod cri {
    use std::io::{Read, Write};
    use std::os::unix::net::UnixStream;
    use std::path::PathBuf;
    use std::time::Duration;

    pub fn varint(buf: &mut Vec<u8>, mut v: u64) {
        loop {
            let b = (v & 0x7f) as u8;
            v >>= 7;
            if v == 0 {
                buf.push(b);
                return;
            }
            buf.push(b | 0x80);
        }
    }

    /// A length-delimited field (string, bytes, message).
    pub fn bytes(buf: &mut Vec<u8>, field: u32, data: &[u8]) {
        varint(buf, u64::from(field << 3 | 2));
        varint(buf, data.len() as u64);
        buf.extend_from_slice(data);
    }

    pub fn string(buf: &mut Vec<u8>, field: u32, s: &str) {
        bytes(buf, field, s.as_bytes());
    }

    /// A varint field (integers, bools, enums).
    pub fn uint(buf: &mut Vec<u8>, field: u32, v: u64) {
        varint(buf, u64::from(field << 3));
        varint(buf, v);
    }

    /// A `map<string, string>` field.
    pub fn map(buf: &mut Vec<u8>, field: u32, entries: &[(&str, &str)]) {
        for (k, v) in entries {
            let mut e = Vec::new();
            string(&mut e, 1, k);
            string(&mut e, 2, v);
            bytes(buf, field, &e);
        }
    }

    /// A submessage built by `f`.
    pub fn msg(buf: &mut Vec<u8>, field: u32, f: impl FnOnce(&mut Vec<u8>)) {
        let mut m = Vec::new();
        f(&mut m);
        bytes(buf, field, &m);
    }

    pub enum Value {
        Varint(u64),
        Bytes(Vec<u8>),
        Fixed,
    }

    fn read_varint(data: &[u8], i: &mut usize) -> u64 {
        let mut v = 0u64;
        let mut shift = 0;
        while *i < data.len() {
            let b = data[*i];
            *i += 1;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                break;
            }
            shift += 7;
        }
        v
    }

    /// Top-level fields of a message.
    pub fn fields(data: &[u8]) -> Vec<(u32, Value)> {
        let mut out = Vec::new();
        let mut i = 0;
        while i < data.len() {
            let tag = read_varint(data, &mut i);
            let field = (tag >> 3) as u32;
            match tag & 7 {
                0 => out.push((field, Value::Varint(read_varint(data, &mut i)))),
                2 => {
                    let n = read_varint(data, &mut i) as usize;
                    let end = (i + n).min(data.len());
                    out.push((field, Value::Bytes(data[i..end].to_vec())));
                    i = end;
                }
                1 => {
                    i += 8;
                    out.push((field, Value::Fixed));
                }
                5 => {
                    i += 4;
                    out.push((field, Value::Fixed));
                }
                _ => break,
            }
        }
        out
    }

    pub fn get_bytes(data: &[u8], field: u32) -> Vec<u8> {
        fields(data)
            .into_iter()
            .find_map(|(f, v)| match v {
                Value::Bytes(b) if f == field => Some(b),
                _ => None,
            })
            .unwrap_or_default()
    }

    pub fn get_string(data: &[u8], field: u32) -> String {
        String::from_utf8_lossy(&get_bytes(data, field)).into_owned()
    }

    pub fn get_uint(data: &[u8], field: u32) -> u64 {
        fields(data)
            .into_iter()
            .find_map(|(f, v)| match v {
                Value::Varint(n) if f == field => Some(n),
                _ => None,
            })
            .unwrap_or(0)
    }

    fn frame(out: &mut Vec<u8>, ty: u8, flags: u8, stream: u32, payload: &[u8]) {
        let len = payload.len() as u32;
        out.extend_from_slice(&len.to_be_bytes()[1..]);
        out.push(ty);
        out.push(flags);
        out.extend_from_slice(&stream.to_be_bytes());
        out.extend_from_slice(payload);
    }

    fn hpack_int(buf: &mut Vec<u8>, prefix_bits: u32, first: u8, v: usize) {
        let max = (1usize << prefix_bits) - 1;
        if v < max {
            buf.push(first | v as u8);
            return;
        }
        buf.push(first | max as u8);
        let mut v = v - max;
        while v >= 128 {
            buf.push((v % 128 + 128) as u8);
            v /= 128;
        }
        buf.push(v as u8);
    }

    fn hpack_str(buf: &mut Vec<u8>, s: &str) {
        hpack_int(buf, 7, 0, s.len());
        buf.extend_from_slice(s.as_bytes());
    }

    /// Literal header field without indexing, name from the static table.
    fn header_indexed_name(buf: &mut Vec<u8>, index: usize, value: &str) {
        hpack_int(buf, 4, 0, index);
        hpack_str(buf, value);
    }

    pub struct Client {
        pub sock: PathBuf,
    }

    impl Client {
        /// One unary call, e.g. `runtime.v1.RuntimeService/RunPodSandbox`.
        /// Errors carry no gRPC message (it is Huffman-coded in the
        /// trailers): containerd's log has it.
        pub fn call(&self, method: &str, req: &[u8]) -> Result<Vec<u8>, String> {
            let e = |what: &str, err: std::io::Error| format!("{method}: {what}: {err}");
            let mut s = UnixStream::connect(&self.sock).map_err(|err| e("connect", err))?;
            s.set_read_timeout(Some(Duration::from_secs(120))).unwrap();
            let mut out = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
            frame(&mut out, 4, 0, 0, &[]);
            let mut h = vec![0x83, 0x86]; // :method POST, :scheme http
            header_indexed_name(&mut h, 4, &format!("/{method}"));
            header_indexed_name(&mut h, 1, "localhost");
            header_indexed_name(&mut h, 31, "application/grpc");
            h.push(0);
            hpack_str(&mut h, "te");
            hpack_str(&mut h, "trailers");
            frame(&mut out, 1, 0x4, 1, &h); // HEADERS, END_HEADERS
            let mut d = vec![0];
            d.extend_from_slice(&(req.len() as u32).to_be_bytes());
            d.extend_from_slice(req);
            frame(&mut out, 0, 0x1, 1, &d); // DATA, END_STREAM
            s.write_all(&out).map_err(|err| e("write", err))?;

            let mut data = Vec::new();
            let mut trailers = Vec::new();
            loop {
                let mut hdr = [0u8; 9];
                s.read_exact(&mut hdr).map_err(|err| e("read", err))?;
                let len = u32::from_be_bytes([0, hdr[0], hdr[1], hdr[2]]) as usize;
                let (ty, flags) = (hdr[3], hdr[4]);
                let mut payload = vec![0u8; len];
                s.read_exact(&mut payload).map_err(|err| e("read", err))?;
                let mut reply = Vec::new();
                match ty {
                    0 => {
                        let mut p = &payload[..];
                        if flags & 0x8 != 0 && !p.is_empty() {
                            let pad = p[0] as usize;
                            p = &p[1..p.len().saturating_sub(pad)];
                        }
                        data.extend_from_slice(p);
                        if len > 0 {
                            frame(&mut reply, 8, 0, 0, &(len as u32).to_be_bytes());
                        }
                        if flags & 0x1 != 0 {
                            break;
                        }
                    }
                    1 | 9 => {
                        trailers.extend_from_slice(&payload);
                        if flags & 0x1 != 0 {
                            break;
                        }
                    }
                    3 => return Err(format!("{method}: stream reset: {payload:?}")),
                    4 if flags & 0x1 == 0 => frame(&mut reply, 4, 0x1, 0, &[]),
                    6 if flags & 0x1 == 0 => frame(&mut reply, 6, 0x1, 0, &payload),
                    7 => {
                        return Err(format!(
                            "{method}: GOAWAY {}",
                            String::from_utf8_lossy(&payload)
                        ))
                    }
                    _ => {}
                }
                if !reply.is_empty() {
                    s.write_all(&reply).map_err(|err| e("write", err))?;
                }
            }
            if data.len() >= 5 {
                let n = u32::from_be_bytes([data[1], data[2], data[3], data[4]]) as usize;
                return Ok(data[5..(5 + n).min(data.len())].to_vec());
            }
            Err(format!(
                "{method} failed (raw trailers {:?}); containerd's log has the message",
                String::from_utf8_lossy(&trailers)
            ))
        }
    }
}

const RT: &str = "runtime.v1.RuntimeService";

/// Pod and container settings for host networking, own PID namespace.
fn namespace_options(buf: &mut Vec<u8>, field: u32) {
    cri::msg(buf, field, |n| {
        cri::uint(n, 1, 2); // network: NODE (no CNI here)
        cri::uint(n, 2, 1); // pid: CONTAINER
        cri::uint(n, 3, 0); // ipc: POD
    });
}

/// A CRI client on a test's containerd, failing with its calls and log.
struct Cri<'a> {
    c: &'a Containerd,
    client: cri::Client,
}

impl<'a> Cri<'a> {
    fn new(c: &'a Containerd) -> Self {
        Cri {
            c,
            client: cri::Client {
                sock: c.sock.clone(),
            },
        }
    }

    fn call(&self, method: &str, req: &[u8]) -> Result<Vec<u8>, String> {
        self.client.call(&format!("{RT}/{method}"), req)
    }

    fn must(&self, method: &str, req: &[u8]) -> Vec<u8> {
        self.call(method, req).unwrap_or_else(|e| {
            panic!(
                "{e}\nruntime calls:\n{}\ncontainerd log:\n{}",
                self.c.calls(),
                self.c.log()
            )
        })
    }

    /// ExecSync `sh -c script`: stdout, stderr, exit code.
    fn exec_sync(&self, id: &str, script: &str) -> (String, String, u64) {
        let mut req = Vec::new();
        cri::string(&mut req, 1, id);
        for a in ["/bin/sh", "-c", script] {
            cri::string(&mut req, 2, a);
        }
        cri::uint(&mut req, 3, 30);
        let resp = self.must("ExecSync", &req);
        (
            cri::get_string(&resp, 1),
            cri::get_string(&resp, 2),
            cri::get_uint(&resp, 3),
        )
    }
}

/// The busybox image and a pause image made of it, into `k8s.io`.
fn import_pod_images(c: &Containerd, b: &Bundle) {
    c.import_image(
        "k8s.io",
        &b.rootfs(),
        "localhost/sandboy-busybox:test",
        &["ENV PATH=/bin", r#"CMD ["/bin/sh"]"#],
    );
    c.import_image(
        "k8s.io",
        &b.rootfs(),
        "localhost/pause:latest",
        &[
            "ENV PATH=/bin",
            r#"ENTRYPOINT ["/bin/sleep", "2147483647"]"#,
        ],
    );
}

/// A CRI PodSandboxConfig: metadata, log directory, annotations, a
/// private cgroup parent and host networking.
fn pod_sandbox_config(
    buf: &mut Vec<u8>,
    name: &str,
    uid: &str,
    log_dir: &Path,
    cgroup_parent: &str,
    annotations: &[(&str, &str)],
) {
    cri::msg(buf, 1, |m| {
        cri::string(m, 1, name);
        cri::string(m, 2, uid);
        cri::string(m, 3, "default");
    });
    cri::string(buf, 3, log_dir.to_str().unwrap());
    cri::map(buf, 7, annotations);
    cri::msg(buf, 8, |l| {
        cri::string(l, 1, cgroup_parent);
        cri::msg(l, 2, |sc| namespace_options(sc, 1));
    });
}

/// A CRI ContainerConfig: name, image, argv, `PATH=/bin`, annotations, a
/// log file `<name>.log`, a private pid namespace.
fn container_config(
    cc: &mut Vec<u8>,
    name: &str,
    image: &str,
    argv: &[&str],
    annotations: &[(&str, &str)],
) {
    cri::msg(cc, 1, |m| cri::string(m, 1, name));
    cri::msg(cc, 2, |i| cri::string(i, 1, image));
    cri::string(cc, 3, argv[0]);
    for a in &argv[1..] {
        cri::string(cc, 4, a);
    }
    cri::msg(cc, 6, |kv| {
        cri::string(kv, 1, "PATH");
        cri::string(kv, 2, "/bin");
    });
    cri::map(cc, 10, annotations);
    cri::string(cc, 11, &format!("{name}.log"));
    cri::msg(cc, 15, |l| cri::msg(l, 2, |sc| namespace_options(sc, 3)));
}

/// The CRI path: a pod with runtime handler `sandboy` (what a RuntimeClass
/// with `handler: sandboy` makes the kubelet send) runs through the
/// configured runtime entry (BinaryName, Root), with the listed pod and
/// container annotations passed through to sandboy and others not.
#[test]
fn cri_runtime_handler_sandboy() {
    let test = "containerd::cri_runtime_handler_sandboy";
    if !need_tool(test, "podman") || !need_tool(test, "tar") {
        return;
    }
    let Some(c) = Containerd::start(test) else {
        return;
    };
    let d = c.dir.path().to_path_buf();

    // Images: busybox, a pause image (sandbox_image in the config), and an
    // adapter image: the rootfs bundles/adapter.sh lays out (component from
    // components/adapters.toml, report under /in).
    let b = Bundle::busybox(&[]);
    import_pod_images(&c, &b);
    let adapter_image = components_dir().join("infersharp.wasm").is_file().then(|| {
        let ab = d.join("adapter-bundle");
        let o = capture(
            Command::new(repo().join("bundles/adapter.sh"))
                .arg(&ab)
                .arg("infersharp")
                .arg(repo().join("bundles/fixtures/infersharp/report.json"))
                .env("SANDBOY_SPEC_GEN", spec_gen_bin()),
        );
        c.expect(&o, 0);
        let image = "localhost/sandboy-adapter:test";
        c.import_image("k8s.io", &ab.join("rootfs"), image, &[]);
        image
    });

    let client = Cri::new(&c);
    let call = |method: &str, req: &[u8]| client.must(method, req);
    let cgroup_parent = c.pod_cgroup_parent();
    let log_dir = d.join("pod-logs");
    fs::create_dir_all(&log_dir).unwrap();
    let pod_uid = unique_id("uid");
    let sandbox_config = |buf: &mut Vec<u8>| {
        pod_sandbox_config(
            buf,
            "sandboy-pod",
            &pod_uid,
            &log_dir,
            &cgroup_parent,
            &[
                ("dev.sandboy.timeout", "600s"),
                ("example.com/not-passed", "pod"),
            ],
        )
    };

    let mut req = Vec::new();
    cri::msg(&mut req, 1, sandbox_config);
    cri::string(&mut req, 2, "sandboy");
    let pod = cri::get_string(&call("RunPodSandbox", &req), 1);
    assert!(!pod.is_empty(), "RunPodSandbox returned no id");
    let root = d.join("cri-runtime-root/k8s.io");
    assert!(
        c.calls()
            .lines()
            .any(|l| l.starts_with(&format!("--root {} ", root.display()))
                && l.contains(" create ")
                && l.ends_with(&pod)),
        "the sandbox was not created through the sandboy runtime entry:\n{}",
        c.calls()
    );

    let create = |name: &str, image: &str, argv: &[&str], annotations: &[(&str, &str)]| {
        let mut req = Vec::new();
        cri::string(&mut req, 1, &pod);
        cri::msg(&mut req, 2, |cc| {
            container_config(cc, name, image, argv, annotations)
        });
        cri::msg(&mut req, 3, sandbox_config);
        let id = cri::get_string(&call("CreateContainer", &req), 1);
        assert!(!id.is_empty(), "CreateContainer {name} returned no id");
        let mut req = Vec::new();
        cri::string(&mut req, 1, &id);
        call("StartContainer", &req);
        id
    };
    let ctr = create(
        "app",
        "localhost/sandboy-busybox:test",
        &["/bin/sh", "-c", "echo started; exec sleep 1000"],
        &[
            ("dev.sandboy.policy.sha256", "0123abcd"),
            ("example.com/not-passed", "ctr"),
        ],
    );

    let status = |id: &str| {
        let mut req = Vec::new();
        cri::string(&mut req, 1, id);
        let st = cri::get_bytes(&call("ContainerStatus", &req), 1);
        (cri::get_uint(&st, 3), cri::get_uint(&st, 7) as i32)
    };
    assert_eq!(status(&ctr).0, 1, "container is not RUNNING");

    // Annotations: the listed ones reach sandboy, others do not.
    let config = |id: &str| -> serde_json::Value {
        let p = d.join(format!("configs/{id}.json"));
        serde_json::from_slice(
            &fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}\n{}", p.display(), c.calls())),
        )
        .unwrap()
    };
    let cfg = config(&ctr);
    let ann = &cfg["annotations"];
    assert_eq!(
        ann["dev.sandboy.timeout"], "600s",
        "pod annotation not passed: {ann}"
    );
    assert_eq!(
        ann["dev.sandboy.policy.sha256"], "0123abcd",
        "container annotation not passed: {ann}"
    );
    assert!(
        ann.get("example.com/not-passed").is_none(),
        "unlisted annotation passed: {ann}"
    );
    assert_eq!(config(&pod)["annotations"]["dev.sandboy.timeout"], "600s");
    assert!(
        root.join(&ctr).exists(),
        "no sandboy state under the runtime's Root {}",
        root.display()
    );
    assert_eq!(
        c.calls().lines().filter(|l| l.contains(" create ")).count(),
        2,
        "the pause and app containers are created through sandboy"
    );

    let exec_sync = |id: &str, script: &str| client.exec_sync(id, script);
    // ExecSync: output and exit code.
    assert_eq!(
        exec_sync(&ctr, "echo in-exec; echo oops >&2; exit 3"),
        ("in-exec\n".to_owned(), "oops\n".to_owned(), 3)
    );
    // Unconfined, the image's /etc is writable: the confined container
    // below is refused exactly what this one may do.
    let (out, _, code) = exec_sync(&ctr, "echo yes > /etc/written && cat /etc/written");
    assert_eq!((out.as_str(), code), ("yes\n", 0));

    // A policy-confined container in the same pod: the Landlock ruleset
    // sandboy-spec-gen renders from a policy, passed as a pod-spec
    // annotation (what a kubelet user writes), enforced on the init and on
    // ExecSync processes alike.
    let policy = d.join("cri-policy.toml");
    fs::write(
        &policy,
        "version = 1\nname = \"cri-confined\"\n[landlock]\nmode = \"enforce\"\n\
         [fs]\nread = [\"/etc\", \"/proc\"]\nexec = [\"/bin\"]\nwrite = [\"/tmp\", \"/dev/null\"]\n\
         [process]\nargs = [\"/bin/sh\"]\n",
    )
    .unwrap();
    let o = capture(
        Command::new(spec_gen_bin())
            .args(["generate", "--policy"])
            .arg(&policy)
            .args(["--bundle", "-"]),
    );
    c.expect(&o, 0);
    let generated: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let landlock = generated["annotations"]["dev.sandboy.landlock"]
        .as_str()
        .expect("spec-gen rendered no dev.sandboy.landlock")
        .to_owned();
    let confined = create(
        "confined",
        "localhost/sandboy-busybox:test",
        &["/bin/sh", "-c", "echo started; exec sleep 1000"],
        &[("dev.sandboy.landlock", &landlock)],
    );
    assert_eq!(status(&confined).0, 1, "confined container is not RUNNING");
    assert_eq!(
        config(&confined)["annotations"]["dev.sandboy.landlock"],
        landlock.as_str()
    );
    let (out, err, code) = exec_sync(
        &confined,
        "echo ok > /tmp/w && cat /tmp/w; echo no > /etc/written",
    );
    assert_eq!(out, "ok\n", "write inside the allowlist");
    assert!(
        err.contains("Permission denied") && code != 0,
        "write outside the allowlist not refused: code {code}, stderr {err:?}"
    );
    let (_, err, code) = exec_sync(&confined, "cat /proc/self/status >/dev/null && ls /");
    assert!(
        err.contains("Permission denied") && code != 0,
        "read outside the allowlist not refused: code {code}, stderr {err:?}"
    );

    // An adapter container: the Infer# component runs in sandboy's wasm
    // host (run.oci.handler=wasm) and its SARIF lands in the container log.
    let mut adapter = None;
    match adapter_image {
        None => skip(
            "containerd::cri_runtime_handler_sandboy (adapter container)",
            "components not built (make components)",
        ),
        Some(image) => {
            let id = create(
                "adapter",
                image,
                &[
                    "/adapters/infersharp.wasm",
                    "--tool",
                    "infersharp",
                    "--artifact",
                    "report.json=/in/report.json",
                ],
                &[("run.oci.handler", "wasm")],
            );
            let deadline = Instant::now() + TIMEOUT;
            while status(&id).0 != 2 {
                assert!(Instant::now() < deadline, "adapter container never exited");
                std::thread::sleep(Duration::from_millis(100));
            }
            assert_eq!(status(&id), (2, 0), "adapter container exit");
            let log = fs::read_to_string(log_dir.join("adapter.log")).unwrap_or_default();
            // CRI log lines: "<time> stdout <P|F> <text>"; P lines continue.
            let mut sarif_text = String::new();
            for line in log.lines() {
                let mut parts = line.splitn(4, ' ');
                let (_, stream, tag, rest) = (
                    parts.next(),
                    parts.next(),
                    parts.next(),
                    parts.next().unwrap_or(""),
                );
                if stream == Some("stdout") {
                    sarif_text.push_str(rest);
                    if tag == Some("F") {
                        sarif_text.push('\n');
                    }
                }
            }
            let sarif: serde_json::Value = serde_json::from_str(&sarif_text)
                .unwrap_or_else(|e| panic!("no SARIF in the container log ({e}): {log}"));
            assert_eq!(sarif["version"], "2.1.0");
            assert_eq!(
                sarif["runs"][0]["properties"]["sandboy"]["tool"],
                "infersharp"
            );
            adapter = Some(id);
        }
    }

    // Stop: `exec sleep` as PID 1 ignores SIGTERM, so the 2 s grace period
    // ends in SIGKILL: exit code 137.
    let mut req = Vec::new();
    cri::string(&mut req, 1, &ctr);
    cri::uint(&mut req, 2, 2);
    call("StopContainer", &req);
    assert_eq!(
        status(&ctr),
        (2, 137),
        "container state/exit code after stop"
    );
    let log = fs::read_to_string(log_dir.join("app.log")).unwrap_or_default();
    assert!(log.contains(" stdout F started"), "container log: {log:?}");

    let mut ids = vec![ctr.clone(), confined.clone()];
    ids.extend(adapter);
    for id in &ids {
        let mut req = Vec::new();
        cri::string(&mut req, 1, id);
        if id != &ctr {
            cri::uint(&mut req, 2, 2);
            call("StopContainer", &req);
            req.clear();
            cri::string(&mut req, 1, id);
        }
        call("RemoveContainer", &req);
    }
    let mut req = Vec::new();
    cri::string(&mut req, 1, &pod);
    call("StopPodSandbox", &req);
    call("RemovePodSandbox", &req);
    let mut all: Vec<&str> = ids.iter().map(String::as_str).collect();
    all.push(&pod);
    c.assert_clean(&root, &all);
}

/// The `sandboy-gate` handler (deploy/containerd/config.toml): its wrapper
/// passes a node configuration whose `default_policy` confines a container
/// that names nothing; raw `dev.sandboy.*` annotations are refused there;
/// with `require_policy` and no default, an unconfined container is refused
/// through CRI with sandboy's message, and nothing of it is left.
#[test]
fn cri_gate_handler_default_and_required_policy() {
    use std::os::unix::fs::PermissionsExt;
    let test = "containerd::cri_gate_handler_default_and_required_policy";
    if !need_tool(test, "podman") || !need_tool(test, "tar") {
        return;
    }
    let Some(c) = Containerd::start(test) else {
        return;
    };
    let d = c.dir.path().to_path_buf();
    let policies = d.join("node/policies");
    fs::create_dir_all(&policies).unwrap();
    for dir in [d.as_path(), &d.join("node"), &policies] {
        fs::set_permissions(dir, fs::Permissions::from_mode(0o755)).unwrap();
    }
    fs::write(
        policies.join("gate-step.toml"),
        "version = 1\n[fs]\nread = [\"/etc\", \"/proc\"]\nexec = [\"/bin\"]\nwrite = [\"/tmp\", \"/dev/null\"]\n",
    )
    .unwrap();
    let node_config = |body: &str| {
        fs::write(
            d.join("node/gate.toml"),
            format!("policy_dir = \"{}\"\n{body}", policies.display()),
        )
        .unwrap()
    };
    node_config("default_policy = \"gate-step\"\nallow_annotations = false\n");

    let b = Bundle::busybox(&[]);
    import_pod_images(&c, &b);
    let client = Cri::new(&c);
    let call = |method: &str, req: &[u8]| client.call(method, req);
    let must = |method: &str, req: &[u8]| client.must(method, req);
    let cgroup_parent = c.pod_cgroup_parent();
    let log_dir = d.join("pod-logs");
    fs::create_dir_all(&log_dir).unwrap();
    let pod_uid = unique_id("uid");
    let sandbox_config = |buf: &mut Vec<u8>| {
        pod_sandbox_config(buf, "gate-pod", &pod_uid, &log_dir, &cgroup_parent, &[])
    };
    let mut req = Vec::new();
    cri::msg(&mut req, 1, sandbox_config);
    cri::string(&mut req, 2, "sandboy-gate");
    let pod = cri::get_string(&must("RunPodSandbox", &req), 1);
    assert!(!pod.is_empty(), "RunPodSandbox returned no id");

    let create = |name: &str, annotations: &[(&str, &str)]| -> Result<String, String> {
        let mut req = Vec::new();
        cri::string(&mut req, 1, &pod);
        cri::msg(&mut req, 2, |cc| {
            container_config(
                cc,
                name,
                "localhost/sandboy-busybox:test",
                &["/bin/sh", "-c", "exec sleep 1000"],
                annotations,
            )
        });
        cri::msg(&mut req, 3, sandbox_config);
        let id = cri::get_string(&call("CreateContainer", &req)?, 1);
        let mut req = Vec::new();
        cri::string(&mut req, 1, &id);
        call("StartContainer", &req)?;
        Ok(id)
    };
    let exec_sync = |id: &str, script: &str| client.exec_sync(id, script);

    // No annotation at all: confined by the handler's default policy.
    let app = create("app", &[]).unwrap_or_else(|e| panic!("{e}\n{}", c.calls()));
    let (out, err, code) = exec_sync(
        &app,
        "echo ok > /tmp/w && cat /tmp/w; echo no > /etc/written",
    );
    assert_eq!(out, "ok\n", "write inside the policy: {err}");
    assert!(
        err.contains("Permission denied") && code != 0,
        "write outside the default policy not refused: code {code}, stderr {err:?}"
    );
    let root = d.join("cri-gate-root/k8s.io");
    let st = output_timeout(
        Command::new(sandboy_bin())
            .arg("--root")
            .arg(&root)
            .args(["state", &app]),
        TIMEOUT,
    );
    c.expect(&st, 0);
    let st: serde_json::Value = serde_json::from_slice(&st.stdout).unwrap();
    assert_eq!(st["annotations"]["dev.sandboy.policy"], "gate-step", "{st}");

    // A raw weakening annotation: refused by allow_annotations = false.
    let weak = r#"{"mode":"enforce","fs":[{"path":"/","access":["read","write","exec"]}]}"#;
    // The CRI error reaches the client compressed; containerd logs it whole,
    // with sandboy's one line after "OCI runtime create failed".
    let logged = |needle: &str| {
        let log = fs::read_to_string(d.join("containerd.log")).unwrap_or_default();
        log.lines()
            .any(|l| l.contains("OCI runtime create failed") && l.contains(needle))
    };
    create("weak", &[("dev.sandboy.landlock", weak)]).expect_err("raw annotation accepted");
    assert!(
        logged("annotation dev.sandboy.landlock refused: the node configuration"),
        "{}",
        c.log()
    );

    // require_policy and no default: an unconfined container is refused.
    node_config("require_policy = true\n");
    create("bare", &[]).expect_err("unconfined container accepted");
    assert!(
        logged("names no policy and the node requires one"),
        "{}",
        c.log()
    );
    // Its counterpart: naming the policy is enough.
    let named = create("named", &[("dev.sandboy.policy", "gate-step")])
        .unwrap_or_else(|e| panic!("{e}\n{}", c.calls()));

    // Every container sandboy was asked to create, the refused ones too.
    let created: Vec<String> = c
        .calls()
        .lines()
        .filter(|l| l.contains(" create "))
        .filter_map(|l| l.split_whitespace().last().map(String::from))
        .collect();
    for id in [&app, &named] {
        let mut req = Vec::new();
        cri::string(&mut req, 1, id);
        cri::uint(&mut req, 2, 2);
        must("StopContainer", &req);
        let mut req = Vec::new();
        cri::string(&mut req, 1, id);
        must("RemoveContainer", &req);
    }
    let mut req = Vec::new();
    cri::string(&mut req, 1, &pod);
    must("StopPodSandbox", &req);
    must("RemovePodSandbox", &req);
    assert_eq!(
        created.len(),
        5,
        "pause, app, weak, bare, named:\n{}",
        c.calls()
    );
    let all: Vec<&str> = created.iter().map(String::as_str).collect();
    c.assert_clean(&root, &all);
}

/// The egress gateway through containerd's runc shim (issue 17): the
/// `dev.sandboy.egress` annotation from `ctr run --annotation`; an allowed
/// name is fetched through the proxy, an unlisted one refused. The runc
/// binary the shim calls runs sandboy in the egress world's private mount
/// namespace, so the supervisor `create` forks reads the test's hosts file.
#[test]
fn egress_annotation_through_the_shim() {
    let test = "containerd::egress_annotation_through_the_shim";
    let Some(c) = Containerd::start(test) else {
        return;
    };
    let Some(w) = sandboy_tests::egress::World::start(test) else {
        return;
    };
    let wrapper = c.dir.path().join("bin/sandboy-egress-hosts");
    fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\nexec unshare -m -- sh -c 'mount --bind \"$0\" /etc/hosts && exec \"$@\"' '{}' '{}' \"$@\"\n",
            w.dir.path().join("hosts").display(),
            c.runtime.display()
        ),
    )
    .unwrap();
    assert!(Command::new("chmod")
        .arg("755")
        .arg(&wrapper)
        .status()
        .unwrap()
        .success());
    let b = Bundle::busybox(&[]);
    let annotation = format!(
        r#"dev.sandboy.egress={{"allow":["web.egress.test:{h}"],"allow_cidr":["127.77.0.0/24:{h}"],"proxy_port":3128}}"#,
        h = w.http
    );
    let script = format!(
        "wget -q -O - http://web.egress.test:{}/index.html; wget -q -O - http://bad.egress.test:{}/ 2>&1; echo bad=$?",
        w.http, w.other
    );
    let id = unique_id("sbc-egress");
    let o = c.run_with(
        &wrapper,
        &[
            "--rm",
            "--annotation",
            &annotation,
            "--env",
            "PATH=/bin",
            "--env",
            "http_proxy=http://127.0.0.1:3128",
            "--rootfs",
            b.rootfs().to_str().unwrap(),
        ],
        &[&id, "sh", "-c", &script],
    );
    c.expect(&o, 0);
    let out = text(&o.stdout);
    assert!(out.contains("hello from upstream"), "stdout: {out}");
    assert!(
        out.contains("403") && !out.contains("bad=0"),
        "stdout: {out}"
    );
    assert!(pids_mentioning(&id).is_empty(), "processes left for {id}");
}
