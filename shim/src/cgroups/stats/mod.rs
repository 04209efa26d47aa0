//! Container statistics in runc's `events` shape (runc `types.Stats`, what
//! containerd's go-runc decodes): field names, units (nanoseconds, bytes)
//! and which zero values are left out follow runc 1.1.
//!
//! cgroup v1 figures come from libcgroups. cgroup v2 figures are read here
//! (`v2`): libcgroups 0.7 fails the whole call when one controller's files
//! are incomplete (e.g. `cpu.stat` without the cpu controller enabled has
//! no throttling lines), where runc reports what exists.

mod v2;

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;

pub use self::v2::read as read_v2;

fn is_zero(v: &u64) -> bool {
    *v == 0
}

#[derive(Debug, Default, Serialize)]
pub struct Stats {
    pub cpu: Cpu,
    pub cpuset: CpuSet,
    pub memory: Memory,
    pub pids: Pids,
    pub blkio: Blkio,
    pub hugetlb: BTreeMap<String, Hugetlb>,
    pub intel_rdt: BTreeMap<String, u64>,
    pub network_interfaces: Option<Vec<()>>,
}

#[derive(Debug, Default, Serialize)]
pub struct Cpu {
    pub usage: CpuUsage,
    pub throttling: Throttling,
}

#[derive(Debug, Default, Serialize)]
pub struct CpuUsage {
    #[serde(skip_serializing_if = "is_zero")]
    pub total: u64,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub percpu: Vec<u64>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub percpu_kernel: Vec<u64>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub percpu_user: Vec<u64>,
    pub kernel: u64,
    pub user: u64,
}

#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Throttling {
    #[serde(skip_serializing_if = "is_zero")]
    pub periods: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub throttled_periods: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub throttled_time: u64,
}

#[derive(Debug, Default, Serialize)]
pub struct CpuSet {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub cpus: Vec<u16>,
    pub cpu_exclusive: u64,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub mems: Vec<u16>,
    pub mem_hardwall: u64,
    pub mem_exclusive: u64,
    pub memory_migrate: u64,
    pub memory_spread_page: u64,
    pub memory_spread_slab: u64,
    pub memory_pressure: u64,
    pub sched_load_balance: u64,
    pub sched_relax_domain_level: i64,
}

#[derive(Debug, Default, Serialize)]
pub struct MemoryEntry {
    pub limit: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub usage: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub max: u64,
    pub failcnt: u64,
}

#[derive(Debug, Default, Serialize)]
pub struct Memory {
    #[serde(skip_serializing_if = "is_zero")]
    pub cache: u64,
    pub usage: MemoryEntry,
    pub swap: MemoryEntry,
    pub kernel: MemoryEntry,
    #[serde(rename = "kernelTCP")]
    pub kernel_tcp: MemoryEntry,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub raw: BTreeMap<String, u64>,
}

#[derive(Debug, Default, Serialize)]
pub struct Pids {
    #[serde(skip_serializing_if = "is_zero")]
    pub current: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub limit: u64,
}

#[derive(Debug, Default, Serialize, PartialEq, Eq)]
pub struct BlkioEntry {
    #[serde(skip_serializing_if = "is_zero")]
    pub major: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub minor: u64,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub op: String,
    #[serde(skip_serializing_if = "is_zero")]
    pub value: u64,
}

/// Per-device I/O lists; runc's JSON names, empty lists left out.
#[derive(Debug, Default)]
pub struct Blkio {
    pub service_bytes: Vec<BlkioEntry>,
    pub serviced: Vec<BlkioEntry>,
    pub queued: Vec<BlkioEntry>,
    pub service_time: Vec<BlkioEntry>,
    pub wait_time: Vec<BlkioEntry>,
    pub merged: Vec<BlkioEntry>,
    pub time: Vec<BlkioEntry>,
    pub sectors: Vec<BlkioEntry>,
}

impl Serialize for Blkio {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let lists = [
            ("ioServiceBytesRecursive", &self.service_bytes),
            ("ioServicedRecursive", &self.serviced),
            ("ioQueueRecursive", &self.queued),
            ("ioServiceTimeRecursive", &self.service_time),
            ("ioWaitTimeRecursive", &self.wait_time),
            ("ioMergedRecursive", &self.merged),
            ("ioTimeRecursive", &self.time),
            ("sectorsRecursive", &self.sectors),
        ];
        let mut map = s.serialize_map(None)?;
        for (name, list) in lists.into_iter().filter(|(_, l)| !l.is_empty()) {
            map.serialize_entry(name, list)?;
        }
        map.end()
    }
}

#[derive(Debug, Default, Serialize)]
pub struct Hugetlb {
    #[serde(skip_serializing_if = "is_zero")]
    pub usage: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub max: u64,
    pub failcnt: u64,
}

impl From<&libcgroups::stats::MemoryData> for MemoryEntry {
    fn from(m: &libcgroups::stats::MemoryData) -> Self {
        MemoryEntry {
            limit: m.limit,
            usage: m.usage,
            max: m.max_usage,
            failcnt: m.fail_count,
        }
    }
}

fn blkio_entries(v: &[libcgroups::stats::BlkioDeviceStat]) -> Vec<BlkioEntry> {
    v.iter()
        .map(|e| BlkioEntry {
            major: e.major,
            minor: e.minor,
            op: e.op_type.clone().unwrap_or_default(),
            value: e.value,
        })
        .collect()
}

/// cgroup v1: libcgroups' figures, plus the cpuset files of `cpuset_dir`
/// (libcgroups has no cpuset statistics).
pub fn from_v1(s: &libcgroups::stats::Stats, cpuset_dir: &Path) -> Stats {
    let u = &s.cpu.usage;
    let m = &s.memory;
    Stats {
        cpu: Cpu {
            usage: CpuUsage {
                total: u.usage_total,
                percpu: u.per_core_usage_total.clone(),
                percpu_kernel: u.per_core_usage_kernel.clone(),
                percpu_user: u.per_core_usage_user.clone(),
                kernel: u.usage_kernel,
                user: u.usage_user,
            },
            throttling: Throttling {
                periods: s.cpu.throttling.periods,
                throttled_periods: s.cpu.throttling.throttled_periods,
                throttled_time: s.cpu.throttling.throttled_time,
            },
        },
        cpuset: cpuset_v1(cpuset_dir),
        memory: Memory {
            cache: m.cache,
            usage: (&m.memory).into(),
            swap: (&m.memswap).into(),
            kernel: (&m.kernel).into(),
            kernel_tcp: (&m.kernel_tcp).into(),
            raw: m.stats.iter().map(|(k, v)| (k.clone(), *v)).collect(),
        },
        pids: Pids {
            current: s.pids.current,
            limit: s.pids.limit,
        },
        blkio: Blkio {
            service_bytes: blkio_entries(&s.blkio.service_bytes),
            serviced: blkio_entries(&s.blkio.serviced),
            queued: blkio_entries(&s.blkio.queued),
            service_time: blkio_entries(&s.blkio.service_time),
            wait_time: blkio_entries(&s.blkio.wait_time),
            merged: blkio_entries(&s.blkio.merged),
            time: blkio_entries(&s.blkio.time),
            sectors: blkio_entries(&s.blkio.sectors),
        },
        hugetlb: s
            .hugetlb
            .iter()
            .map(|(size, h)| {
                let entry = Hugetlb {
                    usage: h.usage,
                    max: h.max_usage,
                    failcnt: h.fail_count,
                };
                (size.clone(), entry)
            })
            .collect(),
        ..Stats::default()
    }
}

fn cpuset_v1(dir: &Path) -> CpuSet {
    // Unreadable or unparsable files read as zero (empty), as runc reports them.
    let text = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap_or_default();
    let num = |f: &str| text(f).trim().parse().unwrap_or(0);
    let list = |f: &str| parse_list(text(f).trim()).unwrap_or_default();
    CpuSet {
        cpus: list("cpuset.cpus"),
        cpu_exclusive: num("cpuset.cpu_exclusive"),
        mems: list("cpuset.mems"),
        mem_hardwall: num("cpuset.mem_hardwall"),
        mem_exclusive: num("cpuset.mem_exclusive"),
        memory_migrate: num("cpuset.memory_migrate"),
        memory_spread_page: num("cpuset.memory_spread_page"),
        memory_spread_slab: num("cpuset.memory_spread_slab"),
        memory_pressure: num("cpuset.memory_pressure"),
        sched_load_balance: num("cpuset.sched_load_balance"),
        sched_relax_domain_level: text("cpuset.sched_relax_domain_level")
            .trim()
            .parse()
            .unwrap_or(0),
    }
}

/// A cpuset list ("0-3,8,10-11") as numbers; `None` if malformed.
fn parse_list(s: &str) -> Option<Vec<u16>> {
    let mut out = Vec::new();
    for part in s.split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => out.extend(a.parse::<u16>().ok()?..=b.parse::<u16>().ok()?),
            None => out.push(part.parse().ok()?),
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpuset_lists_expand() {
        assert_eq!(parse_list("0-3,8,10-11"), Some(vec![0, 1, 2, 3, 8, 10, 11]));
        assert_eq!(parse_list(""), Some(vec![]));
        assert_eq!(parse_list("0-x"), None);
    }

    #[test]
    fn zero_values_are_left_out_as_runc_does() {
        let v = serde_json::to_value(Stats::default()).unwrap();
        assert_eq!(
            v["cpu"]["usage"],
            serde_json::json!({"kernel": 0, "user": 0})
        );
        assert_eq!(v["cpu"]["throttling"], serde_json::json!({}));
        assert_eq!(
            v["memory"]["usage"],
            serde_json::json!({"limit": 0, "failcnt": 0})
        );
        assert_eq!(v["pids"], serde_json::json!({}));
        assert_eq!(v["blkio"], serde_json::json!({}));
        assert!(v["network_interfaces"].is_null());
        assert_eq!(v["memory"]["kernelTCP"]["failcnt"], 0);
    }
}
