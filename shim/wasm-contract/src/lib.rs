//! The lean half of OCI-wasm mode: everything the `sandboy` runtime needs to
//! know about a WebAssembly payload without linking an engine, and what it
//! agrees on with the host binary (`sandboy-wasm`, crate `sandboy-wasm`)
//! that the confined init `execve`s.
//!
//! * [`wasm_selected`] — do the annotations select OCI-wasm mode?
//! * [`Limits`] — the `[wasm]` limits, decoded from the annotation.
//! * [`encoding`] — module or component, from the 8-byte header.
//! * [`digest`] — SHA-256 and hex, for provenance and the compile cache.
//! * [`seal`] — the key sealing an ordinary user's compile cache, and how
//!   the runtime hands it to the host.
//! * [`host`] — the host binary's name, command line and report.
//! * [`log`] — the log line both processes write into one `--log`.

pub mod digest;
pub mod host;
pub mod limits;
pub mod log;
pub mod seal;
pub mod select;

pub use crate::limits::{BadLimits, LimitKind, Limits};
pub use crate::select::wasm_selected;

/// `$schema` of every SARIF log sandboy writes.
pub const SARIF_SCHEMA: &str = "https://json.schemastore.org/sarif-2.1.0.json";

/// Largest `.wasm` file accepted (read with a cap, never past it).
pub const MAX_WASM_FILE: u64 = 256 << 20;

/// The bytes of the regular file at exactly `path` (no link followed; the
/// open never blocks), at most `limit` of them. The compile cache and its
/// memos are read this way: in an ordinary user's cache, which the user's
/// confined steps may write, a name pointed at `/dev/zero` or a FIFO made
/// the next `adapt` read forever or hang (a red team).
pub fn read_cache_file(path: &std::path::Path, limit: u64) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)?;
    let meta = f.metadata()?;
    if !meta.is_file() || meta.len() > limit {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("not a regular file of at most {limit} bytes"),
        ));
    }
    let mut data = Vec::with_capacity(meta.len() as usize);
    f.take(limit).read_to_end(&mut data)?;
    Ok(data)
}

/// The binary encoding, from the 8-byte header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    Module,
    Component,
}

/// Reads the header: `\0asm` then version 1 layer 0 (module) or version
/// 0x0d layer 1 (component).
pub fn encoding(bytes: &[u8]) -> Option<Encoding> {
    match bytes.get(..8)? {
        [0, b'a', b's', b'm', 1, 0, 0, 0] => Some(Encoding::Module),
        [0, b'a', b's', b'm', _, _, 1, 0] => Some(Encoding::Component),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers() {
        assert_eq!(encoding(b"\0asm\x01\0\0\0"), Some(Encoding::Module));
        assert_eq!(encoding(b"\0asm\x0d\0\x01\0"), Some(Encoding::Component));
        assert_eq!(encoding(b"\x7fELF\x02\x01\x01\0"), None);
        assert_eq!(encoding(b"\0asm"), None);
    }
}
