//! Shared harness for the integration suites: locating the binaries,
//! building busybox bundles, running runtimes, and guards that always clean
//! up (delete --force, state dir) even when a test fails.
//!
//! Tests here start real containers as root. A test that cannot run on this
//! machine calls [`skip`], which prints `SKIPPED: <reason>` and records it so
//! `make test` reports the count; it never passes silently.

pub mod adapters;
pub mod audit;
pub mod egress;

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};

/// Repository root.
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// Cargo's target directory for this build.
pub fn target_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("CARGO_TARGET_DIR") {
        return PathBuf::from(d);
    }
    repo().join("target")
}

/// Where this build's binaries are: the directory above the test binary's
/// `deps` (`<target>/<host triple>/debug`, see `.cargo/config.toml`).
/// Derived, never guessed: `<target>/debug` may still hold binaries of
/// the layout before the named triple, which a test must not run.
pub fn bin_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's own path");
    exe.parent()
        .and_then(Path::parent)
        .expect("test binaries live in <profile dir>/deps")
        .to_path_buf()
}

/// The OCI-wasm host binary, installed next to `sandboy`.
pub fn wasm_host_bin() -> PathBuf {
    sandboy_bin().with_file_name("sandboy-wasm")
}

/// The `sandboy` binary under test: `$SANDBOY_BIN`, else the debug build.
pub fn sandboy_bin() -> PathBuf {
    if let Some(p) = std::env::var_os("SANDBOY_BIN") {
        return PathBuf::from(p);
    }
    bin_dir().join("sandboy")
}

/// The `sandboy-spec-gen` binary under test.
pub fn spec_gen_bin() -> PathBuf {
    if let Some(p) = std::env::var_os("SANDBOY_SPEC_GEN_BIN") {
        return PathBuf::from(p);
    }
    bin_dir().join("sandboy-spec-gen")
}

/// Built adapter and WASI components (`make components`, under the cargo
/// target directory), or `$SANDBOY_COMPONENTS`.
pub fn components_dir() -> PathBuf {
    std::env::var_os("SANDBOY_COMPONENTS")
        .map(Into::into)
        .unwrap_or_else(|| target_dir().join("components"))
}

/// Print and record a skipped test where `make test` counts skips
/// (`$SANDBOY_SKIP_LOG`, else `<target dir>/skipped.log`). Returns nothing:
/// call and `return`. Every crate's tests use this one (as a dev-dependency).
pub fn skip(test: &str, reason: &str) {
    println!("SKIPPED: {test}: {reason}");
    eprintln!("SKIPPED: {test}: {reason}");
    let log = std::env::var_os("SANDBOY_SKIP_LOG")
        .map(PathBuf::from)
        .unwrap_or_else(|| target_dir().join("skipped.log"));
    if let Ok(mut f) = fs::OpenOptions::new().create(true).append(true).open(log) {
        let _ = writeln!(f, "{test}: {reason}");
    }
}

/// The sandboy binary for an engine test, or `None` after recording a skip
/// when it is not built.
pub fn need_sandboy(test: &str) -> Option<PathBuf> {
    let bin = sandboy_bin();
    if bin.is_file() {
        return Some(bin);
    }
    skip(
        test,
        &format!(
            "sandboy binary {} is not built (set SANDBOY_BIN)",
            bin.display()
        ),
    );
    None
}

/// The runtime an engine under test executes: a shell wrapper at `path`
/// that appends each call's arguments to `calls`, runs `extra` (shell, sees
/// `"$@"`), then execs sandboy with `pre_args` before the engine's args.
pub fn write_runtime_wrapper(path: &Path, calls: &Path, extra: &str, pre_args: &str, bin: &Path) {
    use std::os::unix::fs::PermissionsExt;
    fs::write(
        path,
        format!(
            "#!/bin/sh\nprintf '%s\\n' \"$*\" >> '{calls}'\n{extra}exec '{bin}' {pre_args}\"$@\"\n",
            calls = calls.display(),
            bin = bin.display(),
        ),
    )
    .unwrap();
    fs::set_permissions(path, fs::Permissions::from_mode(0o755)).unwrap();
}

/// True when running as root; otherwise records a skip for `test`.
pub fn need_root(test: &str) -> bool {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        return true;
    }
    skip(test, "needs root");
    false
}

/// True when `bin` is on PATH; otherwise records a skip for `test`.
pub fn need_tool(test: &str, bin: &str) -> bool {
    if which(bin).is_some() {
        return true;
    }
    skip(test, &format!("{bin} is not installed"));
    false
}

pub fn which(bin: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|p| {
        std::env::split_paths(&p)
            .map(|d| d.join(bin))
            .find(|f| f.is_file())
    })
}

static SEQ: AtomicU32 = AtomicU32::new(0);

/// A unique id for a container, readable in `list` output.
pub fn unique_id(prefix: &str) -> String {
    format!(
        "{prefix}-{}-{}",
        std::process::id(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    )
}

/// A scratch directory removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(prefix: &str) -> Self {
        let p = std::env::temp_dir().join(unique_id(&format!("sandboy-{prefix}")));
        fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }
    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        // A rootfs may still be a mount point if a test failed mid-way.
        let _ = Command::new("umount")
            .arg("-R")
            .arg("-l")
            .arg(&self.0)
            .stderr(Stdio::null())
            .status();
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// A small tmpfs mounted at `path` (made if missing) for one test: a host
/// mount nested in a bind's source. Lazily unmounted when dropped, whatever
/// happened; declare it after the [`TempDir`] holding `path`, so it goes
/// first (that directory's removal would stop at a mount point below it).
pub struct TmpfsMount(PathBuf);

impl TmpfsMount {
    pub fn new(path: &Path) -> Self {
        fs::create_dir_all(path).unwrap();
        let st = Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=1m", "sandboy-test"])
            .arg(path)
            .status()
            .expect("run mount");
        assert!(st.success(), "mount -t tmpfs at {} failed", path.display());
        TmpfsMount(path.to_path_buf())
    }
}

impl Drop for TmpfsMount {
    fn drop(&mut self) {
        let _ = Command::new("umount")
            .arg("-l")
            .arg(&self.0)
            .stderr(Stdio::null())
            .status();
    }
}

/// A busybox bundle built by `bundles/busybox.sh`.
pub struct Bundle {
    pub dir: TempDir,
}

impl Bundle {
    pub fn busybox(args: &[&str]) -> Self {
        let dir = TempDir::new("bundle");
        let st = Command::new(repo().join("bundles/busybox.sh"))
            .arg(dir.path())
            .args(args)
            .status()
            .expect("run bundles/busybox.sh");
        assert!(st.success(), "bundles/busybox.sh failed");
        Bundle { dir }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn config_path(&self) -> PathBuf {
        self.path().join("config.json")
    }

    pub fn config(&self) -> serde_json::Value {
        serde_json::from_slice(&fs::read(self.config_path()).unwrap()).unwrap()
    }

    /// Edit config.json in place.
    pub fn edit(&self, f: impl FnOnce(&mut serde_json::Value)) -> &Self {
        let mut v = self.config();
        f(&mut v);
        fs::write(self.config_path(), serde_json::to_vec_pretty(&v).unwrap()).unwrap();
        self
    }

    pub fn rootfs(&self) -> PathBuf {
        self.path().join("rootfs")
    }

    /// Replace config.json with `sandboy-spec-gen generate` of `policy`
    /// on this rootfs (asserting it succeeds).
    pub fn generate(&self, policy: &Path) {
        let o = capture(
            Command::new(spec_gen_bin())
                .arg("generate")
                .arg("--policy")
                .arg(policy)
                .arg("--bundle")
                .arg(self.path())
                .arg("--rootfs")
                .arg(self.rootfs()),
        );
        assert_exit(&o, 0);
    }
}

/// A runtime binary with its own state root (so runs never collide).
pub struct Runtime {
    pub name: String,
    pub bin: PathBuf,
    pub root: TempDir,
}

impl Runtime {
    pub fn sandboy() -> Self {
        Self::new("sandboy", sandboy_bin())
    }

    /// runc, if installed.
    pub fn runc() -> Option<Self> {
        which("runc").map(|b| Self::new("runc", b))
    }

    pub fn new(name: &str, bin: PathBuf) -> Self {
        Runtime {
            name: name.into(),
            bin,
            root: TempDir::new(&format!("root-{name}")),
        }
    }

    pub fn cmd(&self) -> Command {
        let mut c = Command::new(&self.bin);
        c.arg("--root").arg(self.root.path());
        c
    }

    /// Run a subcommand, capturing output, stdin from /dev/null.
    ///
    /// Output goes through files, not pipes: a created or detached container
    /// inherits the runtime's stdio and would hold a pipe open forever.
    pub fn run(&self, args: &[&str]) -> Output {
        capture(self.cmd().args(args))
    }

    /// `create` a container `id` from `bundle`, capturing output.
    pub fn create(&self, bundle: &Bundle, id: &str) -> Output {
        self.create_at(bundle.path(), id)
    }

    /// `create` a container `id` from the bundle directory `dir`.
    pub fn create_at(&self, dir: &Path, id: &str) -> Output {
        self.run(&["create", "--bundle", dir.to_str().unwrap(), id])
    }

    /// `run --detach` a container `id` from `bundle`, capturing output.
    pub fn run_detached(&self, bundle: &Bundle, id: &str) -> Output {
        self.run(&[
            "run",
            "--detach",
            "--bundle",
            bundle.path().to_str().unwrap(),
            id,
        ])
    }

    /// Spawn a foreground `run` of container `id` from `bundle`, its
    /// output piped (for tests that signal it or read what it printed).
    pub fn spawn_run(&self, bundle: &Bundle, id: &str) -> std::process::Child {
        self.cmd()
            .args(["run", "--bundle", bundle.path().to_str().unwrap(), id])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn run")
    }

    /// `create` then `start` a container `id` from `bundle`, asserting that
    /// both exit 0: the prologue of every test that needs it running.
    pub fn create_and_start(&self, bundle: &Bundle, id: &str) {
        assert_exit(&self.create(bundle, id), 0);
        assert_exit(&self.run(&["start", id]), 0);
    }

    /// `state` as JSON (panics with the runtime's stderr if it fails).
    pub fn state(&self, id: &str) -> serde_json::Value {
        let o = self.run(&["state", id]);
        assert!(
            o.status.success(),
            "{} state {id}: {}",
            self.name,
            String::from_utf8_lossy(&o.stderr)
        );
        serde_json::from_slice(&o.stdout).unwrap()
    }

    pub fn status(&self, id: &str) -> String {
        self.state(id)["status"].as_str().unwrap().to_owned()
    }

    /// Poll until `status` is reached (or panic after ~10 s).
    pub fn wait_status(&self, id: &str, want: &str) {
        for _ in 0..200 {
            // The container may not exist yet (a `run` still creating it).
            let o = self.run(&["state", id]);
            let st: Option<serde_json::Value> = serde_json::from_slice(&o.stdout).ok();
            if o.status.success() && st.is_some_and(|s| s["status"] == want) {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        panic!("{} container {id} never reached {want}", self.name);
    }

    /// A guard that deletes `id` with --force when dropped.
    pub fn guard(&self, id: &str) -> Guard<'_> {
        Guard {
            rt: self,
            id: id.to_owned(),
        }
    }
}

/// Deletes its container with --force on drop, whatever happened.
pub struct Guard<'a> {
    rt: &'a Runtime,
    pub id: String,
}

impl Drop for Guard<'_> {
    fn drop(&mut self) {
        let _ = self.rt.run(&["delete", "--force", &self.id]);
    }
}

/// Run `cmd` with stdin from /dev/null and stdout/stderr captured through
/// temporary files (see [`Runtime::run`]).
pub fn capture(cmd: &mut Command) -> Output {
    let dir = TempDir::new("out");
    let (o, e) = (dir.path().join("stdout"), dir.path().join("stderr"));
    let status = cmd
        .stdin(Stdio::null())
        .stdout(fs::File::create(&o).unwrap())
        .stderr(fs::File::create(&e).unwrap())
        .status()
        .expect("spawn command");
    Output {
        status,
        stdout: fs::read(&o).unwrap(),
        stderr: fs::read(&e).unwrap(),
    }
}

/// Run `cmd` with `input` written to its stdin (then closed), its output
/// piped and collected.
pub fn output_with_stdin(cmd: &mut Command, input: &[u8]) -> Output {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("spawn {cmd:?}: {e}"));
    child.stdin.take().unwrap().write_all(input).unwrap();
    child.wait_with_output().unwrap()
}

/// Text of a process output stream.
pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Assert on an Output, printing both streams on failure.
#[track_caller]
pub fn assert_exit(o: &Output, code: i32) {
    assert_eq!(
        o.status.code(),
        Some(code),
        "exit status; stdout: {}\nstderr: {}",
        text(&o.stdout),
        text(&o.stderr)
    );
}

/// `needle` is in the output's stderr (shown on failure).
#[track_caller]
pub fn assert_stderr_contains(o: &Output, needle: &str) {
    let err = text(&o.stderr);
    assert!(err.contains(needle), "no {needle:?} in stderr: {err}");
}

/// Exit `code` ([`assert_exit`]) with `needle` in stderr.
#[track_caller]
pub fn assert_exit_stderr(o: &Output, code: i32, needle: &str) {
    assert_exit(o, code);
    assert_stderr_contains(o, needle);
}

/// [`assert_exit`] that also prints `what` (e.g. the runtime calls an
/// engine made) on failure.
#[track_caller]
pub fn assert_exit_showing(o: &Output, code: i32, label: &str, what: &str) {
    assert_eq!(
        o.status.code(),
        Some(code),
        "exit status\nstdout: {}\nstderr: {}\n{label}:\n{what}",
        text(&o.stdout),
        text(&o.stderr),
    );
}

/// An engine called the runtime with each of `verbs` (a word of a line of
/// `calls`, the log [`write_runtime_wrapper`] keeps).
#[track_caller]
pub fn assert_called(calls: &str, verbs: &[&str]) {
    for verb in verbs {
        assert!(
            calls
                .lines()
                .any(|l| l.split_whitespace().any(|w| w == *verb)),
            "no {verb} call:\n{calls}"
        );
    }
}

/// Cgroup directories named after a container id anywhere under
/// /sys/fs/cgroup (v1 controllers and the unified hierarchy).
pub fn cgroups_named(id: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![PathBuf::from("/sys/fs/cgroup")];
    while let Some(d) = stack.pop() {
        let Ok(rd) = fs::read_dir(&d) else { continue };
        for e in rd.flatten() {
            if e.file_type().map(|t| t.is_dir()).unwrap_or(false) {
                let p = e.path();
                if p.file_name()
                    .is_some_and(|n| n.to_string_lossy().contains(id))
                {
                    found.push(p.clone());
                }
                // Only descend a few levels: containers live shallow.
                if p.components().count() < 8 {
                    stack.push(p);
                }
            }
        }
    }
    found
}

/// Mount points whose path mentions `needle`.
pub fn mounts_mentioning(needle: &str) -> Vec<String> {
    fs::read_to_string("/proc/self/mountinfo")
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains(needle))
        .map(String::from)
        .collect()
}

/// Run `cmd` with stdin from /dev/null, capturing stdout and stderr through
/// files (a daemon the command leaves behind, such as conmon or a containerd
/// shim, cannot keep them open and hang the test), and SIGKILL it after
/// `timeout`. On timeout the returned status is the kill's, and stderr ends
/// with a `[harness: killed after …]` note.
pub fn output_timeout(cmd: &mut Command, timeout: std::time::Duration) -> Output {
    let tmp = std::env::temp_dir();
    let out_path = tmp.join(unique_id("sandboy-out"));
    let err_path = tmp.join(unique_id("sandboy-err"));
    let out = fs::File::create(&out_path).expect("create stdout capture");
    let err = fs::File::create(&err_path).expect("create stderr capture");
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .spawn()
        .unwrap_or_else(|e| panic!("spawn {cmd:?}: {e}"));
    let start = std::time::Instant::now();
    let mut timed_out = false;
    let status = loop {
        if let Some(st) = child.try_wait().expect("wait for child") {
            break st;
        }
        if start.elapsed() > timeout {
            timed_out = true;
            let _ = child.kill();
            break child.wait().expect("wait for killed child");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let stdout = fs::read(&out_path).unwrap_or_default();
    let mut stderr = fs::read(&err_path).unwrap_or_default();
    let _ = fs::remove_file(&out_path);
    let _ = fs::remove_file(&err_path);
    if timed_out {
        stderr.extend_from_slice(
            format!("\n[harness: killed after {timeout:?}: {cmd:?}]\n").as_bytes(),
        );
    }
    Output {
        status,
        stdout,
        stderr,
    }
}

/// Remove the cgroup `rel` (a path relative to each hierarchy's root, e.g.
/// `sandboy-test-12-3`) and everything below it, leaves first, in every v1
/// controller and the unified hierarchy. Only empty cgroups can go; busy
/// ones are left (and show up in [`cgroups_named`]).
pub fn remove_cgroup_tree(rel: &str) {
    let rel = rel.trim_start_matches('/');
    if rel.is_empty() || rel.contains("..") {
        return;
    }
    let Ok(rd) = fs::read_dir("/sys/fs/cgroup") else {
        return;
    };
    for h in rd.flatten() {
        let top = h.path().join(rel);
        if !top.is_dir() {
            continue;
        }
        // Depth-first listing, then rmdir deepest first.
        let mut dirs = vec![top.clone()];
        let mut i = 0;
        while i < dirs.len() {
            if let Ok(rd) = fs::read_dir(&dirs[i]) {
                for e in rd.flatten() {
                    if e.file_type().map(|t| t.is_dir()).unwrap_or(false) {
                        dirs.push(e.path());
                    }
                }
            }
            i += 1;
        }
        for d in dirs.iter().rev() {
            let _ = fs::remove_dir(d);
        }
    }
}

/// Pids of processes (other than this one) whose command line mentions
/// `needle`, e.g. a test's private socket or state directory.
pub fn pids_mentioning(needle: &str) -> Vec<i32> {
    let me = std::process::id() as i32;
    let mut pids = Vec::new();
    let Ok(rd) = fs::read_dir("/proc") else {
        return pids;
    };
    for e in rd.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        if pid == me {
            continue;
        }
        let Ok(cmdline) = fs::read(e.path().join("cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if cmdline.contains(needle) {
            pids.push(pid);
        }
    }
    pids
}

/// Lazily unmount every mount point whose path mentions `needle`, deepest
/// first (a test's leftovers after a failure).
pub fn unmount_all_mentioning(needle: &str) {
    let mut points: Vec<String> = mounts_mentioning(needle)
        .iter()
        .filter_map(|l| l.split_whitespace().nth(4).map(String::from))
        .filter(|p| p.contains(needle))
        .collect();
    points.sort_by_key(|p| std::cmp::Reverse(p.len()));
    for p in points {
        let _ = Command::new("umount")
            .arg("-l")
            .arg(&p)
            .stderr(Stdio::null())
            .status();
    }
}

/// A copy of `policies/<name>.toml` and `bundles/fixtures/` in a scratch dir
/// (policy mount sources are relative, and steps may write the fixture
/// repo), with a busybox bundle generated from it by `sandboy-spec-gen`.
pub struct PolicyBundle {
    pub scratch: TempDir,
    pub bundle: Bundle,
}

impl PolicyBundle {
    pub fn new(name: &str) -> Self {
        let scratch = TempDir::new("policy");
        fs::create_dir_all(scratch.path().join("policies")).unwrap();
        fs::create_dir_all(scratch.path().join("bundles")).unwrap();
        fs::copy(
            repo().join(format!("policies/{name}.toml")),
            scratch.path().join(format!("policies/{name}.toml")),
        )
        .unwrap();
        let st = Command::new("cp")
            .arg("-a")
            .arg(repo().join("bundles/fixtures"))
            .arg(scratch.path().join("bundles/"))
            .status()
            .unwrap();
        assert!(st.success());
        let bundle = Bundle::busybox(&["true"]);
        let policy = scratch.path().join(format!("policies/{name}.toml"));
        bundle.generate(&policy);
        PolicyBundle { scratch, bundle }
    }

    pub fn policy(&self, name: &str) -> PathBuf {
        self.scratch.path().join(format!("policies/{name}.toml"))
    }
}

/// A WASI preview-1 program (WAT) that prints "hello from wasi" and exits 3.
pub const WASI_HELLO_P1: &str = r#"(module
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "proc_exit" (func $proc_exit (param i32)))
  (memory (export "memory") 1)
  (data (i32.const 16) "hello from wasi\n")
  (func (export "_start")
    (i32.store (i32.const 0) (i32.const 16))
    (i32.store (i32.const 4) (i32.const 16))
    (drop (call $fd_write (i32.const 1) (i32.const 0) (i32.const 1) (i32.const 8)))
    (call $proc_exit (i32.const 3))))"#;

/// `events --stats` data in runc's `types.Stats` shape, with live figures:
/// every top-level section, CPU time used, the memory and pids sections.
#[track_caller]
pub fn assert_runc_stats_shape(runtime: &str, data: &serde_json::Value) {
    let keys: Vec<&str> = data
        .as_object()
        .unwrap_or_else(|| panic!("{runtime}: data is not an object: {data}"))
        .keys()
        .map(String::as_str)
        .collect();
    let mut keys = keys;
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "blkio",
            "cpu",
            "cpuset",
            "hugetlb",
            "intel_rdt",
            "memory",
            "network_interfaces",
            "pids"
        ],
        "{runtime}: {data}"
    );
    let usage = &data["cpu"]["usage"];
    assert!(
        usage["total"].as_u64().unwrap_or(0) > 0,
        "{runtime}: {usage}"
    );
    assert!(
        usage["kernel"].is_u64() && usage["user"].is_u64(),
        "{runtime}: {usage}"
    );
    for entry in ["usage", "swap", "kernel", "kernelTCP"] {
        let e = &data["memory"][entry];
        assert!(
            e["limit"].is_u64() && e["failcnt"].is_u64(),
            "{runtime}: memory.{entry}: {e}"
        );
    }
    assert!(
        data["pids"]["current"].as_u64().unwrap_or(0) >= 1,
        "{runtime}: {}",
        data["pids"]
    );
}

/// Give the process `cap` in its bounding, effective and permitted sets.
pub fn add_capability(config: &mut serde_json::Value, cap: &str) {
    for set in ["bounding", "effective", "permitted"] {
        config["process"]["capabilities"][set]
            .as_array_mut()
            .unwrap_or_else(|| panic!("no process.capabilities.{set} in the bundle"))
            .push(cap.into());
    }
}

/// A real unprivileged host user for the tests that run as one, created
/// with `useradd -m` under a unique name and removed on drop (`userdel -r`,
/// after killing what still runs as it), even when the test fails.
pub struct TestUser {
    pub name: String,
    pub uid: u32,
    pub gid: u32,
}

impl TestUser {
    /// Creates the user, or records a skip (not root, no useradd/runuser).
    pub fn create(test: &str) -> Option<Self> {
        if !need_root(test) || !need_tool(test, "useradd") || !need_tool(test, "runuser") {
            return None;
        }
        // useradd names: at most 32 characters, lower case.
        let name = format!(
            "sbt{}x{}",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed)
        );
        let o = Command::new("useradd")
            .args(["-m", "-s", "/bin/sh", &name])
            .output()
            .expect("running useradd");
        assert!(o.status.success(), "useradd {name}: {}", text(&o.stderr));
        let id = |flag: &str| -> u32 {
            let o = Command::new("id")
                .args([flag, name.as_str()])
                .output()
                .unwrap();
            text(&o.stdout).trim().parse().expect("id output")
        };
        // Removed on drop from here on, even if `id` fails.
        let mut user = TestUser {
            uid: u32::MAX,
            gid: u32::MAX,
            name: name.clone(),
        };
        user.uid = id("-u");
        user.gid = id("-g");
        Some(user)
    }

    /// `program` run as this user (`runuser -u NAME --`), with the test's
    /// environment apart from what runuser sets (HOME, USER, LOGNAME, SHELL).
    pub fn cmd(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut c = Command::new("runuser");
        c.args(["-u", &self.name, "--"]).arg(program);
        c
    }

    /// Give `path` to this user (e.g. a write path of its policy).
    pub fn chown(&self, path: &Path) {
        std::os::unix::fs::chown(path, Some(self.uid), Some(self.gid)).unwrap();
    }

    /// A copy of `bin` in a fresh directory every user can read and run,
    /// so the binary is reachable whatever the target directory's modes.
    pub fn reachable_copy(&self, bin: &Path, dir: &TempDir) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let bindir = dir.path().join("bin");
        fs::create_dir_all(&bindir).unwrap();
        fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o755)).unwrap();
        fs::set_permissions(&bindir, fs::Permissions::from_mode(0o755)).unwrap();
        let to = bindir.join(bin.file_name().unwrap());
        fs::copy(bin, &to).unwrap();
        fs::set_permissions(&to, fs::Permissions::from_mode(0o755)).unwrap();
        to
    }

    /// The user's processes still there after up to 2 s (an exiting
    /// process stays in /proc until it is reaped), each as its /proc stat
    /// head ("pid (comm) state"): what a test says was left behind.
    pub fn leftovers(&self) -> Vec<String> {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
        loop {
            let left = self.processes();
            if left.is_empty() || std::time::Instant::now() > deadline {
                return left
                    .iter()
                    .map(|pid| {
                        let stat =
                            fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
                        stat.split(' ').take(3).collect::<Vec<_>>().join(" ")
                    })
                    .collect();
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }

    /// Pids of processes running as this user.
    pub fn processes(&self) -> Vec<i32> {
        use std::os::unix::fs::MetadataExt;
        fs::read_dir("/proc")
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| {
                let pid: i32 = e.file_name().to_str()?.parse().ok()?;
                (e.metadata().ok()?.uid() == self.uid).then_some(pid)
            })
            .collect()
    }
}

/// A user busy elsewhere ([`TestUser::busy`]): its sleeping processes run
/// until this goes, which kills every process of the user.
pub struct Busy<'a> {
    user: &'a TestUser,
    shell: std::process::Child,
}

impl TestUser {
    /// `n` sleeping processes of this user, running once this returns (it
    /// waits up to 10 s for them): for the limits the kernel counts per
    /// user on the host (`RLIMIT_NPROC`).
    pub fn busy(&self, n: usize) -> Busy<'_> {
        let shell = self
            .cmd("sh")
            .args([
                "-c",
                &format!("for i in $(seq {n}); do sleep 60 & done; exec sleep 60"),
            ])
            .spawn()
            .unwrap();
        let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while self.processes().len() < n && std::time::Instant::now() < until {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        assert!(
            self.processes().len() >= n,
            "{n} processes of {} running",
            self.name
        );
        Busy { user: self, shell }
    }

    /// SIGKILL to every process of this user, then a wait (up to 1 s) for
    /// them to be gone.
    fn kill_all(&self) {
        for pid in self.processes() {
            // SAFETY: kill with a pid we just read; no memory involved.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        for _ in 0..50 {
            if self.processes().is_empty() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
}

impl Drop for Busy<'_> {
    fn drop(&mut self) {
        self.user.kill_all();
        let _ = self.shell.wait();
    }
}

impl Drop for TestUser {
    fn drop(&mut self) {
        // Only this test's user's processes: userdel refuses while they run.
        self.kill_all();
        let _ = Command::new("userdel")
            .args(["-r", &self.name])
            .stderr(Stdio::null())
            .status();
    }
}

/// For the adapt suites: an installed layout in `dir` (bin/sandboy,
/// share/sandboy/{adapters.toml, components/}), readable by everyone.
pub fn mini_install(dir: &TempDir, user: &TestUser) -> PathBuf {
    let bin = user.reachable_copy(&sandboy_bin(), dir);
    user.reachable_copy(&wasm_host_bin(), dir);
    let share = dir.path().join("share/sandboy/components");
    std::fs::create_dir_all(&share).unwrap();
    std::fs::copy(
        repo().join("components/adapters.toml"),
        dir.path().join("share/sandboy/adapters.toml"),
    )
    .unwrap();
    for c in ["infersharp.wasm", "passthrough.wasm"] {
        std::fs::copy(components_dir().join(c), share.join(c)).unwrap();
    }
    for p in ["share", "share/sandboy", "share/sandboy/components"] {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(dir.path().join(p), fs::Permissions::from_mode(0o755)).unwrap();
    }
    bin
}
