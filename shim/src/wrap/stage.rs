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
//! it cannot outlive wrap.

use std::fs;
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
        Ok(Staging { paths })
    }

    /// Mount every staging (tmpfs, then the overlay or the file copy), in
    /// wrap's private mount namespace.
    pub fn mount(&self, policy: &Policy) -> Result<()> {
        let caps = format!(
            "size={},nr_inodes={},mode=0700",
            policy.disk_cap().0,
            policy.inode_cap().saturating_add(OWN_INODES)
        );
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
                let (blocks, files) = (v.blocks() as u64, v.files() as u64);
                let low = |free: u64, total: u64| total > 0 && free.saturating_mul(100) < total;
                if low(v.blocks_free() as u64, blocks) {
                    Some((s.host.as_path(), "disk"))
                } else if low(v.files_free() as u64, files) {
                    Some((s.host.as_path(), "inodes"))
                } else {
                    None
                }
            })
            .collect()
    }

    /// Apply every staged change to the host.
    pub fn commit(&self) -> Result<Counts> {
        let mut total = Counts::default();
        for s in &self.paths {
            let c = if s.is_dir {
                commit::commit_dir(&s.dir.join("upper"), &s.host)
            } else {
                commit::commit_file(&s.merged, &s.host)
            }
            .map_err(|e| {
                Failure::runtime(format!(
                    "wrap: committing the staged writes to {}: {e} (changes before it were applied)",
                    s.host.display()
                ))
            })?;
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
        let io = |e: nix::Error| std::io::Error::from_raw_os_error(e as i32);
        fs::create_dir_all(&self.dir)?;
        mount(
            Some("tmpfs"),
            &self.dir,
            Some("tmpfs"),
            MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC,
            Some(caps),
        )
        .map_err(io)?;
        let host = fs::metadata(&self.host)?;
        if !self.is_dir {
            fs::copy(&self.host, &self.merged)?;
            return match_owner(&self.merged, &host);
        }
        let upper = self.dir.join("upper");
        let work = self.dir.join("work");
        for d in [&upper, &work, &self.merged] {
            fs::create_dir(d)?;
        }
        // The overlay's root shows the upper directory's owner and mode:
        // the host directory's, so the step may write exactly where the
        // host would let it.
        match_owner(&upper, &host)?;
        let opts = format!(
            "lowerdir={},upperdir={},workdir={},redirect_dir=off,index=off,metacopy=off",
            self.host.display(),
            upper.display(),
            work.display()
        );
        mount(
            Some("overlay"),
            &self.merged,
            Some("overlay"),
            MsFlags::MS_NOSUID | MsFlags::MS_NODEV,
            Some(opts.as_str()),
        )
        .map_err(io)
    }
}

fn match_owner(path: &Path, like: &fs::Metadata) -> std::io::Result<()> {
    std::os::unix::fs::chown(path, Some(like.uid()), Some(like.gid()))?;
    fs::set_permissions(path, fs::Permissions::from_mode(like.mode() & 0o7777))
}
