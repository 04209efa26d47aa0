//! Warm creates skip `prepare`: what a `prepare` of the same wasm bytes,
//! under the same limits, by the same host binary answered is kept in the
//! compile cache (`<cache>/prepared/<key>`), so a second create of a
//! payload only hashes it (about 0.3 ms for an adapter) instead of forking
//! and executing the host (several ms). `prepare` is deterministic in those
//! three inputs, so a remembered answer is the answer it would give again;
//! the host in the container still checks the cache entry's header and
//! checksum before it loads it, as on every start. The cache directory is
//! the state root's own (0700), or for `adapt` as an ordinary user that
//! user's own, which is used only while it is private to them (owned by
//! them, writable by no one else: [`private`]), the rule the host applies
//! to the compiled code itself.

use std::io::Write as _;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::Path;

use sandboy_wasm_contract::digest::{self, hex, sha256};
use sandboy_wasm_contract::host::PrepareReport;

use super::{CacheRef, Program, Refused};
use crate::error::Result;

const DIR: &str = "prepared";

/// `prepare` of `payload` under `limits` (`adapter_only`: refuse anything
/// but a zero-import adapter component), or the answer it gave before for
/// the same bytes, limits and host binary. Only successful answers are
/// remembered: a refusal is asked again, so its message is always current.
pub fn prepare(
    program: Program<'_>,
    payload: &Path,
    cache: CacheRef<'_>,
    limits: &str,
    adapter_only: bool,
) -> Result<std::result::Result<PrepareReport, Refused>> {
    let key = key(payload, limits, adapter_only, cache);
    if let Some(r) = key.as_ref().and_then(|k| recall(cache.dir, &k.name)) {
        // The same event as a prepare's (from the cache, not compiled now).
        tracing::debug!(path = %payload.display(), from_cache = true, remembered = true, "wasm payload compiled");
        return Ok(Ok(r));
    }
    let answer = super::prepare(program, payload, Some(cache), limits, adapter_only)?;
    if let (Ok(r), Some(k)) = (&answer, &key) {
        // Only an answer about the bytes the key was made of: the file
        // may have been replaced between our read and the host's (a red
        // team's swap made other containers' payload run theirs).
        if r.sha256 == k.payload_sha256 {
            remember(cache.dir, &k.name, r);
        }
    }
    Ok(answer)
}

/// A memo key, and the digest of the payload bytes it was made of.
struct Key {
    name: String,
    payload_sha256: String,
}

/// The key of (payload bytes, limits, adapter-only, host binary, the
/// cache's seal); `None` when one of them cannot be read, or the payload
/// is larger than any wasm file the host accepts (then `prepare` runs, as
/// without a memo, and refuses it). The payload is hashed as it streams,
/// never held whole. A new seal (the keyring lost its key) makes every
/// entry stale, so it must make every answer stale too, or warm starts
/// would go on pointing the host at code it now refuses.
fn key(payload: &Path, limits: &str, adapter_only: bool, cache: CacheRef<'_>) -> Option<Key> {
    let file = crate::host::open_regular(payload).ok()?;
    let payload_sha = digest::sha256_reader(file, sandboy_wasm_contract::MAX_WASM_FILE)?;
    // The host binary by identity and version: a replaced or rebuilt
    // binary is another key.
    let host = std::fs::metadata(super::path().ok()?).ok()?;
    let identity = format!(
        "{}:{}:{}:{}.{}",
        host.dev(),
        host.ino(),
        host.size(),
        host.mtime(),
        host.mtime_nsec()
    );
    let mut input = payload_sha.to_vec();
    input.extend_from_slice(limits.as_bytes());
    input.push(0);
    input.push(u8::from(adapter_only));
    input.extend_from_slice(identity.as_bytes());
    if let Some(seal) = cache.key {
        input.extend_from_slice(seal.id().as_bytes());
    }
    Some(Key {
        name: hex(&sha256(&input)),
        payload_sha256: hex(&payload_sha),
    })
}

/// Whether `dir` is this user's alone: owned by the effective uid and
/// writable by no one else. Whoever can write the memo can make a create
/// skip the check of a payload, as whoever can write the compiled code can
/// inject native code.
fn private(dir: &Path) -> bool {
    std::fs::symlink_metadata(dir).is_ok_and(|m| {
        m.is_dir() && m.uid() == nix::unistd::geteuid().as_raw() && m.mode() & 0o022 == 0
    })
}

/// The remembered answer for `key`, if its compiled code is still in
/// `cache` and both directories are private.
fn recall(cache: &Path, key: &str) -> Option<PrepareReport> {
    if !private(cache) || !private(&cache.join(DIR)) {
        return None;
    }
    // At most a few KiB, as `remember` writes it (the cache's rule for
    // what it reads: a red team's FIFO there hung the next `adapt`).
    let line = sandboy_wasm_contract::read_cache_file(&cache.join(DIR).join(key), 16 << 10).ok()?;
    let line = String::from_utf8(line).ok()?;
    let report = PrepareReport::parse(&line).ok()?.ok()?;
    let file = report.cache_file.as_deref()?;
    (file.starts_with(cache) && file.is_file()).then_some(report)
}

/// Remember `report` (only one that points at compiled code in `cache`);
/// a failure to write only costs the next create a `prepare`.
fn remember(cache: &Path, key: &str, report: &PrepareReport) {
    if !report
        .cache_file
        .as_deref()
        .is_some_and(|f| f.starts_with(cache))
        || !private(cache)
    {
        return;
    }
    let dir = cache.join(DIR);
    let tmp = dir.join(format!(".{key}.{}", std::process::id()));
    let written = std::fs::DirBuilder::new()
        .mode(0o700)
        .create(&dir)
        .or_else(|e| match e.kind() {
            std::io::ErrorKind::AlreadyExists => Ok(()),
            _ => Err(e),
        })
        .and_then(|()| {
            std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&tmp)
        })
        .and_then(|mut f| f.write_all(report.to_line().as_bytes()))
        .and_then(|()| std::fs::rename(&tmp, dir.join(key)));
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        tracing::debug!(error = %e, "wasm: prepare answer not remembered");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(cache_file: Option<std::path::PathBuf>) -> PrepareReport {
        PrepareReport {
            kind: "Adapter".into(),
            sha256: "ab".into(),
            from_cache: false,
            cache_file,
            elapsed_ms: 1.0,
        }
    }

    #[test]
    fn remembers_only_answers_with_code_in_the_cache() {
        let dir = std::env::temp_dir().join(format!("wasm-memo-unit-{}", std::process::id()));
        let cache = dir.join("c");
        std::fs::create_dir_all(&cache).unwrap();
        let code = cache.join("x.cwasm");
        std::fs::write(&code, b"code").unwrap();
        remember(&cache, "k1", &report(Some(code.clone())));
        assert_eq!(recall(&cache, "k1").unwrap().cache_file, Some(code.clone()));
        // Not in the cache, or none: not remembered.
        remember(&cache, "k2", &report(Some(dir.join("elsewhere"))));
        remember(&cache, "k3", &report(None));
        assert!(recall(&cache, "k2").is_none() && recall(&cache, "k3").is_none());
        // A memo that is a FIFO or a link to a device is ignored, at once
        // (a red team's made the next adapt hang, or read /dev/zero).
        let memo = cache.join(DIR).join("k1");
        std::fs::remove_file(&memo).unwrap();
        nix::unistd::mkfifo(&memo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        assert!(recall(&cache, "k1").is_none());
        std::fs::remove_file(&memo).unwrap();
        std::os::unix::fs::symlink("/dev/zero", &memo).unwrap();
        assert!(recall(&cache, "k1").is_none());
        std::fs::remove_file(&memo).unwrap();
        remember(&cache, "k1", &report(Some(code.clone())));
        assert!(recall(&cache, "k1").is_some());
        // The code gone: forgotten.
        std::fs::remove_file(&code).unwrap();
        assert!(recall(&cache, "k1").is_none());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
