//! OCI-wasm mode (SPEC §5, §6): the wasmtime host that runs a container's
//! `process.args[0]` when it is a WebAssembly payload. It is the library of
//! the host binary `sandboy-wasm` (`src/main.rs`); the `sandboy` runtime
//! never links it (only the engine-free `sandboy-wasm-contract`).
//!
//! * [`wasm_selected`] — do the annotations select OCI-wasm mode?
//! * [`Prepared::prepare`] — create time (`sandboy-wasm prepare`, a child of
//!   the runtime, outside the container): read the file, tell its kind,
//!   refuse adapters with imports, check WASI imports, compile (through the
//!   [`Cache`]), decode the limits. Runs no guest code.
//! * [`Prepared::from_file`] then [`Prepared::run`] — `sandboy-wasm run`,
//!   the container's init after it confined itself and `execve`d the host:
//!   load the cache entry from the fd the runtime opened, run it under
//!   fuel, an epoch deadline and a memory cap; returns the container's exit
//!   status. Errors map to exit codes through [`WasmError::exit_code`].
//!
//! Payload kinds ([`Kind`]): WASI preview-1 core modules, `wasi:cli/run`
//! components, and `ownaudit:adapter` components (zero imports; SARIF out).

pub mod adapter;
pub mod cache;
pub mod engine;
pub mod error;
pub mod guard;
pub mod kind;
pub mod limits;
mod sarif_check;
pub mod wasi;

use std::collections::HashMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use wasmtime::Engine;

pub use crate::cache::{Cache, Code, Compiled};
pub use crate::error::{WasmError, EXIT_LIMIT};
pub use crate::kind::Kind;
pub use crate::limits::{LimitKind, Limits};
pub use sandboy_wasm_contract::{wasm_selected, MAX_WASM_FILE};

/// A validated, compiled payload ready to run. Cheap to clone (the engine
/// and the compiled code are reference-counted).
#[derive(Clone)]
pub struct Prepared {
    engine: Engine,
    code: Code,
    kind: Kind,
    limits: Limits,
    sha256: [u8; 32],
    path: PathBuf,
    from_cache: bool,
    cache_file: Option<PathBuf>,
}

impl std::fmt::Debug for Prepared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prepared")
            .field("path", &self.path)
            .field("kind", &self.kind)
            .field("limits", &self.limits)
            .field("sha256", &self.sha256_hex())
            .field("from_cache", &self.from_cache)
            .finish()
    }
}

impl Prepared {
    /// Validates and compiles the payload at `path` with the limits from the
    /// `dev.sandboy.wasm.limits` annotation (defaults when absent).
    pub fn prepare(
        path: &Path,
        annotations: &HashMap<String, String>,
        cache: Option<&Cache>,
    ) -> Result<Prepared, WasmError> {
        let limits = Limits::from_annotations(annotations)?;
        Prepared::prepare_with_limits(path, limits, cache)
    }

    /// [`Prepared::prepare`] with explicit limits.
    pub fn prepare_with_limits(
        path: &Path,
        limits: Limits,
        cache: Option<&Cache>,
    ) -> Result<Prepared, WasmError> {
        let file = open_regular(path)?;
        let bytes = read_capped(file, path)?;
        let encoding = kind::encoding(&bytes).ok_or_else(|| WasmError::NotWasm {
            path: path.to_path_buf(),
        })?;
        let engine = engine::new_engine()?;
        let started = std::time::Instant::now();
        let compiled = match cache {
            Some(c) => c.load_or_compile(&engine, &bytes, path)?,
            None => Compiled {
                code: cache::compile(&engine, &bytes, encoding, path)?,
                sha256: cache::sha256(&bytes),
                from_cache: false,
                file: None,
            },
        };
        tracing::debug!(
            path = %path.display(),
            from_cache = compiled.from_cache,
            elapsed_ms = started.elapsed().as_secs_f64() * 1000.0,
            "wasm payload compiled"
        );
        Prepared::classify(engine, compiled, limits, path)
    }

    /// The host's side of a create-time prepare: `file` (an fd the runtime
    /// handed over) holds either the compile-cache entry for the wasm bytes
    /// whose digest is `sha256`, or the wasm bytes themselves (compiled
    /// here, without a cache). Checked and classified exactly as
    /// [`Prepared::prepare`] does.
    pub fn from_file(
        file: std::fs::File,
        sha256: Option<[u8; 32]>,
        limits: Limits,
        path: &Path,
    ) -> Result<Prepared, WasmError> {
        let bytes = read_capped(file, path)?;
        let engine = engine::new_engine()?;
        let compiled = match sha256.filter(|_| cache::is_entry(&bytes)) {
            Some(sha) => {
                let (code, _) =
                    cache::load_entry(&engine, &bytes, &sha, None).map_err(|reason| {
                        WasmError::Runtime(format!("{}: compiled code: {reason}", path.display()))
                    })?;
                Compiled {
                    code,
                    sha256: sha,
                    from_cache: true,
                    file: None,
                }
            }
            None => {
                let encoding = kind::encoding(&bytes).ok_or_else(|| WasmError::NotWasm {
                    path: path.to_path_buf(),
                })?;
                Compiled {
                    code: cache::compile(&engine, &bytes, encoding, path)?,
                    sha256: cache::sha256(&bytes),
                    from_cache: false,
                    file: None,
                }
            }
        };
        Prepared::classify(engine, compiled, limits, path)
    }

    /// Tells what compiled code is, refusing what sandboy does not run.
    fn classify(
        engine: Engine,
        compiled: Compiled,
        limits: Limits,
        path: &Path,
    ) -> Result<Prepared, WasmError> {
        let kind = match &compiled.code {
            Code::Module(m) => {
                wasi::validate_p1(&engine, m, path)?;
                Kind::WasiP1
            }
            Code::Component(c) => {
                // Imports are checked first: an adapter with imports is
                // refused whatever else it exports.
                let imports = kind::component_imports(&engine, c);
                match kind::component_kind(&engine, c) {
                    Some(Kind::Adapter) if !imports.is_empty() => {
                        return Err(WasmError::HasImports {
                            path: path.to_path_buf(),
                            imports,
                        })
                    }
                    Some(Kind::Adapter) => Kind::Adapter,
                    Some(Kind::WasiCommand) => {
                        wasi::validate_command(&engine, c, path)?;
                        Kind::WasiCommand
                    }
                    _ => {
                        return Err(WasmError::Unsupported {
                            path: path.to_path_buf(),
                            reason: format!(
                                "the component exports neither {} nor {}* (imports: {imports:?})",
                                kind::ADAPTER_EXPORT,
                                kind::RUN_EXPORT_PREFIX
                            ),
                        })
                    }
                }
            }
        };
        Ok(Prepared {
            engine,
            code: compiled.code,
            kind,
            limits,
            sha256: compiled.sha256,
            path: path.to_path_buf(),
            from_cache: compiled.from_cache,
            cache_file: compiled.file,
        })
    }

    /// Runs the payload with the process's `args` (`args[0]` is the wasm
    /// path), `env` (`KEY=VALUE`) and `cwd`. WASI programs use the process's
    /// stdio; an adapter writes its checked SARIF to stdout. Returns the
    /// exit status for the container.
    pub fn run(&self, args: &[String], env: &[String], cwd: &Path) -> Result<i32, WasmError> {
        let stdout = std::io::stdout();
        let mut lock = stdout.lock();
        self.run_with_output(args, env, cwd, &mut lock)
    }

    /// [`Prepared::run`] with the adapter's SARIF written to `out` (WASI
    /// programs still use the process's stdio).
    pub fn run_with_output(
        &self,
        args: &[String],
        env: &[String],
        cwd: &Path,
        out: &mut dyn Write,
    ) -> Result<i32, WasmError> {
        let result = match (&self.code, self.kind) {
            (Code::Module(m), _) => wasi::run_p1(&self.engine, m, &self.limits, args, env, cwd),
            (Code::Component(c), Kind::WasiCommand) => {
                wasi::run_command(&self.engine, c, &self.limits, args, env, cwd)
            }
            (Code::Component(c), _) => adapter::AdapterHost {
                engine: &self.engine,
                component: c,
                component_sha256: &self.sha256_hex(),
                path: &self.path,
                limits: &self.limits,
            }
            .run(args.get(1..).unwrap_or_default(), cwd, out)
            .map(|()| 0),
        };
        if let Err(e) = &result {
            if let Some(limit) = e.limit() {
                tracing::debug!(%limit, path = %self.path.display(), error = %e, "wasm guest stopped by the {limit} limit");
            }
        }
        result
    }

    /// What the payload is.
    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// The limits it runs under.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// True when the compiled code came from the cache.
    pub fn from_cache(&self) -> bool {
        self.from_cache
    }

    /// The compile-cache entry holding the code, if there is one.
    pub fn cache_file(&self) -> Option<&Path> {
        self.cache_file.as_deref()
    }

    /// SHA-256 of the wasm bytes, lower-case hex.
    pub fn sha256_hex(&self) -> String {
        cache::hex(&self.sha256)
    }
}

/// `path` opened for reading, refused unless it is a regular file. Opened
/// without blocking: a FIFO at a payload's path hung a container's create
/// past every deadline (a red team).
pub fn open_regular(path: &Path) -> Result<std::fs::File, WasmError> {
    use std::os::unix::fs::OpenOptionsExt;
    let read_err = |source| WasmError::Read {
        path: path.to_path_buf(),
        source,
    };
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(read_err)?;
    if !file.metadata().map_err(read_err)?.is_file() {
        return Err(WasmError::Unsupported {
            path: path.to_path_buf(),
            reason: "not a regular file".into(),
        });
    }
    Ok(file)
}

/// The whole file, refusing one larger than [`MAX_WASM_FILE`] without
/// reading past the cap.
fn read_capped(file: std::fs::File, path: &Path) -> Result<Vec<u8>, WasmError> {
    let too_large = || WasmError::Unsupported {
        path: path.to_path_buf(),
        reason: format!("larger than {MAX_WASM_FILE} bytes"),
    };
    // Its size first: a sparse 3 GiB payload is refused without reading
    // the cap's worth of zeros (the cap still bounds a file that grows).
    if file.metadata().is_ok_and(|m| m.len() > MAX_WASM_FILE) {
        return Err(too_large());
    }
    let mut bytes = Vec::new();
    file.take(MAX_WASM_FILE + 1)
        .read_to_end(&mut bytes)
        .map_err(|source| WasmError::Read {
            path: path.to_path_buf(),
            source,
        })?;
    if bytes.len() as u64 > MAX_WASM_FILE {
        return Err(too_large());
    }
    Ok(bytes)
}
