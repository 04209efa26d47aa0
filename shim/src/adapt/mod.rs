//! `sandboy adapt`: one analyzer's output through its adapter component to
//! validated SARIF 2.1.0 with provenance, confined; `--all DIR` runs every
//! adapter whose input is present and merges their logs; `--list` shows the
//! registry.
//!
//! * `registry` — adapters.toml: tools, components, inputs, phases.
//! * `policy` — the `ownaudit-adapter` policy the run is confined by.
//! * `container` — as root: an OCI-wasm container built on the fly.
//! * `confined` — as any other user: the wasm host itself under the
//!   unprivileged wrap tiers (Landlock + seccomp, namespaces where possible).
//! * `merge` — `--all`: concurrent runs, one SARIF log, a summary per tool.
//!
//! Inputs are checked as the caller before anything runs (readable regular
//! files, within `max_input` in all): bad input is exit 2 and leaves nothing.
//! The SARIF goes to a temporary file next to `-o` and is renamed into place
//! only when the run succeeded.

mod confined;
mod container;
mod input;
mod keyring;
pub mod merge;
mod policy;
pub mod registry;

use std::fs::File;
use std::io::{Read, Seek, Write};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

use sandboy_wasm_contract::Limits;

use crate::container::Runtime;
use crate::error::{Failure, Result};
use crate::wasm_host;
use sandboy_spec_gen::policy::Policy;

pub use merge::run_all;

/// What `sandboy adapt` was asked (everything but `--all`/`--list`).
#[derive(Debug, Clone, Default)]
pub struct AdaptOptions {
    pub registry: Option<PathBuf>,
    pub components: Option<PathBuf>,
    /// Another adapter policy than the built-in `ownaudit-adapter`.
    pub policy: Option<PathBuf>,
    pub tool: Option<String>,
    /// A component outside the registry.
    pub component: Option<PathBuf>,
    /// `NAME=PATH`.
    pub artifacts: Vec<String>,
    pub stdout: Option<PathBuf>,
    pub stderr: Option<PathBuf>,
    pub options: Option<PathBuf>,
    /// `-o`: the SARIF file (default: standard output).
    pub output: Option<PathBuf>,
}

/// One resolved run: the component and its inputs, all checked.
#[derive(Debug, Clone)]
struct Job {
    tool: String,
    component: PathBuf,
    /// (name, absolute path) of the artifacts, then `--stdout`, `--stderr`,
    /// `--options` as flags.
    inputs: Vec<Input>,
    /// `max_input`: what the inputs may come to, in bytes, when copied.
    max_input: u64,
}

#[derive(Debug, Clone)]
struct Input {
    /// The adapter flag (`--artifact`, `--stdout`, …).
    flag: &'static str,
    /// The artifact name (artifacts only).
    name: Option<String>,
    path: PathBuf,
    /// The file, opened once when the job was resolved: what is checked is
    /// what is copied (a red team swapped a symlink between a check and a
    /// second lookup, and a file between the size check and the copy).
    file: Option<std::sync::Arc<File>>,
}

impl Input {
    /// The adapter command-line words for this input at `path`.
    fn words(&self, path: &Path) -> [String; 2] {
        let p = path.display();
        match &self.name {
            Some(n) => [self.flag.to_string(), format!("{n}={p}")],
            None => [self.flag.to_string(), p.to_string()],
        }
    }
}

/// The policy's wasm limits, and `prepare`'s answer for the job's
/// component as a zero-import adapter (refused, exit 2, otherwise), through
/// `cache`. Asked before anything runs, as the caller; both ways of running
/// (`container`, `confined`) start with it.
fn prepare_component(
    policy: &Policy,
    job: &Job,
    program: wasm_host::Program<'_>,
    cache: Option<wasm_host::CacheRef<'_>>,
) -> Result<(String, sandboy_wasm_contract::host::PrepareReport)> {
    let limits = sandboy_spec_gen::render::annotations(policy)
        .get(sandboy_spec_gen::annotations::WASM_LIMITS)
        .cloned()
        .unwrap_or_else(|| "{}".into());
    let answer = match cache {
        // A warm start asks the host only once per component and limits.
        Some(cache) => wasm_host::memo::prepare(program, &job.component, cache, &limits, true)?,
        None => wasm_host::prepare(program, &job.component, None, &limits, true)?,
    };
    let report = answer.map_err(|r| match r.code {
        sandboy_wasm_contract::host::EXIT_REFUSED => {
            Failure::usage(format!("adapt: {}", r.message))
        }
        _ => Failure::runtime(format!("adapt: {}", r.message)),
    })?;
    Ok((limits, report))
}

/// `sandboy adapt --tool T …`: the exit status (the container's).
pub fn run_one(rt: impl FnOnce() -> Result<Runtime>, opts: &AdaptOptions) -> Result<i32> {
    let tool = opts
        .tool
        .clone()
        .ok_or_else(|| Failure::usage("adapt: --tool NAME is required (or --all DIR, --list)"))?;
    let (component, default_artifact) = match &opts.component {
        Some(c) => (c.clone(), None),
        None => {
            let (file, comps) =
                registry::locate(opts.registry.as_deref(), opts.components.as_deref())?;
            let reg = registry::Registry::load(&file, &comps)?;
            let a = reg.get(&tool)?;
            (a.component.clone(), Some(a.artifact.clone()))
        }
    };
    let policy = policy::load(opts.policy.as_deref())?;
    let limits = policy::limits(&policy)?;
    let job = resolve(&tool, component, default_artifact.as_deref(), opts, &limits)?;
    let mut out = Output::create(opts.output.as_deref())?;
    let status = if crate::wrap::needs_runtime() {
        container::run(&rt()?, policy, &job, out.file())?
    } else {
        confined::run(policy, &job, out.file())?
    };
    if status == 0 {
        out.commit()?;
    }
    Ok(status)
}

/// Checks the component and every input as the caller: readable regular
/// files, `max_input` bytes in all. Usage errors (exit 2) otherwise.
fn resolve(
    tool: &str,
    component: PathBuf,
    default_artifact: Option<&str>,
    opts: &AdaptOptions,
    limits: &Limits,
) -> Result<Job> {
    if opts.artifacts.is_empty() {
        let hint = default_artifact.unwrap_or("NAME");
        return Err(Failure::usage(format!(
            "adapt: tool {tool}: missing artifact: give its input with --artifact {hint}=PATH"
        )));
    }
    let mut inputs = Vec::new();
    for a in &opts.artifacts {
        let (name, path) = a
            .split_once('=')
            .filter(|(n, p)| !n.is_empty() && !p.is_empty() && !n.contains('/'))
            .ok_or_else(|| {
                Failure::usage(format!(
                    "adapt: --artifact {a:?}: write NAME=PATH (NAME without '/')"
                ))
            })?;
        if inputs
            .iter()
            .any(|i: &Input| i.name.as_deref() == Some(name))
        {
            return Err(Failure::usage(format!(
                "adapt: --artifact {name:?} given twice"
            )));
        }
        inputs.push(Input {
            flag: "--artifact",
            name: Some(name.to_string()),
            path: PathBuf::from(path),
            file: None,
        });
    }
    for (flag, p) in [
        ("--stdout", &opts.stdout),
        ("--stderr", &opts.stderr),
        ("--options", &opts.options),
    ] {
        if let Some(p) = p {
            inputs.push(Input {
                flag,
                name: None,
                path: p.clone(),
                file: None,
            });
        }
    }
    let mut total = 0u64;
    for i in &mut inputs {
        let what = match &i.name {
            Some(n) => format!("{} {n}={}", i.flag, i.path.display()),
            None => format!("{} {}", i.flag, i.path.display()),
        };
        let (abs, len, file) = readable_file(&i.path, true)
            .map_err(|e| Failure::usage(format!("adapt: {what}: {e}")))?;
        i.file = Some(std::sync::Arc::new(file));
        total += len;
        if total > limits.max_input {
            return Err(Failure::usage(format!(
                "adapt: {what}: the inputs come to {total} bytes or more, over max_input ({} bytes); shrink the input or raise [wasm] max_input in an adapter policy (--policy)",
                limits.max_input
            )));
        }
        i.path = abs;
    }
    let (component, _, _) = readable_file(&component, false).map_err(|e| {
        Failure::usage(format!(
            "adapt: component {} (tool {tool}): {e}; build it (make components) or reinstall (make install)",
            component.display()
        ))
    })?;
    Ok(Job {
        tool: tool.to_string(),
        component,
        inputs,
        max_input: limits.max_input,
    })
}

/// The absolute path, size and open file of a regular file the caller
/// can read.
///
/// Opened non-blocking, so a FIFO (or a device that blocks on open) is
/// refused as "not a regular file" instead of hanging `adapt` outside any
/// deadline. As root, an input is opened by [`input::open`] (a symlink must
/// not hand over a file its owner could not read: the check is the
/// kernel's own, in that one open), and its path is never resolved again:
/// the container gets a copy of this descriptor.
fn readable_file(path: &Path, input: bool) -> std::result::Result<(PathBuf, u64, File), String> {
    let root = input && nix::unistd::geteuid().is_root();
    let f = if root {
        input::open(path).map_err(|e| e.message)?
    } else {
        crate::host::open_regular(path).map_err(|e| match e.kind() {
            std::io::ErrorKind::InvalidInput => e.to_string(),
            _ => format!("cannot read: {e}"),
        })?
    };
    // Both opens refused anything but a regular file.
    let meta = f.metadata().map_err(|e| format!("cannot read: {e}"))?;
    // One byte read proves the file is readable, not only openable.
    let _ = (&f)
        .take(1)
        .read(&mut [0u8; 1])
        .map_err(|e| format!("cannot read: {e}"))?;
    // As the caller: the confined host opens this path itself, as them.
    let abs = if root {
        std::path::absolute(path).map_err(|e| format!("cannot resolve: {e}"))?
    } else {
        std::fs::canonicalize(path).map_err(|e| format!("cannot resolve: {e}"))?
    };
    Ok((abs, meta.len(), f))
}

/// `sandboy adapt --list`: tool, component, sha256, inputs and phases.
/// Every field comes from the registry or the command line (any file, via
/// `--registry` or `SANDBOY_REGISTRY`), so each goes through `printable`:
/// a registry's `inputs = ["\u001b]0;TITLE\u0007"]` set the window title.
pub fn list(registry: Option<&Path>, components: Option<&Path>) -> Result<Vec<String>> {
    let (file, comps) = registry::locate(registry, components)?;
    let reg = registry::Registry::load(&file, &comps)?;
    let mut lines = vec![
        format!(
            "# registry {}, components {}",
            shown(&reg.file.display().to_string()),
            shown(&reg.components.display().to_string())
        ),
        "TOOL\tCOMPONENT\tSHA256\tINPUTS\tPHASES".into(),
    ];
    for a in &reg.adapters {
        lines.push(list_line(a));
    }
    Ok(lines)
}

/// One `--list` row, every field escaped.
fn list_line(a: &registry::Adapter) -> String {
    let sha = std::fs::read(&a.component)
        .map(|b| sandboy_wasm_contract::digest::hex(&sandboy_wasm_contract::digest::sha256(&b)))
        .unwrap_or_else(|e| format!("(missing: {e})"));
    let phases = if a.phases.is_empty() {
        "-".to_string()
    } else {
        a.phases.join(" -> ")
    };
    format!(
        "{}\t{}\t{}\t{}\t{}",
        shown(&a.tool),
        shown(&a.component.display().to_string()),
        shown(&sha),
        shown(&a.inputs.join(",")),
        shown(&phases)
    )
}

/// `s` safe for the terminal, and with tabs escaped too: a tab in a field
/// would shift the `--list` columns.
fn shown(s: &str) -> String {
    sandboy_spec_gen::printable::printable(s).replace('\t', "\\u{9}")
}

/// The SARIF destination: a temporary file beside `-o` (renamed into place
/// on success, removed otherwise), or an anonymous one copied to stdout.
struct Output {
    file: File,
    tmp: Option<PathBuf>,
    dest: Option<PathBuf>,
}

impl Output {
    fn create(dest: Option<&Path>) -> Result<Output> {
        match dest {
            Some(d) => {
                let name = d.file_name().ok_or_else(|| {
                    Failure::usage(format!("adapt: -o {}: not a file name", d.display()))
                })?;
                let tmp = d.with_file_name(format!(
                    ".{}.{}.tmp",
                    name.to_string_lossy(),
                    std::process::id()
                ));
                let file = File::options()
                    .read(true)
                    .write(true)
                    .create_new(true)
                    .open(&tmp)
                    .map_err(|e| Failure::usage(format!("adapt: -o {}: {e}", d.display())))?;
                Ok(Output {
                    file,
                    tmp: Some(tmp),
                    dest: Some(d.to_path_buf()),
                })
            }
            None => {
                let file = tempfile_in(&std::env::temp_dir())?;
                Ok(Output {
                    file,
                    tmp: None,
                    dest: None,
                })
            }
        }
    }

    fn file(&mut self) -> &File {
        &self.file
    }

    /// Checks the document once more (JSON, SARIF 2.1.0 runs) and moves it
    /// into place.
    fn commit(mut self) -> Result<()> {
        self.file.rewind()?;
        let mut bytes = Vec::new();
        self.file.read_to_end(&mut bytes)?;
        merge::parse_log(&bytes).map_err(|e| {
            Failure::runtime(format!("adapt: the adapter host wrote no SARIF log: {e}"))
        })?;
        match (self.tmp.take(), &self.dest) {
            (Some(tmp), Some(dest)) => std::fs::rename(&tmp, dest).map_err(|e| {
                let _ = std::fs::remove_file(&tmp);
                Failure::runtime(format!("adapt: -o {}: {e}", dest.display()))
            }),
            _ => {
                let mut out = std::io::stdout().lock();
                out.write_all(&bytes)
                    .and_then(|()| out.flush())
                    .map_err(Into::into)
            }
        }
    }
}

impl Drop for Output {
    fn drop(&mut self) {
        if let Some(tmp) = &self.tmp {
            let _ = std::fs::remove_file(tmp);
        }
    }
}

/// An unnamed file in `dir` (O_TMPFILE), gone when closed.
fn tempfile_in(dir: &Path) -> Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    File::options()
        .read(true)
        .write(true)
        .custom_flags(libc::O_TMPFILE)
        .open(dir)
        .map_err(|e| Failure::runtime(format!("adapt: a temporary file in {}: {e}", dir.display())))
}

/// Runs `f` with this process's standard output pointing at `file`, so
/// what the confined host (a child) writes there lands in it; restores it
/// afterwards whatever `f` returned.
fn with_stdout_to<R>(file: &File, f: impl FnOnce() -> R) -> Result<R> {
    let _ = std::io::stdout().flush();
    let saved =
        nix::unistd::dup(1).map_err(|e| Failure::runtime(format!("adapt: dup(stdout): {e}")))?;
    nix::unistd::dup2(file.as_raw_fd(), 1)
        .map_err(|e| Failure::runtime(format!("adapt: dup2: {e}")))?;
    let r = f();
    let _ = std::io::stdout().flush();
    let restored = nix::unistd::dup2(saved, 1);
    let _ = nix::unistd::close(saved);
    restored.map_err(|e| Failure::runtime(format!("adapt: restoring stdout: {e}")))?;
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn adapter(tool: &str, component: &str, inputs: &[&str], phases: &[&str]) -> registry::Adapter {
        let v = |s: &[&str]| s.iter().map(|x| x.to_string()).collect();
        registry::Adapter {
            tool: tool.into(),
            component: PathBuf::from(component),
            inputs: v(inputs),
            artifact: "r".into(),
            files: vec!["a".into()],
            phases: v(phases),
        }
    }

    #[test]
    fn list_rows_escape_registry_fields() {
        // A plain registry row prints as it is.
        let plain = list_line(&adapter(
            "infersharp",
            "/nonexistent/i.wasm",
            &["sarif-2.1"],
            &["a", "b"],
        ));
        assert!(
            plain.starts_with("infersharp\t/nonexistent/i.wasm\t(missing: "),
            "{plain}"
        );
        assert!(plain.ends_with("\tsarif-2.1\ta -> b"), "{plain}");
        // Escapes, bidi overrides and tabs from the registry are shown, not obeyed.
        let bad = list_line(&adapter(
            "a",
            "/nonexistent/p\u{1b}[2J.wasm",
            &["x\u{1b}]0;TITLE\u{7}\u{1b}[2K"],
            &["\u{1b}[31mred", "a\u{202e}b\tc"],
        ));
        assert!(!bad.contains(['\u{1b}', '\u{7}', '\u{202e}']), "{bad:?}");
        assert_eq!(bad.matches('\t').count(), 4, "{bad:?}");
        assert!(bad.contains("p\\u{1b}[2J.wasm"), "{bad}");
        assert!(bad.contains("x\\u{1b}]0;TITLE\\u{7}\\u{1b}[2K"), "{bad}");
        assert!(
            bad.ends_with("\\u{1b}[31mred -> a\\u{202e}b\\u{9}c"),
            "{bad}"
        );
    }
}
