//! Compiled-code cache. Compiling a component takes ~100 ms, loading its
//! serialized code well under 1 ms, so warm starts load from here.
//!
//! One file per (SHA-256 of the wasm bytes, engine fingerprint). A file is
//! never trusted blindly: its header (magic, both keys, payload length,
//! payload CRC-32) is checked before the payload reaches `deserialize`, and a
//! file that fails any check is ignored and rewritten. The directory must be
//! owned by the current user and not writable by anyone else, since whoever
//! can write it can inject native code: that check is the guard against
//! tampering; the CRC catches torn or rotten files, at a fraction of the
//! cost of hashing half a megabyte on every warm start.
//!
//! An ordinary user's cache is *sealed* ([`Cache::sealed`]): the user's
//! confined steps run as the same uid and may be granted the directory, so
//! ownership proves nothing there. Each entry then ends in an
//! HMAC-SHA-256 tag over header and payload under the user's key
//! (`sandboy_wasm_contract::seal`), checked before anything else; an entry
//! without a valid tag is ignored and rewritten like a corrupt one.

use std::fs;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use wasmtime::component::Component;
use wasmtime::{Engine, Module};

use crate::engine::fingerprint;
use crate::error::WasmError;
use crate::kind::Encoding;

const MAGIC: &[u8; 8] = b"SBWCACH2";
/// The magic of a sealed entry, which ends in a [`TAG_LEN`]-byte tag.
const MAGIC_SEALED: &[u8; 8] = b"SBWCACHS";
const TAG_LEN: usize = 32;
/// magic + wasm sha + fingerprint + kind byte + payload length + payload CRC-32.
const HEADER_LEN: usize = 8 + 32 + 32 + 1 + 8 + 4;

/// Compiled code, ready to instantiate.
#[derive(Clone)]
pub enum Code {
    Module(Module),
    Component(Component),
}

/// The result of [`Cache::load_or_compile`].
#[derive(Clone)]
pub struct Compiled {
    pub code: Code,
    /// SHA-256 of the wasm bytes.
    pub sha256: [u8; 32],
    /// Loaded from the cache rather than compiled.
    pub from_cache: bool,
    /// The cache entry holding this code (none when it could not be written).
    pub file: Option<PathBuf>,
}

/// Hit/miss/rejected counters (shared by clones of a [`Cache`]).
#[derive(Debug, Default)]
struct Counters {
    hits: AtomicU64,
    misses: AtomicU64,
    rejected: AtomicU64,
}

/// A compile cache rooted at a directory.
#[derive(Clone, Debug)]
pub struct Cache {
    dir: PathBuf,
    counters: Arc<Counters>,
    key: Option<CacheKey>,
}

pub use sandboy_wasm_contract::digest::{hex, sha256};
use sandboy_wasm_contract::seal::CacheKey;

impl Cache {
    /// Opens (creating, mode 0700) the cache directory. Refuses a directory
    /// owned by someone else or writable by group/others.
    pub fn new(dir: impl Into<PathBuf>) -> Result<Cache, WasmError> {
        let dir = dir.into();
        let err = |reason: String| WasmError::Cache {
            dir: dir.clone(),
            reason,
        };
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&dir)
            .map_err(|e| err(format!("cannot create: {e}")))?;
        let meta = fs::metadata(&dir).map_err(|e| err(e.to_string()))?;
        // SAFETY: geteuid has no preconditions and cannot fail.
        let euid = unsafe { libc::geteuid() };
        if meta.uid() != euid {
            return Err(err(format!(
                "owned by uid {}, not by uid {euid}; use a private directory",
                meta.uid()
            )));
        }
        if meta.permissions().mode() & 0o022 != 0 {
            return Err(err(format!(
                "writable by group or others (mode {:o}); chmod 700 it",
                meta.permissions().mode() & 0o777
            )));
        }
        Ok(Cache {
            dir,
            counters: Arc::default(),
            key: None,
        })
    }

    /// This cache with its entries sealed under `key` (when there is
    /// one): only entries tagged with it load, and new ones are tagged.
    pub fn sealed(mut self, key: Option<CacheKey>) -> Cache {
        self.key = key;
        self
    }

    /// The cache directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Loads served from the cache so far.
    pub fn hits(&self) -> u64 {
        self.counters.hits.load(Ordering::Relaxed)
    }

    /// Compilations so far (no usable file).
    pub fn misses(&self) -> u64 {
        self.counters.misses.load(Ordering::Relaxed)
    }

    /// Files found but rejected (corrupt, mismatched, or refused by wasmtime).
    pub fn rejected(&self) -> u64 {
        self.counters.rejected.load(Ordering::Relaxed)
    }

    /// The file for these wasm bytes under this engine.
    pub fn path_for(&self, engine: &Engine, wasm: &[u8]) -> PathBuf {
        self.entry_path(&sha256(wasm), &fingerprint(engine))
    }

    fn entry_path(&self, sha: &[u8; 32], fp: &[u8; 32]) -> PathBuf {
        self.dir
            .join(format!("{}-{}.cwasm", hex(sha), &hex(fp)[..16]))
    }

    /// Loads compiled code for `wasm` from the cache, or compiles it and
    /// stores the result. Cache I/O failures never fail the call (they are
    /// logged); only compilation errors do.
    pub fn load_or_compile(
        &self,
        engine: &Engine,
        wasm: &[u8],
        path: &Path,
    ) -> Result<Compiled, WasmError> {
        let enc = crate::kind::encoding(wasm).ok_or_else(|| WasmError::NotWasm {
            path: path.to_path_buf(),
        })?;
        let sha = sha256(wasm);
        let fp = fingerprint(engine);
        let file = self.entry_path(&sha, &fp);
        match sandboy_wasm_contract::read_cache_file(&file, MAX_ENTRY) {
            Ok(data) => match self.validate_and_load(engine, &data, &sha, enc) {
                Ok(code) => {
                    self.counters.hits.fetch_add(1, Ordering::Relaxed);
                    tracing::debug!(file = %file.display(), "wasm compile cache hit");
                    return Ok(Compiled {
                        code,
                        sha256: sha,
                        from_cache: true,
                        file: Some(file),
                    });
                }
                Err(reason) => {
                    self.counters.rejected.fetch_add(1, Ordering::Relaxed);
                    tracing::warn!(file = %file.display(), %reason, "ignoring invalid wasm cache file; recompiling");
                }
            },
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                tracing::warn!(file = %file.display(), error = %e, "cannot read wasm cache file")
            }
        }
        self.counters.misses.fetch_add(1, Ordering::Relaxed);
        let code = compile(engine, wasm, enc, path)?;
        let stored = match self.store(&file, &code, &sha, &fp, enc) {
            Ok(()) => Some(file),
            Err(e) => {
                tracing::warn!(file = %file.display(), error = %e, "cannot write wasm cache file");
                None
            }
        };
        Ok(Compiled {
            code,
            sha256: sha,
            from_cache: false,
            file: stored,
        })
    }

    fn validate_and_load(
        &self,
        engine: &Engine,
        data: &[u8],
        sha: &[u8; 32],
        enc: Encoding,
    ) -> Result<Code, String> {
        match load_entry(engine, data, sha, self.key.as_ref())? {
            (code, e) if e == enc => Ok(code),
            _ => Err("kind mismatch".into()),
        }
    }

    fn store(
        &self,
        file: &Path,
        code: &Code,
        sha: &[u8; 32],
        fp: &[u8; 32],
        enc: Encoding,
    ) -> Result<(), String> {
        let payload = match code {
            Code::Module(m) => m.serialize(),
            Code::Component(c) => c.serialize(),
        }
        .map_err(|e| format!("serialize: {e:#}"))?;
        let mut data = Vec::with_capacity(HEADER_LEN + payload.len() + TAG_LEN);
        data.extend_from_slice(if self.key.is_some() {
            MAGIC_SEALED
        } else {
            MAGIC
        });
        data.extend_from_slice(sha);
        data.extend_from_slice(fp);
        data.push(enc_byte(enc));
        data.extend_from_slice(&(payload.len() as u64).to_le_bytes());
        data.extend_from_slice(&crc32fast::hash(&payload).to_le_bytes());
        data.extend_from_slice(&payload);
        if let Some(key) = &self.key {
            let tag = hmac::Mac::finalize(mac(key, &data)).into_bytes();
            data.extend_from_slice(&tag);
        }
        // Write to a private temporary file, then rename over: readers never
        // see a partial file. The name is new (O_EXCL, never through a
        // link): a step that may write an ordinary user's cache directory
        // could plant a link at a name it can guess, and the write would
        // go where it points.
        let tmp = self
            .dir
            .join(format!(".tmp-{}-{}", std::process::id(), hex(&sha[..8])));
        let _ = fs::remove_file(&tmp);
        let mut f = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .custom_flags(libc::O_NOFOLLOW)
            .mode(0o600)
            .open(&tmp)
            .map_err(|e| e.to_string())?;
        let res = f
            .write_all(&data)
            .and_then(|_| f.sync_all())
            .and_then(|_| fs::rename(&tmp, file));
        if res.is_err() {
            let _ = fs::remove_file(&tmp);
        }
        res.map_err(|e| e.to_string())
    }
}

/// The largest entry read: compiled code is a few times its wasm.
const MAX_ENTRY: u64 = 4 * sandboy_wasm_contract::MAX_WASM_FILE;

/// Whether `data` looks like a cache entry (rather than wasm bytes).
pub fn is_entry(data: &[u8]) -> bool {
    data.starts_with(MAGIC)
}

/// The HMAC-SHA-256 of a sealed entry, fed with what it covers.
fn mac(key: &CacheKey, covered: &[u8]) -> hmac::Hmac<sha2::Sha256> {
    use hmac::Mac;
    let mut m = <hmac::Hmac<sha2::Sha256> as Mac>::new_from_slice(&key.0)
        .expect("HMAC takes a key of any length");
    m.update(covered);
    m
}

/// The entry without its tag, when it is of the kind `key` asks for: a
/// sealed entry whose tag is right under `key`, or with no key an unsealed
/// one. Nothing else of the entry is looked at before this.
fn unseal<'a>(data: &'a [u8], key: Option<&CacheKey>) -> Result<&'a [u8], String> {
    match key {
        None if data.starts_with(MAGIC) => Ok(data),
        None => Err("bad magic (not an unsealed entry)".into()),
        Some(key) => {
            if !data.starts_with(MAGIC_SEALED) || data.len() < HEADER_LEN + TAG_LEN {
                return Err("not sealed with this user's key (no tag)".into());
            }
            let (covered, tag) = data.split_at(data.len() - TAG_LEN);
            // `verify_slice` compares in constant time.
            hmac::Mac::verify_slice(mac(key, covered), tag)
                .map_err(|_| "not sealed with this user's key (wrong tag)".to_string())?;
            Ok(covered)
        }
    }
}

/// Checks a cache entry's seal (with `key`: see [`Cache::sealed`]) and
/// header against the wasm digest `sha` and this engine, then loads its
/// code: an unsealed entry's file was opened by whoever vouches for its
/// directory (see [`Cache::new`]), e.g. the runtime, which hands the wasm
/// host an fd of it.
pub fn load_entry(
    engine: &Engine,
    data: &[u8],
    sha: &[u8; 32],
    key: Option<&CacheKey>,
) -> Result<(Code, Encoding), String> {
    let data = unseal(data, key)?;
    if data.len() < HEADER_LEN {
        return Err("truncated header".into());
    }
    if &data[8..40] != sha || data[40..72] != fingerprint(engine) {
        return Err("key mismatch (different wasm bytes or engine settings)".into());
    }
    let enc = match data[72] {
        1 => Encoding::Module,
        2 => Encoding::Component,
        _ => return Err("kind mismatch".into()),
    };
    let len = u64::from_le_bytes(data[73..81].try_into().map_err(|_| "bad length")?);
    let payload = &data[HEADER_LEN..];
    if payload.len() as u64 != len {
        return Err(format!(
            "payload is {} bytes, header says {len}",
            payload.len()
        ));
    }
    if crc32fast::hash(payload).to_le_bytes()[..] != data[81..85] {
        return Err("payload checksum mismatch (corrupt file)".into());
    }
    match Engine::detect_precompiled(payload) {
        Some(wasmtime::Precompiled::Module) if enc == Encoding::Module => {}
        Some(wasmtime::Precompiled::Component) if enc == Encoding::Component => {}
        _ => return Err("payload is not wasmtime code of the expected kind".into()),
    }
    // SAFETY: `deserialize` runs native code produced by a compiler, so the
    // bytes must come from `serialize` of a compatible engine. Entries live
    // in a directory only their owner can write (checked in `Cache::new`;
    // an fd handed over was opened there by that owner), and an ordinary
    // user's, which that user's steps may reach, carry a tag under the
    // user's key that was checked above (`unseal`); they were written by
    // `Cache::store`, name the exact wasm bytes and engine fingerprint in
    // their header, and the payload matches the CRC-32 recorded there;
    // wasmtime itself re-checks the engine compatibility and refuses with
    // an error otherwise.
    let code = unsafe {
        match enc {
            Encoding::Module => Module::deserialize(engine, payload).map(Code::Module),
            Encoding::Component => Component::deserialize(engine, payload).map(Code::Component),
        }
    };
    code.map(|c| (c, enc))
        .map_err(|e| format!("wasmtime refused the cached code: {e:#}"))
}

fn enc_byte(enc: Encoding) -> u8 {
    match enc {
        Encoding::Module => 1,
        Encoding::Component => 2,
    }
}

/// Compiles without any cache.
pub fn compile(
    engine: &Engine,
    wasm: &[u8],
    enc: Encoding,
    path: &Path,
) -> Result<Code, WasmError> {
    let res = match enc {
        Encoding::Module => Module::new(engine, wasm).map(Code::Module),
        Encoding::Component => Component::new(engine, wasm).map(Code::Component),
    };
    res.map_err(|e| WasmError::Compile {
        path: path.to_path_buf(),
        message: format!("{e:#}"),
    })
}
