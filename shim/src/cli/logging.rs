//! Log output. `--log-format json` writes logrus-shaped lines (`level`, `msg`,
//! `time`), which is what containerd's runc shim and conmon read back when a
//! runtime call fails; text mirrors logrus' `time=… level=… msg=…`.

use std::fmt::Write as _;
use std::fs::OpenOptions;
use std::io::Write;
use std::path::Path;
use std::sync::Mutex;

use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::Layer;

pub use super::cause::explain;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Text,
    Json,
}

struct LineLayer {
    format: Format,
    max: Level,
    out: Mutex<Box<dyn Write + Send>>,
}

#[derive(Default)]
struct Fields {
    msg: String,
    extra: Vec<(&'static str, String)>,
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
        // libcontainer/libcgroups warn about every controller this host
        // lacks; below --debug only their errors are worth a line.
        let max = if self.max < Level::DEBUG && meta.target().starts_with("lib") {
            Level::ERROR
        } else {
            self.max
        };
        if *meta.level() > max {
            return;
        }
        let mut fields = Fields::default();
        event.record(&mut fields);
        // Their errors wrap one another (and the init's come from a clone
        // of this process): kept as the cause of the failure the CLI
        // reports in one line, printed as they come only with --debug.
        if self.max < Level::DEBUG && meta.target().starts_with("lib") {
            super::cause::keep(super::cause::Event {
                msg: fields.msg,
                fields: fields
                    .extra
                    .into_iter()
                    .map(|(k, v)| (k.to_owned(), v))
                    .collect(),
            });
            return;
        }
        let time = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Nanos, true);
        let level = level_name(meta.level());
        let line = match self.format {
            Format::Json => {
                let mut obj = serde_json::Map::new();
                obj.insert("level".into(), level.into());
                obj.insert("msg".into(), fields.msg.into());
                obj.insert("time".into(), time.into());
                for (k, v) in fields.extra {
                    obj.insert(k.into(), v.into());
                }
                let mut s = serde_json::Value::Object(obj).to_string();
                s.push('\n');
                s
            }
            Format::Text => {
                let mut s = format!("time=\"{time}\" level={level} msg={:?}", fields.msg);
                for (k, v) in fields.extra {
                    let _ = write!(s, " {k}={v:?}");
                }
                s.push('\n');
                s
            }
        };
        if let Ok(mut out) = self.out.lock() {
            // A failing log sink must never fail a container operation.
            let _ = out.write_all(line.as_bytes());
        }
    }
}

/// Install the global subscriber. `debug` lowers the threshold to debug;
/// otherwise warnings and errors are logged, and into a log file (an
/// engine's `--log`) sandboy's few info events too (e.g. which node policy
/// a container got).
pub fn init(format: Format, file: Option<&Path>, debug: bool) -> std::io::Result<()> {
    let out: Box<dyn Write + Send> = match file {
        Some(path) => Box::new(OpenOptions::new().create(true).append(true).open(path)?),
        None => Box::new(std::io::stderr()),
    };
    let max = if debug || std::env::var_os("SANDBOY_DEBUG").is_some() {
        Level::DEBUG
    } else if file.is_some() {
        Level::INFO
    } else {
        Level::WARN
    };
    super::cause::open();
    let layer = LineLayer {
        format,
        max,
        out: Mutex::new(out),
    };
    // Only our own events below debug; libcontainer's own error! lines
    // become the cause in the one failure line (see `cause`).
    let _ = tracing_subscriber::registry().with(layer).try_init();
    Ok(())
}
