//! The host against real wasmtime: WASI preview 1, limits (fuel, deadline,
//! memory), hostile adapter components built from WAT with wit-component,
//! and the compile cache.

mod common;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use common::*;
use sandboy_wasm::{Cache, Kind, LimitKind, Limits, Prepared, WasmError};

const WASI_P1: &str = r#"(module
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "args_sizes_get" (func $args_sizes_get (param i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "args_get" (func $args_get (param i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "environ_sizes_get" (func $environ_sizes_get (param i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "environ_get" (func $environ_get (param i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "path_open"
    (func $path_open (param i32 i32 i32 i32 i32 i64 i64 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "proc_exit" (func $proc_exit (param i32)))
  (memory (export "memory") 1)
  (data (i32.const 0) "hello from wasi\n")
  (data (i32.const 32) "out.txt")
  (func $write (param $fd i32) (param $ptr i32) (param $len i32)
    (i32.store (i32.const 64) (local.get $ptr))
    (i32.store (i32.const 68) (local.get $len))
    (if (call $fd_write (local.get $fd) (i32.const 64) (i32.const 1) (i32.const 72))
      (then (call $proc_exit (i32.const 98)))))
  (func (export "_start")
    (call $write (i32.const 1) (i32.const 0) (i32.const 16))
    (drop (call $args_sizes_get (i32.const 80) (i32.const 84)))
    (drop (call $args_get (i32.const 1024) (i32.const 2048)))
    (drop (call $environ_sizes_get (i32.const 88) (i32.const 92)))
    (drop (call $environ_get (i32.const 4096) (i32.const 8192)))
    ;; out.txt in preopen fd 3 ("."): O_CREAT|O_TRUNC, rights FD_WRITE
    (if (call $path_open (i32.const 3) (i32.const 0) (i32.const 32) (i32.const 7) (i32.const 9)
                         (i64.const 64) (i64.const 0) (i32.const 0) (i32.const 96))
      (then (call $proc_exit (i32.const 99))))
    (call $write (i32.load (i32.const 96)) (i32.const 2048) (i32.load (i32.const 84)))
    (call $write (i32.load (i32.const 96)) (i32.const 8192) (i32.load (i32.const 92)))
    (call $proc_exit (i32.const 7)))
)"#;

/// The small-SARIF adapter, prepared in a fresh directory with `limits`.
fn small_adapter(limits: Limits) -> (tempfile::TempDir, Prepared) {
    let dir = tempfile::tempdir().unwrap();
    let p = prepared_adapter(dir.path(), "a.wasm", (SMALL_SARIF, false, ""), limits);
    (dir, p)
}

#[test]
fn wasi_p1_prints_reads_args_env_and_writes_cwd() {
    let dir = tempfile::tempdir().unwrap();
    let wasm = wat_file(dir.path(), "hello.wasm", WASI_P1);
    let p = Prepared::prepare(&wasm, &HashMap::new(), None).unwrap();
    assert_eq!(p.kind(), Kind::WasiP1);
    let work = dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let code = p
        .run(
            &args(&["/hello.wasm", "first-arg"]),
            &args(&["GREETING=hi there", "CI=true"]),
            &work,
        )
        .unwrap();
    assert_eq!(code, 7, "exit status from proc_exit");
    let written = std::fs::read(work.join("out.txt")).unwrap();
    let text = String::from_utf8_lossy(&written);
    assert!(text.contains("first-arg"), "{text:?}");
    assert!(text.contains("GREETING=hi there"), "{text:?}");
    assert!(text.contains("CI=true"), "{text:?}");
}

#[test]
fn core_module_with_foreign_imports_refused_at_prepare() {
    let dir = tempfile::tempdir().unwrap();
    let wasm = wat_file(
        dir.path(),
        "bad.wasm",
        r#"(module (import "env" "system" (func (param i32))) (func (export "_start")))"#,
    );
    let e = prepare(&wasm, Limits::default()).unwrap_err();
    assert!(matches!(e, WasmError::Unsupported { .. }), "{e}");
    assert!(e.to_string().contains("system"), "{e}");
    let no_start = wat_file(dir.path(), "lib.wasm", "(module (func (export \"f\")))");
    assert!(prepare(&no_start, Limits::default())
        .unwrap_err()
        .to_string()
        .contains("_start"));
    let not_wasm = write(dir.path(), "x.wasm", b"#!/bin/sh\necho hi\n");
    assert!(matches!(
        prepare(&not_wasm, Limits::default()),
        Err(WasmError::NotWasm { .. })
    ));
}

const SPIN: &str = r#"(module (func (export "_start") (loop $l (br $l))))"#;

#[test]
fn fuel_stops_an_infinite_loop() {
    let dir = tempfile::tempdir().unwrap();
    let wasm = wat_file(dir.path(), "spin.wasm", SPIN);
    let p = prepare(
        &wasm,
        Limits {
            fuel: 10_000_000,
            ..Limits::default()
        },
    )
    .unwrap();
    let e = p.run(&args(&["/spin.wasm"]), &[], dir.path()).unwrap_err();
    assert_eq!(e.limit(), Some(LimitKind::Fuel), "{e}");
    assert_eq!(e.exit_code(), 137);
    assert!(e.to_string().contains("fuel"));
}

#[test]
fn deadline_stops_a_spin_when_fuel_is_effectively_off() {
    let dir = tempfile::tempdir().unwrap();
    let wasm = wat_file(dir.path(), "spin.wasm", SPIN);
    let limits = Limits {
        fuel: u64::MAX,
        deadline: Duration::from_secs(1),
        ..Limits::default()
    };
    let p = prepare(&wasm, limits).unwrap();
    let t = Instant::now();
    let e = p.run(&args(&["/spin.wasm"]), &[], dir.path()).unwrap_err();
    assert_eq!(e.limit(), Some(LimitKind::Deadline), "{e}");
    assert!(e.to_string().contains("deadline"));
    assert_eq!(e.exit_code(), 137);
    assert!(
        t.elapsed() < Duration::from_secs(20),
        "stopped promptly: {:?}",
        t.elapsed()
    );
}

#[test]
fn memory_bomb_stopped_and_named() {
    // Grows 1 MiB at a time towards 200 MiB; traps if a grow is refused.
    let bomb = r#"(module
      (memory 1)
      (func (export "_start") (local $i i32)
        (loop $l
          (if (i32.eq (memory.grow (i32.const 16)) (i32.const -1)) (then unreachable))
          (local.set $i (i32.add (local.get $i) (i32.const 1)))
          (br_if $l (i32.lt_u (local.get $i) (i32.const 200))))))"#;
    let dir = tempfile::tempdir().unwrap();
    let wasm = wat_file(dir.path(), "bomb.wasm", bomb);
    let p = prepare(
        &wasm,
        Limits {
            memory: 64 << 20,
            ..Limits::default()
        },
    )
    .unwrap();
    let e = p.run(&args(&["/bomb.wasm"]), &[], dir.path()).unwrap_err();
    assert_eq!(e.limit(), Some(LimitKind::Memory), "{e}");
    assert!(e.to_string().contains("memory"), "{e}");
    assert_eq!(e.exit_code(), 137);
    // The same module within a 256 MiB cap completes.
    let p = prepare(&wasm, Limits::default()).unwrap();
    assert_eq!(p.run(&args(&["/bomb.wasm"]), &[], dir.path()).unwrap(), 0);
}

#[test]
fn bad_limits_annotation_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let wasm = wat_file(dir.path(), "spin.wasm", SPIN);
    let mut ann = HashMap::new();
    ann.insert(
        "dev.sandboy.wasm.limits".to_string(),
        r#"{"fuel":"lots"}"#.to_string(),
    );
    let e = Prepared::prepare(&wasm, &ann, None).unwrap_err();
    assert!(e.is_usage());
    assert_eq!(e.exit_code(), 2);
}

const SMALL_SARIF: &[u8] =
    br#"{"version":"2.1.0","runs":[{"tool":{"driver":{"name":"t"}},"results":[{"message":{"text":"m"}}]}]}"#;

#[test]
fn wat_adapter_happy_path_stamps_provenance() {
    let (dir, p) = small_adapter(Limits::default());
    assert_eq!(p.kind(), Kind::Adapter);
    write(dir.path(), "in.txt", b"anything");
    let v = run_adapter(&p, &["--tool", "t", "--artifact", "in=in.txt"], dir.path()).unwrap();
    assert_eq!(v["version"], "2.1.0");
    assert_eq!(
        v["$schema"],
        "https://json.schemastore.org/sarif-2.1.0.json"
    );
    let stamp = &v["runs"][0]["properties"]["sandboy"];
    assert_eq!(stamp["component_sha256"], p.sha256_hex().as_str());
    assert_eq!(stamp["tool"], "t");
    assert_eq!(stamp["runtime_version"], env!("CARGO_PKG_VERSION"));
}

#[test]
fn adapter_with_an_import_is_refused_before_it_runs() {
    let wit = r#"
        package test:bad;
        interface host { log: func(msg: string); }
        world bad-adapter {
          import host;
          include ownaudit:adapter/adapter@0.1.0;
        }"#;
    // The body would call the import; it never runs.
    let core = adapter_core(
        SMALL_SARIF,
        false,
        "(call $log (i32.const 0) (i32.const 0))",
    )
    .replace(
        "(module\n",
        "(module\n  (import \"test:bad/host\" \"log\" (func $log (param i32 i32)))\n",
    );
    let dir = tempfile::tempdir().unwrap();
    let wasm = write(
        dir.path(),
        "bad.wasm",
        &component_from_core(&core, Some(wit), "bad-adapter"),
    );
    let e = prepare(&wasm, Limits::default()).unwrap_err();
    match &e {
        WasmError::HasImports { imports, .. } => {
            assert_eq!(imports, &vec!["test:bad/host".to_string()])
        }
        other => panic!("expected HasImports, got {other}"),
    }
    assert!(e.to_string().contains("zero imports"));
    assert_eq!(e.exit_code(), 1);
}

#[test]
fn adapter_output_past_max_output_refused() {
    let big = vec![b' '; 2 << 20];
    let dir = tempfile::tempdir().unwrap();
    let p = prepared_adapter(
        dir.path(),
        "big.wasm",
        (&big, false, ""),
        Limits {
            max_output: 1 << 20,
            ..Limits::default()
        },
    );
    let e = run_adapter(&p, &["--tool", "t"], dir.path()).unwrap_err();
    assert!(
        matches!(e, WasmError::OutputTooLarge { size, max } if size == 2 << 20 && max == 1 << 20),
        "{e}"
    );
}

#[test]
fn adapter_too_many_results_refused_not_truncated() {
    let results = vec![r#"{"message":{"text":"x"}}"#; 10_001].join(",");
    let doc = format!(
        r#"{{"version":"2.1.0","runs":[{{"tool":{{"driver":{{"name":"t"}}}},"results":[{results}]}}]}}"#
    );
    let dir = tempfile::tempdir().unwrap();
    let p = prepared_adapter(
        dir.path(),
        "many.wasm",
        (doc.as_bytes(), false, ""),
        Limits::default(),
    );
    let mut out = Vec::new();
    let e = p
        .run_with_output(
            &args(&["/a.wasm", "--tool", "t"]),
            &[],
            dir.path(),
            &mut out,
        )
        .unwrap_err();
    assert!(
        matches!(
            e,
            WasmError::TooManyResults {
                count: 10_001,
                max: 10_000
            }
        ),
        "{e}"
    );
    assert!(out.is_empty(), "nothing written on refusal");
}

#[test]
fn adapter_non_sarif_output_refused() {
    let dir = tempfile::tempdir().unwrap();
    for (i, bad) in [
        &b"not json at all"[..],
        br#"{"hello":1}"#,
        br#"{"version":"1.0.0","runs":[]}"#,
        br#"{"version":"2.1.0","runs":{}}"#,
        &b"[".repeat(100_000),
    ]
    .iter()
    .enumerate()
    {
        let p = prepared_adapter(
            dir.path(),
            &format!("n{i}.wasm"),
            (bad, false, ""),
            Limits::default(),
        );
        let e = run_adapter(&p, &["--tool", "t"], dir.path()).unwrap_err();
        assert!(matches!(e, WasmError::NotSarif(_)), "{i}: {e}");
    }
}

#[test]
fn adapter_err_string_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let p = prepared_adapter(
        dir.path(),
        "e.wasm",
        (b"input is broken", true, ""),
        Limits::default(),
    );
    let e = run_adapter(&p, &["--tool", "t"], dir.path()).unwrap_err();
    assert!(
        matches!(&e, WasmError::Adapter { message, .. } if message == "input is broken"),
        "{e}"
    );
    assert_eq!(e.exit_code(), 1);
}

#[test]
fn adapter_bad_flags_are_usage_errors() {
    let (dir, p) = small_adapter(Limits::default());
    for flags in [
        &["--artifact", "x=y"][..],
        &["--tool", "t", "--frobnicate"],
        &["--tool", "t", "--artifact", "noequals"],
    ] {
        let e = run_adapter(&p, flags, dir.path()).unwrap_err();
        assert!(e.is_usage(), "{flags:?}: {e}");
        assert_eq!(e.exit_code(), 2);
    }
}

#[test]
fn adapter_input_past_max_input_refused_without_reading_it_all() {
    let (dir, p) = small_adapter(Limits {
        max_input: 1024,
        ..Limits::default()
    });
    write(dir.path(), "big.json", &vec![b'x'; 1025]);
    let e = run_adapter(&p, &["--tool", "t", "--artifact", "r=big.json"], dir.path()).unwrap_err();
    assert!(
        matches!(e, WasmError::InputTooLarge { max: 1024, .. }),
        "{e}"
    );
    // An endless input (a device, a FIFO) is refused unread: only regular
    // files are inputs (a FIFO's open blocked past every deadline).
    let e = run_adapter(
        &p,
        &["--tool", "t", "--artifact", "r=/dev/zero"],
        dir.path(),
    )
    .unwrap_err();
    assert!(e.to_string().contains("not a regular file"), "{e}");
    // Exactly at the cap is fine; the cap is the total of all inputs.
    write(dir.path(), "ok.json", &vec![b'x'; 1024]);
    run_adapter(&p, &["--tool", "t", "--artifact", "r=ok.json"], dir.path()).unwrap();
    write(dir.path(), "half.json", &vec![b'x'; 600]);
    let e = run_adapter(
        &p,
        &[
            "--tool",
            "t",
            "--artifact",
            "a=half.json",
            "--stdout",
            "half.json",
        ],
        dir.path(),
    )
    .unwrap_err();
    assert!(matches!(e, WasmError::InputTooLarge { .. }), "{e}");
}

#[test]
fn adapter_spin_stopped_by_fuel() {
    let dir = tempfile::tempdir().unwrap();
    let p = prepared_adapter(
        dir.path(),
        "s.wasm",
        (SMALL_SARIF, false, "(loop $l (br $l))"),
        Limits {
            fuel: 1_000_000,
            ..Limits::default()
        },
    );
    let e = run_adapter(&p, &["--tool", "t"], dir.path()).unwrap_err();
    assert_eq!(e.limit(), Some(LimitKind::Fuel), "{e}");
}

#[test]
fn cache_hit_and_corruption_recovery() {
    let (dir, cache, wasm) = cache_and_adapter();

    let t = Instant::now();
    let first = Prepared::prepare(&wasm, &HashMap::new(), Some(&cache)).unwrap();
    let compile = t.elapsed();
    assert!(!first.from_cache());
    assert_eq!((cache.hits(), cache.misses()), (0, 1));

    let t = Instant::now();
    let second = Prepared::prepare(&wasm, &HashMap::new(), Some(&cache)).unwrap();
    let load = t.elapsed();
    assert!(second.from_cache());
    assert_eq!((cache.hits(), cache.misses()), (1, 1));
    println!("prepare: compile {compile:?}, cache hit {load:?}");
    run_adapter(&second, &["--tool", "t"], dir.path()).unwrap();

    // Flip one payload byte: checksum mismatch -> ignored, recompiled, rewritten.
    let engine = sandboy_wasm::engine::new_engine().unwrap();
    let file = cache.path_for(&engine, &std::fs::read(&wasm).unwrap());
    let mut data = std::fs::read(&file).unwrap();
    let last = data.len() - 1;
    data[last] ^= 0xff;
    std::fs::write(&file, &data).unwrap();
    let third = Prepared::prepare(&wasm, &HashMap::new(), Some(&cache)).unwrap();
    assert!(!third.from_cache());
    assert_eq!((cache.hits(), cache.misses(), cache.rejected()), (1, 2, 1));
    run_adapter(&third, &["--tool", "t"], dir.path()).unwrap();

    // Truncated file, and garbage: same.
    std::fs::write(&file, &data[..100]).unwrap();
    assert!(!loads(&cache, &wasm));
    std::fs::write(&file, b"garbage").unwrap();
    assert!(!loads(&cache, &wasm));
    assert_eq!(cache.rejected(), 3);
    // Rewritten each time: the next prepare hits.
    assert!(loads(&cache, &wasm));
}

/// A scratch directory, an empty cache in it, and an adapter's wasm.
fn cache_and_adapter() -> (tempfile::TempDir, Cache, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let cache = Cache::new(dir.path().join("cache")).unwrap();
    let wasm = write(
        dir.path(),
        "a.wasm",
        &adapter_component(SMALL_SARIF, false, ""),
    );
    (dir, cache, wasm)
}

/// Whether a prepare of `wasm` through `cache` loads compiled code.
fn loads(cache: &Cache, wasm: &std::path::Path) -> bool {
    Prepared::prepare(wasm, &HashMap::new(), Some(cache))
        .unwrap()
        .from_cache()
}

/// An ordinary user's cache is sealed: only entries tagged with the
/// user's key load. A red team's step rewrote one entry's digest to
/// another component's (the CRC covers only the payload, so it stayed
/// right) and the host ran the wrong code under the right digest.
#[test]
fn sealed_cache_loads_only_what_its_key_sealed() {
    use sandboy_wasm_contract::seal::CacheKey;
    let dir = tempfile::tempdir().unwrap();
    let at = dir.path().join("cache");
    let sealed = |k: u8| Cache::new(&at).unwrap().sealed(Some(CacheKey([k; 32])));
    let a = write(
        dir.path(),
        "a.wasm",
        &adapter_component(SMALL_SARIF, false, ""),
    );
    let b = write(
        dir.path(),
        "b.wasm",
        &adapter_component(SMALL_SARIF, false, "(nop)"),
    );
    let prepare = loads;
    let cache = sealed(1);
    assert!(!prepare(&cache, &a) && !prepare(&cache, &b));
    // Allowed: what this key sealed loads.
    assert!(prepare(&cache, &a) && prepare(&cache, &b));
    assert_eq!(cache.rejected(), 0);

    // b's sealed entry, its digest rewritten to a's, at a's place: refused.
    let engine = sandboy_wasm::engine::new_engine().unwrap();
    let entry = |w: &std::path::Path| cache.path_for(&engine, &std::fs::read(w).unwrap());
    let sha_a = sandboy_wasm::cache::sha256(&std::fs::read(&a).unwrap());
    let mut planted = std::fs::read(entry(&b)).unwrap();
    planted[8..40].copy_from_slice(&sha_a);
    std::fs::write(entry(&a), &planted).unwrap();
    assert!(!prepare(&cache, &a), "a planted entry loaded");
    assert_eq!(cache.rejected(), 1);
    run_adapter(
        &Prepared::prepare(&a, &HashMap::new(), Some(&cache)).unwrap(),
        &["--tool", "t"],
        dir.path(),
    )
    .unwrap();

    // Sealed with another key, or not sealed at all: refused, rewritten.
    assert!(!prepare(&sealed(2), &a));
    assert!(!prepare(&cache, &a));
    let unsealed = Cache::new(&at).unwrap();
    assert!(
        !prepare(&unsealed, &a),
        "an unsealed cache loads no sealed entry"
    );
    assert!(
        !prepare(&cache, &a),
        "a sealed cache loads no unsealed entry"
    );
    assert!(prepare(&cache, &a));
}

/// The entry is written to a new temporary name, never through a link
/// planted there: a step that may write the user's cache could guess the
/// name (pid and digest) and point it at any file of the user's.
#[test]
fn cache_store_never_writes_through_a_planted_link() {
    let (dir, cache, wasm) = cache_and_adapter();
    let victim = dir.path().join("victim");
    std::fs::write(&victim, "keep\n").unwrap();
    let sha = sandboy_wasm::cache::sha256(&std::fs::read(&wasm).unwrap());
    let tmp = cache.dir().join(format!(
        ".tmp-{}-{}",
        std::process::id(),
        sandboy_wasm::cache::hex(&sha[..8])
    ));
    std::os::unix::fs::symlink(&victim, &tmp).unwrap();
    let p = Prepared::prepare(&wasm, &HashMap::new(), Some(&cache)).unwrap();
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep\n");
    // The entry was still written, at its own name.
    assert!(p.cache_file().is_some_and(|f| f.is_file()));
    assert!(loads(&cache, &wasm));
}

/// An entry's name pointing at a device (a link to /dev/zero) is not
/// read: the prepare compiles instead, and does not hang or eat memory.
#[test]
fn a_cache_entry_linked_to_a_device_is_not_read() {
    let (_dir, cache, wasm) = cache_and_adapter();
    let engine = sandboy_wasm::engine::new_engine().unwrap();
    let entry = cache.path_for(&engine, &std::fs::read(&wasm).unwrap());
    std::os::unix::fs::symlink("/dev/zero", &entry).unwrap();
    let p = Prepared::prepare(&wasm, &HashMap::new(), Some(&cache)).unwrap();
    assert!(!p.from_cache());
    // Rewritten at its name: the next prepare loads it.
    assert!(loads(&cache, &wasm));
}

#[test]
fn cache_dir_writable_by_others_refused() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let c = dir.path().join("c");
    std::fs::create_dir(&c).unwrap();
    std::fs::set_permissions(&c, std::fs::Permissions::from_mode(0o777)).unwrap();
    assert!(matches!(Cache::new(&c), Err(WasmError::Cache { .. })));
}
