//! Log output: the file, the threshold, and libcontainer's events kept as
//! the one-line failure's cause. The line itself (logrus-shaped JSON or
//! text) is `sandboy_wasm_contract::log`, shared with the wasm host so a
//! container's log reads the same whoever wrote it.

use std::fs::OpenOptions;
use std::path::Path;

use sandboy_wasm_contract::log::{self, Fields};
use tracing::Level;

pub use super::cause::explain;
pub use sandboy_wasm_contract::log::Format;

/// libcontainer's and libcgroups' errors below --debug: kept as the cause
/// of the failure the CLI reports in one line (the init's come from a clone
/// of this process), not printed as they come.
fn keep_cause(fields: Fields) {
    super::cause::keep(super::cause::Event {
        msg: fields.msg,
        fields: fields
            .extra
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect(),
    });
}

/// Install the global subscriber. `debug` lowers the threshold to debug;
/// otherwise warnings and errors are logged, and into a log file (an
/// engine's `--log`) sandboy's few info events too (e.g. which node policy
/// a container got).
pub fn init(format: Format, file: Option<&Path>, debug: bool) -> std::io::Result<()> {
    let out = match file {
        Some(path) => Some(OpenOptions::new().create(true).append(true).open(path)?),
        None => None,
    };
    let max = if debug || std::env::var_os("SANDBOY_DEBUG").is_some() {
        Level::DEBUG
    } else if file.is_some() {
        Level::INFO
    } else {
        Level::WARN
    };
    super::cause::open();
    log::install(format, max, out, Some(keep_cause));
    Ok(())
}
