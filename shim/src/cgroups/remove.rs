//! Removing a stopped container's v1 cgroups in one pass.
//!
//! libcgroups 0.7 builds a v1 manager before it removes anything, and that
//! opens a fresh procfs and parses `/proc/self/mountinfo` and
//! `/proc/self/cgroup` once per controller: ~550 syscalls, about a fifth of
//! `delete`. For the common case — every process gone, every directory empty
//! — this reads mountinfo once and removes the same directories (the
//! controller hierarchies libcgroups manages, joined with the container's
//! `cgroupsPath`). Anything else (a process still attached, a nested cgroup,
//! an rmdir error, a unified-only host) is reported as [`NotHandled`] and
//! the caller falls back to libcontainer's delete, which kills and retries.

use std::io;
use std::path::{Component, Path, PathBuf};

/// The v1 controllers libcgroups 0.7 creates directories for.
const CONTROLLERS: &[&str] = &[
    "cpu",
    "cpuacct",
    "cpuset",
    "devices",
    "hugetlb",
    "memory",
    "pids",
    "perf_event",
    "blkio",
    "net_prio",
    "net_cls",
    "freezer",
];

/// This case is left to libcontainer.
#[derive(Debug)]
pub struct NotHandled(pub String);

/// Remove `<hierarchy>/<cgroup_path>` in every v1 controller hierarchy,
/// provided no process is left in any of them.
pub fn remove_empty(cgroup_path: &Path) -> Result<(), NotHandled> {
    let rel = relative(cgroup_path)?;
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo")
        .map_err(|e| NotHandled(format!("reading mountinfo: {e}")))?;
    let dirs: Vec<PathBuf> = controller_mounts(&mountinfo)
        .into_iter()
        .map(|m| m.join(&rel))
        .filter(|d| d.exists())
        .collect();
    // Check every hierarchy before removing any, so a fallback starts from
    // the state libcontainer expects.
    for dir in &dirs {
        let procs = std::fs::read_to_string(dir.join("cgroup.procs"))
            .map_err(|e| NotHandled(format!("{}: {e}", dir.display())))?;
        if !procs.trim().is_empty() {
            return Err(NotHandled(format!("{}: processes left", dir.display())));
        }
    }
    for dir in &dirs {
        match std::fs::remove_dir(dir) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(NotHandled(format!("{}: {e}", dir.display()))),
        }
    }
    Ok(())
}

/// For a container whose state is lost (a cut state.json, a create killed
/// half-way): thaw its cgroups in every hierarchy (v1 controllers and the v2
/// dir), SIGKILL what is in them until they are empty (at most 2 s), and
/// remove the directories, children first. How many processes were killed.
pub fn purge(cgroup_path: &Path) -> io::Result<usize> {
    let rel = relative(cgroup_path).map_err(|NotHandled(m)| io::Error::other(m))?;
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo")?;
    let dirs: Vec<PathBuf> = hierarchies(&mountinfo)
        .into_iter()
        .map(|m| m.join(&rel))
        .filter(|d| d.exists())
        .flat_map(|d| tree(&d))
        .collect();
    for dir in &dirs {
        // A frozen process takes its SIGKILL only once thawed.
        let _ = std::fs::write(dir.join("freezer.state"), "THAWED");
        let _ = std::fs::write(dir.join("cgroup.freeze"), "0");
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
    let mut killed = 0;
    loop {
        let mut left = 0;
        for dir in &dirs {
            let procs = std::fs::read_to_string(dir.join("cgroup.procs")).unwrap_or_default();
            for pid in procs.lines().filter_map(|l| l.trim().parse::<i32>().ok()) {
                left += 1;
                let pid = nix::unistd::Pid::from_raw(pid);
                if nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL).is_ok() {
                    killed += 1;
                }
            }
        }
        if left == 0 || std::time::Instant::now() > deadline {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let mut first_err = None;
    for dir in dirs.iter().rev() {
        match std::fs::remove_dir(dir) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => {
                first_err
                    .get_or_insert(io::Error::new(e.kind(), format!("{}: {e}", dir.display())));
            }
        }
    }
    first_err.map_or(Ok(killed), Err)
}

/// `dir` and every cgroup below it, parents before children.
fn tree(dir: &Path) -> Vec<PathBuf> {
    let mut out = vec![dir.to_path_buf()];
    let mut i = 0;
    while i < out.len() {
        if let Ok(entries) = std::fs::read_dir(&out[i]) {
            for e in entries.flatten() {
                if e.file_type().is_ok_and(|t| t.is_dir()) {
                    out.push(e.path());
                }
            }
        }
        i += 1;
    }
    out
}

/// Mount points of every cgroup hierarchy, v1 and v2.
fn hierarchies(mountinfo: &str) -> Vec<PathBuf> {
    mountinfo
        .lines()
        .filter_map(|line| {
            let (left, right) = line.split_once(" - ")?;
            matches!(right.split(' ').next(), Some("cgroup" | "cgroup2"))
                .then(|| left.split(' ').nth(4).map(|m| PathBuf::from(unescape(m))))?
        })
        .collect()
}

/// `cgroupsPath` as a path below a hierarchy's root; never climbing out.
fn relative(cgroup_path: &Path) -> Result<PathBuf, NotHandled> {
    let rel = below_root(cgroup_path)
        .ok_or_else(|| NotHandled(format!("cgroupsPath {} climbs", cgroup_path.display())))?;
    if rel.as_os_str().is_empty() {
        return Err(NotHandled("empty cgroupsPath".into()));
    }
    Ok(rel)
}

/// `cgroupsPath` as a path below a hierarchy's root, or `None` where a
/// `..` (or a prefix) would climb out of it. Also the check of
/// `linux.cgroupsPath` at load: libcgroups joins the path to each
/// hierarchy as given, so a climbing one made directories on the host.
pub fn below_root(cgroup_path: &Path) -> Option<PathBuf> {
    let mut rel = PathBuf::new();
    for c in cgroup_path.components() {
        match c {
            Component::RootDir | Component::CurDir => {}
            Component::Normal(part) => rel.push(part),
            Component::ParentDir | Component::Prefix(_) => return None,
        }
    }
    Some(rel)
}

/// Mount points of the cgroup v1 hierarchies that carry a known controller,
/// matched as libcgroups does: by the mount point's name (`cpu,cpuacct`
/// carries both).
fn controller_mounts(mountinfo: &str) -> Vec<PathBuf> {
    let mut mounts = Vec::new();
    for line in mountinfo.lines() {
        let Some((left, right)) = line.split_once(" - ") else {
            continue;
        };
        if right.split(' ').next() != Some("cgroup") {
            continue;
        }
        let Some(mount_point) = left.split(' ').nth(4).map(unescape) else {
            continue;
        };
        let name = Path::new(&mount_point)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if name.split(',').any(|c| CONTROLLERS.contains(&c)) {
            mounts.push(PathBuf::from(mount_point));
        }
    }
    mounts
}

/// mountinfo escapes space, tab, newline and backslash as `\ooo`.
pub(crate) fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let octal = bytes
            .get(i + 1..i + 4)
            .filter(|d| bytes[i] == b'\\' && d.iter().all(|b| (b'0'..=b'7').contains(b)));
        match octal {
            Some(d) => {
                out.push((d[0] - b'0') * 64 + (d[1] - b'0') * 8 + (d[2] - b'0'));
                i += 4;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTINFO: &str = "\
25 1 0:23 / /sys/fs/cgroup rw - tmpfs tmpfs rw,mode=755
26 25 0:24 / /sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct
27 25 0:25 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
28 25 0:26 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd
29 25 0:27 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
30 25 0:28 / /mnt/with\\040space/pids rw shared:5 - cgroup cgroup rw,pids
";

    #[test]
    fn controller_hierarchies_only() {
        assert_eq!(
            controller_mounts(MOUNTINFO),
            [
                PathBuf::from("/sys/fs/cgroup/cpu,cpuacct"),
                PathBuf::from("/sys/fs/cgroup/memory"),
                PathBuf::from("/mnt/with space/pids"),
            ]
        );
    }

    #[test]
    fn cgroups_path_stays_below_the_hierarchy() {
        assert_eq!(
            relative(Path::new("/sandboy/c1")).unwrap(),
            PathBuf::from("sandboy/c1")
        );
        assert!(relative(Path::new("/a/../../etc")).is_err());
        assert!(relative(Path::new("/")).is_err());
    }
}
