//! The OCI-wasm host binary `sandboy-wasm`, installed next to `sandboy`:
//! the runtime links no engine, it runs this binary. At create, `prepare`
//! runs as a child (refusals fail create, the compile cache is warmed);
//! the container's init confines itself as for any payload, then
//! `execveat`s the host from an fd opened before the container existed
//! (see [`exec`]). The fd is protected like the runtime's own binary
//! (`host::sealed_exe`: a detached read-only overlay, else a sealed memfd),
//! so nothing in the container can write the host binary through
//! `/proc/<pid>/exe` (CVE-2019-5736).

pub mod exec;
pub mod memo;

use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;

use sandboy_wasm_contract::host::{Command, Prepare, PrepareReport, HOST_BIN};
use sandboy_wasm_contract::log;
use sandboy_wasm_contract::seal::{self, CacheKey};

use crate::error::{Failure, Result};

/// The host binary, opened through the runtime's own protection.
#[derive(Clone, Debug)]
pub struct Exe(Arc<OwnedFd>);

impl Exe {
    /// Opens `sandboy-wasm` beside this binary; `empty_dir` as for
    /// `host::sealed_exe::ensure`.
    pub fn open(empty_dir: &Path) -> Result<Exe> {
        crate::host::sealed_exe::sibling(HOST_BIN, empty_dir)
            .map(|fd| Exe(Arc::new(fd)))
            .map_err(|e| {
                Failure::runtime(format!(
                    "the wasm host {HOST_BIN}: {e}; install it next to sandboy (make install)"
                ))
            })
    }

    /// A path that executes exactly this fd, for a child of this process.
    fn proc_path(&self) -> PathBuf {
        PathBuf::from(format!("/proc/self/fd/{}", self.0.as_raw_fd()))
    }

    pub(crate) fn fd(&self) -> std::os::fd::BorrowedFd<'_> {
        self.0.as_fd()
    }
}

/// Where `sandboy-wasm` is: beside the binary the caller ran.
pub fn path() -> Result<PathBuf> {
    crate::host::sealed_exe::original()
        .and_then(|exe| Some(exe.parent()?.join(HOST_BIN)))
        .ok_or_else(|| Failure::runtime("cannot tell where the sandboy binary is"))
}

/// The compile cache in a state root.
pub const CACHE_DIR: &str = ".wasm-cache";

/// A compile cache: its directory, and the key its entries are sealed
/// with. The state root's is root's alone and unsealed; an ordinary
/// user's, which the user's own confined steps may be granted, is sealed
/// (`sandboy_wasm_contract::seal`).
#[derive(Clone, Copy, Debug)]
pub struct CacheRef<'a> {
    pub dir: &'a Path,
    pub key: Option<&'a CacheKey>,
}

impl<'a> CacheRef<'a> {
    /// An unsealed cache (the state root's).
    pub fn unsealed(dir: &'a Path) -> CacheRef<'a> {
        CacheRef { dir, key: None }
    }
}

/// CPU seconds `prepare` may spend compiling one payload: it runs as the
/// caller (root, for a container), outside the container's cgroup and
/// deadline, on wasm the bundle's author chose; a red team's 12 MB module
/// took a minute of CPU, and the 256 MiB file cap would allow twenty. An
/// adapter compiles in well under a second.
pub const COMPILE_CPU_SECONDS: u64 = 60;

/// A refusal of `prepare`: its exit status (2 for the payload or its
/// limits, 1 otherwise) and message.
pub struct Refused {
    pub code: i32,
    pub message: String,
}

/// Which binary runs `prepare`.
pub enum Program<'a> {
    Fd(&'a Exe),
    Path(&'a Path),
}

/// Runs `sandboy-wasm prepare` as a child, logging where this process logs.
/// `Err` only when the host could not run or answer at all.
pub fn prepare(
    program: Program<'_>,
    path: &Path,
    cache: Option<CacheRef<'_>>,
    limits: &str,
    adapter_only: bool,
) -> Result<std::result::Result<PrepareReport, Refused>> {
    let handoff = log::handoff();
    // The log file's fd is close-on-exec here; the child gets a dup of it
    // (dup clears the flag), closed again once the child is done.
    let log_fd = handoff
        .fd
        .map(|fd| {
            // SAFETY: the installed subscriber owns this fd and keeps it open
            // for the life of the process; it is only borrowed for the dup.
            let borrowed = unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) };
            rustix::io::dup(borrowed)
        })
        .transpose()
        .map_err(|e| Failure::runtime(format!("{HOST_BIN} prepare: dup of the log fd: {e}")))?;
    let command = Command::Prepare(Prepare {
        path: path.to_path_buf(),
        cache: cache.map(|c| c.dir.to_path_buf()),
        limits: limits.to_string(),
        adapter_only,
        log: log::Handoff {
            fd: log_fd.as_ref().map(|f| f.as_raw_fd()),
            ..handoff
        },
    });
    let exe = match program {
        Program::Fd(exe) => exe.proc_path(),
        Program::Path(p) => p.to_path_buf(),
    };
    let started = std::time::Instant::now();
    let mut child = std::process::Command::new(&exe);
    child
        .arg0(HOST_BIN)
        .args(command.to_args())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    // The key goes in the environment, never on the command line.
    match cache.and_then(|c| c.key) {
        Some(key) => child.env(seal::ENV, key.to_env()),
        None => child.env_remove(seal::ENV),
    };
    // SAFETY: between fork and exec the closure makes one setrlimit call,
    // async-signal-safe, on no shared state.
    unsafe {
        child.pre_exec(|| {
            let secs = COMPILE_CPU_SECONDS;
            nix::sys::resource::setrlimit(nix::sys::resource::Resource::RLIMIT_CPU, secs, secs + 1)
                .map_err(std::io::Error::from)
        });
    }
    let out = child
        .output()
        .map_err(|e| Failure::runtime(format!("{HOST_BIN} prepare: {e}")))?;
    drop(log_fd);
    let failed = |what: String| Failure::runtime(format!("{HOST_BIN} prepare: {what}"));
    if matches!(
        std::os::unix::process::ExitStatusExt::signal(&out.status),
        Some(libc::SIGXCPU | libc::SIGKILL)
    ) {
        return Ok(Err(Refused {
            code: sandboy_wasm_contract::host::EXIT_REFUSED,
            message: format!(
                "{}: compiling it took more than {COMPILE_CPU_SECONDS} s of CPU (the compile limit)",
                path.display()
            ),
        }));
    }
    let code = out
        .status
        .code()
        .ok_or_else(|| failed(format!("{}", out.status)))?;
    let line = String::from_utf8_lossy(&out.stdout);
    let report = PrepareReport::parse(&line).map_err(|e| failed(e.to_string()))?;
    Ok(match report {
        Ok(r) if code == 0 => {
            tracing::debug!(
                path = %path.display(),
                from_cache = r.from_cache,
                elapsed_ms = r.elapsed_ms,
                host_ms = started.elapsed().as_secs_f64() * 1000.0,
                "wasm payload compiled"
            );
            Ok(r)
        }
        Ok(_) => return Err(failed(format!("exit status {code} with a report"))),
        Err(message) => Err(Refused {
            code: if code == 0 { 1 } else { code },
            message,
        }),
    })
}
