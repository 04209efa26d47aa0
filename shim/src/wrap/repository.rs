//! The landlock tier's hold on a checkout's control files.
//!
//! The namespaces tier stages write paths and its commit refuses a changed
//! control file of the same repositories (`commit`). The landlock tier
//! writes the host directly, and Landlock grants whole trees: `--rw .` in a
//! checkout lets the step write them, and the user's next `git` runs what
//! they say (`core.fsmonitor`, hooks, filters) outside any sandbox (a red
//! team's step planted a `pre-commit` that read `~/.ssh`). So the watchdog,
//! outside the step, copies them before the step runs and compares after
//! its whole process tree is gone: anything changed is put back, and the
//! run fails naming it.
//!
//! What is held is everything git runs from or is redirected by
//! ([`CONTROL`]: config, `config.worktree`, `commondir`, hooks, info) of
//! each git directory: a checkout's `.git`, its submodules' under
//! `.git/modules`, its linked worktrees' under `.git/worktrees`, a bare
//! repository; a worktree's `.git` file; and the
//! hooks directory a `core.hooksPath` names inside a write path (a red
//! team went through each of these once `.git/config` was held).
//!
//! The repositories held are those at most [`DEPTH`] levels below a write
//! path (a checkout, or a directory of checkouts), looked for in at most
//! [`MAX_DIRS`] directories, each with at most [`MAX_BYTES`] of control
//! files; a write path inside `.git` is the user's explicit grant. A
//! repository the step makes below a checkout is removed and fails the
//! run (`nested`); elsewhere it is its output.
//!
//! Held the same way: what git reads beyond a repository
//! (`gitconfig::beyond`): the caller's global config files, every file a
//! config includes, and a global `core.hooksPath`, when in a write path.

use std::collections::BTreeMap;
use std::fs;
use std::io::Write;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// The control entries of a git directory that git runs from or that
/// redirect it (`commondir` names another directory's config and hooks,
/// `config.worktree` adds configuration); the namespaces tier's commit
/// refuses the same names.
pub const CONTROL: &[&str] = &["config", "config.worktree", "commondir", "hooks", "info"];

/// Past this, a repository's control files are not copied (a warning says
/// so): hooks directories hold kilobytes.
const MAX_BYTES: u64 = 8 << 20;

/// How deep below a write path repositories are looked for, and in how
/// many directories at most (a step's start must stay cheap).
pub(super) const DEPTH: usize = 2;
pub(super) const MAX_DIRS: usize = 500;

/// [`CONTROL`] as the held names of one git directory.
fn control() -> Vec<PathBuf> {
    CONTROL.iter().map(PathBuf::from).collect()
}

/// Whether `dir` is a git directory by its shape (git's own test: `HEAD`,
/// `objects`): a bare repository, or a submodule's under `.git/modules`.
fn is_git_dir(dir: &Path) -> bool {
    dir.join("HEAD").is_file() && dir.join("objects").is_dir()
}

/// The git directories (and checkouts with a `.git` file) of the write
/// paths `write`, as the hold finds them.
pub(super) fn git_dirs(write: &[String]) -> Vec<PathBuf> {
    write
        .iter()
        .flat_map(|w| repositories(Path::new(w)))
        .map(|(git, _)| git)
        .collect()
}

/// The checkouts the hold finds in the write path `root`: the working
/// trees of its `.git` directories and files (not bare repositories).
pub(super) fn checkouts(root: &Path) -> Vec<PathBuf> {
    repositories(root)
        .into_iter()
        .filter_map(|(git, names)| match names.as_slice() {
            [one] if one == Path::new(".git") => Some(git),
            _ if git.file_name().is_some_and(|n| n == ".git") => {
                git.parent().map(Path::to_path_buf)
            }
            _ => None,
        })
        .collect()
}

/// What a write path holds that git runs from: each git directory (a
/// checkout's `.git`, a bare repository, a submodule's) with the entries
/// [`CONTROL`] names, and each checkout's `.git` *file* (a worktree's or a
/// submodule's `gitdir:` pointer) with itself. At most [`DEPTH`] levels
/// below `root`, without following links.
fn repositories(root: &Path) -> Vec<(PathBuf, Vec<PathBuf>)> {
    let mut found = Vec::new();
    let mut level = vec![root.to_path_buf()];
    let mut visited = 0;
    for _ in 0..DEPTH {
        let mut next = Vec::new();
        for dir in level {
            visited += 1;
            if visited > MAX_DIRS {
                return found;
            }
            if dir != root && is_git_dir(&dir) {
                git_dir(dir, &mut found);
                continue;
            }
            let Ok(entries) = fs::read_dir(&dir) else {
                continue;
            };
            for e in entries.flatten() {
                let Ok(kind) = e.file_type() else { continue };
                match (e.file_name() == ".git", kind.is_dir(), kind.is_file()) {
                    (true, true, _) => {
                        modules(&e.path().join("modules"), 0, &mut found);
                        git_dir(e.path(), &mut found);
                    }
                    (true, _, true) => found.push((dir.clone(), vec![PathBuf::from(".git")])),
                    (false, true, _) => next.push(e.path()),
                    _ => {}
                }
            }
        }
        level = next;
    }
    found
}

/// A git directory with [`CONTROL`], and its linked worktrees' own
/// directories (`worktrees/<name>`, whose `commondir` and
/// `config.worktree` git reads in that worktree).
fn git_dir(git: PathBuf, found: &mut Vec<(PathBuf, Vec<PathBuf>)>) {
    if let Ok(entries) = fs::read_dir(git.join("worktrees")) {
        for e in entries.flatten().take(MAX_DIRS) {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                found.push((e.path(), control()));
            }
        }
    }
    found.push((git, control()));
}

/// The submodules' git directories below `dir` (`.git/modules/<path>`,
/// whose names may hold slashes, and theirs in turn).
fn modules(dir: &Path, depth: usize, found: &mut Vec<(PathBuf, Vec<PathBuf>)>) {
    if depth > 4 || found.len() > MAX_DIRS {
        return;
    }
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        if !e.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        let path = e.path();
        if is_git_dir(&path) {
            modules(&path.join("modules"), depth + 1, found);
            git_dir(path, found);
        } else {
            modules(&path, depth + 1, found);
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Entry {
    File { bytes: Vec<u8>, mode: u32 },
    Dir { mode: u32 },
    Link(PathBuf),
}

/// One repository's control files as they were before the step.
struct Snapshot {
    /// The directory the held names are in (a git directory, or a
    /// checkout for its `.git` file, or a hooks directory's parent).
    git: PathBuf,
    /// Its device and inode: restored only into the same directory.
    id: (u64, u64),
    /// The held entries of `git`, relative to it.
    names: Vec<PathBuf>,
    entries: BTreeMap<PathBuf, Entry>,
    /// For a held file whose directories do not exist yet: its path below
    /// `git` (`names` holds the first missing directory, put back by
    /// removal). Only its appearance is a change: the step may make other
    /// things in that directory.
    watch: Option<PathBuf>,
}

/// The repositories of a run's write paths, held, and the trees of their
/// checkouts, held against new repositories (`nested`).
pub struct Held(Vec<Snapshot>, super::nested::Trees);

impl Held {
    /// Copy the control files of every repository in the write paths.
    pub fn take(write: &[String], id: &str) -> Held {
        let granted = |git: &Path| write.iter().any(|w| Path::new(w).starts_with(git));
        let writable = |p: &Path| write.iter().any(|w| p.starts_with(w));
        let repos: Vec<_> = write
            .iter()
            .flat_map(|w| repositories(Path::new(w)))
            .collect();
        let git_dirs: Vec<PathBuf> = repos.iter().map(|(git, _)| git.clone()).collect();
        let mut found: Vec<_> = repos.into_iter().map(|(g, n)| (g, n, None)).collect();
        // Hooks directories, global configs and included files in a write
        // path.
        found.extend(
            super::gitconfig::beyond(write, &git_dirs)
                .iter()
                .filter_map(|p| anchored(p, &writable)),
        );
        let mut held = Vec::new();
        for (git, names, watch) in found {
            let Ok(meta) = fs::symlink_metadata(&git) else {
                continue;
            };
            // A write path inside the git directory, or the one entry
            // held, is the user's explicit grant.
            let target = match names.as_slice() {
                [one] => git.join(one),
                _ => git.clone(),
            };
            if !meta.is_dir() || granted(&target) {
                continue;
            }
            let mut entries = BTreeMap::new();
            let mut budget = MAX_BYTES;
            if names
                .iter()
                .any(|n| copy(&git, n, &mut entries, &mut budget).is_err())
            {
                tracing::warn!(%id, path = %git.display(), "wrap: this repository's config, hooks and info are too large or unreadable to hold; the step can change them");
                continue;
            }
            held.push(Snapshot {
                git,
                id: (meta.dev(), meta.ino()),
                names,
                entries,
                watch,
            });
        }
        Held(held, super::nested::Trees::take(write))
    }

    /// After the step: put back what it changed and remove a repository
    /// it made below a checkout. `Err` names the first change (the run
    /// then fails), after everything was put back.
    pub fn check(&self, id: &str) -> Result<(), String> {
        let mut first = None;
        for s in &self.0 {
            if let Some(changed) = s.changed() {
                let restored = s.restore();
                first.get_or_insert(match restored {
                    Ok(()) => format!("the step changed {}; a repository's config, hooks and info run in your next git command outside any sandbox, so they were put back as they were", changed.display()),
                    Err(e) => format!("the step changed {}, and putting it back failed ({e}): check the repository's config and hooks before running git there", changed.display()),
                });
            }
        }
        let planted = self.1.check(id);
        first.map_or(planted, Err)
    }
}

/// What is held, and where: a directory, its held names, a watched path
/// (see [`Snapshot`]).
type Found = (PathBuf, Vec<PathBuf>, Option<PathBuf>);

/// `path` held from its nearest existing directory (still in a write
/// path): the file itself where its directory exists, else the first
/// missing directory, watched for `path` (a global config the host does
/// not have yet, `~/.config/git/config`, that the step creates is
/// removed). One name below the directory, so no check or put-back goes
/// through a link the step made.
fn anchored(path: &Path, writable: &impl Fn(&Path) -> bool) -> Option<Found> {
    let mut dir = path.parent()?;
    while fs::symlink_metadata(dir)
        .map(|m| !m.is_dir())
        .unwrap_or(true)
    {
        dir = dir.parent().filter(|d| writable(d))?;
    }
    let rel = path.strip_prefix(dir).ok()?.to_path_buf();
    let first = PathBuf::from(rel.iter().next()?);
    let watch = (first != rel).then_some(rel);
    Some((dir.to_path_buf(), vec![first], watch))
}

/// Whether `rel` exists below `dir`, a link on the way counting as there
/// (never followed).
fn appeared(dir: &Path, rel: &Path) -> bool {
    let mut at = dir.to_path_buf();
    for c in rel.iter() {
        at.push(c);
        match fs::symlink_metadata(&at) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => return true,
            Err(_) => return false,
        }
    }
    true
}

/// Add `rel` (below `git`) and everything under it to `out`.
fn copy(
    git: &Path,
    rel: &Path,
    out: &mut BTreeMap<PathBuf, Entry>,
    budget: &mut u64,
) -> std::io::Result<()> {
    let path = git.join(rel);
    let meta = match fs::symlink_metadata(&path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    let mode = meta.permissions().mode() & 0o7777;
    if meta.file_type().is_symlink() {
        out.insert(rel.to_path_buf(), Entry::Link(fs::read_link(&path)?));
    } else if meta.is_dir() {
        out.insert(rel.to_path_buf(), Entry::Dir { mode });
        for e in fs::read_dir(&path)? {
            copy(git, &rel.join(e?.file_name()), out, budget)?;
        }
    } else if meta.is_file() {
        *budget = budget
            .checked_sub(meta.len())
            .ok_or_else(|| std::io::Error::other("too large"))?;
        out.insert(
            rel.to_path_buf(),
            Entry::File {
                bytes: fs::read(&path)?,
                mode,
            },
        );
    }
    Ok(())
}

impl Snapshot {
    /// `.git` is still the directory copied from (not replaced or moved).
    fn same_dir(&self) -> bool {
        fs::symlink_metadata(&self.git).is_ok_and(|m| m.is_dir() && (m.dev(), m.ino()) == self.id)
    }

    /// The first entry that differs now, or `.git` itself if it is not
    /// the same directory.
    fn changed(&self) -> Option<PathBuf> {
        if !self.same_dir() {
            return Some(self.git.clone());
        }
        if let Some(rel) = &self.watch {
            return appeared(&self.git, rel).then(|| self.git.join(rel));
        }
        let mut now = BTreeMap::new();
        let mut budget = MAX_BYTES * 4;
        if let Some(n) = self
            .names
            .iter()
            .find(|n| copy(&self.git, n, &mut now, &mut budget).is_err())
        {
            return Some(self.git.join(n));
        }
        let keys = self.entries.keys().chain(now.keys());
        keys.into_iter()
            .find(|k| self.entries.get(*k) != now.get(*k))
            .map(|k| self.git.join(k))
    }

    /// Remove what is there now and write the copy back, never through a
    /// link (the step's processes are all gone: nothing races this).
    fn restore(&self) -> std::io::Result<()> {
        if !self.same_dir() {
            return Err(std::io::Error::other(
                "the .git directory itself was replaced",
            ));
        }
        for name in &self.names {
            let path = self.git.join(name);
            match fs::symlink_metadata(&path) {
                Ok(m) if m.is_dir() => fs::remove_dir_all(&path)?,
                Ok(_) => fs::remove_file(&path)?,
                Err(_) => {}
            }
        }
        // Parents sort before their children.
        for (rel, entry) in &self.entries {
            let path = self.git.join(rel);
            match entry {
                Entry::Dir { mode } => {
                    fs::create_dir(&path)?;
                    fs::set_permissions(&path, fs::Permissions::from_mode(*mode))?;
                }
                Entry::Link(target) => std::os::unix::fs::symlink(target, &path)?,
                Entry::File { bytes, mode } => {
                    let mut f = fs::OpenOptions::new()
                        .write(true)
                        .create_new(true)
                        .mode(0o600)
                        .open(&path)?;
                    f.write_all(bytes)?;
                    f.set_permissions(fs::Permissions::from_mode(*mode))?;
                }
            }
        }
        Ok(())
    }
}
