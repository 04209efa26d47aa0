//! Committing a staged write path to the host: the overlay's upper layer
//! (what the step created, changed or removed) applied to the host
//! directory once the step has exited 0 and every process of it is gone.
//!
//! * new files are created in place (`O_CREAT|O_EXCL`); changed files,
//!   symlinks and fifos are written beside their name under a temporary
//!   name (`O_EXCL`) and renamed over it; all with the staged owner, mode
//!   (setuid/setgid bits dropped), and times;
//! * whiteouts (character devices 0:0) remove the host entry, a whole tree
//!   for a directory; opaque directories (`trusted.overlay.opaque = y`)
//!   replace the host directory instead of merging into it;
//! * nothing on the host side is ever followed through a symlink: every
//!   step goes from a directory fd by one name, `O_NOFOLLOW`, so a symlink
//!   the step planted (or one already on the host) is replaced as an entry
//!   and never written through; the commit cannot leave the write path.
//!
//! * the commit writes no more than the staging could hold: holes stay
//!   holes (a sparse file is copied by its data extents), and before
//!   anything is written the staged files' allocated bytes, once per name,
//!   must fit in the staging's own size (`[limits] disk`). Hard links cost
//!   the staging one inode but the host a copy per name, so a tree of
//!   links beyond the cap is refused whole (a red team committed 1.15 GiB
//!   from a 10 MiB staging through a sparse file and fifteen links).
//!
//! * the control files of a repository the host already has are not
//!   committed from a write path that merely holds it: a change to
//!   `.git/config`, `.git/hooks/…`, `.git/info/…`, `commondir` or
//!   `config.worktree` (of `.git` or of a submodule's git directory under
//!   `.git/modules` or of a bare repository the host has), anything under
//!   the directory a host checkout's `core.hooksPath` names inside the
//!   write path, or a
//!   `.git` directory or worktree file changed or
//!   replaced by a file (`gitdir:` pointing elsewhere) refuses the whole
//!   commit; so does a `.git` the step made below a host checkout (in a
//!   checkout the write path holds, or anywhere in a write path inside
//!   one: `nested`), which git would take for the repository of every
//!   command run below it (a repository the step made elsewhere, such as
//!   a `git clone` into an output directory, is committed as its
//!   output), and a link the step made there into a repository other
//!   than its directory's (`nested::Links`: `src -> ../out/r`, where the
//!   step made `out/r/.git`), looked at as the step left every write
//!   path (`nested::View`). The user's next `git`
//!   runs what those say (`core.fsmonitor`, hooks, filters) outside any
//!   sandbox: a red team's step under `--rw .` planted a `pre-commit` hook
//!   that read `~/.ssh`. A write path inside `.git` is the user's explicit
//!   grant and commits as any other.
//!
//! Not carried over: extended attributes and ACLs of changed files, hard
//! links (each name becomes its own file), sockets, device nodes (the step
//! cannot make them), and the write path root's own mode and times. A
//! commit is not atomic: an error stops it, and what was applied stays.

use std::ffi::{CStr, CString, OsStr};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use rustix::fs::{self as rfs, AtFlags, Dir, FileType, Gid, Mode, OFlags, Stat, Timestamps, Uid};
use rustix::io::Errno;
use rustix::time::Timespec;

/// A commit step that failed.
#[derive(Debug, thiserror::Error)]
#[error("{what} {path}: {source}")]
pub struct CommitError {
    what: &'static str,
    path: String,
    source: std::io::Error,
}

/// What a commit did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    /// Files, symlinks and fifos written.
    pub written: u64,
    /// Directories created.
    pub dirs: u64,
    /// Host entries removed (whiteouts, replaced trees).
    pub removed: u64,
    /// Entries that cannot be committed (sockets, devices).
    pub skipped: u64,
}

/// The xattr overlayfs marks an opaque directory with: a privileged mount,
/// and one made in a user namespace (`userxattr`).
pub const OPAQUE: &str = "trusted.overlay.opaque";
pub const OPAQUE_USERNS: &str = "user.overlay.opaque";

static TMP_SEQ: AtomicU64 = AtomicU64::new(0);

struct Walk<'a> {
    counts: Counts,
    /// The opaque-directory xattr of this overlay.
    opaque: &'static str,
    /// The path below the write path, for messages.
    at: &'a Path,
}

/// A staged entry the walk meets: the upper and host directories it is in,
/// its name there, its stat in the upper layer and its host path (for
/// messages).
#[derive(Clone, Copy)]
struct Staged<'a> {
    up: BorrowedFd<'a>,
    to: BorrowedFd<'a>,
    name: &'a CStr,
    st: &'a Stat,
    path: &'a Path,
}

fn err(what: &'static str, path: &Path) -> impl FnOnce(Errno) -> CommitError {
    let path = path.display().to_string();
    move |e| CommitError {
        what,
        path,
        source: e.into(),
    }
}

fn open_dir(dir: BorrowedFd<'_>, name: &CStr) -> rustix::io::Result<OwnedFd> {
    rfs::openat(
        dir,
        name,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
}

fn lstat(dir: BorrowedFd<'_>, name: &CStr) -> rustix::io::Result<Option<Stat>> {
    match rfs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) => Ok(Some(st)),
        Err(Errno::NOENT) => Ok(None),
        Err(e) => Err(e),
    }
}

fn file_type(st: &Stat) -> FileType {
    FileType::from_raw_mode(st.st_mode)
}

fn is_whiteout(st: &Stat) -> bool {
    file_type(st) == FileType::CharacterDevice && st.st_rdev == 0
}

fn times(st: &Stat) -> Timestamps {
    Timestamps {
        last_access: Timespec {
            tv_sec: st.st_atime,
            tv_nsec: st.st_atime_nsec as _,
        },
        last_modification: Timespec {
            tv_sec: st.st_mtime,
            tv_nsec: st.st_mtime_nsec as _,
        },
    }
}

/// Permission bits to give the host entry: never setuid, and setgid only
/// on directories (where it means group inheritance, not privilege).
fn safe_mode(st: &Stat, dir: bool) -> Mode {
    let keep = if dir { 0o3777 } else { 0o1777 };
    Mode::from_raw_mode(st.st_mode & keep)
}

/// What the host had before the step that a commit may not change,
/// found while host paths still resolve.
#[derive(Debug, Clone, Default)]
pub struct Protected {
    /// What git reads beyond the repositories in the write paths
    /// (`gitconfig::beyond`).
    pub beyond: Vec<PathBuf>,
    /// The write paths that lie inside a host checkout
    /// (`nested::inside_checkout`): no repository may be made in them.
    pub in_checkout: Vec<PathBuf>,
    /// Where the links the step made below a checkout are followed
    /// (`nested::Links`).
    pub view: super::nested::View,
}

impl Protected {
    /// What the write paths `write` protect, read on the host.
    pub fn find(write: &[String]) -> Protected {
        Protected {
            beyond: super::gitconfig::beyond(write, &super::repository::git_dirs(write)),
            in_checkout: write
                .iter()
                .map(PathBuf::from)
                .filter(|w| super::nested::inside_checkout(w))
                .collect(),
            view: super::nested::View::default(),
        }
    }
}

/// Apply the upper layer `upper` to the host directory `host`, changing
/// nothing `protected` names.
pub fn commit_dir(upper: &Path, host: &Path, protected: &Protected) -> Result<Counts, CommitError> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let up = rfs::open(upper, flags, Mode::empty()).map_err(err("opening", upper))?;
    let to = rfs::open(host, flags, Mode::empty()).map_err(err("opening", host))?;
    commit_dir_fds(up.as_fd(), to.as_fd(), host, OPAQUE, protected)
}

/// [`commit_dir`] from open directories (the namespaces tier opens them
/// before its host root goes away); `host` names the write path in
/// messages, `opaque` is the overlay's opaque xattr.
pub fn commit_dir_fds(
    up: BorrowedFd<'_>,
    to: BorrowedFd<'_>,
    host: &Path,
    opaque: &'static str,
    protected: &Protected,
) -> Result<Counts, CommitError> {
    fits(up, host)?;
    let granted = host.components().any(|c| c.as_os_str() == ".git");
    if !granted {
        let start = if protected.in_checkout.iter().any(|c| c == host) {
            Within::Checkout
        } else {
            Within::Tree
        };
        let mut links = super::nested::Links::new(&protected.view);
        let planted = match repository_control(up, Some(to), host, start, &mut links)? {
            Some(p) => Some(p),
            None => staged_held(up, host, &protected.beyond)?.map(Planted::Control),
        };
        if let Some(planted) = planted {
            return Err(planted.refusal());
        }
    }
    let mut w = Walk {
        counts: Counts::default(),
        opaque,
        at: host,
    };
    w.dir(up, to)?;
    Ok(w.counts)
}

/// Where [`repository_control`] looks: in a tree outside any checkout,
/// in a checkout's working tree, in a git directory the host has, or
/// below its `modules` (submodules' git directories, whose names may hold
/// slashes).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Within {
    Tree,
    Checkout,
    Git,
    Modules,
}

/// What a commit refuses: a control file of a repository the host has,
/// a repository the step made below a host checkout, or a link it made
/// there into another repository (`None`: past the links it follows).
enum Planted {
    Control(PathBuf),
    Repository(PathBuf),
    Link(PathBuf, Option<PathBuf>),
}

impl Planted {
    fn refusal(self) -> CommitError {
        let (path, why) = match self {
            Planted::Control(p) => {
                let why = format!(
                    "a repository's config, hooks and info run in the next git command, outside any sandbox; nothing was written (list \"{}\" in [fs] write if the step is to change them)",
                    repository_of(&p).display()
                );
                (p, why)
            }
            Planted::Repository(p) => (p, "a repository made inside a checkout is the one git uses below it, and the next git command there runs its config and hooks outside any sandbox; nothing was written (make it in a write path outside the checkout)".to_string()),
            Planted::Link(p, Some(repo)) => {
                let why = format!("a link made inside a checkout into the repository {} takes the next git command run through it there, which runs that repository's config and hooks outside any sandbox; nothing was written", repo.display());
                (p, why)
            }
            Planted::Link(p, None) => (p, format!("the step's links inside a checkout lead through more than {} links, past what sandboy follows to see whether they lead into a repository; nothing was written", super::nested::MAX_LINKS)),
        };
        CommitError {
            what: "refusing to commit",
            path: path.display().to_string(),
            source: std::io::Error::other(why),
        }
    }
}

/// The first staged entry below `dir` (the host path `at`, whose host
/// directory is `host` where it exists) that is a control file of a
/// repository the host has (see the module's documentation). The host
/// side is looked at through directory fds: the namespaces tier's commit
/// runs where host paths do not resolve.
fn repository_control(
    dir: BorrowedFd<'_>,
    host: Option<BorrowedFd<'_>>,
    at: &Path,
    within: Within,
    links: &mut super::nested::Links<'_>,
) -> Result<Option<Planted>, CommitError> {
    let has_git = |h: BorrowedFd<'_>| lstat(h, c".git").ok().flatten().is_some();
    // Git takes a directory with a `.git` for a working tree's top.
    let within = match within {
        Within::Tree if host.is_some_and(has_git) => Within::Checkout,
        w => w,
    };
    let tree = matches!(within, Within::Tree | Within::Checkout);
    if within == Within::Checkout && made_bare(dir, host) {
        return Ok(Some(Planted::Repository(at.to_path_buf())));
    }
    for entry in Dir::read_from(dir).map_err(err("reading", at))? {
        let entry = entry.map_err(err("reading", at))?;
        let name = entry.file_name();
        let bytes = name.to_bytes();
        if bytes == b"." || bytes == b".." {
            continue;
        }
        let path = at.join(OsStr::from_bytes(bytes));
        let control = super::repository::CONTROL
            .iter()
            .any(|c| c.as_bytes() == bytes);
        if !tree && control {
            return Ok(Some(Planted::Control(path)));
        }
        let Some(st) = lstat(dir, name).map_err(err("stat", &path))? else {
            continue;
        };
        let is_dir = file_type(&st) == FileType::Directory;
        if within == Within::Checkout && file_type(&st) == FileType::Symlink {
            if let Some(planted) = link_into_repository(links, path.clone()) {
                return Ok(Some(planted));
            }
        }
        // The host's directory of that name, never through a link.
        let host_sub = host.and_then(|h| open_dir(h, name).ok());
        // The host's own repository (a worktree's or submodule's `.git` is
        // a file, `gitdir:`); a new one is refused inside a checkout and
        // is the step's output elsewhere (a `git clone` into `out/`).
        let held = tree && bytes == b".git" && host.is_some_and(has_git);
        if held && !is_dir {
            return Ok(Some(Planted::Control(path)));
        }
        let bare = || host_sub.as_ref().is_some_and(|h| is_git_dir(h.as_fd()));
        let next = match descend(within, bytes, held, bare) {
            Ok(Some(next)) => next,
            Ok(None) => continue,
            Err(planted) => return Ok(Some(planted(path))),
        };
        if is_dir {
            let sub = open_dir(dir, name).map_err(err("opening staged", &path))?;
            let host_sub = host_sub.as_ref().map(|h| h.as_fd());
            if let Some(p) = repository_control(sub.as_fd(), host_sub, &path, next, links)? {
                return Ok(Some(p));
            }
        }
    }
    Ok(None)
}

/// The staged link at the host path `path`, below a checkout, if it leads
/// into another repository or past the hops `links` may still follow.
fn link_into_repository(links: &mut super::nested::Links<'_>, path: PathBuf) -> Option<Planted> {
    match links.foreign_repository(&path) {
        Ok(None) => None,
        Ok(repo) => Some(Planted::Link(path, repo)),
        Err(super::nested::Spent) => Some(Planted::Link(path, None)),
    }
}

/// Where [`repository_control`] goes from the staged entry `name` it
/// met `within`: into it as what (`None`: past it), or refusing it.
/// `held`: it is the host's own `.git`; `bare`: the host's directory of
/// that name is a bare repository.
fn descend(
    within: Within,
    name: &[u8],
    held: bool,
    bare: impl Fn() -> bool,
) -> Result<Option<Within>, fn(PathBuf) -> Planted> {
    Ok(Some(match (within, name) {
        (_, b".git") if held => Within::Git,
        (Within::Checkout, b".git") => return Err(Planted::Repository),
        (Within::Tree, b".git") => return Ok(None),
        // A bare repository the host has: its hooks run at a push.
        (Within::Tree | Within::Checkout, _) if bare() => Within::Git,
        (Within::Tree | Within::Checkout, _) => within,
        // Submodules' and linked worktrees' git directories.
        (Within::Git, b"modules" | b"worktrees") => Within::Modules,
        (Within::Git, _) => return Ok(None),
        (Within::Modules, b"objects" | b"refs" | b"logs") => return Ok(None),
        (Within::Modules, _) => Within::Modules,
    }))
}

/// Whether the staged directory `dir` turns its host directory (`host`,
/// where it exists) into a git directory: it writes `HEAD` or `objects`,
/// and the two are both there once committed, where the host had no
/// repository. git takes a directory of that shape for a (bare)
/// repository on its walk up, with no `.git` anywhere: a red team's
/// `src/{HEAD,objects,refs,config}` with `core.worktree = .` ran its
/// `core.fsmonitor` at the user's next `git status` in `src`.
fn made_bare(dir: BorrowedFd<'_>, host: Option<BorrowedFd<'_>>) -> bool {
    let staged = |name: &CStr| lstat(dir, name).ok().flatten();
    let hosted = |name: &CStr| host.is_some_and(|h| lstat(h, name).ok().flatten().is_some());
    let writes = |name: &CStr| staged(name).is_some();
    let has = |name: &CStr| match staged(name) {
        Some(st) => !is_whiteout(&st),
        None => hosted(name),
    };
    (writes(c"HEAD") || writes(c"objects"))
        && has(c"HEAD")
        && has(c"objects")
        && !host.is_some_and(is_git_dir)
}

/// Whether `dir` is a git directory by git's own test (a `HEAD` file and
/// an `objects` directory), as `repository::is_git_dir` through an fd.
fn is_git_dir(dir: BorrowedFd<'_>) -> bool {
    let is = |name: &CStr, kind: FileType| {
        lstat(dir, name)
            .ok()
            .flatten()
            .is_some_and(|st| file_type(&st) == kind)
    };
    is(c"HEAD", FileType::RegularFile) && is(c"objects", FileType::Directory)
}

/// The first of `held` (host paths) below the write path `root` that the
/// staged layer `up` writes, removes or replaces the way to.
fn staged_held(
    up: BorrowedFd<'_>,
    root: &Path,
    held: &[PathBuf],
) -> Result<Option<PathBuf>, CommitError> {
    for p in held {
        match p.strip_prefix(root) {
            Ok(rel) if !rel.as_os_str().is_empty() && staged_at(up, rel, root)? => {
                return Ok(Some(p.clone()))
            }
            _ => {}
        }
    }
    Ok(None)
}

/// Whether the staged layer `dir` (the host path `at`) holds anything at
/// the relative path `rel`, or replaced a directory on the way to it.
fn staged_at(dir: BorrowedFd<'_>, rel: &Path, at: &Path) -> Result<bool, CommitError> {
    let mut cur: Option<OwnedFd> = None;
    for name in rel.iter() {
        let name = cname(name);
        let here = cur.as_ref().map_or(dir, |f| f.as_fd());
        let Some(st) = lstat(here, &name).map_err(err("stat", at))? else {
            return Ok(false);
        };
        if file_type(&st) != FileType::Directory {
            return Ok(true);
        }
        cur = Some(open_dir(here, &name).map_err(err("opening staged", at))?);
    }
    Ok(true)
}

/// The `.git` directory (or file) `path` is in or is.
fn repository_of(path: &Path) -> &Path {
    path.ancestors()
        .find(|a| a.file_name().is_some_and(|n| n == ".git"))
        .unwrap_or(path)
}

/// Copy the staged single file `staged` back over the host file `host`
/// (a write path that is a file).
pub fn commit_file(staged: &Path, host: &Path) -> Result<Counts, CommitError> {
    let parent = host.parent().unwrap_or(Path::new("/"));
    let name = cname(host.file_name().unwrap_or_default());
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let to = rfs::open(parent, flags, Mode::empty()).map_err(err("opening", parent))?;
    let src = rfs::open(
        staged,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(err("opening", staged))?;
    let st = rfs::fstat(&src).map_err(err("stat", staged))?;
    let mut w = Walk {
        counts: Counts::default(),
        opaque: OPAQUE,
        at: host,
    };
    w.file(src, &st, to.as_fd(), &name)?;
    Ok(w.counts)
}

fn cname(n: &OsStr) -> CString {
    // A directory entry name never holds NUL.
    CString::new(n.as_bytes()).unwrap_or_default()
}

impl Walk<'_> {
    fn path(&self, name: &CStr) -> std::path::PathBuf {
        self.at.join(OsStr::from_bytes(name.to_bytes()))
    }

    /// Every entry of the upper directory `up` onto the host directory `to`.
    fn dir(&mut self, up: BorrowedFd<'_>, to: BorrowedFd<'_>) -> Result<(), CommitError> {
        let here = self.at.to_path_buf();
        let entries = Dir::read_from(up).map_err(err("reading", &here))?;
        for entry in entries {
            let entry = entry.map_err(err("reading", &here))?;
            let name = entry.file_name().to_owned();
            if name.as_bytes() == b"." || name.as_bytes() == b".." {
                continue;
            }
            self.entry(up, to, &name)?;
        }
        Ok(())
    }

    fn entry(
        &mut self,
        up: BorrowedFd<'_>,
        to: BorrowedFd<'_>,
        name: &CStr,
    ) -> Result<(), CommitError> {
        let path = self.path(name);
        let Some(st) = lstat(up, name).map_err(err("stat", &path))? else {
            return Ok(());
        };
        let staged = Staged {
            up,
            to,
            name,
            st: &st,
            path: &path,
        };
        match file_type(&st) {
            _ if is_whiteout(&st) => self.remove(to, name),
            FileType::Directory => self.subdir(staged),
            FileType::RegularFile => {
                let src = rfs::openat(
                    up,
                    name,
                    OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                    Mode::empty(),
                )
                .map_err(err("opening staged", &path))?;
                self.file(src, &st, to, name)
            }
            FileType::Symlink | FileType::Fifo => self.special(staged),
            _ => {
                tracing::debug!(path = %path.display(), "commit: skipped (socket or device)");
                self.counts.skipped += 1;
                Ok(())
            }
        }
    }

    /// A directory: merged into the host one, or replacing what is there
    /// when it is opaque or the host has no directory by that name.
    fn subdir(&mut self, e: Staged<'_>) -> Result<(), CommitError> {
        let sub_up = open_dir(e.up, e.name).map_err(err("opening staged", e.path))?;
        let opaque = matches!(
            rfs::fgetxattr(&sub_up, self.opaque, &mut [0u8; 4]),
            Ok(n) if n >= 1
        );
        let host = lstat(e.to, e.name).map_err(err("stat", e.path))?;
        let host_dir = host
            .as_ref()
            .is_some_and(|h| file_type(h) == FileType::Directory);
        if host.is_some() && (opaque || !host_dir) {
            self.remove(e.to, e.name)?;
        }
        if !host_dir || opaque {
            rfs::mkdirat(e.to, e.name, Mode::from_raw_mode(0o700)).map_err(err("mkdir", e.path))?;
            self.counts.dirs += 1;
        }
        let sub_to = open_dir(e.to, e.name).map_err(err("opening", e.path))?;
        let mut inner = Walk {
            counts: self.counts,
            opaque: self.opaque,
            at: e.path,
        };
        inner.dir(sub_up.as_fd(), sub_to.as_fd())?;
        self.counts = inner.counts;
        own(&sub_to, e.st).map_err(err("chown", e.path))?;
        rfs::fchmod(&sub_to, safe_mode(e.st, true)).map_err(err("chmod", e.path))?;
        rfs::futimens(&sub_to, &times(e.st)).map_err(err("setting times of", e.path))
    }

    /// A regular file: a new name is created in place (`O_EXCL`: nothing,
    /// not even a symlink, may be there); an existing one is replaced by a
    /// copy under a temporary name renamed over it.
    fn file(
        &mut self,
        src: OwnedFd,
        st: &Stat,
        to: BorrowedFd<'_>,
        name: &CStr,
    ) -> Result<(), CommitError> {
        let path = self.path(name);
        let fresh = lstat(to, name).map_err(err("stat", &path))?.is_none();
        let tmp = if fresh { name.to_owned() } else { temp_name() };
        let dst = rfs::openat(
            to,
            &tmp,
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o600),
        )
        .map_err(err("creating", &path))?;
        let copied = (|| {
            let from = std::fs::File::from(src);
            let into = std::fs::File::from(dst);
            copy_data(&from, &into, st.st_size as u64)
                .map_err(|e| Errno::from_io_error(&e).unwrap_or(Errno::IO))?;
            own(&into, st)?;
            rfs::fchmod(&into, safe_mode(st, false))?;
            rfs::futimens(&into, &times(st))
        })();
        if let Err(e) = copied {
            let _ = rfs::unlinkat(to, &tmp, AtFlags::empty());
            return Err(err("writing", &path)(e));
        }
        if fresh {
            self.counts.written += 1;
            return Ok(());
        }
        self.replace(to, &tmp, name)
    }

    /// A symlink (its text, never followed) or a fifo.
    fn special(&mut self, e: Staged<'_>) -> Result<(), CommitError> {
        let tmp = temp_name();
        if file_type(e.st) == FileType::Symlink {
            let target =
                rfs::readlinkat(e.up, e.name, Vec::new()).map_err(err("reading link", e.path))?;
            rfs::symlinkat(&target, e.to, &tmp).map_err(err("symlink", e.path))?;
        } else {
            rfs::mknodat(e.to, &tmp, FileType::Fifo, safe_mode(e.st, false), 0)
                .map_err(err("mkfifo", e.path))?;
        }
        let meta = rfs::chownat(
            e.to,
            &tmp,
            Some(Uid::from_raw(e.st.st_uid)),
            Some(Gid::from_raw(e.st.st_gid)),
            AtFlags::SYMLINK_NOFOLLOW,
        )
        .and_then(|()| rfs::utimensat(e.to, &tmp, &times(e.st), AtFlags::SYMLINK_NOFOLLOW));
        if let Err(errno) = meta {
            let _ = rfs::unlinkat(e.to, &tmp, AtFlags::empty());
            return Err(err("setting owner and times of", e.path)(errno));
        }
        self.replace(e.to, &tmp, e.name)
    }

    /// Rename `tmp` over `name`; a directory in the way is removed first
    /// (rename cannot replace one with a file).
    fn replace(&mut self, to: BorrowedFd<'_>, tmp: &CStr, name: &CStr) -> Result<(), CommitError> {
        let path = self.path(name);
        let in_way = lstat(to, name).map_err(err("stat", &path))?;
        if in_way.is_some_and(|h| file_type(&h) == FileType::Directory) {
            self.remove(to, name)?;
        }
        if let Err(e) = rfs::renameat(to, tmp, to, name) {
            let _ = rfs::unlinkat(to, tmp, AtFlags::empty());
            return Err(err("renaming into place", &path)(e));
        }
        self.counts.written += 1;
        Ok(())
    }

    /// Remove the host entry `name` of `to`, a whole tree for a directory
    /// (descending by fd, never through a symlink). Gone already is fine.
    fn remove(&mut self, to: BorrowedFd<'_>, name: &CStr) -> Result<(), CommitError> {
        let path = self.path(name);
        let Some(st) = lstat(to, name).map_err(err("stat", &path))? else {
            return Ok(());
        };
        if file_type(&st) == FileType::Directory {
            let sub = open_dir(to, name).map_err(err("opening", &path))?;
            let names: Vec<CString> = Dir::read_from(&sub)
                .map_err(err("reading", &path))?
                .filter_map(|e| e.ok().map(|e| e.file_name().to_owned()))
                .filter(|n| n.as_bytes() != b"." && n.as_bytes() != b"..")
                .collect();
            let mut inner = Walk {
                counts: self.counts,
                opaque: self.opaque,
                at: &path,
            };
            for n in names {
                inner.remove(sub.as_fd(), &n)?;
            }
            self.counts = inner.counts;
            rfs::unlinkat(to, name, AtFlags::REMOVEDIR).map_err(err("removing", &path))?;
        } else {
            match rfs::unlinkat(to, name, AtFlags::empty()) {
                Ok(()) | Err(Errno::NOENT) => {}
                Err(e) => return Err(err("removing", &path)(e)),
            }
        }
        self.counts.removed += 1;
        Ok(())
    }
}

/// Give an fd the staged owner, unless it has it already (the namespaces
/// tier cannot chown, and needs not: every file there is the caller's).
fn own(fd: impl AsFd, st: &Stat) -> rustix::io::Result<()> {
    let now = rfs::fstat(&fd)?;
    if now.st_uid == st.st_uid && now.st_gid == st.st_gid {
        return Ok(());
    }
    rfs::fchown(
        &fd,
        Some(Uid::from_raw(st.st_uid)),
        Some(Gid::from_raw(st.st_gid)),
    )
}

/// Copy the data extents of `from` (`size` bytes long) into the empty
/// `into`, leaving its holes as holes.
fn copy_data(from: &std::fs::File, into: &std::fs::File, size: u64) -> std::io::Result<()> {
    use std::io::{Read as _, Seek as _, SeekFrom};
    let (mut reader, mut writer) = (from, into);
    let mut at = 0;
    while at < size {
        let data = match rfs::seek(from, rfs::SeekFrom::Data(at)) {
            Ok(d) => d,
            // No data after `at`: the rest is a hole.
            Err(Errno::NXIO) => break,
            Err(e) => return Err(e.into()),
        };
        let hole = rfs::seek(from, rfs::SeekFrom::Hole(data))?;
        writer.seek(SeekFrom::Start(data))?;
        reader.seek(SeekFrom::Start(data))?;
        std::io::copy(&mut reader.take(hole - data), &mut writer)?;
        at = hole;
    }
    into.set_len(size)
}

/// Refuse a commit of the upper tree `up` that would write more bytes
/// than its staging filesystem holds (see the module's documentation).
fn fits(up: BorrowedFd<'_>, host: &Path) -> Result<(), CommitError> {
    let fs = rfs::fstatvfs(up).map_err(err("statfs of the staging of", host))?;
    let cap = fs.f_blocks.saturating_mul(fs.f_frsize);
    let bytes = staged_bytes(up, host)?;
    if bytes > cap {
        return Err(CommitError {
            what: "refusing to commit",
            path: host.display().to_string(),
            source: std::io::Error::other(format!(
                "the staged files would take {bytes} bytes on the host, more than the staging's cap of {cap} ([limits] disk; hard links are committed as one copy per name); nothing was written"
            )),
        });
    }
    Ok(())
}

/// The allocated bytes of every regular file below `dir`, once per name.
fn staged_bytes(dir: BorrowedFd<'_>, at: &Path) -> Result<u64, CommitError> {
    let mut total = 0u64;
    for entry in Dir::read_from(dir).map_err(err("reading", at))? {
        let entry = entry.map_err(err("reading", at))?;
        let name = entry.file_name();
        if name.to_bytes() == b"." || name.to_bytes() == b".." {
            continue;
        }
        let Some(st) = lstat(dir, name).map_err(err("stat", at))? else {
            continue;
        };
        total = total.saturating_add(match file_type(&st) {
            FileType::RegularFile => (st.st_blocks as u64).saturating_mul(512),
            FileType::Directory => {
                let sub = open_dir(dir, name).map_err(err("opening staged", at))?;
                staged_bytes(sub.as_fd(), at)?
            }
            _ => 0,
        });
    }
    Ok(total)
}

fn temp_name() -> CString {
    let n = TMP_SEQ.fetch_add(1, Ordering::Relaxed);
    CString::new(format!(".sandboy-commit.{}.{n}", std::process::id())).unwrap_or_default()
}
