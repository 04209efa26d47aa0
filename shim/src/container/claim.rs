//! Claiming a container id, and writing state-root files privately.
//!
//! libcontainer's builder checks `<root>/<id>` and then creates it: two
//! concurrent `create`s of one id can both pass the check, and the loser's
//! cleanup then removes the winner's state and shadow bundle. So `create`
//! first takes an exclusive, non-blocking `flock` on `<root>/.locks/<id>`
//! and holds it until it returns: a second `create` of the id fails with
//! runc's `container with id exists` and touches nothing. A lock dies with
//! its holders, so a SIGKILLed `create` never leaves a stale claim; the
//! lock file itself goes with `delete`.
//!
//! State-root files hold the process env (secrets): they are written 0600 in
//! 0700 directories, and atomically (temporary file + rename), so a SIGKILL
//! never leaves a half-written one.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use nix::fcntl::{Flock, FlockArg};

use super::Runtime;
use crate::error::{Failure, Result};

/// Directory (under the state root) of the per-id lock files.
pub(crate) const LOCK_DIR: &str = ".locks";

/// An exclusive claim on one id; released on drop (or when the process dies).
pub struct IdLock {
    _file: Flock<File>,
    path: PathBuf,
}

impl IdLock {
    /// Unlink the lock file while still holding it (see `try_lock`).
    pub(crate) fn remove(self) {
        let _ = fs::remove_file(&self.path);
    }
}

impl Runtime {
    fn lock_path(&self, id: &str) -> PathBuf {
        self.root.join(LOCK_DIR).join(id)
    }

    /// Take the id's lock without waiting; `None` when someone holds it.
    pub(crate) fn try_lock(&self, id: &str) -> Result<Option<IdLock>> {
        let path = self.lock_path(id);
        private_dir(path.parent().expect("under the root"))?;
        loop {
            let file = OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true)
                .mode(0o600)
                .open(&path)?;
            let file = match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
                Ok(locked) => locked,
                Err((_, nix::errno::Errno::EWOULDBLOCK)) => return Ok(None),
                Err((_, e)) => {
                    return Err(Failure::runtime(format!("{}: flock: {e}", path.display())))
                }
            };
            // A delete may have unlinked the file between our open and our
            // lock: then a newer file is the lock, take that one.
            let same = fs::metadata(&path)
                .map(|m| m.ino() == file.metadata().map(|f| f.ino()).unwrap_or(0))
                .unwrap_or(false);
            if same {
                return Ok(Some(IdLock { _file: file, path }));
            }
        }
    }

    /// Remove the id's lock file, unless a create holds it right now.
    pub(crate) fn remove_lock(&self, id: &str) {
        if let Ok(Some(lock)) = self.try_lock(id) {
            // Unlinked while held: a create that opened the old file
            // notices the inode changed and retries (see `try_lock`).
            lock.remove();
        }
    }
}

/// Create `dir` (and parents) 0700.
pub(crate) fn private_dir(dir: &Path) -> io::Result<()> {
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

/// Write `path` 0600 through a temporary file and a rename: a reader (or a
/// SIGKILL) sees the old content or the new one, never a part.
pub(crate) fn write_private(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let tmp = path.with_file_name(format!(".{name}.tmp{}", std::process::id()));
    let result = (|| {
        let mut f = OpenOptions::new()
            .create(true)
            .truncate(true)
            .write(true)
            .mode(0o600)
            .open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_data()?;
        fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// libcontainer creates the state directory and its files with the umask's
/// modes (0755/0644); narrow them to runc's 0700/0600. Later saves truncate
/// the same files, which keeps their mode.
pub(crate) fn narrow_modes(dir: &Path) {
    let _ = fs::set_permissions(dir, fs::Permissions::from_mode(0o700));
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        if e.file_type().is_ok_and(|t| t.is_file()) {
            let _ = fs::set_permissions(e.path(), fs::Permissions::from_mode(0o600));
        }
    }
}
