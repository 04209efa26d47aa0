//! Claiming a container id, and writing state-root files privately.
//!
//! libcontainer's builder checks `<root>/<id>` and then creates it: two
//! concurrent `create`s of one id can both pass the check, and the loser's
//! cleanup then removes the winner's state and shadow bundle. So `create`
//! first takes an exclusive lock on `<root>/.locks/<id>` without waiting
//! and holds it until it returns: a second `create` of the id fails with
//! runc's `container with id exists` and touches nothing.
//!
//! The commands that change a container's state (`start`, `pause`,
//! `resume`, `kill`, `delete`) wait for the same lock ([`Runtime::load_locked`]):
//! libcontainer's freeze-then-save of `pause` and the freeze/thaw around a
//! `kill --all` interleaved with a concurrent `resume` left a container
//! recorded `paused` with a thawed cgroup. Read-only commands (`state`,
//! `list`, `ps`) and `exec` do not take it.
//!
//! The lock is a POSIX record lock (`fcntl(F_SETLK)`), not `flock`: a
//! record lock belongs to the process, so the init and the supervisor that
//! `create` forks do not inherit it (with `flock` they held it for the
//! container's whole life, and a waiting `start` would never get it). It
//! dies with its holder, so a SIGKILLed command never leaves a stale claim;
//! the lock file itself goes with `delete`. A record lock does not exclude
//! its own process, and closing *any* fd of the file drops it: one command
//! holds one [`IdLock`] per id at a time, and nothing else opens the file.
//!
//! State-root files hold the process env (secrets): they are written 0600 in
//! 0700 directories, and atomically (temporary file + rename), so a SIGKILL
//! never leaves a half-written one.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use libcontainer::container::Container;
use nix::errno::Errno;
use nix::fcntl::{fcntl, FcntlArg};

use super::{validate_id, Runtime};
use crate::error::{Failure, Result};

/// Directory (under the state root) of the per-id lock files.
pub(crate) const LOCK_DIR: &str = ".locks";

/// How long a state change waits for the id's lock (a `create` compiling
/// a large wasm payload holds it for seconds).
const LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

/// An exclusive claim on one id; released on drop (or when the process dies).
pub struct IdLock {
    file: File,
    path: PathBuf,
}

impl IdLock {
    /// Unlink the lock file while still holding it (see `lock`), unless a
    /// newer lock file has replaced it meanwhile.
    pub(crate) fn remove(self) {
        if same_file(&self.path, &self.file) {
            let _ = fs::remove_file(&self.path);
        }
    }
}

/// An `exec` in flight ([`Runtime::exec_in_flight`]). A plain file, not
/// nix's `Flock`: that one unlocks on drop, for the clones too, while the
/// runtime's copy is dropped as soon as the new process is built.
pub struct ExecInFlight {
    _lock: File,
}

/// Whether `path` still names the open `file`.
fn same_file(path: &Path, file: &File) -> bool {
    match (fs::metadata(path), file.metadata()) {
        (Ok(p), Ok(f)) => p.ino() == f.ino() && p.dev() == f.dev(),
        _ => false,
    }
}

impl Runtime {
    fn lock_path(&self, id: &str) -> PathBuf {
        self.root.join(LOCK_DIR).join(id)
    }

    /// Take the id's lock without waiting; `None` when someone holds it.
    pub(crate) fn try_lock(&self, id: &str) -> Result<Option<IdLock>> {
        self.lock(id)
    }

    /// Take the id's lock, waiting for its holder (a create, another
    /// state change) to finish, for at most [`LOCK_WAIT`]: a hook that
    /// calls sandboy on its own container while its `start` or `delete`
    /// holds the lock gets an error instead of waiting forever.
    pub(crate) fn wait_lock(&self, id: &str) -> Result<IdLock> {
        let since = std::time::Instant::now();
        loop {
            if let Some(lock) = self.lock(id)? {
                return Ok(lock);
            }
            if since.elapsed() > LOCK_WAIT {
                return Err(Failure::runtime(format!(
                    "container {id} is busy: another sandboy command on it (create, start, pause, resume, kill or delete) has held its lock {} for {}s; retry when it is done",
                    self.lock_path(id).display(),
                    LOCK_WAIT.as_secs()
                )));
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }

    fn lock(&self, id: &str) -> Result<Option<IdLock>> {
        let path = self.lock_path(id);
        private_dir(path.parent().expect("under the root"))?;
        let whole = libc::flock {
            l_type: libc::F_WRLCK as libc::c_short,
            l_whence: libc::SEEK_SET as libc::c_short,
            l_start: 0,
            l_len: 0,
            l_pid: 0,
        };
        loop {
            let file = OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true)
                .mode(0o600)
                .open(&path)
                .map_err(|e| named(&path, e))?;
            match fcntl(file.as_raw_fd(), FcntlArg::F_SETLK(&whole)) {
                Ok(_) => {}
                Err(Errno::EAGAIN | Errno::EACCES) => return Ok(None),
                Err(Errno::EINTR) => continue,
                Err(e) => return Err(Failure::runtime(format!("{}: lock: {e}", path.display()))),
            }
            // A delete may have unlinked the file between our open and our
            // lock: then a newer file is the lock, take that one.
            if same_file(&path, &file) {
                return Ok(Some(IdLock { file, path }));
            }
        }
    }

    /// Remove the id's lock file, unless another process holds it right
    /// now (this process's own lock counts as free: record locks belong
    /// to the process).
    pub(crate) fn remove_lock(&self, id: &str) {
        if !self.root.join(LOCK_DIR).is_dir() {
            return;
        }
        if let Ok(Some(lock)) = self.try_lock(id) {
            // Unlinked while held: a command that opened the old file
            // notices the inode changed and retries (see `lock`).
            lock.remove();
        }
    }

    fn exec_lock_path(&self, id: &str) -> PathBuf {
        // An id never starts with '.', so this names no id's own lock.
        self.root.join(LOCK_DIR).join(format!(".{id}.exec"))
    }

    /// Mark an `exec` of `id` in flight: a shared `flock` that, unlike the
    /// id's record lock, libcontainer's intermediate and the new process
    /// inherit through their clones, and keep until the new process's
    /// `execve` (close-on-exec) or their death. A SIGKILLed `exec` leaves
    /// its intermediate running on, which then *creates* the container's
    /// v1 cgroup directories (libcgroups' `add_task`); a `delete` that
    /// removed them first left eight behind (a reliability trial).
    /// `delete` waits for these ([`Self::wait_execs`]). The fd is moved
    /// above `keep` (the fds the new process is given) so it is never one
    /// of them. `None` (best effort) when the file cannot be made.
    pub(crate) fn exec_in_flight(&self, id: &str, keep: i32) -> Option<ExecInFlight> {
        let path = self.exec_lock_path(id);
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .mode(0o600)
            .custom_flags(libc::O_CLOEXEC | libc::O_NOFOLLOW)
            .open(&path)
            .ok()?;
        let high = fcntl(file.as_raw_fd(), FcntlArg::F_DUPFD_CLOEXEC(keep.max(2) + 1)).ok()?;
        // SAFETY: F_DUPFD_CLOEXEC returned a new fd that nothing else owns.
        let file = unsafe { <File as std::os::fd::FromRawFd>::from_raw_fd(high) };
        // SAFETY: flock on an fd we own; the lock belongs to the open file
        // description, which the clones share.
        (unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_SH) } == 0)
            .then_some(ExecInFlight { _lock: file })
    }

    /// Wait, at most `limit`, until no `exec` of `id` is in flight (see
    /// [`Self::exec_in_flight`]); whether none is. Called once the
    /// container's processes are killed: an orphaned intermediate then
    /// fails on its next step and exits within milliseconds.
    pub(crate) fn wait_execs(&self, id: &str, limit: std::time::Duration) -> bool {
        let path = self.exec_lock_path(id);
        let Ok(file) = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_CLOEXEC | libc::O_NOFOLLOW)
            .open(&path)
        else {
            return true;
        };
        let since = std::time::Instant::now();
        loop {
            // SAFETY: flock on an fd we own, released when it closes.
            if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
                let _ = fs::remove_file(&path);
                return true;
            }
            if since.elapsed() > limit {
                return false;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }

    /// Load `id` for a command that changes its state, holding its lock
    /// (see the module doc) until the returned guard drops. A missing
    /// container leaves no lock file behind.
    pub fn load_locked(&self, id: &str) -> Result<(Container, IdLock)> {
        validate_id(id)?;
        // A root never made holds no container, and gets no lock
        // directory either (see `Runtime::open`).
        if fs::symlink_metadata(&self.root).is_err() {
            return Err(Failure::runtime("container does not exist"));
        }
        let lock = self.wait_lock(id)?;
        match self.load(id) {
            Ok(c) => Ok((c, lock)),
            Err(e) => {
                if !self.dir(id).exists() {
                    lock.remove();
                }
                Err(e)
            }
        }
    }
}

/// Create `dir` (and parents) 0700.
pub(crate) fn private_dir(dir: &Path) -> io::Result<()> {
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| named(dir, e))
}

/// An error of a state-root write, naming the path and, for a full or
/// read-only filesystem, the way out (a bare "No space left on device"
/// left users guessing which filesystem).
fn named(path: &Path, e: io::Error) -> io::Error {
    let hint = match e.raw_os_error() {
        Some(libc::ENOSPC | libc::EDQUOT) => {
            "; the state root's filesystem is full: free space there or use another --root"
        }
        Some(libc::EROFS) => "; the state root is read-only: use a writable --root",
        _ => "",
    };
    io::Error::new(e.kind(), format!("{}: {e}{hint}", path.display()))
}

/// Write `path` 0600 through a temporary file and a rename: a reader (or a
/// SIGKILL) sees the old content or the new one, never a part. No fsync: a
/// SIGKILL loses nothing the page cache holds, and a state root belongs on
/// a tmpfs (`/run`), which a power loss empties anyway; on a disk-backed
/// `--root` (a benchmark's temporary directory) each fsync cost 1–4 ms of
/// `create`, where runc and crun sync nothing either.
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
        fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result.map_err(|e| named(path, e))
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
