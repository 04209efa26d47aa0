//! OCI-wasm mode through the runtime: adapters and WASI programs run as
//! containers, inside the already confined init, with limits always on.

use std::fs;
use std::process::Command;

use sandboy_tests::*;

fn adapter_bundle(test: &str, tool: &str, input: &std::path::Path) -> Option<TempDir> {
    if !components_dir().join("infersharp.wasm").is_file() {
        skip(test, "components not built (make components)");
        return None;
    }
    let dir = TempDir::new("adapter");
    let o = capture(
        Command::new(repo().join("bundles/adapter.sh"))
            .arg(dir.path())
            .arg(tool)
            .arg(input)
            .env("SANDBOY_SPEC_GEN", spec_gen_bin()),
    );
    assert_exit(&o, 0);
    Some(dir)
}

/// A WASI bundle from WAT, with optional `dev.sandboy.wasm.limits`.
fn wasi_bundle(wat_src: &str, limits: Option<&str>) -> TempDir {
    let dir = TempDir::new("wasi");
    let module = dir.path().join("m.wasm");
    fs::write(&module, wat::parse_str(wat_src).unwrap()).unwrap();
    let bundle = dir.path().join("b");
    let o = capture(
        Command::new(repo().join("bundles/wasi.sh"))
            .arg(&bundle)
            .arg(&module)
            .arg("arg1"),
    );
    assert_exit(&o, 0);
    if let Some(l) = limits {
        let p = bundle.join("config.json");
        let mut c: serde_json::Value = serde_json::from_slice(&fs::read(&p).unwrap()).unwrap();
        c["annotations"]["dev.sandboy.wasm.limits"] = l.into();
        fs::write(&p, c.to_string()).unwrap();
    }
    dir
}

/// `sandboy [FLAGS] --log FILE --log-format json run --bundle BUNDLE ID`:
/// the run's output and the JSON log it wrote (next to the bundle).
fn run_logged(
    rt: &Runtime,
    bundle: &std::path::Path,
    id: &str,
    flags: &[&str],
) -> (std::process::Output, String) {
    let log = bundle.with_file_name(format!("{id}.log.json"));
    let mut args = flags.to_vec();
    args.extend(["--log", log.to_str().unwrap(), "--log-format", "json"]);
    args.extend(["run", "--bundle", bundle.to_str().unwrap(), id]);
    let o = rt.run(&args);
    (o, fs::read_to_string(&log).unwrap_or_default())
}

const SPIN_P1: &str = r#"(module
  (import "wasi_snapshot_preview1" "proc_exit" (func $proc_exit (param i32)))
  (memory (export "memory") 1)
  (func (export "_start") (loop $l (br $l))))"#;

#[test]
fn infersharp_adapter_container_emits_sarif_with_provenance() {
    let t = "infersharp_adapter_container_emits_sarif_with_provenance";
    if !need_root(t) {
        return;
    }
    let input = repo().join("bundles/fixtures/infersharp/report.json");
    let Some(dir) = adapter_bundle(t, "infersharp", &input) else {
        return;
    };
    let rt = Runtime::sandboy();
    let id = unique_id("adapter");
    let _g = rt.guard(&id);
    let o = rt.run(&["run", "--bundle", dir.path().to_str().unwrap(), &id]);
    assert_exit(&o, 0);
    let sarif: serde_json::Value = serde_json::from_slice(&o.stdout).expect("SARIF on stdout");
    assert_eq!(sarif["version"], "2.1.0");
    let run = &sarif["runs"][0];
    let report: Vec<serde_json::Value> =
        serde_json::from_slice(&fs::read(&input).unwrap()).unwrap();
    assert_eq!(run["results"].as_array().unwrap().len(), report.len());
    let prov = &run["properties"]["sandboy"];
    assert_eq!(prov["tool"], "infersharp");
    assert_eq!(prov["component_sha256"].as_str().unwrap().len(), 64);
    assert!(!prov["runtime_version"].as_str().unwrap().is_empty());
}

#[test]
fn wasi_program_prints_and_exits_with_its_status() {
    if !need_root("wasi_program_prints_and_exits_with_its_status") {
        return;
    }
    let dir = wasi_bundle(WASI_HELLO_P1, None);
    let rt = Runtime::sandboy();
    let id = unique_id("wasi");
    let _g = rt.guard(&id);
    let o = rt.run(&[
        "run",
        "--bundle",
        dir.path().join("b").to_str().unwrap(),
        &id,
    ]);
    assert_exit(&o, 3);
    assert_eq!(text(&o.stdout), "hello from wasi\n");
}

/// `components/wasi-hello`: Rust std built for wasm32-wasip2, i.e. a real
/// `wasi:cli/run` component importing the WASI interfaces.
#[test]
fn wasi_p2_command_component_runs_as_a_container() {
    let t = "wasi_p2_command_component_runs_as_a_container";
    if !need_root(t) {
        return;
    }
    let module = components_dir().join("wasi-hello.wasm");
    if !module.is_file() {
        skip(t, "components not built (make components)");
        return;
    }
    let dir = TempDir::new("wasip2");
    let bundle = dir.path().join("b");
    let o = capture(
        Command::new(repo().join("bundles/wasi.sh"))
            .arg(&bundle)
            .arg(&module)
            .args(["one", "two"]),
    );
    assert_exit(&o, 0);
    // The cwd is a host directory bound in, so what the program writes there
    // is visible from outside after the run.
    let data = dir.path().join("data");
    fs::create_dir(&data).unwrap();
    let cfg = bundle.join("config.json");
    let mut c: serde_json::Value = serde_json::from_slice(&fs::read(&cfg).unwrap()).unwrap();
    c["process"]["cwd"] = "/data".into();
    c["process"]["env"]
        .as_array_mut()
        .unwrap()
        .push("GREETING=hi from the spec".into());
    c["mounts"].as_array_mut().unwrap().push(serde_json::json!({
        "destination": "/data", "type": "bind", "source": data, "options": ["rbind", "rw"]
    }));
    fs::create_dir_all(bundle.join("rootfs/data")).unwrap();
    fs::write(&cfg, c.to_string()).unwrap();

    let rt = Runtime::sandboy();
    let id = unique_id("wasip2");
    let _g = rt.guard(&id);
    let o = rt.run(&["run", "--bundle", bundle.to_str().unwrap(), &id]);
    assert_exit(&o, 0);
    assert_eq!(
        text(&o.stdout),
        "hello from a WASI preview-2 component\nargs: one two\nGREETING=hi from the spec\n\
         cwd file: written by wasi-hello\n"
    );
    assert_eq!(
        fs::read_to_string(data.join("hello.txt")).unwrap(),
        "written by wasi-hello\n"
    );

    // wasi:cli/exit carries only ok/err: any failing exit is status 1.
    c["process"]["args"] = serde_json::json!(["/app.wasm", "fail"]);
    fs::write(&cfg, c.to_string()).unwrap();
    let id = unique_id("wasip2f");
    let _g = rt.guard(&id);
    let o = rt.run(&["run", "--bundle", bundle.to_str().unwrap(), &id]);
    assert_exit_stderr(&o, 1, "failing as asked");
}

#[test]
fn fuel_exhaustion_stops_the_container_and_is_logged() {
    if !need_root("fuel_exhaustion_stops_the_container_and_is_logged") {
        return;
    }
    let dir = wasi_bundle(SPIN_P1, Some(r#"{"fuel": 1000000, "deadline": "20s"}"#));
    let rt = Runtime::sandboy();
    let id = unique_id("fuel");
    let _g = rt.guard(&id);
    let (o, log) = run_logged(&rt, &dir.path().join("b"), &id, &[]);
    assert_exit(&o, 137);
    assert!(
        log.lines()
            .any(|l| l.contains("\"warning\"") && l.contains("fuel") && l.contains(&id)),
        "{log}"
    );

    // Counterpart: the deadline stops a spin when fuel is plentiful.
    let dir = wasi_bundle(
        SPIN_P1,
        Some(r#"{"fuel": 1000000000000000, "deadline": "1s"}"#),
    );
    let id = unique_id("deadline");
    let _g = rt.guard(&id);
    let (o, log) = run_logged(&rt, &dir.path().join("b"), &id, &[]);
    assert_exit(&o, 137);
    assert!(log.contains("deadline"), "{log}");
}

/// A guest that sleeps in `poll_oneoff` for ever (a relative clock of
/// i64::MAX ns), printing "tick" first: it runs no code an epoch can trap.
const SLEEP_P1: &str = r#"(module
  (import "wasi_snapshot_preview1" "poll_oneoff" (func $poll (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 200) "tick\n")
  (func (export "_start")
    (i32.store (i32.const 300) (i32.const 200))
    (i32.store (i32.const 304) (i32.const 5))
    (drop (call $fd_write (i32.const 1) (i32.const 300) (i32.const 1) (i32.const 312)))
    (i64.store (i32.const 0) (i64.const 1))
    (i32.store8 (i32.const 8) (i32.const 0))
    (i32.store (i32.const 16) (i32.const 1))
    (i64.store (i32.const 24) (i64.const 0x7fffffffffffffff))
    (drop (call $poll (i32.const 0) (i32.const 128) (i32.const 1) (i32.const 192)))))"#;

#[test]
fn the_deadline_stops_a_guest_asleep_in_a_host_call() {
    if !need_root("the_deadline_stops_a_guest_asleep_in_a_host_call") {
        return;
    }
    // Refused: sleeping past the deadline; exit 137, the limit named (a
    // red team's guest slept 600 s past a 2 s deadline). The test's own
    // bound is the runner's 90 s, not a timing assertion.
    let dir = wasi_bundle(SLEEP_P1, Some(r#"{"fuel": 1000000, "deadline": "1s"}"#));
    let rt = Runtime::sandboy();
    let id = unique_id("asleep");
    let _g = rt.guard(&id);
    let (o, log) = run_logged(&rt, &dir.path().join("b"), &id, &[]);
    assert_exit(&o, 137);
    assert_eq!(text(&o.stdout), "tick\n");
    assert!(text(&o.stderr).contains("deadline"), "{}", text(&o.stderr));
    assert!(log.contains("waited in a host call"), "{log}");
    // Allowed: the same guest with a short sleep finishes before it.
    let short = SLEEP_P1.replace("0x7fffffffffffffff", "1000000");
    let dir = wasi_bundle(&short, Some(r#"{"fuel": 1000000, "deadline": "30s"}"#));
    let id = unique_id("napped");
    let _g = rt.guard(&id);
    let (o, _) = run_logged(&rt, &dir.path().join("b"), &id, &[]);
    assert_exit(&o, 0);
    assert_eq!(text(&o.stdout), "tick\n");
}

/// The bundle's payload becomes `/mnt/app.wasm`, from a read-only bind of
/// the host directory `src` (seen only inside the container).
fn payload_behind_a_bind(bundle: &std::path::Path, src: &std::path::Path) {
    let cfg = bundle.join("config.json");
    let mut c: serde_json::Value = serde_json::from_slice(&fs::read(&cfg).unwrap()).unwrap();
    c["mounts"].as_array_mut().unwrap().push(serde_json::json!({
        "destination": "/mnt", "type": "bind",
        "source": src.to_str().unwrap(), "options": ["rbind", "ro"]
    }));
    c["process"]["args"][0] = "/mnt/app.wasm".into();
    fs::write(&cfg, c.to_string()).unwrap();
}

#[test]
fn bad_payloads_fail_create_with_exit_2_and_leave_nothing() {
    if !need_root("bad_payloads_fail_create_with_exit_2_and_leave_nothing") {
        return;
    }
    let rt = Runtime::sandboy();
    // Not WebAssembly at all.
    let dir = wasi_bundle(WASI_HELLO_P1, None);
    fs::write(
        dir.path().join("b/rootfs/app.wasm"),
        b"#!/bin/sh\necho not wasm\n",
    )
    .unwrap();
    let id = unique_id("notwasm");
    let o = rt.create_at(&dir.path().join("b"), &id);
    assert_exit_stderr(&o, 2, "app.wasm");
    assert!(!rt.root.path().join(&id).exists());
    assert!(cgroups_named(&id).is_empty());
    // Imports outside WASI are refused before anything runs.
    let dir = wasi_bundle(
        r#"(module (import "env" "escape" (func)) (memory (export "memory") 1) (func (export "_start")))"#,
        None,
    );
    let id = unique_id("imports");
    let o = rt.create_at(&dir.path().join("b"), &id);
    assert_exit_stderr(&o, 2, "escape");
    assert!(!rt.root.path().join(&id).exists());
    // A FIFO at the payload's path: refused at once (its open once
    // blocked the container's start past every deadline).
    let dir = wasi_bundle(WASI_HELLO_P1, None);
    let app = dir.path().join("b/rootfs/app.wasm");
    fs::remove_file(&app).unwrap();
    assert_exit(&capture(Command::new("mkfifo").arg(&app)), 0);
    let run = |bundle: &std::path::Path, id: &str| {
        output_timeout(
            Command::new(&rt.bin)
                .args([
                    "--root",
                    rt.root.path().to_str().unwrap(),
                    "run",
                    "--bundle",
                ])
                .arg(bundle)
                .arg(id),
            std::time::Duration::from_secs(60),
        )
    };
    let id = unique_id("fifo");
    let o = run(&dir.path().join("b"), &id);
    assert_exit_stderr(&o, 2, "not a regular file");
    assert!(!rt.root.path().join(&id).exists());
    // The same FIFO behind a bind mount, seen only inside the container
    // (found by trying this build: the init's own open blocked).
    let dir = wasi_bundle(WASI_HELLO_P1, None);
    let src = dir.path().join("planted");
    fs::create_dir(&src).unwrap();
    assert_exit(
        &capture(Command::new("mkfifo").arg(src.join("app.wasm"))),
        0,
    );
    payload_behind_a_bind(&dir.path().join("b"), &src);
    let id = unique_id("fifobind");
    let o = run(&dir.path().join("b"), &id);
    assert_ne!(o.status.code(), Some(0), "{o:?}");
    assert!(text(&o.stderr).contains("not a regular file"), "{o:?}");
    assert!(!rt.root.path().join(&id).exists());
    assert!(cgroups_named(&id).is_empty());
    // Allowed: a real module behind the same kind of bind runs.
    let dir = wasi_bundle(WASI_HELLO_P1, None);
    let src = dir.path().join("shipped");
    fs::create_dir(&src).unwrap();
    fs::copy(dir.path().join("m.wasm"), src.join("app.wasm")).unwrap();
    payload_behind_a_bind(&dir.path().join("b"), &src);
    let id = unique_id("shipped");
    let _g = rt.guard(&id);
    let o = run(&dir.path().join("b"), &id);
    assert_exit(&o, 3);
    assert_eq!(text(&o.stdout), "hello from wasi\n");
}

#[test]
fn second_start_uses_the_compile_cache() {
    if !need_root("second_start_uses_the_compile_cache") {
        return;
    }
    let dir = wasi_bundle(WASI_HELLO_P1, None);
    let rt = Runtime::sandboy();
    let b = dir.path().join("b");
    for (i, want_cached) in [(0, false), (1, true)] {
        let id = unique_id(&format!("cache{i}"));
        let _g = rt.guard(&id);
        let (o, log) = run_logged(&rt, &b, &id, &["--debug"]);
        assert_exit(&o, 3);
        let line = log
            .lines()
            .find(|l| l.contains("wasm payload compiled"))
            .unwrap_or_else(|| panic!("{log}"));
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_eq!(v["from_cache"], want_cached.to_string(), "run {i}: {line}");
    }
    let entries = fs::read_dir(rt.root.path().join(".wasm-cache"))
        .unwrap()
        .count();
    assert!(entries >= 1);
}

/// `/proc/<init>/exe` once the init has `execveat`ed `want` (the exec
/// follows `start`; bounded by the spin's own deadline, nothing timed).
fn exe_once_execed(pid: i64, want: &str) -> String {
    let exe = format!("/proc/{pid}/exe");
    for _ in 0..500 {
        if fs::read_link(&exe).is_ok_and(|p| p.ends_with(want)) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let link = fs::read_link(&exe).unwrap();
    assert!(link.ends_with(want), "{exe} -> {}", link.display());
    exe
}

/// CVE-2019-5736 for the wasm host: the binary the init executes is seen
/// through a read-only filesystem (the detached overlay), so nothing can
/// open it for writing through `/proc/<init>/exe`; a native payload's
/// binary, on its writable rootfs, is refused by nothing of the kind.
#[test]
fn the_wasm_hosts_exe_is_not_writable_through_proc() {
    if !need_root("the_wasm_hosts_exe_is_not_writable_through_proc") {
        return;
    }
    let dir = wasi_bundle(
        SPIN_P1,
        Some(r#"{"fuel": 1000000000000000, "deadline": "30s"}"#),
    );
    let rt = Runtime::sandboy();
    let id = unique_id("hostexe");
    let _g = rt.guard(&id);
    let b = dir.path().join("b");
    assert_exit(
        &rt.run(&["create", "--bundle", b.to_str().unwrap(), &id]),
        0,
    );
    assert_exit(&rt.run(&["start", &id]), 0);
    let pid = rt.state(&id)["pid"].as_i64().unwrap();
    let exe = exe_once_execed(pid, "sandboy-wasm");
    let err = fs::OpenOptions::new().write(true).open(&exe).unwrap_err();
    assert_eq!(
        err.kind(),
        std::io::ErrorKind::ReadOnlyFilesystem,
        "{exe}: {err}"
    );

    let native = Bundle::busybox(&["/bin/sleep", "30"]);
    let id = unique_id("nativeexe");
    let _g = rt.guard(&id);
    rt.create_and_start(&native, &id);
    let pid = rt.state(&id)["pid"].as_i64().unwrap();
    let exe = exe_once_execed(pid, "busybox");
    if let Err(err) = fs::OpenOptions::new().write(true).open(&exe) {
        assert_ne!(
            err.kind(),
            std::io::ErrorKind::ReadOnlyFilesystem,
            "{exe}: {err}"
        );
    }
}
