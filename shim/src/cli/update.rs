use std::io::Read;

use libcgroups::common::{CgroupManager, ControllerOpt};
use oci_spec::runtime::{
    LinuxBlockIoBuilder, LinuxCpuBuilder, LinuxMemoryBuilder, LinuxPidsBuilder, LinuxResources,
};

use super::args::Update;
use crate::container::Runtime;
use crate::error::{Failure, Result};

pub fn run(rt: &Runtime, args: Update) -> Result<i32> {
    let resources = match &args.resources {
        Some(path) => read_resources(path)?,
        None => from_flags(&args)?,
    };
    let at = args.resources.as_ref().map_or_else(
        || "update".to_owned(),
        |p| format!("update --resources {}", p.display()),
    );
    crate::container::limits::check_update(&resources, crate::cgroups::unified_host(), &at)?;
    let c = rt.load(&args.container_id)?;
    within_policy(&c, &resources)?;
    let manager = crate::cgroups::cgroup_manager(&c)?;
    manager
        .apply(&ControllerOpt {
            resources: &resources,
            disable_oom_killer: false,
            oom_score_adj: None,
            freezer_state: None,
        })
        .map_err(|e| Failure::runtime(format!("updating resources of {}: {e}", c.id())))?;
    Ok(0)
}

/// A policy-confined container's limits may be lowered, never raised: the
/// policy's memory, pids and CPU are what keep a step from exhausting the
/// host, and a red team's `update` took a container from 32 pids and
/// 64 MiB to `max` and 4 GiB. The ceiling is the container's spec, where
/// the policy's limits are (the stricter of the engine's and the policy's).
fn within_policy(c: &libcontainer::container::Container, asked: &LinuxResources) -> Result<()> {
    let Ok(spec) = oci_spec::runtime::Spec::load(c.bundle().join("config.json")) else {
        return Ok(());
    };
    if !crate::init::privilege::policy_confined(&spec) {
        return Ok(());
    }
    let Some(have) = spec.linux().as_ref().and_then(|l| l.resources().clone()) else {
        return Ok(());
    };
    let limit = |v: Option<i64>| v.filter(|&v| v >= 0);
    let checks = [
        (
            "memory",
            limit(have.memory().as_ref().and_then(|m| m.limit())),
            asked.memory().as_ref().and_then(|m| m.limit()),
        ),
        (
            "memory-swap",
            limit(have.memory().as_ref().and_then(|m| m.swap())),
            asked.memory().as_ref().and_then(|m| m.swap()),
        ),
        (
            "pids-limit",
            limit(have.pids().as_ref().map(|p| p.limit())),
            asked.pids().as_ref().map(|p| p.limit()),
        ),
        ("cpu-quota", limit(cpu_share(&have)), cpu_share(asked)),
    ];
    for (flag, ceiling, value) in checks {
        if let (Some(ceiling), Some(value)) = (ceiling, value) {
            if value < 0 || value > ceiling {
                return Err(Failure::config(format!(
                    "update {}: --{flag} {value} is above the {ceiling} the container's policy allows (-1 is unlimited); a policy's limits may only be lowered",
                    c.id()
                )));
            }
        }
    }
    Ok(())
}

/// CPU quota in microseconds per second of the period, comparable across
/// periods.
fn cpu_share(r: &LinuxResources) -> Option<i64> {
    let cpu = r.cpu().as_ref()?;
    let quota = cpu.quota()?;
    let period = cpu.period().unwrap_or(100_000).max(1) as i64;
    Some(if quota < 0 {
        -1
    } else {
        quota * 1_000_000 / period
    })
}

fn read_resources(path: &std::path::Path) -> Result<LinuxResources> {
    let mut text = Vec::new();
    if path.as_os_str() == "-" {
        std::io::stdin().read_to_end(&mut text)?;
    } else {
        text = sandboy_spec_gen::input::read_bytes(path, sandboy_spec_gen::input::TEXT_MAX, 0)
            .map_err(|e| Failure::config(format!("--resources {}: {e}", path.display())))?;
    }
    serde_json::from_slice(&text).map_err(|e| {
        Failure::config(format!(
            "{}:{}:{}: invalid linux resources JSON: {e}",
            path.display(),
            e.line(),
            e.column()
        ))
    })
}

/// Memory as runc takes it: bytes, or a number with k/m/g (binary) suffix;
/// -1 for unlimited.
fn mem(flag: &str, v: &Option<String>) -> Result<Option<i64>> {
    let Some(v) = v else { return Ok(None) };
    let t = v.trim().to_ascii_lowercase();
    let t = t.trim_end_matches('b');
    let (num, mult) = match t.chars().last() {
        Some('k') => (&t[..t.len() - 1], 1i64 << 10),
        Some('m') => (&t[..t.len() - 1], 1 << 20),
        Some('g') => (&t[..t.len() - 1], 1 << 30),
        _ => (t, 1),
    };
    num.parse::<i64>()
        .ok()
        .and_then(|n| {
            if n == -1 {
                Some(-1)
            } else {
                n.checked_mul(mult)
            }
        })
        .map(Some)
        .ok_or_else(|| {
            Failure::usage(format!(
                "--{flag} {v:?}: expected bytes or a size like 512m"
            ))
        })
}

fn from_flags(a: &Update) -> Result<LinuxResources> {
    let bad = |e: oci_spec::OciSpecError| Failure::usage(e.to_string());
    let mut r = LinuxResources::default();
    let (limit, reservation, swap) = (
        mem("memory", &a.memory)?,
        mem("memory-reservation", &a.memory_reservation)?,
        mem("memory-swap", &a.memory_swap)?,
    );
    if limit.is_some() || reservation.is_some() || swap.is_some() {
        let mut m = LinuxMemoryBuilder::default();
        if let Some(v) = limit {
            m = m.limit(v);
        }
        if let Some(v) = reservation {
            m = m.reservation(v);
        }
        if let Some(v) = swap {
            m = m.swap(v);
        }
        r.set_memory(Some(m.build().map_err(bad)?));
    }
    if a.cpu_period.is_some()
        || a.cpu_quota.is_some()
        || a.cpu_share.is_some()
        || a.cpu_rt_period.is_some()
        || a.cpu_rt_runtime.is_some()
        || a.cpuset_cpus.is_some()
        || a.cpuset_mems.is_some()
    {
        let mut c = LinuxCpuBuilder::default();
        if let Some(v) = a.cpu_period {
            c = c.period(v);
        }
        if let Some(v) = a.cpu_quota {
            c = c.quota(v);
        }
        if let Some(v) = a.cpu_share {
            c = c.shares(v);
        }
        if let Some(v) = a.cpu_rt_period {
            c = c.realtime_period(v);
        }
        if let Some(v) = a.cpu_rt_runtime {
            c = c.realtime_runtime(v);
        }
        if let Some(v) = &a.cpuset_cpus {
            c = c.cpus(v.clone());
        }
        if let Some(v) = &a.cpuset_mems {
            c = c.mems(v.clone());
        }
        r.set_cpu(Some(c.build().map_err(bad)?));
    }
    if let Some(v) = a.pids_limit {
        r.set_pids(Some(
            LinuxPidsBuilder::default().limit(v).build().map_err(bad)?,
        ));
    }
    if let Some(v) = a.blkio_weight {
        r.set_block_io(Some(
            LinuxBlockIoBuilder::default()
                .weight(v)
                .build()
                .map_err(bad)?,
        ));
    }
    if a.kernel_memory.is_some() || a.kernel_memory_tcp.is_some() {
        tracing::debug!("kernel memory limits are ignored (not supported by the kernel)");
    }
    Ok(r)
}
