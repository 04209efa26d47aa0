//! `[limits]` and `[wasm]`: resource limits. The `[limits]` keys are read
//! one function each, straight into [`Policy`](super::Policy)'s fields (no
//! mirror struct to copy them through).

use super::super::diags::Diags;
use super::super::reader::Table;
use super::values::{count, duration, int_in, size, size_at};
use crate::annotations::WasmLimits;
use crate::units::ByteSize;

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
        (crate::policy::NOFILE_FLOOR as i64, 1 << 20),
        &format!(
            "use a number of open files between {floor} and 1048576, e.g. 1024 (below {floor}: {})",
            crate::policy::NOFILE_FLOOR_WHY,
            floor = crate::policy::NOFILE_FLOOR
        ),
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

/// The smallest `memory` a container starts with (Docker's and runc's
/// floor, "Minimum memory limit allowed is 6MB").
pub(super) const MIN_MEMORY: u64 = 6 << 20;

/// `memory`: at least [`MIN_MEMORY`]. Below it the kernel refuses the limit
/// (usage is already higher) or the runtime's init is OOM-killed while
/// it sets the container up, found only at start.
pub(super) fn memory(t: &mut Table, d: &mut Diags) -> Option<ByteSize> {
    let key = t.key("memory");
    let (m, span) = size_at(t, d, "memory")?;
    if m.0 >= MIN_MEMORY {
        return Some(m);
    }
    d.error(
        span,
        &key,
        format!("memory limit {m} is below the minimum 6MiB (the kernel refuses a limit under the usage, or the runtime's init is killed setting the container up)"),
        "use at least \"6MiB\", e.g. \"256MiB\"",
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

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::Policy;

    fn parse(memory: &str) -> Result<Policy, crate::Error> {
        let src = format!("version = 1\n[limits]\nmemory = {memory:?}\n");
        Policy::parse(&src, "p.toml", Path::new("/"))
    }

    #[test]
    fn memory_below_the_runtime_floor_is_refused_at_its_value() {
        for m in ["1B", "4KiB", "100KiB", "5MiB", "6291455B"] {
            let err = parse(m).unwrap_err();
            assert_eq!(err.exit_code(), 2);
            let d = err.diagnostics();
            assert_eq!(d.len(), 1, "{m}: {err}");
            assert_eq!(d[0].key, "limits.memory", "{err}");
            assert_eq!((d[0].location.line, d[0].location.column), (3, 10), "{err}");
            let text = err.to_string();
            assert!(text.contains("below the minimum 6MiB"), "{text}");
            assert!(text.contains("use at least \"6MiB\""), "{text}");
        }
        for (m, bytes) in [
            ("6MiB", 6u64 << 20),
            ("6291456B", 6 << 20),
            ("64MiB", 64 << 20),
        ] {
            assert_eq!(parse(m).unwrap().memory.unwrap().0, bytes, "{m}");
        }
    }

    #[test]
    fn wasm_memory_keeps_no_floor() {
        let src = "version = 1\n[wasm]\nmemory = \"64KiB\"\n";
        let p = Policy::parse(src, "p.toml", Path::new("/")).unwrap();
        assert_eq!(p.wasm.unwrap().memory.unwrap().0, 64 << 10);
    }
}
