//! `sandboy adapt`: an analyzer's output through its adapter component to
//! SARIF 2.1.0 that validates against the official OASIS schema (shipped
//! by the `serde-sarif` crate, fetched into cargo's cache), as root (an
//! OCI-wasm container) and as an unprivileged user (the wrap tiers);
//! `--all` merging; hostile components; an installed tree; bad input.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use sandboy_tests::adapters::{adapter_component, adapter_core, component_from_core};
use sandboy_tests::*;
use serde_json::Value;

fn testdata(name: &str) -> PathBuf {
    repo().join("components/testdata").join(name)
}

/// (tool, artifact name, fixture, results expected).
const FIXTURES: [(&str, &str, &str, usize); 3] = [
    ("infersharp", "report.json", "infersharp-report.json", 4),
    ("roslyn", "report.sarif", "roslyn.sarif", 2),
    ("codeql", "report.sarif", "codeql.sarif", 1),
];

fn have_components(test: &str) -> bool {
    let ok = ["infersharp.wasm", "passthrough.wasm"]
        .iter()
        .all(|c| components_dir().join(c).is_file());
    if !ok {
        skip(test, "components not built (make components)");
    }
    ok
}

/// `sandboy --root R adapt ARGS` with the checkout's registry and components.
fn adapt(rt: &Runtime, args: &[&str]) -> Output {
    capture(
        rt.cmd()
            .arg("adapt")
            .args(args)
            .env("SANDBOY_REGISTRY", repo().join("components/adapters.toml"))
            .env("SANDBOY_COMPONENTS", components_dir()),
    )
}

/// The official SARIF 2.1.0 schema, from the `serde-sarif` 0.8.0 crate
/// (its src/schema.json is the OASIS sarif-schema-2.1.0.json): fetched by
/// cargo into its cache and read from the .crate archive. `None` (a skip)
/// when cargo cannot fetch it.
fn schema(test: &str) -> Option<PathBuf> {
    static SCHEMA: OnceLock<Option<PathBuf>> = OnceLock::new();
    let found = SCHEMA.get_or_init(|| {
        // Kept in the target directory: fetched once, reused by later runs.
        let dir = target_dir().join("sarif-schema");
        fs::create_dir_all(dir.join("src")).unwrap();
        fs::write(
            dir.join("Cargo.toml"),
            "[package]\nname = \"sarif-schema-fetch\"\nversion = \"0.0.0\"\nedition = \"2021\"\n\
             [dependencies]\nserde-sarif = \"=0.8.0\"\n[workspace]\n",
        )
        .unwrap();
        fs::write(dir.join("src/lib.rs"), "").unwrap();
        let fetched = Command::new("cargo").arg("fetch").current_dir(&dir).output().ok()?;
        if !fetched.status.success() {
            return None;
        }
        let home = std::env::var_os("CARGO_HOME")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").unwrap()).join(".cargo"));
        let krate = fs::read_dir(home.join("registry/cache"))
            .ok()?
            .flatten()
            .map(|e| e.path().join("serde-sarif-0.8.0.crate"))
            .find(|p| p.is_file())?;
        let out = dir.join("sarif-schema-2.1.0.json");
        let o = Command::new("python3")
            .args(["-c", "import sys,tarfile; t=tarfile.open(sys.argv[1]); open(sys.argv[2],'wb').write(t.extractfile('serde-sarif-0.8.0/src/schema.json').read())"])
            .arg(&krate)
            .arg(&out)
            .output()
            .ok()?;
        o.status.success().then_some(out)
    });
    if found.is_none() {
        skip(
            test,
            "cannot fetch the serde-sarif crate (the SARIF 2.1.0 schema) with cargo",
        );
    }
    found.clone()
}

/// Validates `doc` against the schema with python3-jsonschema.
fn assert_valid_sarif(schema: &Path, doc: &Path) {
    let o = capture(Command::new("python3").args([
        "-c",
        "import json,sys,jsonschema; s=json.load(open(sys.argv[1])); jsonschema.Draft7Validator.check_schema(s); \
         jsonschema.Draft7Validator(s).validate(json.load(open(sys.argv[2])))",
    ]).arg(schema).arg(doc));
    assert!(
        o.status.success(),
        "{} does not validate: {}",
        doc.display(),
        text(&o.stderr)
    );
}

fn sha256_of(p: &Path) -> String {
    let o = capture(Command::new("sha256sum").arg(p));
    text(&o.stdout)
        .split_whitespace()
        .next()
        .unwrap()
        .to_string()
}

fn read_json(p: &Path) -> Value {
    serde_json::from_slice(&fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))).unwrap()
}

/// Nothing of a run left: no temporary bundle, no container state.
fn assert_nothing_left(rt: &Runtime) {
    let adapt_dir = rt.root.path().join(".adapt");
    let left: Vec<_> = fs::read_dir(&adapt_dir)
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "left behind: {left:?}");
    let states: Vec<_> = fs::read_dir(rt.root.path())
        .unwrap()
        .flatten()
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .map(|e| e.path())
        .collect();
    assert!(states.is_empty(), "container state left: {states:?}");
    assert!(mounts_mentioning(&rt.root.path().display().to_string()).is_empty());
}

fn check_log(doc: &Value, tool: &str, results: usize, component: &Path) {
    assert_eq!(doc["version"], "2.1.0");
    let run = &doc["runs"][0];
    assert_eq!(run["results"].as_array().unwrap().len(), results, "{tool}");
    assert_eq!(run["properties"]["sandboy"]["tool"], tool);
    assert_eq!(
        run["properties"]["sandboy"]["component_sha256"],
        sha256_of(component).as_str()
    );
}

#[test]
fn root_adapt_of_infersharp_roslyn_codeql_validates_against_the_sarif_schema() {
    let t = "root_adapt_of_infersharp_roslyn_codeql_validates_against_the_sarif_schema";
    if !need_root(t) || !have_components(t) {
        return;
    }
    let Some(schema) = schema(t) else { return };
    let rt = Runtime::sandboy();
    let out = TempDir::new("adapt-out");
    for (tool, artifact, file, n) in FIXTURES {
        let o_path = out.path().join(format!("{tool}.sarif"));
        let flag = format!("{artifact}={}", testdata(file).display());
        let o = adapt(
            &rt,
            &[
                "--tool",
                tool,
                "--artifact",
                &flag,
                "-o",
                o_path.to_str().unwrap(),
            ],
        );
        assert_exit(&o, 0);
        assert_valid_sarif(&schema, &o_path);
        let comp = if tool == "infersharp" {
            "infersharp.wasm"
        } else {
            "passthrough.wasm"
        };
        check_log(&read_json(&o_path), tool, n, &components_dir().join(comp));
        assert_nothing_left(&rt);
    }
    // Without -o the log goes to stdout; the same document.
    let flag = format!(
        "report.json={}",
        testdata("infersharp-report.json").display()
    );
    let o = adapt(&rt, &["--tool", "infersharp", "--artifact", &flag]);
    assert_exit(&o, 0);
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(doc, read_json(&out.path().join("infersharp.sarif")));
    // --component: the same component from outside the registry.
    let comp = components_dir().join("passthrough.wasm");
    let flag = format!("report.sarif={}", testdata("roslyn.sarif").display());
    let o = adapt(
        &rt,
        &[
            "--tool",
            "mine",
            "--component",
            comp.to_str().unwrap(),
            "--artifact",
            &flag,
        ],
    );
    assert_exit(&o, 0);
    check_log(
        &serde_json::from_slice(&o.stdout).unwrap(),
        "mine",
        2,
        &comp,
    );
}

#[test]
fn list_shows_tools_components_sha256_and_phases() {
    let t = "list_shows_tools_components_sha256_and_phases";
    if !have_components(t) {
        return;
    }
    let rt = Runtime::sandboy();
    let o = adapt(&rt, &["--list"]);
    assert_exit(&o, 0);
    let out = text(&o.stdout);
    let sha = sha256_of(&components_dir().join("infersharp.wasm"));
    assert!(
        out.lines()
            .any(|l| l.starts_with("infersharp\t") && l.contains(&sha)),
        "{out}"
    );
    assert!(
        out.lines()
            .any(|l| l.starts_with("codeql\t") && l.ends_with("db-build -> analyze")),
        "{out}"
    );
}

/// A directory with the three tools' outputs under the registry's names.
fn audit_dir() -> TempDir {
    let d = TempDir::new("audit");
    fs::create_dir(d.path().join("infersharp")).unwrap();
    fs::copy(
        testdata("infersharp-report.json"),
        d.path().join("infersharp/report.json"),
    )
    .unwrap();
    fs::copy(testdata("roslyn.sarif"), d.path().join("roslyn.sarif")).unwrap();
    fs::copy(testdata("codeql.sarif"), d.path().join("codeql.sarif")).unwrap();
    d
}

fn tools_of(doc: &Value) -> Vec<String> {
    doc["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            r["properties"]["sandboy"]["tool"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect()
}

#[test]
fn all_merges_one_run_per_tool_and_skips_absent_inputs() {
    let t = "all_merges_one_run_per_tool_and_skips_absent_inputs";
    if !need_root(t) || !have_components(t) {
        return;
    }
    let Some(schema) = schema(t) else { return };
    let rt = Runtime::sandboy();
    let dir = audit_dir();
    let merged = dir.path().join("merged.sarif");
    let o = adapt(
        &rt,
        &[
            "--all",
            dir.path().to_str().unwrap(),
            "-o",
            merged.to_str().unwrap(),
        ],
    );
    assert_exit(&o, 0);
    assert_valid_sarif(&schema, &merged);
    let doc = read_json(&merged);
    assert_eq!(tools_of(&doc), ["infersharp", "roslyn", "codeql"]);
    for run in doc["runs"].as_array().unwrap() {
        assert_eq!(run["invocations"][0]["executionSuccessful"], true);
    }
    let err = text(&o.stderr);
    assert!(
        err.contains("adapt: infersharp: 4 results, 3 rules,"),
        "{err}"
    );
    assert!(err.contains("adapt: codeql: 1 results, 1 rules,"), "{err}");
    // `audit DIR` is the same, and one input fewer is one run fewer.
    fs::remove_file(dir.path().join("roslyn.sarif")).unwrap();
    let o = capture(
        rt.cmd()
            .args(["audit", dir.path().to_str().unwrap()])
            .env("SANDBOY_REGISTRY", repo().join("components/adapters.toml"))
            .env("SANDBOY_COMPONENTS", components_dir()),
    );
    assert_exit(&o, 0);
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(tools_of(&doc), ["infersharp", "codeql"]);
    assert_nothing_left(&rt);
}

/// The built-in adapter policy with tight `[wasm]` limits (and `extra`
/// replacing keys of it), written into `dir`.
fn tight_policy(dir: &Path, max_input: &str) -> PathBuf {
    let src = fs::read_to_string(repo().join("policies/ownaudit-adapter.toml")).unwrap();
    let head = &src[..src.find("[wasm]").unwrap()];
    let p = dir.join("tight.toml");
    fs::write(
        &p,
        format!(
            "{head}[wasm]\nfuel = 20_000_000\ndeadline = \"10s\"\nmemory = \"8MiB\"\nmax_input = \"{max_input}\"\nmax_output = \"64KiB\"\nmax_results = 5\n"
        ),
    )
    .unwrap();
    p
}

const ONE_RESULT: &[u8] = br#"{"version":"2.1.0","runs":[{"tool":{"driver":{"name":"x"}},"results":[{"message":{"text":"a"}}]}]}"#;

/// (name, component bytes, exit status, what stderr must name).
fn hostile() -> Vec<(&'static str, Vec<u8>, i32, &'static str)> {
    let importing = adapter_core(ONE_RESULT, false, "(call $log (i32.const 0) (i32.const 0))")
        .replace(
            "(module\n",
            "(module\n  (import \"test:bad/host\" \"log\" (func $log (param i32 i32)))\n",
        );
    let wit = "package test:bad;\ninterface host { log: func(msg: string); }\nworld bad-adapter { import host; include ownaudit:adapter/adapter@0.1.0; }";
    let big = vec![b' '; 100 << 10];
    // One result more than the tight policy's max_results (5).
    let six = format!(
        r#"{{"version":"2.1.0","runs":[{{"tool":{{"driver":{{"name":"x"}}}},"results":[{}]}}]}}"#,
        [r#"{"message":{"text":"r"}}"#; 6].join(",")
    );
    vec![
        ("loop", adapter_component(ONE_RESULT, false, "(loop $l (br $l))"), 137, "fuel"),
        (
            "bomb",
            adapter_component(ONE_RESULT, false, "(loop $l (br_if $l (i32.ne (memory.grow (i32.const 16)) (i32.const -1)))) unreachable"),
            137,
            "memory",
        ),
        ("big", adapter_component(&big, false, ""), 1, "max_output"),
        ("many", adapter_component(six.as_bytes(), false, ""), 1, "max_results"),
        ("notsarif", adapter_component(b"hello, not SARIF", false, ""), 1, "not SARIF"),
        ("importing", component_from_core(&importing, Some(wit), "bad-adapter"), 2, "zero imports"),
    ]
}

#[test]
fn hostile_components_are_refused_with_the_limit_named() {
    let t = "hostile_components_are_refused_with_the_limit_named";
    if !need_root(t) || !have_components(t) {
        return;
    }
    let rt = Runtime::sandboy();
    let dir = TempDir::new("hostile");
    let policy = tight_policy(dir.path(), "1MiB");
    let input = dir.path().join("in.json");
    fs::write(&input, b"{}").unwrap();
    let flag = format!("x={}", input.display());
    for (name, bytes, code, named) in hostile() {
        let comp = dir.path().join(format!("{name}.wasm"));
        fs::write(&comp, bytes).unwrap();
        let out = dir.path().join(format!("{name}.sarif"));
        let o = adapt(
            &rt,
            &[
                "--policy",
                policy.to_str().unwrap(),
                "--tool",
                name,
                "--component",
                comp.to_str().unwrap(),
                "--artifact",
                &flag,
                "-o",
                out.to_str().unwrap(),
            ],
        );
        assert_exit(&o, code);
        assert!(
            text(&o.stderr).contains(named),
            "{name}: {}",
            text(&o.stderr)
        );
        assert!(!out.exists(), "{name}: no output on failure");
        assert_nothing_left(&rt);
    }
    // Counterpart: a well-behaved WAT component under the same policy.
    let comp = dir.path().join("good.wasm");
    fs::write(&comp, adapter_component(ONE_RESULT, false, "")).unwrap();
    let o = adapt(
        &rt,
        &[
            "--policy",
            policy.to_str().unwrap(),
            "--tool",
            "good",
            "--component",
            comp.to_str().unwrap(),
            "--artifact",
            &flag,
        ],
    );
    assert_exit(&o, 0);
    assert_eq!(
        serde_json::from_slice::<Value>(&o.stdout).unwrap()["runs"][0]["results"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
}

#[test]
fn all_reports_failing_tools_and_keeps_the_others() {
    let t = "all_reports_failing_tools_and_keeps_the_others";
    if !need_root(t) || !have_components(t) {
        return;
    }
    let Some(schema) = schema(t) else { return };
    let rt = Runtime::sandboy();
    let dir = audit_dir();
    let comps = TempDir::new("hostile-comps");
    for c in ["infersharp.wasm", "passthrough.wasm"] {
        fs::copy(components_dir().join(c), comps.path().join(c)).unwrap();
    }
    let mut registry = fs::read_to_string(repo().join("components/adapters.toml")).unwrap();
    for (name, bytes, _, _) in hostile()
        .into_iter()
        .filter(|h| ["loop", "notsarif"].contains(&h.0))
    {
        fs::write(comps.path().join(format!("{name}.wasm")), bytes).unwrap();
        fs::write(dir.path().join(format!("{name}.json")), b"{}").unwrap();
        registry.push_str(&format!(
            "\n[[adapter]]\ntool = \"{name}\"\ncomponent = \"{name}.wasm\"\ninputs = [\"x\"]\nartifact = \"x\"\nfiles = [\"{name}.json\"]\noutput = \"sarif-2.1.0\"\n"
        ));
    }
    let reg = comps.path().join("adapters.toml");
    fs::write(&reg, registry).unwrap();
    let policy = tight_policy(comps.path(), "1MiB");
    let merged = dir.path().join("merged.sarif");
    let o = capture(rt.cmd().args([
        "adapt",
        "--all",
        dir.path().to_str().unwrap(),
        "--registry",
        reg.to_str().unwrap(),
        "--components",
        comps.path().to_str().unwrap(),
        "--policy",
        policy.to_str().unwrap(),
        "-o",
        merged.to_str().unwrap(),
    ]));
    assert_exit(&o, 137);
    assert_valid_sarif(&schema, &merged);
    let doc = read_json(&merged);
    assert_eq!(
        tools_of(&doc),
        ["infersharp", "roslyn", "codeql", "loop", "notsarif"]
    );
    let runs = doc["runs"].as_array().unwrap();
    assert_eq!(runs[0]["results"].as_array().unwrap().len(), 4);
    for (i, ok, named) in [(2, true, ""), (3, false, "fuel"), (4, false, "not SARIF")] {
        let inv = &runs[i]["invocations"][0];
        assert_eq!(inv["executionSuccessful"], ok, "run {i}");
        if !ok {
            let msg = inv["toolExecutionNotifications"][0]["message"]["text"]
                .as_str()
                .unwrap();
            assert!(msg.contains(named), "run {i}: {msg}");
        }
    }
    let err = text(&o.stderr);
    assert!(err.contains("adapt: loop: FAILED (exit 137)"), "{err}");
    assert_nothing_left(&rt);
}

#[test]
fn unprivileged_adapt_validates_and_warms_the_user_cache() {
    let t = "unprivileged_adapt_validates_and_warms_the_user_cache";
    if !have_components(t) {
        return;
    }
    let Some(user) = TestUser::create(t) else {
        return;
    };
    let Some(schema) = schema(t) else { return };
    let (inst, bin, work) = user_workspace(&user);
    let home = PathBuf::from(format!("/home/{}", user.name));
    for fixture in FIXTURES {
        adapt_as_user(&user, &bin, &inst, &work, fixture, Some(&schema));
    }
    let cache = home.join(".cache/sandboy/wasm");
    // (Beside them, `prepared/`: what prepare answered, for warm starts.)
    assert_eq!(
        fs::read_dir(&cache)
            .unwrap()
            .flatten()
            .filter(|e| e.path().extension().is_some_and(|x| x == "cwasm"))
            .count(),
        2,
        "one compiled file per component in {}",
        cache.display()
    );
    // The confined host reads only what it was given: an input the user
    // cannot read is refused before anything runs (exit 2).
    let secret = inst.path().join("secret.json");
    fs::copy(testdata("infersharp-report.json"), &secret).unwrap();
    Command::new("chmod")
        .arg("600")
        .arg(&secret)
        .status()
        .unwrap();
    let o = capture(
        user.cmd(&bin)
            .args(["adapt", "--tool", "infersharp", "--artifact"])
            .arg(format!("report.json={}", secret.display()))
            .current_dir(&work),
    );
    assert_exit_stderr(&o, 2, "cannot read: Permission denied");
    busy_user_still_adapts(&user, &bin, &work);
    // A hostile component is stopped as it is as root.
    let comp = work.join("loop.wasm");
    fs::write(
        &comp,
        adapter_component(ONE_RESULT, false, "(loop $l (br $l))"),
    )
    .unwrap();
    let policy = tight_policy(&work, "1MiB");
    user.chown(&comp);
    user.chown(&policy);
    let o = capture(
        user.cmd(&bin)
            .args([
                "adapt",
                "--policy",
                "tight.toml",
                "--tool",
                "loop",
                "--component",
                "loop.wasm",
                "--artifact",
                "x=roslyn.sarif",
            ])
            .current_dir(&work),
    );
    assert_exit_stderr(&o, 137, "fuel");
    // --all works unprivileged too.
    let o = capture(
        user.cmd(&bin)
            .args(["adapt", "--all", "."])
            .current_dir(&work),
    );
    assert_exit(&o, 0);
}

#[test]
fn adapt_works_from_an_installed_tree() {
    let t = "adapt_works_from_an_installed_tree";
    if !need_root(t) || !have_components(t) || !need_tool(t, "make") {
        return;
    }
    let prefix = TempDir::new("prefix");
    let o = capture(
        Command::new("make")
            .arg("-C")
            .arg(repo())
            .args([
                "install",
                "INSTALL_PROFILE=debug",
                &format!("PREFIX={}", prefix.path().display()),
            ])
            .env("CARGO_TARGET_DIR", target_dir())
            .env("COMPONENTS_OUT", components_dir()),
    );
    assert_exit(&o, 0);
    for f in [
        "bin/sandboy",
        "bin/sandboy-wasm",
        "bin/sandboy-spec-gen",
        "share/sandboy/adapters.toml",
        "share/sandboy/components/infersharp.wasm",
        "share/sandboy/policies/ownaudit-adapter.toml",
    ] {
        assert!(prefix.path().join(f).is_file(), "{f} not installed");
    }
    let elsewhere = TempDir::new("elsewhere");
    fs::copy(
        testdata("infersharp-report.json"),
        elsewhere.path().join("report.json"),
    )
    .unwrap();
    let state = TempDir::new("state");
    let o = capture(
        Command::new(prefix.path().join("bin/sandboy"))
            .arg("--root")
            .arg(state.path())
            .args([
                "adapt",
                "--tool",
                "infersharp",
                "--artifact",
                "report.json=report.json",
                "-o",
                "out.sarif",
            ])
            .current_dir(elsewhere.path())
            .env_clear()
            .env("PATH", "/usr/bin:/bin"),
    );
    assert_exit(&o, 0);
    let doc = read_json(&elsewhere.path().join("out.sarif"));
    check_log(
        &doc,
        "infersharp",
        4,
        &prefix
            .path()
            .join("share/sandboy/components/infersharp.wasm"),
    );
}

#[test]
fn bad_input_is_one_located_message_exit_2_and_leaves_nothing() {
    let t = "bad_input_is_one_located_message_exit_2_and_leaves_nothing";
    if !need_root(t) || !have_components(t) {
        return;
    }
    let rt = Runtime::sandboy();
    let dir = TempDir::new("bad");
    let out = dir.path().join("out.sarif");
    let o_flag = out.to_str().unwrap();
    let fixture = format!(
        "report.json={}",
        testdata("infersharp-report.json").display()
    );
    let big = dir.path().join("big.json");
    fs::write(&big, vec![b' '; 4096]).unwrap();
    let big_flag = format!("report.json={}", big.display());
    let policy = tight_policy(dir.path(), "1KiB");
    let bad_reg = dir.path().join("bad.toml");
    fs::write(&bad_reg, "[[adapter]]\ntool = \"x\"\ncomponent = \"x.wasm\"\ninputs = [\"k\"]\nartifact = \"a\"\noutput = \"sarif-2.0\"\n").unwrap();
    let cases: Vec<(Vec<&str>, String)> = vec![
        (
            vec!["--tool", "nosuch", "--artifact", &fixture],
            "unknown tool \"nosuch\"".into(),
        ),
        (
            vec!["--tool", "infersharp"],
            "missing artifact: give its input with --artifact report.json=PATH".into(),
        ),
        (
            vec![
                "--tool",
                "infersharp",
                "--artifact",
                "report.json=/nonexistent/r.json",
            ],
            "/nonexistent/r.json: cannot read: No such file".into(),
        ),
        (
            vec!["--tool", "infersharp", "--artifact", "report.json=/"],
            "report.json=/: not a regular file".into(),
        ),
        (
            vec![
                "--policy",
                policy.to_str().unwrap(),
                "--tool",
                "infersharp",
                "--artifact",
                &big_flag,
            ],
            "over max_input (1024 bytes)".into(),
        ),
        (
            vec![
                "--registry",
                bad_reg.to_str().unwrap(),
                "--tool",
                "x",
                "--artifact",
                &fixture,
            ],
            format!("{}:6:10: output \"sarif-2.0\"", bad_reg.display()),
        ),
    ];
    for (args, want) in cases {
        let mut a = args.clone();
        a.extend(["-o", o_flag]);
        let o = adapt(&rt, &a);
        assert_exit(&o, 2);
        let err = text(&o.stderr);
        assert!(err.contains(&want), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "one message: {err}");
        assert!(!out.exists());
        let names: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert_eq!(names.len(), 3, "nothing else in the output dir: {names:?}");
        assert_nothing_left(&rt);
    }
}

/// Found by trying this build: an input is opened without blocking (a FIFO
/// used to hang `adapt` past every deadline), and as root an input reached
/// through a symlink must be readable by others along its real path — the
/// container binds the target, skipping its parents' permission checks, so
/// a symlink a user planted in a directory root adapts handed over a file
/// from someone's private directory. Each refusal next to its allowed
/// counterpart: the same file through the symlink once others may reach
/// it, and root's own private file given by its own path.
#[test]
fn inputs_are_regular_files_and_symlinks_hand_over_nothing_private() {
    use std::os::unix::fs::PermissionsExt;
    let t = "inputs_are_regular_files_and_symlinks_hand_over_nothing_private";
    if !need_root(t) || !have_components(t) || !need_tool(t, "mkfifo") {
        return;
    }
    let rt = Runtime::sandboy();
    let dir = TempDir::new("inputs");
    let out = dir.path().join("out.sarif");
    let run = |input: &Path| {
        let flag = format!("report.json={}", input.display());
        adapt(
            &rt,
            &[
                "--tool",
                "infersharp",
                "--artifact",
                &flag,
                "-o",
                out.to_str().unwrap(),
            ],
        )
    };
    let fifo = dir.path().join("fifo.json");
    assert_exit(&capture(Command::new("mkfifo").arg(&fifo)), 0);
    let started = std::time::Instant::now();
    let o = run(&fifo);
    assert_exit(&o, 2);
    assert!(
        text(&o.stderr).contains("not a regular file"),
        "{}",
        text(&o.stderr)
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(10));

    let private = dir.path().join("private");
    fs::create_dir_all(&private).unwrap();
    let real = private.join("report.json");
    fs::copy(testdata("infersharp-report.json"), &real).unwrap();
    fs::set_permissions(&real, fs::Permissions::from_mode(0o644)).unwrap();
    fs::set_permissions(&private, fs::Permissions::from_mode(0o700)).unwrap();
    let reports = dir.path().join("reports");
    fs::create_dir_all(&reports).unwrap();
    let link = reports.join("report.json");
    std::os::unix::fs::symlink(&real, &link).unwrap();

    let o = run(&link);
    assert_exit(&o, 2);
    let err = text(&o.stderr);
    assert!(
        err.contains("user 65534") && err.contains("through its symlinks"),
        "{err}"
    );
    assert!(!out.exists(), "a log was written");
    assert_nothing_left(&rt);
    // Nor through a magic link: `/proc/self/cwd` of root's own process,
    // run in an open directory inside the private one, skipped the walk
    // over its parents.
    let inner = private.join("inner");
    fs::create_dir_all(&inner).unwrap();
    fs::set_permissions(&inner, fs::Permissions::from_mode(0o755)).unwrap();
    fs::copy(&real, inner.join("report.json")).unwrap();
    let magic = reports.join("magic.json");
    std::os::unix::fs::symlink("/proc/self/cwd/report.json", &magic).unwrap();
    let flag = format!("report.json={}", magic.display());
    let o = capture(
        rt.cmd()
            .args(["adapt", "--tool", "infersharp", "--artifact", &flag, "-o"])
            .arg(&out)
            .current_dir(&inner)
            .env("SANDBOY_REGISTRY", repo().join("components/adapters.toml"))
            .env("SANDBOY_COMPONENTS", components_dir()),
    );
    assert_exit(&o, 2);
    assert!(
        text(&o.stderr).contains("user 65534"),
        "{}",
        text(&o.stderr)
    );
    assert!(!out.exists(), "a log was written through /proc/self/cwd");
    assert_nothing_left(&rt);

    // Root's own file by its own path: read as before.
    assert_exit(&run(&real), 0);
    fs::remove_file(&out).unwrap();
    // Through the symlink once others may enter the directory.
    fs::set_permissions(&private, fs::Permissions::from_mode(0o755)).unwrap();
    assert_exit(&run(&link), 0);
    assert!(out.exists());
    assert_nothing_left(&rt);
}

/// An installed tree the user can run, and a work directory of theirs
/// holding the three fixtures.
fn user_workspace(user: &TestUser) -> (TempDir, PathBuf, PathBuf) {
    let inst = TempDir::new("adapt-user");
    let bin = mini_install(&inst, user);
    let work = inst.path().join("work");
    fs::create_dir(&work).unwrap();
    for (_, _, file, _) in FIXTURES {
        fs::copy(testdata(file), work.join(file)).unwrap();
    }
    user.chown(&work);
    (inst, bin, work)
}

/// `adapt` of one fixture as the user, to `TOOL.sarif` in `work`: exit 0,
/// the tool's results from its own component (and valid against `schema`).
fn adapt_as_user(
    user: &TestUser,
    bin: &Path,
    inst: &TempDir,
    work: &Path,
    (tool, artifact, file, n): (&str, &str, &str, usize),
    schema: Option<&Path>,
) {
    let out = work.join(format!("{tool}.sarif"));
    let o = capture(
        user.cmd(bin)
            .args([
                "adapt",
                "--tool",
                tool,
                "--artifact",
                &format!("{artifact}={file}"),
                "-o",
            ])
            .arg(&out)
            .current_dir(work)
            .env_remove("SANDBOY_REGISTRY")
            .env_remove("SANDBOY_COMPONENTS"),
    );
    assert_exit(&o, 0);
    if let Some(schema) = schema {
        assert_valid_sarif(schema, &out);
    }
    check_log(&read_json(&out), tool, n, &user_component(inst, tool));
}

/// The installed component of `tool`.
fn user_component(inst: &TempDir, tool: &str) -> PathBuf {
    let comp = if tool == "infersharp" {
        "infersharp.wasm"
    } else {
        "passthrough.wasm"
    };
    inst.path().join("share/sandboy/components").join(comp)
}

/// The user's compile cache is sealed with a key from their kernel
/// keyring. A red team's step, granted `write = ["~/.cache"]` (an
/// ordinary grant for build tools), rewrote the digest in one adapter's
/// compiled code to another's (the CRC covers only the payload) and put
/// it in the other's place: the next `adapt` ran the wrong code under the
/// right component's sha256. Now the planted entry is refused and the
/// real component compiled again: the right tool's results. Allowed
/// counterpart: the warm start before the plant.
#[test]
fn a_planted_compile_cache_entry_never_runs() {
    let t = "a_planted_compile_cache_entry_never_runs";
    if !have_components(t) {
        return;
    }
    let Some(user) = TestUser::create(t) else {
        return;
    };
    let (inst, bin, work) = user_workspace(&user);
    let (infersharp, codeql) = (FIXTURES[0], FIXTURES[2]);
    for fixture in [infersharp, codeql, infersharp] {
        adapt_as_user(&user, &bin, &inst, &work, fixture, None);
    }
    let cache = PathBuf::from(format!("/home/{}/.cache/sandboy/wasm", user.name));
    let entry = |tool: &str| {
        let sha = sha256_of(&user_component(&inst, tool));
        fs::read_dir(&cache)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .find(|p| p.file_name().unwrap().to_string_lossy().starts_with(&sha))
            .unwrap_or_else(|| panic!("no cache entry for {tool} in {}", cache.display()))
    };
    let target = entry("infersharp");
    let digest = sha256_of(&user_component(&inst, "infersharp"));
    let digest: Vec<u8> = (0..digest.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&digest[i..i + 2], 16).unwrap())
        .collect();
    let mut planted = fs::read(entry("codeql")).unwrap();
    planted[8..40].copy_from_slice(&digest);
    fs::write(&target, &planted).unwrap();
    user.chown(&target);
    // The planted code does not run: infersharp's own results.
    adapt_as_user(&user, &bin, &inst, &work, infersharp, None);
}

/// A user running more tasks than the adapter policy's `pids` (32) still
/// adapts: the host's bound is "threads only", not `RLIMIT_NPROC`, which on
/// the host counts every task of the user (the wasm host then could not
/// start its deadline thread: EAGAIN).
fn busy_user_still_adapts(user: &TestUser, bin: &Path, work: &Path) {
    let busy = user.busy(40);
    let o = capture(
        user.cmd(bin)
            .args([
                "adapt",
                "--tool",
                "infersharp",
                "--artifact",
                "report.json=infersharp-report.json",
            ])
            .current_dir(work),
    );
    drop(busy);
    assert_exit(&o, 0);
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("\"version\":\"2.1.0\""),
        "SARIF on stdout"
    );
}

/// The confined host runs only an adapter, whatever the path holds when it
/// opens it: a red team swapped a WASI program in after `adapt` had
/// checked the component, and the host ran it as a command. Handed a WASI
/// program directly it refuses (exit 2, named); the adapter at the same
/// call runs.
#[test]
fn the_hosts_adapt_runs_only_an_adapter() {
    let t = "the_hosts_adapt_runs_only_an_adapter";
    if !have_components(t) {
        return;
    }
    let fixture = testdata("codeql.sarif");
    let host = |component: &str| {
        capture(
            Command::new(wasm_host_bin())
                .args(["adapt", "--limits", "{}", "--"])
                .arg(components_dir().join(component))
                .args(["--tool", "codeql", "--artifact"])
                .arg(format!("report.sarif={}", fixture.display())),
        )
    };
    let o = host("wasi-hello.wasm");
    assert_exit_stderr(&o, 2, "not an ownaudit:adapter component");
    assert!(o.stdout.is_empty(), "nothing of the program ran");
    let o = host("passthrough.wasm");
    assert_exit(&o, 0);
    assert!(String::from_utf8_lossy(&o.stdout).contains("\"version\":\"2.1.0\""));
}
