//! The `ownaudit:adapter` host (SPEC §6): refuses components with imports,
//! parses the adapter command line, reads inputs under `max_input`, calls
//! `to-sarif`, and treats what comes back as untrusted: size-capped, parsed
//! as SARIF 2.1.x, results counted (refused, never truncated), canonicalised
//! and stamped with provenance before it is written out.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::{json, Map, Value};
use wasmtime::component::{Component, Linker};
use wasmtime::{Engine, Store};

use crate::error::WasmError;
use crate::guard::{arm_store, classify};
use crate::limits::{Limits, MemoryLimiter};

use crate::sarif_check;

mod bindings {
    wasmtime::component::bindgen!({ path: "../../wit/adapter.wit", world: "adapter" });
}

use bindings::exports::ownaudit::adapter::types::{NamedBlob, RawInput};

/// The schema URI written into every document sandboy emits.
pub use sandboy_wasm_contract::SARIF_SCHEMA;

/// The adapter command line: `--tool T --artifact NAME=PATH… [--stdout F]
/// [--stderr F] [--options F]` (after `args[0]`, the component path).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AdapterArgs {
    pub tool: String,
    pub artifacts: Vec<(String, PathBuf)>,
    pub stdout: Option<PathBuf>,
    pub stderr: Option<PathBuf>,
    pub options: Option<PathBuf>,
}

impl AdapterArgs {
    /// Parses the flags (`--flag VALUE` or `--flag=VALUE`). Anything unknown,
    /// missing or repeated is a [`WasmError::Usage`] (exit 2).
    pub fn parse(args: &[String]) -> Result<AdapterArgs, WasmError> {
        let usage = |m: String| WasmError::Usage(m);
        let mut out = AdapterArgs::default();
        let mut tool = None;
        let mut it = args.iter();
        while let Some(arg) = it.next() {
            let (flag, inline) = match arg.split_once('=') {
                Some((f, v)) if f.starts_with("--") => (f, Some(v.to_string())),
                _ => (arg.as_str(), None),
            };
            if !matches!(
                flag,
                "--tool" | "--artifact" | "--stdout" | "--stderr" | "--options"
            ) {
                return Err(usage(format!("unknown argument {arg:?}")));
            }
            let value = match inline {
                Some(v) => v,
                None => it
                    .next()
                    .cloned()
                    .ok_or_else(|| usage(format!("{flag} needs a value")))?,
            };
            if value.is_empty() {
                return Err(usage(format!("{flag} needs a non-empty value")));
            }
            let once = |slot: &mut Option<PathBuf>, v: String| {
                if slot.replace(PathBuf::from(v)).is_some() {
                    Err(usage(format!("{flag} given twice")))
                } else {
                    Ok(())
                }
            };
            match flag {
                "--tool" => {
                    if tool.replace(value).is_some() {
                        return Err(usage("--tool given twice".into()));
                    }
                }
                "--artifact" => {
                    let (name, path) = value
                        .split_once('=')
                        .filter(|(n, p)| !n.is_empty() && !p.is_empty())
                        .ok_or_else(|| usage(format!("--artifact {value:?}: write NAME=PATH")))?;
                    if out.artifacts.iter().any(|(n, _)| n == name) {
                        return Err(usage(format!("--artifact {name:?} given twice")));
                    }
                    out.artifacts.push((name.to_string(), PathBuf::from(path)));
                }
                "--stdout" => once(&mut out.stdout, value)?,
                "--stderr" => once(&mut out.stderr, value)?,
                _ => once(&mut out.options, value)?,
            }
        }
        out.tool = tool.ok_or_else(|| usage("--tool is required".into()))?;
        Ok(out)
    }
}

/// Reads at most `budget` bytes of `path`; more is an error. Never allocates
/// past `budget + 1` bytes whatever the file claims; anything but a regular
/// file (a FIFO, a device) is refused unopened for reading.
pub fn read_capped(name: &str, path: &Path, budget: u64) -> Result<Vec<u8>, WasmError> {
    let read_err = |source| WasmError::Read {
        path: path.to_path_buf(),
        source,
    };
    let f = crate::open_regular(path)?;
    let mut buf = Vec::new();
    f.take(budget.saturating_add(1))
        .read_to_end(&mut buf)
        .map_err(read_err)?;
    if buf.len() as u64 > budget {
        return Err(WasmError::InputTooLarge {
            name: name.to_string(),
            max: budget,
        });
    }
    Ok(buf)
}

/// Reads every input; `max_input` caps their total.
fn read_inputs(a: &AdapterArgs, cwd: &Path, max_input: u64) -> Result<RawInput, WasmError> {
    let mut left = max_input;
    let mut take = |name: &str, p: &Path| -> Result<Vec<u8>, WasmError> {
        let bytes = read_capped(name, &cwd.join(p), left)?;
        left -= bytes.len() as u64;
        Ok(bytes)
    };
    let mut artifacts = Vec::with_capacity(a.artifacts.len());
    for (name, path) in &a.artifacts {
        artifacts.push(NamedBlob {
            name: name.clone(),
            bytes: take(name, path)?,
        });
    }
    let stdout = a
        .stdout
        .as_deref()
        .map(|p| take("--stdout", p))
        .transpose()?
        .unwrap_or_default();
    let stderr = a
        .stderr
        .as_deref()
        .map(|p| take("--stderr", p))
        .transpose()?
        .unwrap_or_default();
    let options = a
        .options
        .as_deref()
        .map(|p| take("--options", p))
        .transpose()?;
    Ok(RawInput {
        tool: a.tool.clone(),
        artifacts,
        stdout,
        stderr,
        options,
    })
}

/// Where a SARIF document came from, stamped into `runs[].properties.sandboy`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Provenance {
    pub component_sha256: String,
    pub tool: String,
    pub runtime_version: String,
}

/// Checks untrusted adapter output and returns the canonical document:
/// at most `max_output` bytes, SARIF 2.1.x with a `runs` array, at most
/// `max_results` results in all; `version` becomes "2.1.0", `$schema` the
/// 2.1.0 schema, and each run gets `properties.sandboy` = provenance.
pub fn check_sarif(bytes: &[u8], limits: &Limits, prov: &Provenance) -> Result<Value, WasmError> {
    if bytes.len() as u64 > limits.max_output {
        return Err(WasmError::OutputTooLarge {
            size: bytes.len() as u64,
            max: limits.max_output,
        });
    }
    let bad = |m: &str| WasmError::NotSarif(m.to_string());
    let mut doc: Value =
        serde_json::from_slice(bytes).map_err(|e| WasmError::NotSarif(format!("not JSON: {e}")))?;
    let obj = doc
        .as_object_mut()
        .ok_or_else(|| bad("the top level is not an object"))?;
    match obj.get("version").and_then(Value::as_str) {
        Some(v) if v.starts_with("2.1.") => {}
        Some(v) => return Err(WasmError::NotSarif(format!("version {v:?} is not 2.1.x"))),
        None => return Err(bad("\"version\" is missing")),
    }
    // Results outside `runs` count too: `inlineExternalProperties` carry
    // them as well (a red team's 20,000 there passed a cap of 10,000).
    let mut count: u64 = 0;
    for (i, ext) in obj
        .get("inlineExternalProperties")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        match ext.get("results") {
            None | Some(Value::Null) => {}
            Some(Value::Array(r)) => count += r.len() as u64,
            Some(_) => {
                return Err(WasmError::NotSarif(format!(
                    "inlineExternalProperties[{i}].results is not an array"
                )))
            }
        }
    }
    let runs = obj
        .get_mut("runs")
        .and_then(Value::as_array_mut)
        .ok_or_else(|| bad("\"runs\" (an array) is missing"))?;
    for (i, run) in runs.iter().enumerate() {
        let run = run
            .as_object()
            .ok_or_else(|| WasmError::NotSarif(format!("runs[{i}] is not an object")))?;
        match run.get("results") {
            None | Some(Value::Null) => {}
            Some(Value::Array(r)) => count += r.len() as u64,
            Some(_) => {
                return Err(WasmError::NotSarif(format!(
                    "runs[{i}].results is not an array"
                )))
            }
        }
        if run.get("properties").is_some_and(|p| !p.is_object()) {
            return Err(WasmError::NotSarif(format!(
                "runs[{i}].properties is not an object"
            )));
        }
    }
    if count > limits.max_results {
        return Err(WasmError::TooManyResults {
            count,
            max: limits.max_results,
        });
    }
    // Each run gets its provenance stamp (~150 bytes): without a cap, a
    // log of 500,000 empty runs (1.5 MB) became 77 MB and 1.2 GB of RSS.
    if runs.len() > MAX_RUNS {
        return Err(WasmError::NotSarif(format!(
            "{} runs: at most {MAX_RUNS} are accepted (one per tool and invocation)",
            runs.len()
        )));
    }
    let stamp = json!({
        "component_sha256": prov.component_sha256,
        "tool": prov.tool,
        "runtime_version": prov.runtime_version,
    });
    for run in runs.iter_mut() {
        if let Some(run) = run.as_object_mut() {
            let props = run
                .entry("properties")
                .or_insert_with(|| Value::Object(Map::new()));
            if let Some(p) = props.as_object_mut() {
                p.insert("sandboy".into(), stamp.clone());
            }
        }
    }
    obj.insert("version".into(), Value::String("2.1.0".into()));
    obj.insert("$schema".into(), Value::String(SARIF_SCHEMA.into()));
    // The schema's shapes, checked by the typed SARIF 2.1.0 model: every
    // run has a tool with a driver, every result is an object with a
    // message, and so on (a component's `{"runs":[{"results":[1]}]}` was
    // stamped and handed on as validated SARIF); then what the model does
    // not encode: unknown properties, ranges, enums, `text` or `id`.
    let typed = serde_sarif::sarif::Sarif::deserialize(&doc)
        .map_err(|e| WasmError::NotSarif(format!("not SARIF 2.1.0: {e}")))?;
    schema_constraints(&doc, typed)?;
    Ok(doc)
}

/// What the typed model does not check (see [`sarif_check`]):
/// properties it drops on a round trip, then ranges, enums and required
/// alternatives. The round trip goes through bytes so that at most two
/// trees (the document and one other) are alive at once.
fn schema_constraints(doc: &Value, typed: serde_sarif::sarif::Sarif) -> Result<(), WasmError> {
    let refuse = |m: String| WasmError::NotSarif(format!("not SARIF 2.1.0: {m}"));
    let bytes = serde_json::to_vec(&typed).map_err(|e| refuse(e.to_string()))?;
    drop(typed);
    let kept: Value = serde_json::from_slice(&bytes).map_err(|e| refuse(e.to_string()))?;
    drop(bytes);
    sarif_check::lost_properties(doc, &kept).map_err(refuse)?;
    drop(kept);
    sarif_check::constraints(doc).map_err(refuse)
}

/// The most runs one log may hold.
pub const MAX_RUNS: usize = 1000;

/// Refuses a component with any import; returns the import names otherwise
/// an empty list. Call before instantiating.
pub fn refuse_imports(
    engine: &Engine,
    component: &Component,
    path: &Path,
) -> Result<(), WasmError> {
    let imports = crate::kind::component_imports(engine, component);
    if imports.is_empty() {
        Ok(())
    } else {
        Err(WasmError::HasImports {
            path: path.to_path_buf(),
            imports,
        })
    }
}

struct AdapterState {
    limiter: MemoryLimiter,
}

/// One adapter component ready to run.
pub struct AdapterHost<'a> {
    pub engine: &'a Engine,
    pub component: &'a Component,
    /// SHA-256 of the component bytes (hex), for the provenance stamp.
    pub component_sha256: &'a str,
    /// The component's path, for messages.
    pub path: &'a Path,
    pub limits: &'a Limits,
}

impl AdapterHost<'_> {
    /// Runs the component: `args` are the flags after `args[0]`, relative
    /// paths resolve against `cwd`, the checked SARIF goes to `out`.
    pub fn run(&self, args: &[String], cwd: &Path, out: &mut dyn Write) -> Result<(), WasmError> {
        let (engine, limits) = (self.engine, self.limits);
        refuse_imports(engine, self.component, self.path)?;
        let a = AdapterArgs::parse(args)?;
        let input = read_inputs(&a, cwd, limits.max_input)?;

        let mut store = Store::new(
            engine,
            AdapterState {
                limiter: MemoryLimiter::new(limits.memory),
            },
        );
        store.limiter(|s| &mut s.limiter);
        let watchdog = arm_store(&mut store, engine, limits)?;
        let linker: Linker<AdapterState> = Linker::new(engine);
        let result =
            bindings::Adapter::instantiate(&mut store, self.component, &linker).and_then(|inst| {
                inst.ownaudit_adapter_convert()
                    .call_to_sarif(&mut store, &input)
            });
        drop(watchdog);
        drop(input);
        let bytes = match result {
            Ok(Ok(bytes)) => bytes,
            Ok(Err(message)) => {
                return Err(WasmError::Adapter {
                    tool: a.tool,
                    message: bounded_message(message),
                })
            }
            Err(e) => return Err(classify(e, store.data().limiter.refused())),
        };
        drop(store);
        let prov = Provenance {
            component_sha256: self.component_sha256.to_string(),
            tool: a.tool.clone(),
            runtime_version: env!("CARGO_PKG_VERSION").to_string(),
        };
        let doc = check_sarif(&bytes, limits, &prov)?;
        drop(bytes);
        serde_json::to_writer(&mut *out, &doc).map_err(|e| WasmError::Output(e.into()))?;
        out.write_all(b"\n")
            .and_then(|_| out.flush())
            .map_err(WasmError::Output)?;
        Ok(())
    }
}

/// The longest adapter error message passed on, in bytes: a red team's
/// 100 MiB message made a 209 MB merged log and a 1.1 GB `audit` process.
pub const MAX_MESSAGE: usize = 4096;

/// `message` cut to [`MAX_MESSAGE`] bytes (at a character boundary), on
/// one line: it is printed as one `error:` line, where a newline of the
/// component's would start a line it forged (a red team's fake summary).
fn bounded_message(mut message: String) -> String {
    if message.contains('\n') {
        message = message.replace('\n', "\\n");
    }
    if message.len() > MAX_MESSAGE {
        let mut end = MAX_MESSAGE;
        while !message.is_char_boundary(end) {
            end -= 1;
        }
        let dropped = message.len() - end;
        message.truncate(end);
        message.push_str(&format!(" … ({dropped} more bytes cut)"));
    }
    message
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_adapter_message_is_bounded() {
        assert_eq!(bounded_message("short".into()), "short");
        assert_eq!(bounded_message("a\nerror: fake".into()), "a\\nerror: fake");
        let long = bounded_message("é".repeat(5000));
        assert!(
            long.len() < MAX_MESSAGE + 40 && long.ends_with("more bytes cut)"),
            "{}",
            long.len()
        );
    }

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn parses_flags() {
        let a = AdapterArgs::parse(&s(&[
            "--tool",
            "infersharp",
            "--artifact",
            "report.json=/in/r.json",
            "--stdout=/o",
        ]))
        .unwrap();
        assert_eq!(a.tool, "infersharp");
        assert_eq!(
            a.artifacts,
            vec![("report.json".to_string(), PathBuf::from("/in/r.json"))]
        );
        assert_eq!(a.stdout, Some(PathBuf::from("/o")));
        for bad in [
            &["--artifact", "a=b"][..],
            &["--tool"],
            &["--tool", "x", "--bogus"],
            &["--tool", "x", "--artifact", "nopath"],
            &["--tool", "x", "--tool", "y"],
            &["--tool", "x", "--artifact", "a=1", "--artifact", "a=2"],
        ] {
            let e = AdapterArgs::parse(&s(bad)).unwrap_err();
            assert!(e.is_usage() && e.exit_code() == 2, "{bad:?}");
        }
    }

    fn prov() -> Provenance {
        Provenance {
            component_sha256: "ab".into(),
            tool: "t".into(),
            runtime_version: "0".into(),
        }
    }

    #[test]
    fn sarif_checks() {
        let l = Limits::default();
        let v = check_sarif(
            br#"{"version":"2.1.1","runs":[{"tool":{"driver":{"name":"t"}},"results":[]}]}"#,
            &l,
            &prov(),
        )
        .unwrap();
        assert_eq!(v["version"], "2.1.0");
        assert_eq!(v["runs"][0]["properties"]["sandboy"]["tool"], "t");
        assert!(matches!(
            check_sarif(b"{}", &l, &prov()),
            Err(WasmError::NotSarif(_))
        ));
        assert!(matches!(
            check_sarif(br#"{"version":"1.0.0","runs":[]}"#, &l, &prov()),
            Err(WasmError::NotSarif(_))
        ));
        let small = Limits {
            max_results: 1,
            ..l
        };
        let two = br#"{"version":"2.1.0","runs":[{"tool":{"driver":{"name":"t"}},"results":[{"message":{"text":"a"}},{"message":{"text":"b"}}]}]}"#;
        assert!(matches!(
            check_sarif(two, &small, &prov()),
            Err(WasmError::TooManyResults { count: 2, max: 1 })
        ));
        // Shapes the schema forbids, each refused: results that are not
        // objects, a run without its tool, a tool that is not an object.
        for bad in [
            &br#"{"version":"2.1.0","runs":[{"tool":{"driver":{"name":"t"}},"results":[1]}]}"#[..],
            br#"{"version":"2.1.0","runs":[{"results":[]}]}"#,
            br#"{"version":"2.1.0","runs":[{"tool":7}]}"#,
            br#"{"version":"2.1.0","runs":[{"tool":{"driver":{"name":"t"}},"results":[{}]}]}"#,
        ] {
            let e = check_sarif(bad, &l, &prov()).unwrap_err();
            assert!(e.to_string().contains("not SARIF 2.1.0"), "{e}");
        }
        let many = format!(
            r#"{{"version":"2.1.0","runs":[{}]}}"#,
            vec![r#"{"tool":{"driver":{"name":"t"}}}"#; MAX_RUNS + 1].join(",")
        );
        let e = check_sarif(many.as_bytes(), &l, &prov()).unwrap_err();
        assert!(e.to_string().contains("at most 1000"), "{e}");
        let tiny = Limits {
            max_output: 10,
            ..l
        };
        assert!(matches!(
            check_sarif(two, &tiny, &prov()),
            Err(WasmError::OutputTooLarge { .. })
        ));
    }
}
