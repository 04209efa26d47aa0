//! Running WASI programs: a preview-1 core module (`_start`) or a
//! `wasi:cli/run` component. Args and env from the spec, stdio inherited,
//! the container's cwd preopened (as `.` and as its own path) and nothing
//! else. The exit status comes from `proc_exit`/`exit` or `run`'s result.

use std::path::Path;

use wasmtime::component::{Component, ResourceTable};
use wasmtime::{Engine, Module, Store};
use wasmtime_wasi::p1::WasiP1Ctx;
use wasmtime_wasi::p2::bindings::sync::{Command, CommandPre};
use wasmtime_wasi::{FsPerms, I32Exit, WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

use crate::error::WasmError;
use crate::guard::{arm_store, classify};
use crate::limits::{Limits, MemoryLimiter};

struct P1State {
    wasi: WasiP1Ctx,
    limiter: MemoryLimiter,
}

struct P2State {
    ctx: WasiCtx,
    table: ResourceTable,
    limiter: MemoryLimiter,
}

impl WasiView for P2State {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.ctx,
            table: &mut self.table,
        }
    }
}

fn runtime(what: &str) -> impl Fn(wasmtime::Error) -> WasmError + '_ {
    move |e| WasmError::Runtime(format!("{what}: {e:#}"))
}

fn p1_linker(engine: &Engine) -> Result<wasmtime::Linker<P1State>, WasmError> {
    let mut linker = wasmtime::Linker::new(engine);
    wasmtime_wasi::p1::add_to_linker_sync(&mut linker, |s: &mut P1State| &mut s.wasi)
        .map_err(runtime("WASI preview 1 linker"))?;
    Ok(linker)
}

fn p2_linker(engine: &Engine) -> Result<wasmtime::component::Linker<P2State>, WasmError> {
    let mut linker = wasmtime::component::Linker::new(engine);
    wasmtime_wasi::p2::add_to_linker_sync(&mut linker).map_err(runtime("WASI preview 2 linker"))?;
    Ok(linker)
}

/// Create-time check of a preview-1 module: exports `_start`, and every
/// import is a WASI preview-1 function wasmtime provides. Runs no guest code.
pub fn validate_p1(engine: &Engine, module: &Module, path: &Path) -> Result<(), WasmError> {
    if module.get_export("_start").is_none() {
        return Err(WasmError::Unsupported {
            path: path.to_path_buf(),
            reason: "a core module must be a WASI preview-1 command exporting `_start`".into(),
        });
    }
    p1_linker(engine)?
        .instantiate_pre(module)
        .map(drop)
        .map_err(|e| WasmError::Unsupported {
            path: path.to_path_buf(),
            reason: format!("imports that WASI preview 1 does not provide: {e:#}"),
        })
}

/// Create-time check of a command component: its imports are WASI 0.2
/// interfaces wasmtime provides and it exports `wasi:cli/run`.
pub fn validate_command(
    engine: &Engine,
    component: &Component,
    path: &Path,
) -> Result<(), WasmError> {
    let unsupported = |e: wasmtime::Error| WasmError::Unsupported {
        path: path.to_path_buf(),
        reason: format!("not a runnable WASI command: {e:#}"),
    };
    let pre = p2_linker(engine)?
        .instantiate_pre(component)
        .map_err(unsupported)?;
    CommandPre::new(pre).map(drop).map_err(unsupported)
}

fn builder(args: &[String], env: &[String], cwd: &Path) -> Result<WasiCtxBuilder, WasmError> {
    let mut b = WasiCtxBuilder::new();
    b.inherit_stdio().args(args);
    let vars: Vec<(&str, &str)> = env.iter().filter_map(|kv| kv.split_once('=')).collect();
    b.envs(&vars);
    let cwd_str = cwd
        .to_str()
        .ok_or_else(|| WasmError::Runtime(format!("cwd {} is not UTF-8", cwd.display())))?;
    let preopen = |b: &mut WasiCtxBuilder, guest: &str| {
        b.preopened_dir(cwd, guest, FsPerms::ReadWrite)
            .map(drop)
            .map_err(|e| WasmError::Runtime(format!("cannot preopen {}: {e:#}", cwd.display())))
    };
    preopen(&mut b, ".")?;
    if cwd_str != "." {
        preopen(&mut b, cwd_str)?;
    }
    Ok(b)
}

fn exit_status(err: wasmtime::Error, refused: Option<&str>) -> Result<i32, WasmError> {
    if let Some(exit) = err.downcast_ref::<I32Exit>() {
        return Ok(exit.0);
    }
    Err(classify(err, refused))
}

/// Runs a preview-1 command module to completion; returns its exit status.
pub fn run_p1(
    engine: &Engine,
    module: &Module,
    limits: &Limits,
    args: &[String],
    env: &[String],
    cwd: &Path,
) -> Result<i32, WasmError> {
    let linker = p1_linker(engine)?;
    let state = P1State {
        wasi: builder(args, env, cwd)?.build_p1(),
        limiter: MemoryLimiter::new(limits.memory),
    };
    let mut store = Store::new(engine, state);
    store.limiter(|s| &mut s.limiter);
    let _watchdog = arm_store(&mut store, engine, limits)?;
    let result = linker
        .instantiate(&mut store, module)
        .and_then(|i| i.get_typed_func::<(), ()>(&mut store, "_start"))
        .and_then(|start| start.call(&mut store, ()));
    match result {
        Ok(()) => Ok(0),
        Err(e) => exit_status(e, store.data().limiter.refused()),
    }
}

/// Runs a `wasi:cli/run` component; returns its exit status.
pub fn run_command(
    engine: &Engine,
    component: &Component,
    limits: &Limits,
    args: &[String],
    env: &[String],
    cwd: &Path,
) -> Result<i32, WasmError> {
    let linker = p2_linker(engine)?;
    let state = P2State {
        ctx: builder(args, env, cwd)?.build(),
        table: ResourceTable::new(),
        limiter: MemoryLimiter::new(limits.memory),
    };
    let mut store = Store::new(engine, state);
    store.limiter(|s| &mut s.limiter);
    let _watchdog = arm_store(&mut store, engine, limits)?;
    let result = Command::instantiate(&mut store, component, &linker)
        .and_then(|cmd| cmd.wasi_cli_run().call_run(&mut store));
    match result {
        Ok(Ok(())) => Ok(0),
        Ok(Err(())) => Ok(1),
        Err(e) => exit_status(e, store.data().limiter.refused()),
    }
}
