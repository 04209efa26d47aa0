//! OOM kills: read from the container's memory cgroup (v1 `oom_control`,
//! v2 `memory.events`) and reported as `warn` events, so a memory bomb shows
//! up in the log with the container id instead of as a bare exit 137.

use std::path::{Path, PathBuf};

use libcontainer::container::Container;

/// Number of OOM kills recorded for the container's cgroup, if readable.
pub fn kills(c: &Container) -> Option<u64> {
    let rel = c.spec().ok()?.cgroup_path;
    let rel = rel.strip_prefix("/").unwrap_or(&rel).to_path_buf();
    let candidates: [(PathBuf, &str); 3] = [
        (
            Path::new("/sys/fs/cgroup/memory")
                .join(&rel)
                .join("memory.oom_control"),
            "oom_kill ",
        ),
        (
            Path::new("/sys/fs/cgroup").join(&rel).join("memory.events"),
            "oom_kill ",
        ),
        (
            Path::new("/sys/fs/cgroup/unified")
                .join(&rel)
                .join("memory.events"),
            "oom_kill ",
        ),
    ];
    candidates.iter().find_map(|(file, key)| {
        let text = std::fs::read_to_string(file).ok()?;
        text.lines()
            .find_map(|l| l.strip_prefix(key)?.trim().parse().ok())
    })
}

/// Log a `warn` if the container lost processes to the OOM killer.
pub fn report(c: &Container) {
    if let Some(n) = kills(c).filter(|n| *n > 0) {
        tracing::warn!(
            id = c.id(),
            oom_kills = n,
            "container {} hit its memory limit: {n} process(es) OOM-killed",
            c.id()
        );
    }
}
