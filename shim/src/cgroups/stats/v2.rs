//! cgroup v2 statistics, read as runc's fs2 does: a controller whose files
//! do not exist (not enabled for this cgroup) leaves its figures at zero;
//! any other read or parse failure is an error naming the file.

use std::collections::BTreeMap;
use std::io;
use std::path::Path;

use super::{BlkioEntry, Hugetlb, MemoryEntry, Stats};

/// The statistics of the cgroup at `dir`.
pub fn read(dir: &Path) -> io::Result<Stats> {
    let mut s = Stats::default();
    for step in [cpu, memory, pids, io_stat, hugetlb] {
        match step(dir, &mut s) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            other => other?,
        }
    }
    Ok(s)
}

fn read_file(dir: &Path, name: &str) -> io::Result<String> {
    std::fs::read_to_string(dir.join(name))
        .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", dir.join(name).display())))
}

fn bad(dir: &Path, name: &str, what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("{}: {what}", dir.join(name).display()),
    )
}

/// A single-value file; "max" is `u64::MAX`.
fn single(dir: &Path, name: &str) -> io::Result<u64> {
    let text = read_file(dir, name)?;
    match text.trim() {
        "max" => Ok(u64::MAX),
        v => v
            .parse()
            .map_err(|_| bad(dir, name, &format!("{v:?} is not a number"))),
    }
}

/// A flat-keyed file ("key value" lines).
fn keyed(dir: &Path, name: &str) -> io::Result<BTreeMap<String, u64>> {
    let text = read_file(dir, name)?;
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let (k, v) = l
                .split_once(' ')
                .ok_or_else(|| bad(dir, name, &format!("line {l:?}")))?;
            let v = v
                .trim()
                .parse()
                .map_err(|_| bad(dir, name, &format!("line {l:?}")))?;
            Ok((k.to_owned(), v))
        })
        .collect()
}

/// Optional single value: a missing file (no such accounting) is zero.
fn single_or_zero(dir: &Path, name: &str) -> io::Result<u64> {
    match single(dir, name) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(0),
        other => other,
    }
}

fn cpu(dir: &Path, s: &mut Stats) -> io::Result<()> {
    // cpu.stat exists without the cpu controller too (usage lines only).
    let st = keyed(dir, "cpu.stat")?;
    let get = |k: &str| st.get(k).copied().unwrap_or(0);
    s.cpu.usage.total = get("usage_usec") * 1000;
    s.cpu.usage.user = get("user_usec") * 1000;
    s.cpu.usage.kernel = get("system_usec") * 1000;
    s.cpu.throttling.periods = get("nr_periods");
    s.cpu.throttling.throttled_periods = get("nr_throttled");
    s.cpu.throttling.throttled_time = get("throttled_usec") * 1000;
    Ok(())
}

fn memory(dir: &Path, s: &mut Stats) -> io::Result<()> {
    let raw = keyed(dir, "memory.stat")?;
    let usage = MemoryEntry {
        usage: single(dir, "memory.current")?,
        limit: single(dir, "memory.max")?,
        max: single_or_zero(dir, "memory.peak")?,
        failcnt: 0,
    };
    // runc reports v1's mem+swap figures for swap, for compatibility.
    let swap_limit = match single_or_zero(dir, "memory.swap.max")? {
        u64::MAX => u64::MAX,
        l => l.saturating_add(usage.limit),
    };
    s.memory.swap = MemoryEntry {
        usage: single_or_zero(dir, "memory.swap.current")? + usage.usage,
        limit: swap_limit,
        ..MemoryEntry::default()
    };
    s.memory.cache = raw.get("file").copied().unwrap_or(0);
    s.memory.usage = usage;
    s.memory.raw = raw;
    Ok(())
}

fn pids(dir: &Path, s: &mut Stats) -> io::Result<()> {
    s.pids.current = match single(dir, "pids.current") {
        Ok(n) => n,
        // Without the pids controller: count the processes (runc does too).
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            read_file(dir, "cgroup.procs")?.lines().count() as u64
        }
        Err(e) => return Err(e),
    };
    // "max" (no limit) is 0, as in runc.
    s.pids.limit = match single_or_zero(dir, "pids.max")? {
        u64::MAX => 0,
        n => n,
    };
    Ok(())
}

fn io_stat(dir: &Path, s: &mut Stats) -> io::Result<()> {
    let text = read_file(dir, "io.stat")?;
    for line in text.lines() {
        let mut fields = line.split_whitespace();
        let Some((major, minor)) = fields.next().and_then(|d| d.split_once(':')) else {
            continue;
        };
        let (Ok(major), Ok(minor)) = (major.parse(), minor.parse()) else {
            return Err(bad(dir, "io.stat", &format!("line {line:?}")));
        };
        for kv in fields {
            let Some((k, v)) = kv.split_once('=') else {
                continue;
            };
            let (list, op) = match k {
                "rbytes" => (&mut s.blkio.service_bytes, "Read"),
                "wbytes" => (&mut s.blkio.service_bytes, "Write"),
                "rios" => (&mut s.blkio.serviced, "Read"),
                "wios" => (&mut s.blkio.serviced, "Write"),
                _ => continue,
            };
            let value = v
                .parse()
                .map_err(|_| bad(dir, "io.stat", &format!("line {line:?}")))?;
            list.push(BlkioEntry {
                major,
                minor,
                op: op.to_owned(),
                value,
            });
        }
    }
    Ok(())
}

fn hugetlb(dir: &Path, s: &mut Stats) -> io::Result<()> {
    for size in page_sizes() {
        let usage = single(dir, &format!("hugetlb.{size}.current"))?;
        let events = keyed(dir, &format!("hugetlb.{size}.events"))?;
        let entry = Hugetlb {
            usage,
            max: 0,
            failcnt: events.get("max").copied().unwrap_or(0),
        };
        s.hugetlb.insert(size, entry);
    }
    Ok(())
}

/// Huge page sizes as cgroup file names spell them ("2MB", "1GB").
fn page_sizes() -> Vec<String> {
    let Ok(rd) = std::fs::read_dir("/sys/kernel/mm/hugepages") else {
        return Vec::new();
    };
    let mut sizes: Vec<u64> = rd
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            name.strip_prefix("hugepages-")?
                .strip_suffix("kB")?
                .parse()
                .ok()
        })
        .collect();
    sizes.sort_unstable();
    sizes.into_iter().map(size_name).collect()
}

fn size_name(kb: u64) -> String {
    match kb {
        kb if kb >= 1 << 20 && kb % (1 << 20) == 0 => format!("{}GB", kb >> 20),
        kb if kb >= 1 << 10 && kb % (1 << 10) == 0 => format!("{}MB", kb >> 10),
        kb => format!("{kb}KB"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir_with(files: &[(&str, &str)]) -> sandboy_tests::TempDir {
        let d = sandboy_tests::TempDir::new("v2stats");
        for (name, text) in files {
            std::fs::write(d.path().join(name), text).unwrap();
        }
        d
    }

    #[test]
    fn full_controllers_read_like_runc() {
        let d = dir_with(&[
            (
                "cpu.stat",
                "usage_usec 20\nuser_usec 5\nsystem_usec 15\nnr_periods 4\nnr_throttled 1\nthrottled_usec 7\n",
            ),
            ("memory.stat", "anon 4096\nfile 8192\n"),
            ("memory.current", "65536\n"),
            ("memory.max", "max\n"),
            ("memory.swap.current", "0\n"),
            ("memory.swap.max", "max\n"),
            ("pids.current", "3\n"),
            ("pids.max", "max\n"),
            ("io.stat", "8:0 rbytes=10 wbytes=20 rios=1 wios=2 dbytes=0 dios=0\n"),
        ]);
        let s = read(d.path()).unwrap();
        assert_eq!(
            (s.cpu.usage.total, s.cpu.usage.user, s.cpu.usage.kernel),
            (20_000, 5_000, 15_000)
        );
        assert_eq!(s.cpu.throttling.throttled_time, 7_000);
        assert_eq!(s.memory.usage.usage, 65536);
        assert_eq!(s.memory.usage.limit, u64::MAX);
        assert_eq!(
            (s.memory.swap.usage, s.memory.swap.limit),
            (65536, u64::MAX)
        );
        assert_eq!(s.memory.cache, 8192);
        assert_eq!((s.pids.current, s.pids.limit), (3, 0));
        assert_eq!(s.blkio.service_bytes.len(), 2);
        assert_eq!(s.blkio.serviced[1].op, "Write");
        assert_eq!(s.blkio.serviced[1].value, 2);
        let blkio = serde_json::to_value(&s.blkio).unwrap();
        assert_eq!(
            blkio["ioServiceBytesRecursive"][0],
            serde_json::json!({"major": 8, "op": "Read", "value": 10})
        );
        assert!(blkio.get("ioQueueRecursive").is_none());
    }

    #[test]
    fn missing_controllers_leave_zeros_and_pids_are_counted() {
        let d = dir_with(&[
            ("cpu.stat", "usage_usec 20\nuser_usec 5\nsystem_usec 15\n"),
            ("cgroup.procs", "1\n2\n"),
        ]);
        let s = read(d.path()).unwrap();
        assert_eq!(s.cpu.usage.total, 20_000);
        assert_eq!(s.cpu.throttling.periods, 0);
        assert_eq!(s.pids.current, 2);
        assert_eq!(s.memory.usage.limit, 0);
    }

    #[test]
    fn a_garbled_file_is_an_error_naming_it() {
        let d = dir_with(&[("cpu.stat", "usage_usec lots\n")]);
        let e = read(d.path()).unwrap_err();
        assert!(e.to_string().contains("cpu.stat: line"), "{e}");
    }

    #[test]
    fn page_sizes_are_named_as_in_cgroup_files() {
        assert_eq!(size_name(2048), "2MB");
        assert_eq!(size_name(1 << 20), "1GB");
        assert_eq!(size_name(64), "64KB");
    }
}
