//! `sandboy-wasm`: the OCI-wasm host binary, installed next to `sandboy`.
//! The runtime never links wasmtime; it runs this binary instead (the
//! command line is `sandboy_wasm_contract::host`):
//!
//! * `prepare` — at create, as the runtime's child: validate and compile
//!   through the compile cache, report on stdout;
//! * `run` — the container's init, confined by the runtime (Landlock,
//!   seccomp, fd sweep) and then `execveat`ed from a protected fd: load the
//!   cached code from an inherited fd and run it; the exit status is the
//!   container's;
//! * `adapt` — `sandboy adapt` as an ordinary user, under the wrap tiers.
//!
//! The entry point is the C `main` (see [`main`]), not Rust's.

// The test harness brings its own `main` (and leaves this one's callees
// unused).
#![cfg_attr(not(test), no_main)]
#![cfg_attr(test, allow(dead_code, unused_imports))]

use std::io::Write;
use std::os::fd::FromRawFd;
use std::path::Path;

use sandboy_wasm::{Cache, Kind, Limits, Prepared, WasmError};
use sandboy_wasm_contract::host::{self, Command, PrepareReport, EXIT_REFUSED};
use sandboy_wasm_contract::log;
use sandboy_wasm_contract::seal::CacheKey;

/// The C entry point in place of Rust's `fn main`. Rust's start-up asks
/// glibc for the main thread's stack bounds (for its stack-overflow
/// message), and glibc reads `/proc/self/maps` for that: inside a container
/// whose policy does not list /proc, every run then showed a refused read
/// of `/proc/1/maps` in its denial report, a refusal of the runtime's own
/// making. Without it a host stack overflow still ends the process by
/// SIGSEGV (guest overflows are wasmtime's traps). Rust's two other
/// start-up steps are kept here: standard fds that are closed are opened
/// on /dev/null (so no file opened later lands on fd 0–2), and SIGPIPE is
/// ignored (a closed stdout is an EPIPE error, not a silent death).
/// `std::env::args` still works: glibc hands argv to std's `.init_array`.
#[cfg(not(test))]
#[no_mangle]
pub extern "C" fn main(_argc: libc::c_int, _argv: *const *const libc::c_char) -> libc::c_int {
    for fd in 0..=2 {
        // SAFETY: F_GETFD on any fd number is sound; an open of a static
        // NUL-terminated path and `signal` with SIG_IGN have no
        // preconditions.
        unsafe {
            if libc::fcntl(fd, libc::F_GETFD) == -1
                && libc::open(c"/dev/null".as_ptr(), libc::O_RDWR) != fd
            {
                libc::_exit(1);
            }
        }
    }
    // SAFETY: as above.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) };
    let args: Vec<String> = std::env::args().skip(1).collect();
    let code = match Command::parse(&args) {
        Ok(Command::Prepare(p)) => prepare(&p),
        Ok(Command::Run(r)) => run(&r),
        Ok(Command::Adapt(a)) => adapt(&a),
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "{e}");
            2
        }
    };
    let _ = std::io::stdout().flush();
    std::process::exit(code)
}

/// Exit 0 with the report, or the refusal: 2 for the payload or its
/// limits, 1 for what is not the payload's fault (reading it, the cache).
fn prepare(p: &host::Prepare) -> i32 {
    log::install_handoff(&p.log);
    let started = std::time::Instant::now();
    let outcome = Limits::from_value(&p.limits)
        .map_err(|e| (EXIT_REFUSED, e.to_string()))
        .and_then(|limits| {
            let key = CacheKey::from_env().map_err(|e| (1, e))?;
            let cache = match p.cache.as_ref().map(Cache::new).transpose() {
                Ok(c) => c.map(|c| c.sealed(key)),
                // `adapt` as an ordinary user runs on without its own cache.
                Err(e) if p.adapter_only => {
                    tracing::warn!(id = %p.path.display(), error = %e, "adapt: no compile cache; every run compiles");
                    None
                }
                Err(e) => return Err((1, format!("wasm compile cache: {e}"))),
            };
            Prepared::prepare_with_limits(&p.path, limits, cache.as_ref())
                .map_err(|e| (refusal_code(&e), e.to_string()))
        })
        .and_then(|prepared| {
            if p.adapter_only && prepared.kind() != Kind::Adapter {
                return Err((EXIT_REFUSED, format!(
                    "{}: not an ownaudit:adapter component (it is a {:?} payload); run it with `sandboy run` instead",
                    p.path.display(),
                    prepared.kind()
                )));
            }
            Ok(PrepareReport {
                kind: format!("{:?}", prepared.kind()),
                sha256: prepared.sha256_hex(),
                from_cache: prepared.from_cache(),
                cache_file: prepared.cache_file().map(Path::to_path_buf),
                elapsed_ms: started.elapsed().as_secs_f64() * 1000.0,
            })
        });
    let (code, line) = match outcome {
        Ok(report) => (0, report.to_line()),
        Err((code, message)) => (code, PrepareReport::refusal_line(&message)),
    };
    let _ = writeln!(std::io::stdout(), "{line}");
    code
}

fn refusal_code(e: &WasmError) -> i32 {
    match e {
        WasmError::Read { .. } | WasmError::Cache { .. } | WasmError::Runtime(_) => 1,
        _ => EXIT_REFUSED,
    }
}

/// The container's payload: the code from the inherited fd, the guest's
/// environment this process's own.
fn run(r: &host::Run) -> i32 {
    log::install_handoff(&r.log);
    // SAFETY: the runtime opened this fd for the host and passed its number
    // on the command line; nothing else in this process owns it.
    let file = unsafe { std::fs::File::from_raw_fd(r.code_fd) };
    let path = Path::new(&r.path);
    let result = Limits::from_value(&r.limits)
        .map_err(WasmError::from)
        .and_then(|limits| {
            let sha = r.sha256.as_deref().map(parse_sha).transpose()?;
            Prepared::from_file(file, sha, limits, path)
        })
        .and_then(|prepared| {
            tracing::debug!(id = %r.id, kind = ?prepared.kind(), "wasm host running the payload");
            let mut argv = vec![r.path.clone()];
            argv.extend(r.args.iter().cloned());
            let env: Vec<String> = std::env::vars().map(|(k, v)| format!("{k}={v}")).collect();
            prepared.run(&argv, &env, &r.cwd)
        });
    finish(&r.id, result)
}

fn parse_sha(hex: &str) -> Result<[u8; 32], WasmError> {
    sandboy_wasm_contract::digest::unhex32(hex).ok_or_else(|| {
        WasmError::Runtime(format!(
            "sandboy-wasm: --sha256 {hex:?} is not 64 hex digits"
        ))
    })
}

/// `sandboy adapt` as an ordinary user: already confined by the caller.
fn adapt(a: &host::Adapt) -> i32 {
    log::install_handoff(&log::Handoff::default());
    let result = Limits::from_value(&a.limits)
        .map_err(WasmError::from)
        .and_then(|limits| {
            let key = CacheKey::from_env().map_err(WasmError::Runtime)?;
            let cache = a
                .cache
                .as_ref()
                .and_then(|d| Cache::new(d).ok())
                .map(|c| c.sealed(key));
            let p = Prepared::prepare_with_limits(&a.component, limits, cache.as_ref())?;
            // What is run is what this open of the path holds, which may
            // not be what the caller checked (a red team swapped a WASI
            // program in between): only an adapter runs here.
            if p.kind() != Kind::Adapter {
                let _ = writeln!(
                    std::io::stderr(),
                    "sandboy: {}: not an ownaudit:adapter component (it is a {:?} payload); was it replaced after it was checked?",
                    sandboy_spec_gen::printable::printable(&a.component.display().to_string()),
                    p.kind()
                );
                return Ok(EXIT_REFUSED);
            }
            let mut argv = vec![a.component.display().to_string()];
            argv.extend(a.args.iter().cloned());
            p.run_with_output(&argv, &[], Path::new("/"), &mut std::io::stdout().lock())
        });
    finish(&a.component.display().to_string(), result)
}

/// The exit status; a failure is logged (a limit as a warning naming it)
/// and printed on stderr, as a container's would be.
fn finish(id: &str, result: Result<i32, WasmError>) -> i32 {
    match result {
        Ok(code) => code,
        Err(e) => {
            match e.limit() {
                Some(limit) => tracing::warn!(
                    id = %id,
                    limit = %limit,
                    "wasm payload stopped by its {limit} limit: {e}"
                ),
                None => tracing::error!(id = %id, "wasm payload failed: {e}"),
            }
            // The message may carry the payload's own text (an adapter's
            // error): its control characters are escaped.
            let shown = sandboy_spec_gen::printable::printable(&e.to_string()).into_owned();
            let _ = writeln!(std::io::stderr(), "sandboy: {shown}");
            e.exit_code()
        }
    }
}
