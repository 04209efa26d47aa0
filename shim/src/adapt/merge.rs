//! `sandboy adapt --all DIR`: every adapter whose input is in DIR (the
//! registry's `files`), or the tools asked for, run concurrently (one
//! `sandboy adapt` child each, up to the CPU count), then merged into one
//! SARIF 2.1.0 log: one run per tool in registry order, each keeping its
//! provenance. A tool that failed still gets its run, with an invocation
//! `executionSuccessful: false` carrying its exit code and message, and
//! makes the exit status non-zero (the first failed tool's status).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::registry::{self, Adapter, Registry};
use super::{AdaptOptions, Output};
use crate::error::{Failure, Result};

/// What `--all` was asked.
#[derive(Debug, Clone, Default)]
pub struct AllOptions {
    pub dir: PathBuf,
    /// Only these tools (each must then find its input).
    pub tools: Vec<String>,
    /// Registry, components, policy and `-o`, as for one run.
    pub common: AdaptOptions,
    /// Global flags for the children (`--root`, `--debug`, …).
    pub global: Vec<String>,
}

/// The outcome: exit status and one summary line per tool.
pub struct Audit {
    pub status: i32,
    pub summary: Vec<String>,
}

struct Done {
    status: i32,
    stderr: String,
    elapsed: Duration,
    log: Option<Value>,
}

/// Runs the audit and writes the merged log.
pub fn run_all(opts: &AllOptions) -> Result<Audit> {
    let c = &opts.common;
    let (file, comps) = registry::locate(c.registry.as_deref(), c.components.as_deref())?;
    let reg = Registry::load(&file, &comps)?;
    let jobs = select(&reg, opts)?;
    let tmp = private_tmp()?;
    let results = run_concurrently(&jobs, opts, &tmp);
    let _ = std::fs::remove_dir_all(&tmp);
    let mut runs = Vec::new();
    let mut summary = Vec::new();
    let mut status = 0;
    for ((adapter, _), done) in jobs.iter().zip(results) {
        let secs = done.elapsed.as_secs_f64();
        // One run per tool: more would let one tool's input speak for
        // another (a red team's roslyn.sarif carried a clean "CodeQL" run
        // beside the real, failed one).
        let mut done = done;
        let runs_of = |log: &Value| log["runs"].as_array().map_or(0, Vec::len);
        if let Some(n) = done.log.as_ref().map(runs_of).filter(|&n| n != 1) {
            done.log = None;
            done.status = 1;
            done.stderr = format!(
                "the adapter's log has {n} runs; a merged log takes exactly one run per tool"
            );
        }
        let log = done.log.take();
        match log {
            Some(log) => {
                let (n, rules) = counts(&log);
                summary.push(format!(
                    "adapt: {}: {n} results, {rules} rules, {secs:.2}s",
                    adapter.tool
                ));
                for mut run in log["runs"].as_array().cloned().unwrap_or_default() {
                    if run.get("invocations").is_none() {
                        run["invocations"] = json!([{"executionSuccessful": true}]);
                    }
                    runs.push(run);
                }
            }
            None => {
                let message = done.stderr.trim().to_string();
                let first = message.lines().last().unwrap_or("no message");
                summary.push(format!(
                    "adapt: {}: FAILED (exit {}) after {secs:.2}s: {first}",
                    adapter.tool, done.status
                ));
                runs.push(failed_run(adapter, done.status, &message));
                if status == 0 {
                    status = if done.status == 0 { 1 } else { done.status };
                }
            }
        }
    }
    let doc =
        json!({"$schema": sandboy_wasm_contract::SARIF_SCHEMA, "version": "2.1.0", "runs": runs});
    let mut out = Output::create(c.output.as_deref())?;
    serde_json::to_writer(out.file(), &doc)
        .map_err(|e| Failure::runtime(format!("adapt: writing the merged log: {e}")))?;
    std::io::Write::write_all(&mut out.file(), b"\n")?;
    out.commit()?;
    Ok(Audit { status, summary })
}

/// (adapter, input file) pairs: the asked tools, else every tool with a file.
fn select<'a>(reg: &'a Registry, opts: &AllOptions) -> Result<Vec<(&'a Adapter, PathBuf)>> {
    if !opts.dir.is_dir() {
        return Err(Failure::usage(format!(
            "adapt --all {}: not a directory",
            opts.dir.display()
        )));
    }
    let found = |a: &Adapter| {
        a.files
            .iter()
            .map(|f| opts.dir.join(f))
            .find(|p| p.is_file())
    };
    let mut jobs = Vec::new();
    if opts.tools.is_empty() {
        jobs.extend(reg.adapters.iter().filter_map(|a| Some((a, found(a)?))));
    } else {
        for t in &opts.tools {
            let a = reg.get(t)?;
            let f = found(a).ok_or_else(|| {
                Failure::usage(format!(
                    "adapt --all: tool {t}: none of {:?} in {}",
                    a.files,
                    opts.dir.display()
                ))
            })?;
            jobs.push((a, f));
        }
        jobs.sort_by_key(|(a, _)| reg.adapters.iter().position(|r| r.tool == a.tool));
    }
    if jobs.is_empty() {
        let looked: Vec<&String> = reg.adapters.iter().flat_map(|a| &a.files).collect();
        return Err(Failure::usage(format!(
            "adapt --all {}: no tool's input found (looked for {looked:?}; registry {})",
            opts.dir.display(),
            reg.file.display()
        )));
    }
    Ok(jobs)
}

/// A fresh 0700 directory for the children's logs, under a random name: a
/// user who made `/tmp/sandboy-audit-<pid>` for every pid ahead of time
/// stopped root's audit (a red team).
fn private_tmp() -> Result<PathBuf> {
    use std::io::Read as _;
    use std::os::unix::fs::DirBuilderExt;
    let mut last = None;
    for _ in 0..16 {
        let mut random = [0u8; 8];
        std::fs::File::open("/dev/urandom")
            .and_then(|mut f| f.read_exact(&mut random))
            .map_err(|e| Failure::runtime(format!("adapt --all: /dev/urandom: {e}")))?;
        let dir = std::env::temp_dir().join(format!(
            "sandboy-audit-{}-{:016x}",
            std::process::id(),
            u64::from_ne_bytes(random)
        ));
        match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => {
                return Err(Failure::runtime(format!(
                    "adapt --all: {}: {e}",
                    dir.display()
                )))
            }
        }
    }
    Err(Failure::runtime(format!(
        "adapt --all: no fresh directory in {}: {}",
        std::env::temp_dir().display(),
        last.map_or_else(String::new, |e| e.to_string())
    )))
}

/// Every job as a child `sandboy adapt`, at most the CPU count at once;
/// results in job order.
fn run_concurrently(jobs: &[(&Adapter, PathBuf)], opts: &AllOptions, tmp: &Path) -> Vec<Done> {
    let width = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(jobs.len());
    let next = AtomicUsize::new(0);
    let slots: Mutex<Vec<Option<Done>>> = Mutex::new((0..jobs.len()).map(|_| None).collect());
    std::thread::scope(|s| {
        for _ in 0..width {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some((a, input)) = jobs.get(i) else { break };
                let done = run_child(a, input, opts, &tmp.join(format!("{i}.sarif")));
                slots.lock().unwrap_or_else(|p| p.into_inner())[i] = Some(done);
            });
        }
    });
    slots
        .into_inner()
        .unwrap_or_else(|p| p.into_inner())
        .into_iter()
        .map(|d| {
            d.unwrap_or(Done {
                status: 1,
                stderr: "not run".into(),
                elapsed: Duration::ZERO,
                log: None,
            })
        })
        .collect()
}

fn run_child(a: &Adapter, input: &Path, opts: &AllOptions, out: &Path) -> Done {
    let c = &opts.common;
    let mut cmd = Command::new("/proc/self/exe");
    cmd.args(&opts.global)
        .arg("adapt")
        .arg("--tool")
        .arg(&a.tool);
    cmd.arg("--artifact")
        .arg(format!("{}={}", a.artifact, input.display()));
    for (flag, v) in [
        ("--registry", &c.registry),
        ("--components", &c.components),
        ("--policy", &c.policy),
    ] {
        if let Some(v) = v {
            cmd.arg(flag).arg(v);
        }
    }
    cmd.arg("-o")
        .arg(out)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let started = Instant::now();
    match cmd.output() {
        Ok(o) => {
            let status = o.status.code().unwrap_or(1);
            let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
            let log = (status == 0)
                .then(|| std::fs::read(out).ok())
                .flatten()
                .and_then(|b| parse_log(&b).ok());
            Done {
                status,
                stderr,
                elapsed: started.elapsed(),
                log,
            }
        }
        Err(e) => Done {
            status: 1,
            stderr: format!("cannot start sandboy adapt: {e}"),
            elapsed: started.elapsed(),
            log: None,
        },
    }
}

/// A SARIF 2.1.0 log (as the adapter host writes it): an object with
/// `version` "2.1.0" and a `runs` array.
pub fn parse_log(bytes: &[u8]) -> std::result::Result<Value, String> {
    let v: Value = serde_json::from_slice(bytes).map_err(|e| format!("not JSON: {e}"))?;
    if v["version"] != "2.1.0" || !v["runs"].is_array() {
        return Err("not a SARIF 2.1.0 log (version, runs)".into());
    }
    Ok(v)
}

/// Results and rules over every run of a log.
fn counts(log: &Value) -> (usize, usize) {
    let runs = log["runs"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    let len = |v: &Value| v.as_array().map_or(0, Vec::len);
    (
        runs.iter().map(|r| len(&r["results"])).sum(),
        runs.iter()
            .map(|r| len(&r["tool"]["driver"]["rules"]))
            .sum(),
    )
}

/// The run standing for a tool that failed: no results, the failure in its
/// invocation, provenance as far as known.
fn failed_run(a: &Adapter, status: i32, message: &str) -> Value {
    let sha = std::fs::read(&a.component)
        .map(|b| sandboy_wasm_contract::digest::hex(&sandboy_wasm_contract::digest::sha256(&b)))
        .unwrap_or_default();
    json!({
        "tool": {"driver": {"name": a.tool}},
        "results": [],
        "invocations": [{
            "executionSuccessful": false,
            "exitCode": status,
            "toolExecutionNotifications": [{"level": "error", "message": {"text": if message.is_empty() { "failed" } else { message }}}],
        }],
        "properties": {"sandboy": {
            "tool": a.tool,
            "component_sha256": sha,
            "runtime_version": env!("CARGO_PKG_VERSION"),
        }},
    })
}
