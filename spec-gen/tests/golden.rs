//! Every example policy renders to its checked-in golden config.json, the
//! config deserializes as an `oci_spec` Spec, passes sandboy's structural
//! checks, and (where the schema is installed) validates against the OCI
//! runtime-spec JSON Schema. `UPDATE_GOLDEN=1` rewrites the goldens.

use std::path::{Path, PathBuf};
use std::process::Command;

use oci_spec::runtime::{LinuxNamespaceType, LinuxSeccompAction, Spec};
use sandboy_spec_gen::annotations::{self, LandlockRuleset, WasmLimits};
use sandboy_spec_gen::policy::{DEFAULT_DENY, NEVER_DENY};
use sandboy_spec_gen::{render, Policy, RenderOptions};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .canonicalize()
        .unwrap()
}

fn policies() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(repo_root().join("policies"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    v.sort();
    v
}

/// Rendered config with the checkout's absolute path replaced by `$REPO`,
/// so goldens do not depend on where the repository lives.
fn rendered(policy: &Path) -> (Policy, String) {
    let p = Policy::load(policy).unwrap_or_else(|e| panic!("{}: {e}", policy.display()));
    let json = render::generate(&p, &RenderOptions::default()).unwrap();
    let root = repo_root().display().to_string();
    (p, json.replace(&root, "$REPO"))
}

#[test]
fn example_policies_match_goldens() {
    let update = std::env::var_os("UPDATE_GOLDEN").is_some_and(|v| v == "1");
    let list = policies();
    assert!(
        list.len() >= 4,
        "expected the four example policies, found {list:?}"
    );
    let mut failures = Vec::new();
    for policy in &list {
        let name = policy.file_stem().unwrap().to_string_lossy().to_string();
        let golden =
            Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/golden/{name}.config.json"));
        let (_, json) = rendered(policy);
        if update {
            std::fs::write(&golden, &json).unwrap();
            continue;
        }
        let want = std::fs::read_to_string(&golden)
            .unwrap_or_else(|e| panic!("{}: {e} (run with UPDATE_GOLDEN=1)", golden.display()));
        if want != json {
            failures.push(name);
        }
    }
    assert!(
        failures.is_empty(),
        "configs differ from goldens: {failures:?}; inspect and rerun with UPDATE_GOLDEN=1"
    );
}

#[test]
fn generation_is_deterministic() {
    for policy in policies() {
        let (_, a) = rendered(&policy);
        let (_, b) = rendered(&policy);
        assert_eq!(a, b, "{}", policy.display());
    }
}

#[test]
fn generated_configs_are_sound() {
    for path in policies() {
        let (policy, _) = rendered(&path);
        let json = render::generate(&policy, &RenderOptions::default()).unwrap();
        let spec: Spec =
            serde_json::from_str(&json).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let what = path.display().to_string();

        let process = spec.process().as_ref().unwrap();
        assert_eq!(process.no_new_privileges(), Some(true), "{what}");
        assert_eq!(process.args().as_ref().unwrap(), &policy.args, "{what}");
        assert!(
            process
                .env()
                .as_ref()
                .unwrap()
                .iter()
                .any(|e| e.starts_with("PATH=")),
            "{what}"
        );
        let root = spec.root().as_ref().unwrap();
        assert_eq!(root.readonly(), Some(true), "{what}");
        assert_eq!(root.path(), Path::new("rootfs"), "{what}");

        let linux = spec.linux().as_ref().unwrap();
        assert!(
            linux.cgroups_path().is_none(),
            "{what}: cgroupsPath is the runtime's to choose"
        );
        let ns: Vec<LinuxNamespaceType> = linux
            .namespaces()
            .as_ref()
            .unwrap()
            .iter()
            .map(|n| n.typ())
            .collect();
        // Container root is not host root: ids 0-65535 are an unused host
        // range (issue 14); gate-step's checkout is a writable host bind,
        // whose host-owned files a mapped root could not write.
        let host_ids = path.ends_with("gate-step.toml");
        assert_eq!(ns.contains(&LinuxNamespaceType::User), !host_ids, "{what}");
        let mapped = linux.uid_mappings().as_deref().unwrap_or_default();
        let want: &[(u32, u32, u32)] = if host_ids {
            &[]
        } else {
            &[(
                0,
                sandboy_spec_gen::userns::HOST_BASE,
                sandboy_spec_gen::userns::SIZE,
            )]
        };
        let got: Vec<(u32, u32, u32)> = mapped
            .iter()
            .map(|m| (m.container_id(), m.host_id(), m.size()))
            .collect();
        assert_eq!(got, want, "{what}");
        assert_eq!(linux.gid_mappings(), linux.uid_mappings(), "{what}");
        for t in [
            LinuxNamespaceType::Pid,
            LinuxNamespaceType::Mount,
            LinuxNamespaceType::Ipc,
            LinuxNamespaceType::Uts,
        ] {
            assert!(ns.contains(&t), "{what}: {t:?}");
        }
        let masked = linux.masked_paths().as_ref().unwrap();
        for h in &policy.hide {
            assert!(masked.contains(h), "{what}: {h}");
        }

        let seccomp = linux.seccomp().as_ref().unwrap();
        assert_eq!(seccomp.default_action(), LinuxSeccompAction::ScmpActAllow);
        let rules = seccomp.syscalls().as_ref().unwrap();
        // The deny list's names, then the guards' argument rules (issue 14).
        assert!(rules[0].args().is_none(), "{what}");
        assert!(rules.len() > 1, "{what}: no guard rules");
        for name in rules.iter().flat_map(|r| r.names()) {
            assert!(
                !NEVER_DENY.contains(&name.as_str()),
                "{what}: denies {name}"
            );
        }
        for d in DEFAULT_DENY {
            assert!(
                rules[0].names().iter().any(|n| n == d),
                "{what}: default {d} missing"
            );
        }

        let ann = spec.annotations().as_ref().unwrap();
        let ruleset = LandlockRuleset::decode(&ann[annotations::LANDLOCK]).unwrap();
        assert_eq!(ruleset, render::ruleset(&policy), "{what}");
        for rule in &ruleset.fs {
            annotations::rule_bits(&rule.access).unwrap();
        }
        assert_eq!(ann[annotations::POLICY_SHA256].len(), 64);
        assert_eq!(ann[annotations::POLICY_SHA256], policy.sha256);
        if let Some(w) = &policy.wasm {
            assert_eq!(
                &WasmLimits::decode(&ann[annotations::WASM_LIMITS]).unwrap(),
                w
            );
        }
        assert_eq!(
            ann.get(annotations::OCI_HANDLER).is_some(),
            policy.is_wasm(),
            "{what}"
        );

        // Every write path is writable storage: a writable mount covers it.
        let mounts = spec.mounts().as_ref().unwrap();
        for w in &policy.write {
            let m = mounts
                .iter()
                .filter(|m| {
                    sandboy_spec_gen::policy::is_under(w, &m.destination().to_string_lossy())
                })
                .max_by_key(|m| m.destination().as_os_str().len())
                .unwrap_or_else(|| panic!("{what}: no mount for write path {w}"));
            let ro = m
                .options()
                .as_ref()
                .is_some_and(|o| o.iter().any(|x| x == "ro"));
            assert!(
                !ro,
                "{what}: write path {w} is under read-only {}",
                m.destination().display()
            );
        }
        for m in mounts.iter().filter(|m| m.typ().as_deref() == Some("bind")) {
            assert!(m.source().as_ref().unwrap().is_absolute(), "{what}");
        }
        // A bind's restrictions hold for the host mounts below its source
        // too (libcontainer applies the plain flags to the top mount only).
        for m in mounts.iter() {
            let opts = m.options().clone().unwrap_or_default();
            if !opts.iter().any(|o| o == "rbind") {
                continue;
            }
            for (top, rec) in [
                ("ro", "rro"),
                ("nosuid", "rnosuid"),
                ("nodev", "rnodev"),
                ("noexec", "rnoexec"),
            ] {
                assert_eq!(
                    opts.iter().any(|o| o == top),
                    opts.iter().any(|o| o == rec),
                    "{what}: {} has {opts:?}",
                    m.destination().display()
                );
            }
        }
    }
}

/// The `linux.seccomp.syscalls` rules of a rendered spec.
fn seccomp_rules(spec: &oci_spec::runtime::Spec) -> Vec<oci_spec::runtime::LinuxSyscall> {
    let seccomp = spec.linux().as_ref().unwrap().seccomp().as_ref().unwrap();
    seccomp.syscalls().clone().unwrap()
}

#[test]
fn specific_expectations() {
    let root = repo_root();
    let (adapter, _) = rendered(&root.join("policies/ownaudit-adapter.toml"));
    let spec = render::render(&adapter, &RenderOptions::default()).unwrap();
    let ann = spec.annotations().as_ref().unwrap();
    assert_eq!(ann[annotations::OCI_HANDLER], "wasm");
    assert_eq!(ann[annotations::WASM_VARIANT], "compat-smart");
    assert_eq!(ann[annotations::TIMEOUT], "60s");
    let rules = seccomp_rules(&spec);
    assert_eq!(rules[0].action(), LinuxSeccompAction::ScmpActKillProcess);

    let (agent, _) = rendered(&root.join("policies/agent-tool.toml"));
    let spec = render::render(&agent, &RenderOptions::default()).unwrap();
    let ns = spec.linux().as_ref().unwrap().namespaces().clone().unwrap();
    assert!(
        !ns.iter().any(|n| n.typ() == LinuxNamespaceType::Network),
        "host network"
    );
    let ruleset = render::ruleset(&agent);
    assert_eq!(ruleset.net.unwrap().connect, vec![8443]);

    let (gate, _) = rendered(&root.join("policies/gate-step.toml"));
    let spec = render::render(&gate, &RenderOptions::default()).unwrap();
    let rules = seccomp_rules(&spec);
    assert_eq!(rules[0].action(), LinuxSeccompAction::ScmpActErrno);
    assert_eq!(rules[0].errno_ret(), Some(1));
    assert!(rules[0].names().iter().any(|n| n == "personality"));
    let res = spec.linux().as_ref().unwrap().resources().clone().unwrap();
    assert_eq!(res.memory().unwrap().limit(), Some(512 << 20));
    assert_eq!(res.cpu().clone().unwrap().quota(), Some(150_000));
    assert_eq!(res.pids().unwrap().limit(), 256);
}

#[test]
fn base_config_is_merged() {
    let root = repo_root();
    let gate = Policy::load(&root.join("policies/gate-step.toml")).unwrap();
    let mut base = Spec::default();
    let mut ann = std::collections::HashMap::new();
    ann.insert("org.example.keep".to_string(), "yes".to_string());
    base.set_annotations(Some(ann));
    base.set_hostname(Some("from-base".into()));
    let spec = render::render(
        &gate,
        &RenderOptions {
            rootfs: Some("/srv/rootfs".into()),
            base: Some(base),
        },
    )
    .unwrap();
    let ann = spec.annotations().as_ref().unwrap();
    assert_eq!(ann["org.example.keep"], "yes");
    assert!(ann.contains_key(annotations::LANDLOCK));
    assert_eq!(spec.hostname().as_deref(), Some("from-base"));
    assert_eq!(
        spec.root().as_ref().unwrap().path(),
        Path::new("/srv/rootfs")
    );
    let env = spec.process().as_ref().unwrap().env().clone().unwrap();
    assert_eq!(env.iter().filter(|e| e.starts_with("PATH=")).count(), 1);
    assert!(env.contains(&"CI=true".to_string()));
    let dests: Vec<String> = spec
        .mounts()
        .as_ref()
        .unwrap()
        .iter()
        .map(|m| m.destination().display().to_string())
        .collect();
    assert_eq!(dests.iter().filter(|d| *d == "/proc").count(), 1);
    assert!(dests.contains(&"/work".to_string()));
}

/// Validate against the runtime-spec schema shipped by Debian's
/// golang-github-opencontainers-specs-dev, with python3-jsonschema. Both
/// are optional: without them this test says so and checks nothing more
/// (the typed and structural checks above still run).
#[test]
fn configs_validate_against_oci_schema() {
    let schema_dir =
        Path::new("/usr/share/gocode/src/github.com/opencontainers/runtime-spec/schema");
    let schema = schema_dir.join("config-schema.json");
    if !schema.exists() {
        sandboy_tests::skip(
            "OCI schema validation",
            &format!(
                "{} not installed (apt-get install golang-github-opencontainers-specs-dev)",
                schema.display()
            ),
        );
        return;
    }
    let script = r#"
import json, pathlib, sys
try:
    import jsonschema
except ImportError:
    print("NO_JSONSCHEMA"); sys.exit(0)
schema_path = pathlib.Path(sys.argv[1])
schema = json.loads(schema_path.read_text())
resolver = jsonschema.RefResolver(base_uri=schema_path.as_uri(), referrer=schema)
bad = 0
for f in sys.argv[2:]:
    errors = list(jsonschema.Draft4Validator(schema, resolver=resolver).iter_errors(json.loads(pathlib.Path(f).read_text())))
    for e in errors:
        bad += 1
        print(f"{f}: {list(e.absolute_path)}: {e.message}")
sys.exit(1 if bad else 0)
"#;
    let dir = std::env::temp_dir().join(format!("sandboy-spec-gen-schema-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut files = Vec::new();
    for policy in policies() {
        let p = Policy::load(&policy).unwrap();
        let out = dir.join(format!(
            "{}.json",
            policy.file_stem().unwrap().to_string_lossy()
        ));
        std::fs::write(
            &out,
            render::generate(&p, &RenderOptions::default()).unwrap(),
        )
        .unwrap();
        files.push(out);
    }
    // Debian's interpreter, which python3-jsonschema installs into (a
    // python3 earlier on PATH, e.g. pyenv's, would not see it).
    let python = if Path::new("/usr/bin/python3").exists() {
        "/usr/bin/python3"
    } else {
        "python3"
    };
    let output = match Command::new(python)
        .arg("-W")
        .arg("ignore")
        .arg("-c")
        .arg(script)
        .arg(&schema)
        .args(&files)
        .output()
    {
        Ok(o) => o,
        Err(e) => {
            sandboy_tests::skip(
                "OCI schema validation",
                &format!("python3 not runnable: {e}"),
            );
            return;
        }
    };
    let _ = std::fs::remove_dir_all(&dir);
    let stdout = String::from_utf8_lossy(&output.stdout);
    if stdout.contains("NO_JSONSCHEMA") {
        sandboy_tests::skip("OCI schema validation", "python3-jsonschema not installed");
        return;
    }
    assert!(
        output.status.success(),
        "schema violations:\n{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
}
