//! The host binary (`sandboy-wasm`, next to `sandboy`): its command line,
//! built by the runtime and parsed by the host in one place, and the
//! report `prepare` prints.
//!
//! * `prepare` (create time, as the runtime's child, outside the
//!   container): validate and compile a payload through the compile cache;
//!   one line on stdout, the [`PrepareReport`] or the refusal (exit 2 for
//!   the payload or its limits, 1 for anything else); stderr and the log
//!   are the runtime's.
//! * `run` (the container's init, already confined, `execveat`ed from a
//!   protected fd): load the code from an inherited fd and run it; the
//!   guest's environment is the host's own.
//! * `adapt` (`sandboy adapt` as an ordinary user, under the wrap tiers):
//!   run an adapter component on its inputs, SARIF to stdout.

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::log::Handoff;

/// File name of the host binary, in the runtime binary's directory.
pub const HOST_BIN: &str = "sandboy-wasm";

/// Exit status of a refusal for a bad payload or bad limits.
pub const EXIT_REFUSED: i32 = 2;

/// A command line the host does not understand, or a report the runtime
/// cannot read.
#[derive(Debug, thiserror::Error)]
#[error("sandboy-wasm: {0}")]
pub struct ProtocolError(pub String);

/// `prepare`: validate and compile into the cache.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prepare {
    pub path: PathBuf,
    pub cache: Option<PathBuf>,
    /// The `dev.sandboy.wasm.limits` value (`{}` for the defaults).
    pub limits: String,
    /// Refuse anything but an `ownaudit:adapter` component.
    pub adapter_only: bool,
    pub log: Handoff,
}

/// `run`: the container's payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Run {
    /// Container id, for log events.
    pub id: String,
    /// An inherited fd: a compile-cache entry, or the `.wasm` file itself.
    pub code_fd: i32,
    /// SHA-256 (hex) of the wasm bytes a cache entry must name.
    pub sha256: Option<String>,
    /// `process.args[0]`, for messages and the guest's argv.
    pub path: String,
    pub limits: String,
    pub cwd: PathBuf,
    pub log: Handoff,
    /// `process.args[1..]`.
    pub args: Vec<String>,
}

/// `adapt`: an adapter component on the caller's inputs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Adapt {
    pub component: PathBuf,
    pub cache: Option<PathBuf>,
    pub limits: String,
    /// The adapter's own flags (`--tool …`).
    pub args: Vec<String>,
}

/// One invocation of the host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    Prepare(Prepare),
    Run(Run),
    Adapt(Adapt),
}

impl Command {
    /// The arguments after `argv[0]`.
    pub fn to_args(&self) -> Vec<String> {
        let mut flags: Vec<(&str, String)> = Vec::new();
        let show = |p: &PathBuf| p.display().to_string();
        let (name, rest) = match self {
            Command::Prepare(p) => {
                flags.push(("limits", p.limits.clone()));
                flags.extend(p.cache.as_ref().map(|c| ("cache", show(c))));
                if p.adapter_only {
                    flags.push(("adapter-only", "1".into()));
                }
                log_flags(&mut flags, &p.log);
                ("prepare", vec![show(&p.path)])
            }
            Command::Run(r) => {
                flags.push(("id", r.id.clone()));
                flags.push(("code-fd", r.code_fd.to_string()));
                flags.extend(r.sha256.clone().map(|s| ("sha256", s)));
                flags.push(("limits", r.limits.clone()));
                flags.push(("cwd", show(&r.cwd)));
                log_flags(&mut flags, &r.log);
                let mut rest = vec![r.path.clone()];
                rest.extend(r.args.iter().cloned());
                ("run", rest)
            }
            Command::Adapt(a) => {
                flags.push(("limits", a.limits.clone()));
                flags.extend(a.cache.as_ref().map(|c| ("cache", show(c))));
                let mut rest = vec![show(&a.component)];
                rest.extend(a.args.iter().cloned());
                ("adapt", rest)
            }
        };
        let mut out = vec![name.to_string()];
        for (k, v) in flags {
            out.push(format!("--{k}"));
            out.push(v);
        }
        out.push("--".into());
        out.extend(rest);
        out
    }

    /// Parses what [`Command::to_args`] wrote (the arguments after `argv[0]`).
    pub fn parse(args: &[String]) -> Result<Command, ProtocolError> {
        let err = |m: String| ProtocolError(m);
        let (name, tail) = args
            .split_first()
            .ok_or_else(|| err("no subcommand (prepare, run, adapt)".into()))?;
        let mut flags = BTreeMap::new();
        let mut i = 0;
        while i < tail.len() && tail[i] != "--" {
            let key = tail[i]
                .strip_prefix("--")
                .ok_or_else(|| err(format!("unexpected argument {:?}", tail[i])))?;
            let value = tail
                .get(i + 1)
                .ok_or_else(|| err(format!("--{key} needs a value")))?;
            flags.insert(key.to_string(), value.clone());
            i += 2;
        }
        let mut rest = tail.get(i + 1..).unwrap_or_default().iter().cloned();
        let mut take = |k: &str| flags.remove(k);
        let need =
            |v: Option<String>, k: &str| v.ok_or_else(|| err(format!("{name}: --{k} missing")));
        let first = rest
            .next()
            .ok_or_else(|| err(format!("{name}: no payload after --")))?;
        let command = match name.as_str() {
            "prepare" => Command::Prepare(Prepare {
                path: first.into(),
                cache: take("cache").map(PathBuf::from),
                limits: need(take("limits"), "limits")?,
                adapter_only: take("adapter-only").is_some(),
                log: log(&mut take)?,
            }),
            "run" => Command::Run(Run {
                id: need(take("id"), "id")?,
                code_fd: need(take("code-fd"), "code-fd")?
                    .parse()
                    .map_err(|e| err(format!("run: --code-fd: {e}")))?,
                sha256: take("sha256"),
                limits: need(take("limits"), "limits")?,
                cwd: need(take("cwd"), "cwd")?.into(),
                log: log(&mut take)?,
                path: first,
                args: rest.collect(),
            }),
            "adapt" => Command::Adapt(Adapt {
                cache: take("cache").map(PathBuf::from),
                limits: need(take("limits"), "limits")?,
                component: first.into(),
                args: rest.collect(),
            }),
            other => return Err(err(format!("unknown subcommand {other:?}"))),
        };
        match flags.keys().next() {
            Some(k) => Err(err(format!("{name}: unknown flag --{k}"))),
            None => Ok(command),
        }
    }
}

fn log_flags(flags: &mut Vec<(&str, String)>, log: &Handoff) {
    flags.extend(log.fd.map(|fd| ("log-fd", fd.to_string())));
    flags.push(("log-format", log.format.name().into()));
    flags.push(("log-level", log.level.to_string()));
}

fn log(take: &mut impl FnMut(&str) -> Option<String>) -> Result<Handoff, ProtocolError> {
    Handoff::parse(
        take("log-fd").as_deref(),
        take("log-format").as_deref(),
        take("log-level").as_deref(),
    )
    .map_err(ProtocolError)
}

/// What `prepare` prints on success (one JSON line).
#[derive(Debug, Clone, PartialEq)]
pub struct PrepareReport {
    /// `WasiP1`, `WasiCommand` or `Adapter`.
    pub kind: String,
    /// SHA-256 (hex) of the wasm bytes.
    pub sha256: String,
    pub from_cache: bool,
    /// The cache entry holding the compiled code, when one was written.
    pub cache_file: Option<PathBuf>,
    pub elapsed_ms: f64,
}

impl PrepareReport {
    pub fn to_line(&self) -> String {
        serde_json::json!({
            "kind": self.kind,
            "sha256": self.sha256,
            "from_cache": self.from_cache,
            "cache_file": self.cache_file.as_ref().map(|p| p.display().to_string()),
            "elapsed_ms": self.elapsed_ms,
        })
        .to_string()
    }

    /// The line of a refusal.
    pub fn refusal_line(message: &str) -> String {
        serde_json::json!({ "refused": message }).to_string()
    }

    /// Reads `prepare`'s line: the report, or `Err` with the refusal.
    pub fn parse(line: &str) -> Result<Result<PrepareReport, String>, ProtocolError> {
        let bad = |what: &str| ProtocolError(format!("prepare report: {what} in {line:?}"));
        let v: serde_json::Value =
            serde_json::from_str(line.trim()).map_err(|_| bad("not JSON"))?;
        if let Some(m) = v["refused"].as_str() {
            return Ok(Err(m.to_string()));
        }
        let text = |k: &str| v[k].as_str().map(str::to_string).ok_or_else(|| bad(k));
        Ok(Ok(PrepareReport {
            kind: text("kind")?,
            sha256: text("sha256")?,
            from_cache: v["from_cache"].as_bool().ok_or_else(|| bad("from_cache"))?,
            cache_file: v["cache_file"].as_str().map(PathBuf::from),
            elapsed_ms: v["elapsed_ms"].as_f64().unwrap_or_default(),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::Format;

    #[test]
    fn commands_round_trip() {
        let run = Command::Run(Run {
            id: "c1".into(),
            code_fd: 7,
            sha256: Some("ab".into()),
            path: "/app.wasm".into(),
            limits: r#"{"fuel":1}"#.into(),
            cwd: "/data".into(),
            log: Handoff {
                fd: Some(4),
                format: Format::Json,
                level: tracing::Level::DEBUG,
            },
            args: vec!["--".into(), "--code-fd".into()],
        });
        let prepare = Command::Prepare(Prepare {
            path: "/r/app.wasm".into(),
            cache: None,
            limits: "{}".into(),
            adapter_only: true,
            log: Handoff::default(),
        });
        let adapt = Command::Adapt(Adapt {
            component: "/c.wasm".into(),
            cache: Some("/home/u/.cache".into()),
            limits: "{}".into(),
            args: vec!["--tool".into(), "t".into()],
        });
        for c in [run, prepare, adapt] {
            assert_eq!(Command::parse(&c.to_args()).unwrap(), c);
        }
        let bad = |a: &[&str]| Command::parse(&a.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert!(bad(&["run", "--id", "x", "--", "/a"]).is_err());
        assert!(bad(&["prepare", "--limits", "{}", "--what", "1", "--", "/a"]).is_err());
        assert!(bad(&["jump", "--", "/a"]).is_err());
    }

    #[test]
    fn report_round_trips() {
        let r = PrepareReport {
            kind: "Adapter".into(),
            sha256: "00".into(),
            from_cache: true,
            cache_file: Some("/s/.wasm-cache/x.cwasm".into()),
            elapsed_ms: 0.5,
        };
        assert_eq!(PrepareReport::parse(&r.to_line()).unwrap(), Ok(r));
        assert_eq!(
            PrepareReport::parse(&PrepareReport::refusal_line("no\nway")).unwrap(),
            Err("no\nway".to_string())
        );
        assert!(PrepareReport::parse("oops").is_err());
    }
}
