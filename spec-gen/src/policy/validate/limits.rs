//! `[limits]` and `[wasm]`: resource limits. The `[limits]` keys are read
//! one function each, straight into [`Policy`](super::Policy)'s fields (no
//! mirror struct to copy them through).

use super::super::diags::Diags;
use super::super::reader::Table;
use super::values::{count, duration, int_in, size};
use crate::annotations::WasmLimits;

pub(super) fn pids(t: &mut Table, d: &mut Diags) -> Option<i64> {
    int_in(
        t,
        d,
        "pids",
        (1, i64::from(u32::MAX)),
        "set a positive number of tasks, e.g. 256",
    )
}

pub(super) fn nofile(t: &mut Table, d: &mut Diags) -> Option<u64> {
    count(
        t,
        d,
        "nofile",
        (1, 1 << 20),
        "use a number of open files between 1 and 1048576, e.g. 1024",
    )
}

pub(super) fn inodes(t: &mut Table, d: &mut Diags) -> Option<u64> {
    count(
        t,
        d,
        "inodes",
        (1, i64::MAX),
        "use a positive number of inodes, e.g. 100000",
    )
}

pub(super) fn cpus(t: &mut Table, d: &mut Diags) -> Option<f64> {
    let c = t.float(d, "cpus")?;
    let n = *c.get_ref();
    // The kernel's smallest CFS quota is 1 ms of a 100 ms period: below
    // 0.01 CPUs every container failed with a raw cgroup error.
    if n.is_finite() && (0.01..=1024.0).contains(&n) {
        return Some(n);
    }
    d.error(
        c.span(),
        "limits.cpus",
        format!("invalid CPU count {n}"),
        "use a number of CPUs from 0.01 (the kernel's smallest quota) to 1024, e.g. 1.5",
    );
    None
}

/// `[wasm]`; `None` when the table is absent (no wasm limits annotation).
pub(super) fn wasm(t: Option<Table>, d: &mut Diags) -> Option<WasmLimits> {
    let mut t = t?;
    let limits = WasmLimits {
        fuel: count(
            &mut t,
            d,
            "fuel",
            (1, i64::MAX),
            "use a positive amount of fuel, e.g. 5_000_000_000",
        ),
        deadline: duration(&mut t, d, "deadline"),
        memory: size(&mut t, d, "memory"),
        max_input: size(&mut t, d, "max_input"),
        max_output: size(&mut t, d, "max_output"),
        max_results: count(
            &mut t,
            d,
            "max_results",
            (0, i64::MAX),
            "use a non-negative count, e.g. 10000",
        ),
    };
    t.finish(d);
    Some(limits)
}
