//! `sandboy-spec-gen`: policy → OCI bundle config, plus check, explain,
//! schema and ignore-file generation (docs/policy.md). Exit status: 0 ok, 2 usage
//! or policy error, 1 I/O failure.

use std::collections::HashMap;
use std::io::{IsTerminal as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use sandboy_spec_gen::printable::printable;
use sandboy_spec_gen::{explain, render, Error, Policy, RenderOptions};

#[derive(Parser)]
#[command(
    name = "sandboy-spec-gen",
    version,
    about = "Turn an owen.policy.toml into an OCI bundle config and related artifacts"
)]
struct Cli {
    /// Policy errors as one `file:line:col: error: …` line each, without
    /// the source snippet (for scripts and editors' problem matchers).
    #[arg(long, global = true)]
    short: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Write BUNDLE/config.json for a policy (`--bundle -` prints it).
    Generate {
        #[arg(long)]
        policy: PathBuf,
        #[arg(long)]
        bundle: PathBuf,
        /// root.path (default: `rootfs` inside the bundle).
        #[arg(long)]
        rootfs: Option<PathBuf>,
        /// Merge onto this config.json instead of sandboy's default.
        #[arg(long)]
        base: Option<PathBuf>,
        /// A bundle an ordinary user runs (docs/rootless.md): a user
        /// namespace mapping your uid and gid to 0, no cgroup resources.
        #[arg(long)]
        rootless: bool,
    },
    /// Validate policies; located errors on stderr.
    Check {
        #[arg(required = true)]
        policies: Vec<PathBuf>,
    },
    /// Say in plain words what a policy allows and denies.
    Explain { policy: PathBuf },
    /// Print the policy's annotations for `podman --annotation` (CSV-quoted)
    /// and for a Kubernetes manifest (YAML).
    Annotate {
        policy: PathBuf,
        /// Only one form.
        #[arg(long, value_enum)]
        format: Option<AnnotateFormat>,
    },
    /// Print the policy's JSON Schema.
    Schema,
    /// Print, as a unified diff, the smallest change to a policy that would
    /// allow what denial reports say was refused (docs/denials.md).
    Suggest {
        policy: PathBuf,
        /// A denial report (`run --report`, `<root>/<id>/denials.jsonl`);
        /// repeatable.
        #[arg(long = "report", required = true)]
        reports: Vec<PathBuf>,
        /// Also suggest protected paths (`/`, `/proc/*/mem`, `~/.ssh`,
        /// hidden paths, the runtime's state).
        #[arg(long)]
        force: bool,
        /// Replace paths refused this many times in one directory by the
        /// directory (0: never).
        #[arg(long, default_value_t = 3, value_name = "N")]
        collapse: usize,
        /// Write the suggested policy back to the file instead of printing
        /// the diff.
        #[arg(long)]
        write: bool,
    },
    /// Write .agentsignore, .cursorignore and .codexignore from [context] ignore.
    IgnoreFiles {
        policy: PathBuf,
        #[arg(long)]
        out: PathBuf,
    },
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum AnnotateFormat {
    Podman,
    Yaml,
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("SANDBOY_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .without_time()
        // An unwritable stderr must not turn into a panic (exit 101): the
        // default reports a failed write with eprintln!, which panics.
        .log_internal_errors(false)
        .init();

    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            // --help and --version are successes; every other parse
            // failure is a usage error (exit 2).
            let _ = e.print();
            return if e.use_stderr() {
                ExitCode::from(2)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    let report = Report { short: cli.short };
    match run(cli.command, &report) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            report.error(&e);
            ExitCode::from(e.exit_code())
        }
    }
}

/// How errors reach stderr: policy diagnostics rustc-style with the source
/// line and a caret (coloured only on a terminal), or one line each with
/// `--short`; every other error as its one-line message.
struct Report {
    short: bool,
}

impl Report {
    fn error(&self, e: &Error) {
        let diags = e.diagnostics();
        if self.short || diags.is_empty() {
            stderr(&format!("{}\n", printable(&e.to_string())));
            return;
        }
        let color = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
        let mut sources: HashMap<&str, Option<String>> = HashMap::new();
        for d in diags {
            // Diagnostics name the file as the user gave it, so it reads
            // back from the same place; if it cannot, the line suffices.
            let src = sources
                .entry(d.file.as_str())
                .or_insert_with(|| std::fs::read_to_string(&d.file).ok());
            // A source with control characters of its own (a forged
            // report) is shown plain, every one of them escaped.
            match src {
                Some(src) if color && printable(src) == src.as_str() => {
                    stderr(&d.render_snippet(src, true))
                }
                Some(src) => stderr(&printable(&d.render_snippet(src, false))),
                None => stderr(&format!("{}\n", printable(&d.to_string()))),
            }
        }
    }
}

/// Write diagnostics to stderr, ignoring a failure to: a full or closed
/// stderr must leave the exit status what it would be (eprint! panics).
fn stderr(text: &str) {
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(text.as_bytes()).and_then(|()| err.flush());
}

/// Write output to stdout; a failure is an I/O error (exit 1), never a
/// panic as print! would be.
fn stdout(text: &str) -> Result<(), Error> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(|source| Error::Io {
            action: "write",
            path: "<stdout>".into(),
            source,
        })
}

fn run(command: Command, report: &Report) -> Result<(), Error> {
    match command {
        Command::Generate {
            policy,
            bundle,
            rootfs,
            base,
            rootless,
        } => {
            let p = Policy::load(&policy)?;
            let base = base.as_deref().map(render::load_base).transpose()?;
            let rootfs = rootfs.map(|r| absolute(&r)).transpose()?;
            let json = if rootless {
                generate_rootless(&p, &RenderOptions { rootfs, base })?
            } else {
                let dir = (bundle != Path::new("-")).then_some(bundle.as_path());
                render::generate_in(&p, &RenderOptions { rootfs, base }, dir)?
            };
            if bundle == Path::new("-") {
                return stdout(&json);
            }
            std::fs::create_dir_all(&bundle).map_err(|source| Error::Io {
                action: "create bundle directory",
                path: bundle.clone(),
                source,
            })?;
            let path = bundle.join("config.json");
            sandboy_spec_gen::output::replace(&path, json.as_bytes(), 0o644).map_err(|source| {
                Error::Io {
                    action: "write",
                    path: path.clone(),
                    source,
                }
            })?;
            tracing::info!(policy = %policy.display(), config = %path.display(), "wrote config.json");
            stdout(&format!("{}\n", path.display()))
        }
        Command::Check { policies } => {
            let mut worst: Option<Error> = None;
            // An unwritable stdout must not stop the check of the rest:
            // a policy error still decides the exit status.
            let mut unwritten: Option<Error> = None;
            for path in &policies {
                match Policy::load(path) {
                    Ok(_) => {
                        if let Err(e) = stdout(&format!("{}: ok\n", path.display())) {
                            unwritten.get_or_insert(e);
                        }
                    }
                    Err(e) => {
                        report.error(&e);
                        // A policy error (2) outranks an unreadable file (1).
                        if worst.as_ref().is_none_or(|w| e.exit_code() > w.exit_code()) {
                            worst = Some(e);
                        }
                    }
                }
            }
            match (worst, unwritten) {
                (None, None) => Ok(()),
                (None, Some(e)) => Err(e),
                (Some(e), _) => std::process::exit(i32::from(e.exit_code())),
            }
        }
        Command::Explain { policy } => stdout(&explain::explain(&Policy::load(&policy)?)),
        Command::Annotate { policy, format } => {
            let p = Policy::load(&policy)?;
            render::check_renderable(&p, Some(&oci_spec::runtime::Spec::default()))?;
            let src =
                sandboy_spec_gen::input::read_text(&policy, sandboy_spec_gen::input::TEXT_MAX)
                    .map_err(|e| Error::read("read policy", &policy, e))?;
            let ann = render::engine_annotations(&p, &src)?;
            for what in sandboy_spec_gen::annotate::not_carried(&p) {
                tracing::warn!("not applied to an engine's container: {what}; name a node policy with allow_mounts to add binds (docs/node.md)");
            }
            use sandboy_spec_gen::annotate;
            stdout(&match format {
                Some(AnnotateFormat::Podman) => annotate::podman(&ann),
                Some(AnnotateFormat::Yaml) => annotate::yaml(&ann),
                None => format!(
                    "# podman run / create:\n{}\n# Kubernetes pod (or pod template) metadata:\n{}",
                    annotate::podman(&ann),
                    annotate::yaml(&ann)
                ),
            })
        }
        Command::Schema => stdout(&sandboy_spec_gen::schema_json()),
        Command::Suggest {
            policy,
            reports,
            force,
            collapse,
            write,
        } => suggest(&policy, &reports, force, collapse, write),
        Command::IgnoreFiles { policy, out } => {
            let p = Policy::load(&policy)?;
            for f in sandboy_spec_gen::write_ignore_files(&p, &out)? {
                stdout(&format!("{}\n", f.display()))?;
            }
            Ok(())
        }
    }
}

/// `generate --rootless`: the policy rendered, then made rootless for the
/// caller's own uid and gid (the policy's private network kept).
fn generate_rootless(p: &Policy, opts: &RenderOptions) -> Result<String, Error> {
    use sandboy_spec_gen::rootless;
    rootless::limits_refusal(p)?;
    let mut spec = render::render(p, opts)?;
    let (uid, gid) = rootless::caller_ids().map_err(|source| Error::Io {
        action: "read the caller's uid from",
        path: "/proc/self".into(),
        source,
    })?;
    rootless::apply(&mut spec, uid, gid, true)?;
    render::to_json(&spec)
}

fn suggest(
    policy: &Path,
    reports: &[PathBuf],
    force: bool,
    collapse: usize,
    write: bool,
) -> Result<(), Error> {
    use sandboy_spec_gen::suggest;
    let reports: Vec<&Path> = reports.iter().map(PathBuf::as_path).collect();
    let s = suggest::suggest(policy, &reports, &suggest::Options { force, collapse })?;
    for n in &s.notes {
        stderr(&format!("note: {}\n", printable(n)));
    }
    if s.diff.is_empty() {
        stderr(&format!(
            "{}: nothing to change\n",
            printable(&policy.display().to_string())
        ));
        return Ok(());
    }
    // The edited text must still be a valid policy before it is shown or
    // written (a bug here must not hand out a broken policy).
    let base = policy.parent().unwrap_or(Path::new("."));
    Policy::parse(&s.text, &policy.display().to_string(), base)?;
    if !write {
        return stdout(&s.diff);
    }
    sandboy_spec_gen::output::replace(policy, s.text.as_bytes(), 0o644).map_err(|source| {
        Error::Io {
            action: "write the suggested policy",
            path: policy.to_path_buf(),
            source,
        }
    })?;
    stdout(&format!("{}\n", policy.display()))
}

fn absolute(p: &Path) -> Result<PathBuf, Error> {
    std::path::absolute(p).map_err(|source| Error::Io {
        action: "resolve --rootfs",
        path: p.to_path_buf(),
        source,
    })
}
