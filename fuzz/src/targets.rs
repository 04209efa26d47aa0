//! The fuzz targets: each takes raw bytes and returns whether the input was
//! accepted (accepted inputs become parents of further mutants). Rejection
//! is fine; a panic or a stall is a finding.

use std::collections::HashMap;
use std::path::Path;

use arbitrary::{Arbitrary, Unstructured};
use oci_spec::runtime::{LinuxSeccomp, LinuxSeccompOperator as Op, Spec};
use sandboy_spec_gen::annotations::{LandlockRuleset, WasmLimits};
use sandboy_spec_gen::syscalls::Arch;
use sandboy_spec_gen::{Policy, RenderOptions};
use sandboy_wasm::adapter::{check_sarif, AdapterArgs, Provenance};

/// One target.
pub struct Target {
    pub name: &'static str,
    /// Extension of the seed files taken from `extra_seeds`.
    pub extension: &'static str,
    /// Repository folders whose files seed this target besides its corpus.
    pub extra_seeds: &'static [&'static str],
    /// Tokens of the format, inserted by the mutator.
    pub dictionary: &'static [&'static str],
    pub run: fn(&[u8]) -> bool,
}

const TOML_DICT: &[&str] = &[
    "version = 1\n",
    "[fs]\n",
    "[net]\n",
    "[syscalls]\n",
    "[process]\n",
    "[limits]\n",
    "[wasm]\n",
    "[landlock]\n",
    "[context]\n",
    "[[mount]]\n",
    "read = [",
    "write = [",
    "exec = [",
    "hide = [",
    "connect = [",
    "bind = [",
    "deny = [",
    "allow = [",
    "args = [",
    "\"/\"",
    "\"..\"",
    "\"./x\"",
    "\"~/\"",
    "\"*.com:443\"",
    "\"a.b:0\"",
    "\"512\"",
    "\"512MiB\"",
    "\"10s\"",
    "\"1e9GiB\"",
    "]\n",
    "= ",
    "\"",
    "'''",
    "{",
    "}",
    ",",
    "\n",
    "#",
    "mode = \"enforce\"\n",
    "namespace = \"host\"\n",
    "action = \"kill\"\n",
    "memory = ",
    "timeout = ",
    "udp = [53]\n",
    "allow_cidr = [\"10.0.0.0/33:1\"]\n",
];

const JSON_DICT: &[&str] = &[
    "{",
    "}",
    "[",
    "]",
    ",",
    ":",
    "\"",
    "null",
    "true",
    "false",
    "\"runs\"",
    "\"results\"",
    "\"version\"",
    "\"2.1.0\"",
    "\"tool\"",
    "\"driver\"",
    "\"rules\"",
    "\"mode\"",
    "\"fs\"",
    "\"path\"",
    "\"access\"",
    "\"net\"",
    "\"connect\"",
    "\"scope\"",
    "\"names\"",
    "\"action\"",
    "\"SCMP_ACT_ERRNO\"",
    "\"SCMP_ACT_KILL\"",
    "\"SCMP_ACT_NOTIFY\"",
    "\"args\"",
    "\"index\"",
    "\"op\"",
    "\"SCMP_CMP_MASKED_EQ\"",
    "\"value\"",
    "\"valueTwo\"",
    "\"defaultAction\"",
    "\"architectures\"",
    "\"annotations\"",
    "\"linux\"",
    "\"seccomp\"",
    "\"process\"",
];

/// Every target, in the order `make fuzz` runs them.
pub const ALL: &[Target] = &[
    Target {
        name: "policy",
        extension: "toml",
        extra_seeds: &["policies", "spec-gen/tests/bad"],
        dictionary: TOML_DICT,
        run: policy,
    },
    Target {
        name: "annotations",
        extension: "json",
        extra_seeds: &[],
        dictionary: JSON_DICT,
        run: annotations,
    },
    Target {
        name: "config",
        extension: "json",
        extra_seeds: &["spec-gen/tests/golden"],
        dictionary: JSON_DICT,
        run: config,
    },
    Target {
        name: "seccomp",
        extension: "json",
        extra_seeds: &[],
        dictionary: JSON_DICT,
        run: seccomp_json,
    },
    Target {
        name: "seccomp-arbitrary",
        extension: "bin",
        extra_seeds: &[],
        dictionary: &[],
        run: seccomp_arbitrary,
    },
    Target {
        name: "sarif",
        extension: "sarif",
        extra_seeds: &["components/testdata"],
        dictionary: JSON_DICT,
        run: sarif,
    },
    Target {
        name: "adapter-args",
        extension: "args",
        extra_seeds: &[],
        dictionary: &[
            "--tool\n",
            "--artifact\n",
            "--stdout\n",
            "--stderr\n",
            "--options\n",
            "=",
            "a=b\n",
            "report.json=/in/r.json\n",
            "--tool=\n",
            "\n",
        ],
        run: adapter_args,
    },
];

/// The target called `name`.
pub fn by_name(name: &str) -> Option<&'static Target> {
    ALL.iter().find(|t| t.name == name)
}

/// A policy: parsed and validated; when valid, rendered, serialized and
/// explained too (each must cope with whatever validation let through).
fn policy(input: &[u8]) -> bool {
    let Ok(text) = std::str::from_utf8(input) else {
        return false;
    };
    match Policy::parse(text, "fuzz.toml", Path::new("/nonexistent-fuzz-dir")) {
        Ok(p) => {
            let _ = sandboy_spec_gen::explain::explain(&p);
            let _ = sandboy_spec_gen::generate(&p, &RenderOptions::default());
            true
        }
        Err(e) => {
            let _ = e.to_string();
            false
        }
    }
}

/// sandboy's annotation values, as a runtime reads them from any spec.
fn annotations(input: &[u8]) -> bool {
    let Ok(text) = std::str::from_utf8(input) else {
        return false;
    };
    let landlock = LandlockRuleset::decode(text).map(|rs| {
        // What create checks before anything exists.
        let _ = sandboy_confine::landlock::rule_bits(&rs);
        rs.encode()
    });
    let wasm = WasmLimits::decode(text).map(|w| {
        let _ = sandboy_wasm::Limits::from_wasm_limits(&w);
        w.encode()
    });
    let _ = sandboy_spec_gen::units::Span::parse(text);
    let _ = sandboy_spec_gen::units::ByteSize::parse(text);
    landlock.is_ok() || wasm.is_ok()
}

/// A config.json: parsed as the runtime parses it, its sandboy annotations
/// decoded and its seccomp profile compiled.
fn config(input: &[u8]) -> bool {
    let Ok(spec) = serde_json::from_slice::<Spec>(input) else {
        return false;
    };
    let annotations: HashMap<String, String> = spec.annotations().clone().unwrap_or_default();
    let _ = sandboy_wasm::Limits::from_annotations(&annotations);
    let args0 = spec
        .process()
        .as_ref()
        .and_then(|p| p.args().as_ref())
        .and_then(|a| a.first().cloned())
        .unwrap_or_default();
    let _ = sandboy_wasm::wasm_selected(&annotations, &args0);
    if let Some(v) = annotations.get(sandboy_spec_gen::annotations::LANDLOCK) {
        annotations_value(v);
    }
    if let Some(s) = spec.linux().as_ref().and_then(|l| l.seccomp().as_ref()) {
        compile_both(s);
    }
    true
}

fn annotations_value(v: &str) {
    let _ = annotations(v.as_bytes());
}

fn compile_both(s: &LinuxSeccomp) -> bool {
    let a = sandboy_confine::seccomp::compile_for(s, Arch::X86_64);
    let b = sandboy_confine::seccomp::compile_for(s, Arch::Aarch64);
    if let Ok(c) = &a {
        // A compiled program survives its cache encoding unchanged.
        let back = sandboy_confine::CompiledSeccomp::from_bytes(&c.to_bytes())
            .expect("a program sandboy compiled decodes from its own bytes");
        assert_eq!(back.to_bytes(), c.to_bytes(), "cache encoding round trip");
    }
    a.is_ok() || b.is_ok()
}

/// An OCI seccomp profile as JSON text.
fn seccomp_json(input: &[u8]) -> bool {
    serde_json::from_slice::<LinuxSeccomp>(input).is_ok_and(|s| compile_both(&s))
}

/// Structured profiles from raw bytes: every action, operator and argument
/// value reachable without the JSON syntax in the way.
#[derive(Debug, Arbitrary)]
struct ArbProfile {
    default: u8,
    errno: Option<u16>,
    rules: Vec<ArbRule>,
}

#[derive(Debug, Arbitrary)]
struct ArbRule {
    names: Vec<u16>,
    action: u8,
    errno: Option<u16>,
    args: Vec<(u8, u8, u64, u64)>,
}

const ACTIONS: &[&str] = &[
    "SCMP_ACT_ALLOW",
    "SCMP_ACT_ERRNO",
    "SCMP_ACT_KILL",
    "SCMP_ACT_KILL_PROCESS",
    "SCMP_ACT_KILL_THREAD",
    "SCMP_ACT_TRAP",
    "SCMP_ACT_TRACE",
    "SCMP_ACT_LOG",
];
/// Every argument operator, typed (serialized as its OCI name), so the list
/// cannot drift from the names the profile parser accepts.
const OPS: [Op; 7] = [
    Op::ScmpCmpNe,
    Op::ScmpCmpLt,
    Op::ScmpCmpLe,
    Op::ScmpCmpEq,
    Op::ScmpCmpGe,
    Op::ScmpCmpGt,
    Op::ScmpCmpMaskedEq,
];

fn seccomp_arbitrary(input: &[u8]) -> bool {
    let Ok(p) = ArbProfile::arbitrary(&mut Unstructured::new(input)) else {
        return false;
    };
    let names: Vec<&str> = sandboy_spec_gen::syscalls::names(Arch::X86_64).collect();
    let pick = |i: u16| names[i as usize % names.len()];
    let rules: Vec<serde_json::Value> = p
        .rules
        .iter()
        .take(64)
        .map(|r| {
            serde_json::json!({
                "names": r.names.iter().take(16).map(|&n| pick(n)).collect::<Vec<_>>(),
                "action": ACTIONS[r.action as usize % ACTIONS.len()],
                "errnoRet": r.errno,
                "args": r.args.iter().take(6).map(|&(i, op, v, v2)| serde_json::json!({
                    "index": i % 7, "op": OPS[op as usize % OPS.len()], "value": v, "valueTwo": v2,
                })).collect::<Vec<_>>(),
            })
        })
        .collect();
    let json = serde_json::json!({
        "defaultAction": ACTIONS[p.default as usize % ACTIONS.len()],
        "defaultErrnoRet": p.errno,
        "syscalls": rules,
    });
    serde_json::from_value::<LinuxSeccomp>(json).is_ok_and(|s| compile_both(&s))
}

/// Untrusted adapter output, checked and re-emitted.
fn sarif(input: &[u8]) -> bool {
    let limits = sandboy_wasm::Limits {
        max_output: 1 << 20,
        max_results: 100,
        ..Default::default()
    };
    let prov = Provenance {
        component_sha256: "0".repeat(64),
        tool: "fuzz".into(),
        runtime_version: "0".into(),
    };
    check_sarif(input, &limits, &prov).is_ok()
}

/// The adapter command line, one argument per line.
fn adapter_args(input: &[u8]) -> bool {
    let Ok(text) = std::str::from_utf8(input) else {
        return false;
    };
    let args: Vec<String> = text.split('\n').map(String::from).collect();
    AdapterArgs::parse(&args).is_ok()
}
