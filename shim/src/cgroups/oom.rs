//! OOM kills: read from the container's memory cgroup (v1 `oom_control`,
//! v2 `memory.events`) and reported as `warn` events, so a memory bomb shows
//! up in the log with the container id instead of as a bare exit 137.

use std::path::{Path, PathBuf};

use libcontainer::container::Container;

use crate::error::Failure;

/// The container's OOM file, and whether it is cgroup v1's
/// `memory.oom_control` (rather than v2's `memory.events`).
fn oom_file(c: &Container) -> Option<(PathBuf, bool)> {
    let rel = c.spec().ok()?.cgroup_path;
    let rel = rel.strip_prefix("/").unwrap_or(&rel).to_path_buf();
    [
        (
            Path::new("/sys/fs/cgroup/memory"),
            "memory.oom_control",
            true,
        ),
        (Path::new("/sys/fs/cgroup"), "memory.events", false),
        (Path::new("/sys/fs/cgroup/unified"), "memory.events", false),
    ]
    .into_iter()
    .map(|(root, file, v1)| (root.join(&rel).join(file), v1))
    .find(|(file, _)| file.exists())
}

/// Number of OOM kills recorded for the container's cgroup, if readable.
pub fn kills(c: &Container) -> Option<u64> {
    let (file, _) = oom_file(c)?;
    let text = std::fs::read_to_string(file).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("oom_kill ")?.trim().parse().ok())
}

/// `linux.resources.memory.disableOOMKiller`: libcontainer 0.7 hard-codes it
/// off, so it is written here, after the cgroup exists and before `start`.
/// cgroup v2 has no such knob (runc ignores it there too): warn, not fail.
pub fn apply_disable(c: &Container, spec: &oci_spec::runtime::Spec) -> Result<(), Failure> {
    let wanted = spec
        .linux()
        .as_ref()
        .and_then(|l| l.resources().as_ref())
        .and_then(|r| r.memory().as_ref())
        .and_then(|m| m.disable_oom_killer())
        .unwrap_or(false);
    if !wanted {
        return Ok(());
    }
    match oom_file(c) {
        Some((file, true)) => std::fs::write(&file, "1").map_err(|e| {
            Failure::runtime(format!(
                "disableOOMKiller: cannot write {}: {e}",
                file.display()
            ))
        }),
        _ => {
            tracing::warn!(
                id = c.id(),
                "linux.resources.memory.disableOOMKiller is not supported on cgroup v2; the OOM killer stays on"
            );
            Ok(())
        }
    }
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
