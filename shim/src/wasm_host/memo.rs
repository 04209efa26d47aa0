//! Warm creates skip `prepare`: what a `prepare` of the same wasm bytes,
//! under the same limits, by the same host binary answered is kept in the
//! compile cache (`<cache>/prepared/<key>`), so a second create of a
//! payload only hashes it (about 0.3 ms for an adapter) instead of forking
//! and executing the host (several ms). `prepare` is deterministic in those
//! three inputs, so a remembered answer is the answer it would give again;
//! the host in the container still checks the cache entry's header and
//! checksum before it loads it, as on every start. The cache directory is
//! the state root's own (0700), so only root can write what is remembered.

use std::io::Write as _;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::Path;

use sandboy_wasm_contract::digest::{hex, sha256};
use sandboy_wasm_contract::host::PrepareReport;

const DIR: &str = "prepared";

/// The key of (payload bytes, limits, host binary); `None` when one of
/// them cannot be read (then `prepare` runs, as without a memo).
pub fn key(payload: &Path, limits: &str) -> Option<String> {
    let bytes = std::fs::read(payload).ok()?;
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
    let mut input = sha256(&bytes).to_vec();
    input.extend_from_slice(limits.as_bytes());
    input.push(0);
    input.extend_from_slice(identity.as_bytes());
    Some(hex(&sha256(&input)))
}

/// The remembered answer for `key`, if its compiled code is still in
/// `cache`.
pub fn recall(cache: &Path, key: &str) -> Option<PrepareReport> {
    let line = std::fs::read_to_string(cache.join(DIR).join(key)).ok()?;
    let report = PrepareReport::parse(&line).ok()?.ok()?;
    let file = report.cache_file.as_deref()?;
    (file.starts_with(cache) && file.is_file()).then_some(report)
}

/// Remember `report` (only one that points at compiled code in `cache`);
/// a failure to write only costs the next create a `prepare`.
pub fn remember(cache: &Path, key: &str, report: &PrepareReport) {
    if !report
        .cache_file
        .as_deref()
        .is_some_and(|f| f.starts_with(cache))
    {
        return;
    }
    let dir = cache.join(DIR);
    let tmp = dir.join(format!(".{key}.{}", std::process::id()));
    let written = std::fs::create_dir_all(&dir)
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
        // The code gone: forgotten.
        std::fs::remove_file(&code).unwrap();
        assert!(recall(&cache, "k1").is_none());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
