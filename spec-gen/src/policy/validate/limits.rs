//! `[limits]` and `[wasm]`: resource limits.

use super::super::diags::Diags;
use super::super::reader::Table;
use super::values::{duration, int_in, size};
use crate::annotations::WasmLimits;
use crate::units::{ByteSize, Span};

pub(super) struct Limits {
    pub memory: Option<ByteSize>,
    pub pids: Option<i64>,
    pub cpus: Option<f64>,
    pub nofile: Option<u64>,
    pub timeout: Option<Span>,
    pub disk: Option<ByteSize>,
    pub inodes: Option<u64>,
}

pub(super) fn check(mut t: Table, d: &mut Diags) -> Limits {
    let memory = size(&mut t, d, "memory");
    let pids = int_in(
        &mut t,
        d,
        "pids",
        (1, i64::from(u32::MAX)),
        "set a positive number of tasks, e.g. 256",
    );
    let cpus = cpus(&mut t, d);
    let nofile = int_in(
        &mut t,
        d,
        "nofile",
        (1, 1 << 20),
        "use a number of open files between 1 and 1048576, e.g. 1024",
    )
    .map(|n| n as u64);
    let timeout = duration(&mut t, d, "timeout");
    let disk = size(&mut t, d, "disk");
    let inodes = int_in(
        &mut t,
        d,
        "inodes",
        (1, i64::MAX),
        "use a positive number of inodes, e.g. 100000",
    )
    .map(|n| n as u64);
    t.finish(d);
    Limits {
        memory,
        pids,
        cpus,
        nofile,
        timeout,
        disk,
        inodes,
    }
}

fn cpus(t: &mut Table, d: &mut Diags) -> Option<f64> {
    let c = t.float(d, "cpus")?;
    let n = *c.get_ref();
    if n.is_finite() && n > 0.0 && n <= 1024.0 {
        return Some(n);
    }
    d.error(
        c.span(),
        "limits.cpus",
        format!("invalid CPU count {n}"),
        "use a positive number of CPUs, e.g. 1.5",
    );
    None
}

/// `[wasm]`; `None` when the table is absent (no wasm limits annotation).
pub(super) fn wasm(t: Option<Table>, d: &mut Diags) -> Option<WasmLimits> {
    let mut t = t?;
    let limits = WasmLimits {
        fuel: int_in(
            &mut t,
            d,
            "fuel",
            (1, i64::MAX),
            "use a positive amount of fuel, e.g. 5_000_000_000",
        )
        .map(|n| n as u64),
        deadline: duration(&mut t, d, "deadline"),
        memory: size(&mut t, d, "memory"),
        max_input: size(&mut t, d, "max_input"),
        max_output: size(&mut t, d, "max_output"),
        max_results: int_in(
            &mut t,
            d,
            "max_results",
            (0, i64::MAX),
            "use a non-negative count, e.g. 10000",
        )
        .map(|n| n as u64),
    };
    t.finish(d);
    Some(limits)
}
