//! Log output: the file, the threshold, and libcontainer's events kept as
//! the one-line failure's cause. The line itself (logrus-shaped JSON or
//! text) is `sandboy_wasm_contract::log`, shared with the wasm host so a
//! container's log reads the same whoever wrote it.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
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
        Some(path) => Some(open_log(path)?),
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

/// The log file, opened to append the way an engine's `--log` names it,
/// but never through a link planted at its name, never blocking on a FIFO
/// or a device, and never into a file with other names: root's `--log`
/// in a shared directory once created and appended to the file another
/// user's link named (a red team's `/etc/nologin`), and hung on a FIFO.
fn open_log(path: &Path) -> std::io::Result<File> {
    let file = OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o640)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ELOOP) => refused("it is a symbolic link"),
            // A FIFO no one reads (or a socket) refuses a non-blocking open.
            Some(libc::ENXIO) => refused("it is not a regular file"),
            _ => e,
        })?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(refused("it is not a regular file"));
    }
    // A hard link gives a file another name: the one a user planted here
    // would make the log land in, say, a root-owned configuration file.
    if meta.nlink() > 1 {
        return Err(refused("it has other names (hard links)"));
    }
    Ok(file)
}

fn refused(why: &str) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::InvalidInput,
        format!("{why}; name a regular file of your own"),
    )
}
