//! Staged host write paths for `sandboy wrap` as root (issue 14, disk):
//! the step never writes the host directly. Each write path gets its own
//! tmpfs capped at `[limits] disk` bytes and `inodes` files (defaults
//! 1 GiB and 100,000), holding an overlay's upper and work directories
//! over the host path as the lower layer; the container binds the merged
//! view at the write path. A step that fills it gets ENOSPC (a copy-up of
//! a host file it opens for writing counts too).
//!
//! After the container is gone, the staged changes are committed to the
//! host ([`super::commit`]) when the step exited 0 and `--dry-run` was not
//! given, and discarded otherwise: a gate step's changes land only when it
//! passes. A write path that is a file is staged as a copy on the tmpfs
//! and copied back the same way.
//!
//! Everything is mounted in wrap's private mount namespace (see
//! `container::bind_host_root`), so the host mount table never sees it and
//! it cannot outlive wrap. The namespaces tier stages the same way inside
//! its user namespace ([`stage_in_userns`], overlayfs `userxattr`), keeping
//! fds for the commit since its host root is detached before the command.

use std::fs;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use nix::mount::{mount, umount2, MntFlags, MsFlags};
use sandboy_spec_gen::policy::Policy;

use super::commit::{self, Counts};
use crate::error::{Failure, Result};

/// Inodes the staging itself uses on each tmpfs (its directories and the
/// overlay's work directory), added so the step gets the policy's count.
const OWN_INODES: u64 = 7;

/// One staged write path.
#[derive(Debug)]
pub struct Staged {
    /// The write path on the host.
    pub host: PathBuf,
    /// The tmpfs mount point.
    dir: PathBuf,
    /// What the container binds at `host`: the overlay, or the file copy.
    pub merged: PathBuf,
    is_dir: bool,
}

/// The staged write paths of one wrap run.
#[derive(Debug)]
pub struct Staging {
    pub paths: Vec<Staged>,
    /// What the commits may not change (what git reads beyond the
    /// repositories, new repositories inside a checkout), found before
    /// the step.
    protected: commit::Protected,
}

/// Characters overlayfs' option string cannot carry unescaped.
fn option_safe(p: &Path) -> bool {
    !p.as_os_str()
        .as_encoded_bytes()
        .iter()
        .any(|b| matches!(b, b',' | b':' | b'\\'))
}

impl Staging {
    /// Where each of `writes` (existing host paths) will be staged under
    /// `work`; nothing is created yet.
    pub fn plan(policy: &Policy, work: &Path, writes: &[String]) -> Result<Staging> {
        let mut paths = Vec::new();
        for (i, w) in writes.iter().enumerate() {
            let host = PathBuf::from(w);
            if !option_safe(&host) {
                return Err(Failure::config(format!(
                    "{}: write path {w} contains ',', ':' or '\\', which sandboy wrap cannot stage (overlayfs options); rename it or use a parent directory",
                    policy.file
                )));
            }
            let dir = work.join("stage").join(i.to_string());
            let is_dir = host.is_dir();
            let merged = dir.join(if is_dir { "merged" } else { "file" });
            paths.push(Staged {
                host,
                dir,
                merged,
                is_dir,
            });
        }
        // The commit looks at the other write paths as the step left
        // them: a repository staged in one is not on the host yet.
        let view = paths
            .iter()
            .filter(|s| s.is_dir)
            .map(|s| (s.host.clone(), s.merged.clone()))
            .collect();
        let protected = commit::Protected {
            view: super::nested::View::staged(view),
            ..commit::Protected::find(writes)
        };
        Ok(Staging { paths, protected })
    }

    /// Mount every staging (tmpfs, then the overlay or the file copy), in
    /// wrap's private mount namespace.
    pub fn mount(&self, policy: &Policy) -> Result<()> {
        let caps = caps(policy);
        for s in &self.paths {
            s.mount(&caps).map_err(|e| {
                Failure::runtime(format!("wrap: staging {}: {e}", s.host.display()))
            })?;
        }
        Ok(())
    }

    /// The write paths whose staging is (nearly) full: where the step met
    /// ENOSPC, with which cap.
    pub fn at_cap(&self) -> Vec<(&Path, &'static str)> {
        self.paths
            .iter()
            .filter_map(|s| {
                let v = nix::sys::statvfs::statvfs(&s.dir).ok()?;
                Some((s.host.as_path(), full(&v)?))
            })
            .collect()
    }

    /// Apply every staged change to the host.
    pub fn commit(&self) -> Result<Counts> {
        let mut total = Counts::default();
        for s in &self.paths {
            let c = if s.is_dir {
                commit::commit_dir(&s.dir.join("upper"), &s.host, &self.protected)
            } else {
                commit::commit_file(&s.merged, &s.host)
            }
            .map_err(|e| commit_failure(&s.host, e))?;
            total.written += c.written;
            total.dirs += c.dirs;
            total.removed += c.removed;
            total.skipped += c.skipped;
        }
        Ok(total)
    }

    /// Unmount and remove every staging (the staged data goes with it).
    pub fn release(&self) {
        for s in &self.paths {
            if s.is_dir {
                let _ = umount2(&s.merged, MntFlags::MNT_DETACH);
            }
            let _ = umount2(&s.dir, MntFlags::MNT_DETACH);
            let _ = fs::remove_dir_all(&s.dir);
        }
        if let Some(parent) = self.paths.first().and_then(|s| s.dir.parent()) {
            let _ = fs::remove_dir(parent);
        }
    }
}

impl Staged {
    fn mount(&self, caps: &str) -> std::io::Result<()> {
        let host = fs::metadata(&self.host)?;
        if !self.is_dir {
            capped_tmpfs(&self.dir, caps)?;
            fs::copy(&self.host, &self.merged)?;
            return match_owner(&self.merged, &host);
        }
        // The overlay's root shows the upper directory's owner and mode
        // (taken when it is mounted): the host directory's, so the step may
        // write exactly where the host would let it.
        overlay(&self.dir, &self.host, caps, PRIVILEGED, |upper| {
            match_owner(upper, &host)
        })
        .map(drop)
    }
}

/// A commit that stopped at `host`.
pub fn commit_failure(host: &Path, e: commit::CommitError) -> Failure {
    Failure::runtime(format!(
        "wrap: committing the staged writes to {}: {e} (changes before it were applied)",
        host.display()
    ))
}

/// Whether the staged writes are to be committed now that the step exited
/// `status`, logging what happened to them: a warn event with the id for
/// each write path that ended at its cap (the step got ENOSPC there), an
/// info event when they are discarded (a failure, or `--dry-run`).
pub fn decide(
    id: &str,
    policy: &Policy,
    full: &[(&Path, &'static str)],
    status: i32,
    dry_run: bool,
) -> bool {
    for (path, cap) in full {
        let limit = match *cap {
            "disk" => policy.disk_cap().to_string(),
            _ => policy.inode_cap().to_string(),
        };
        tracing::warn!(
            %id,
            path = %path.display(),
            cap,
            limit = %limit,
            status,
            "disk cap: the staged write path is full ([limits] {cap} = {limit}); the step got ENOSPC and exited {status}"
        );
    }
    if dry_run || status != 0 {
        let why = if dry_run {
            "--dry-run".to_string()
        } else {
            format!("the step exited {status}")
        };
        tracing::info!(%id, status, "wrap: {why}: its writes to the write paths were discarded, none reached the host");
        return false;
    }
    true
}

/// Overlay options of a privileged mount: no redirects, index or metacopy,
/// so the upper layer holds whole files and plain whiteouts.
const PRIVILEGED: &str = "redirect_dir=off,index=off,metacopy=off";
/// In a user namespace: overlayfs' xattrs in the `user.` namespace.
const USERNS: &str = "userxattr";

fn nix_io(e: nix::Error) -> std::io::Error {
    std::io::Error::from_raw_os_error(e as i32)
}

/// A tmpfs with the policy's caps at `dir` (created).
fn capped_tmpfs(dir: &Path, caps: &str) -> std::io::Result<()> {
    fs::create_dir_all(dir)?;
    mount(
        Some("tmpfs"),
        dir,
        Some("tmpfs"),
        MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC,
        Some(caps),
    )
    .map_err(nix_io)
}

/// A capped tmpfs at `dir` holding `upper/` and `work/`, and the overlay
/// of them over `lower` at `dir/merged`, after `prepare` has been given
/// the upper directory; its path.
fn overlay(
    dir: &Path,
    lower: &Path,
    caps: &str,
    flavour: &str,
    prepare: impl FnOnce(&Path) -> std::io::Result<()>,
) -> std::io::Result<PathBuf> {
    capped_tmpfs(dir, caps)?;
    let upper = dir.join("upper");
    let work = dir.join("work");
    let merged = dir.join("merged");
    for d in [&upper, &work, &merged] {
        fs::create_dir(d)?;
    }
    prepare(&upper)?;
    let opts = format!(
        "lowerdir={},upperdir={},workdir={},{flavour}",
        lower.display(),
        upper.display(),
        work.display()
    );
    mount(
        Some("overlay"),
        &merged,
        Some("overlay"),
        MsFlags::MS_NOSUID | MsFlags::MS_NODEV,
        Some(opts.as_str()),
    )
    .map_err(nix_io)?;
    Ok(upper)
}

/// Which cap a staging tmpfs is (nearly) at: under 1% left.
fn full(v: &nix::sys::statvfs::Statvfs) -> Option<&'static str> {
    let low = |free: u64, total: u64| total > 0 && free.saturating_mul(100) < total;
    if low(v.blocks_free(), v.blocks()) {
        Some("disk")
    } else if low(v.files_free(), v.files()) {
        Some("inodes")
    } else {
        None
    }
}

/// The tmpfs options of a policy's caps (plus the staging's own inodes).
fn caps(policy: &Policy) -> String {
    format!(
        "size={},nr_inodes={},mode=0700",
        policy.disk_cap().0,
        policy.inode_cap().saturating_add(OWN_INODES)
    )
}

/// A write path staged by the namespaces tier, inside its user namespace:
/// the staging is mounted before the host root goes away, and these fds
/// are what the commit needs afterwards.
pub struct Held {
    pub host: PathBuf,
    /// See [`Staging`]'s field of that name.
    protected: commit::Protected,
    upper: OwnedFd,
    host_dir: OwnedFd,
    store: OwnedFd,
}

/// Stage the host directory `lower` (the host's view of write path `host`)
/// under `dir`; the merged directory to bind at the write path, and what
/// the commit needs. Directories only: a file write path stays a bind.
pub fn stage_in_userns(
    policy: &Policy,
    host: &Path,
    lower: &Path,
    dir: &Path,
    protected: &commit::Protected,
) -> std::io::Result<(PathBuf, Held)> {
    if !option_safe(lower) {
        return Err(std::io::Error::other(format!(
            "write path {} contains ',', ':' or '\\', which cannot be staged",
            host.display()
        )));
    }
    let meta = fs::metadata(lower)?;
    // The caller owns the upper directory; the host's mode goes on it
    // (its owner cannot: other ids are unmapped here).
    let upper = overlay(dir, lower, &caps(policy), USERNS, |upper| {
        fs::set_permissions(upper, fs::Permissions::from_mode(meta.mode() & 0o7777))
    })?;
    let open = |p: &Path| {
        rustix::fs::open(
            p,
            rustix::fs::OFlags::RDONLY
                | rustix::fs::OFlags::DIRECTORY
                | rustix::fs::OFlags::CLOEXEC,
            rustix::fs::Mode::empty(),
        )
        .map_err(std::io::Error::from)
    };
    let held = Held {
        protected: protected.clone(),
        host: host.to_path_buf(),
        upper: open(&upper)?,
        host_dir: open(lower)?,
        store: open(dir)?,
    };
    Ok((dir.join("merged"), held))
}

impl Held {
    /// Which cap the step hit, if its staging is full.
    pub fn at_cap(&self) -> Option<&'static str> {
        full(&nix::sys::statvfs::fstatvfs(&self.store).ok()?)
    }

    /// Apply the staged changes to the host directory.
    pub fn commit(&self) -> std::result::Result<Counts, commit::CommitError> {
        commit::commit_dir_fds(
            self.upper.as_fd(),
            self.host_dir.as_fd(),
            &self.host,
            commit::OPAQUE_USERNS,
            &self.protected,
        )
    }
}

fn match_owner(path: &Path, like: &fs::Metadata) -> std::io::Result<()> {
    std::os::unix::fs::chown(path, Some(like.uid()), Some(like.gid()))?;
    fs::set_permissions(path, fs::Permissions::from_mode(like.mode() & 0o7777))
}
