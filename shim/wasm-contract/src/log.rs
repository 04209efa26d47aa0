//! The log line: `--log-format json` writes logrus-shaped lines (`level`,
//! `msg`, `time`), which is what containerd's runc shim and conmon read back
//! when a runtime call fails; text mirrors logrus' `time=… level=… msg=…`.
//! The runtime installs it (`cli::logging`); the wasm host, `execve`d by
//! the container's init, installs it again on the very same file through a
//! [`Handoff`], so a container's log reads the same either way.

use std::fmt::Write as _;
use std::fs::File;
use std::io::Write;
use std::os::fd::{AsRawFd, FromRawFd, RawFd};
use std::sync::{Mutex, OnceLock};

use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::Layer;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Text,
    Json,
}

impl Format {
    pub fn name(self) -> &'static str {
        match self {
            Format::Text => "text",
            Format::Json => "json",
        }
    }
}

/// What an exec'd host needs to log where the runtime does: the log
/// file's fd (`None`: stderr), the format and the threshold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Handoff {
    pub fd: Option<RawFd>,
    pub format: Format,
    pub level: Level,
}

impl Default for Handoff {
    fn default() -> Self {
        Handoff {
            fd: None,
            format: Format::Text,
            level: Level::WARN,
        }
    }
}

impl Handoff {
    /// From the host's `--log-fd`, `--log-format`, `--log-level` values.
    pub fn parse(
        fd: Option<&str>,
        format: Option<&str>,
        level: Option<&str>,
    ) -> Result<Handoff, String> {
        let d = Handoff::default();
        Ok(Handoff {
            fd: fd
                .map(|f| f.parse().map_err(|e| format!("--log-fd {f:?}: {e}")))
                .transpose()?,
            format: match format {
                None => d.format,
                Some("text") => Format::Text,
                Some("json") => Format::Json,
                Some(f) => return Err(format!("--log-format {f:?}: text or json")),
            },
            level: level
                .map(|l| l.parse().map_err(|_| format!("--log-level {l:?}")))
                .transpose()?
                .unwrap_or(d.level),
        })
    }
}

/// One event's message and other fields.
#[derive(Debug, Default)]
pub struct Fields {
    pub msg: String,
    pub extra: Vec<(&'static str, String)>,
}

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.msg = value.to_owned();
        } else {
            self.extra.push((field.name(), value.to_owned()));
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            self.msg = format!("{value:?}");
        } else {
            self.extra.push((field.name(), format!("{value:?}")));
        }
    }
}

/// Where events of libraries (`lib*` targets: libcontainer, libcgroups)
/// go below debug instead of a line: they warn about every controller a
/// host lacks, and their errors wrap one another.
pub type Divert = fn(Fields);

struct LineLayer {
    format: Format,
    max: Level,
    out: Mutex<Box<dyn Write + Send>>,
    divert: Option<Divert>,
}

fn level_name(level: &Level) -> &'static str {
    match *level {
        Level::ERROR => "error",
        Level::WARN => "warning",
        Level::INFO => "info",
        Level::DEBUG => "debug",
        Level::TRACE => "trace",
    }
}

impl<S: Subscriber> Layer<S> for LineLayer {
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        let meta = event.metadata();
        let library = self.max < Level::DEBUG && meta.target().starts_with("lib");
        let max = if library { Level::ERROR } else { self.max };
        if *meta.level() > max {
            return;
        }
        let mut fields = Fields::default();
        event.record(&mut fields);
        if let Some(divert) = self.divert.filter(|_| library) {
            divert(fields);
            return;
        }
        let line = format_line(self.format, meta.level(), fields);
        if let Ok(mut out) = self.out.lock() {
            // A failing log sink must never fail a container operation.
            let _ = out.write_all(line.as_bytes());
        }
    }
}

fn format_line(format: Format, level: &Level, fields: Fields) -> String {
    let time = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Nanos, true);
    let level = level_name(level);
    let mut s = match format {
        Format::Json => {
            let mut obj = serde_json::Map::new();
            obj.insert("level".into(), level.into());
            obj.insert("msg".into(), fields.msg.into());
            obj.insert("time".into(), time.into());
            for (k, v) in fields.extra {
                obj.insert(k.into(), v.into());
            }
            serde_json::Value::Object(obj).to_string()
        }
        Format::Text => {
            let mut s = format!("time=\"{time}\" level={level} msg={:?}", fields.msg);
            for (k, v) in fields.extra {
                let _ = write!(s, " {k}={v:?}");
            }
            s
        }
    };
    s.push('\n');
    s
}

static INSTALLED: OnceLock<Handoff> = OnceLock::new();

/// Installs the global subscriber writing to `file` (else stderr) at
/// `level` and below.
pub fn install(format: Format, level: Level, file: Option<File>, divert: Option<Divert>) {
    let fd = file.as_ref().map(|f| f.as_raw_fd());
    let out: Box<dyn Write + Send> = match file {
        Some(f) => Box::new(f),
        None => Box::new(std::io::stderr()),
    };
    let layer = LineLayer {
        format,
        max: level,
        out: Mutex::new(out),
        divert,
    };
    if tracing_subscriber::registry()
        .with(layer)
        .try_init()
        .is_ok()
    {
        let _ = INSTALLED.set(Handoff { fd, format, level });
    }
}

/// What [`install`] set up, for a host about to be exec'd.
pub fn handoff() -> Handoff {
    INSTALLED.get().copied().unwrap_or_default()
}

/// The host's side: log where the handoff says. The fd was inherited
/// across `execve` and is owned by this process from here on.
pub fn install_handoff(h: &Handoff) {
    // SAFETY: the runtime passed this fd number for exactly this purpose
    // and nothing else in the host takes ownership of it.
    let file = h.fd.map(|fd| unsafe { File::from_raw_fd(fd) });
    install(h.format, h.level, file, None);
}
