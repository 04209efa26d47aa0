//! Repositories a step makes inside a host checkout.
//!
//! git finds a command's repository by walking up from its directory to
//! the first `.git`. A red team's step under `--rw .` wrote
//! `src/.git/{HEAD,objects,refs,config}` with a `core.fsmonitor`: it became
//! the repository of every git command the user (or a prompt, an editor)
//! ran in `src/`, outside any sandbox, and neither the checkout's hold nor
//! the commit looked at it, since it was not the checkout's own.
//!
//! So below a host checkout — in a write path that holds one, or in a
//! write path that lies inside one — a new `.git` (directory, `gitdir:`
//! file or link) is held like the checkout's own control files: the
//! namespaces tier's and root wrap's commit refuse it (`commit`), and the
//! landlock tier removes it after the step and fails the run ([`Trees`]).
//! A repository the step makes in a write path outside every checkout
//! (a `git clone` into `out/`) is its output.
//!
//! The landlock tier looks through the live tree, so its look is bounded
//! like the hold's: checkouts are found [`repository::DEPTH`] levels below
//! a write path, and below each, the first [`repository::MAX_DIRS`]
//! directories (breadth-first, the ones the tree had before the step
//! first) are looked through; a `.git` made beyond them stays (a warning
//! says the look stopped). The commit reads only what the step wrote, all
//! of it.
//!
//! [`repository::DEPTH`]: super::repository::DEPTH
//! [`repository::MAX_DIRS`]: super::repository::MAX_DIRS

use std::collections::{HashSet, VecDeque};
use std::fs;
use std::path::{Path, PathBuf};

use super::repository::MAX_DIRS;

/// Whether `path` lies in a checkout's working tree: it or a directory
/// above it has a `.git`, where git's own walk up would find one.
pub(super) fn inside_checkout(path: &Path) -> bool {
    path.ancestors()
        .any(|a| fs::symlink_metadata(a.join(".git")).is_ok())
}

/// The working trees below which the write paths `write` hold new
/// repositories: each write path inside a checkout, and each checkout the
/// hold finds in a write path, outermost only. A write path inside a
/// `.git` is the user's explicit grant.
fn roots(write: &[String]) -> Vec<PathBuf> {
    let mut roots: Vec<PathBuf> = Vec::new();
    for w in write.iter().map(Path::new) {
        if w.components().any(|c| c.as_os_str() == ".git") {
            continue;
        }
        if inside_checkout(w) {
            roots.push(w.to_path_buf());
        } else {
            roots.extend(super::repository::checkouts(w));
        }
    }
    roots.sort();
    roots.dedup();
    let inner = |r: &PathBuf| roots.iter().any(|o| o != r && r.starts_with(o));
    roots.iter().filter(|r| !inner(r)).cloned().collect()
}

/// One working tree as the landlock tier saw it before the step: the
/// directories it read, and their subdirectories and `.git` entries.
struct Tree {
    root: PathBuf,
    read: HashSet<PathBuf>,
    seen: HashSet<PathBuf>,
}

/// The working trees of a run's write paths, held against new
/// repositories (the landlock tier; see the module's documentation).
pub struct Trees(Vec<Tree>);

impl Trees {
    /// Look through each tree before the step.
    pub fn take(write: &[String]) -> Trees {
        Trees(roots(write).into_iter().map(Tree::take).collect())
    }

    /// After the step, once its processes are all gone: remove each
    /// `.git` it made below a checkout. `Err` names the first.
    pub fn check(&self, id: &str) -> Result<(), String> {
        let mut first = None;
        for t in &self.0 {
            for planted in t.planted(id) {
                let removed = remove(&planted);
                first.get_or_insert(match removed {
                    Ok(()) => format!("the step made a repository at {}, inside the checkout {}; git runs its config and hooks in your next git command there, outside any sandbox, so it was removed", planted.display(), t.root.display()),
                    Err(e) => format!("the step made a repository at {}, inside the checkout {}, and removing it failed ({e}): remove it before running git there", planted.display(), t.root.display()),
                });
            }
        }
        first.map_or(Ok(()), Err)
    }
}

/// A directory's entries as (path, is a directory, is `.git`), never
/// through a link.
fn entries(dir: &Path) -> Vec<(PathBuf, bool, bool)> {
    let Ok(list) = fs::read_dir(dir) else {
        return Vec::new();
    };
    list.flatten()
        .map(|e| {
            let is_dir = e.file_type().is_ok_and(|t| t.is_dir());
            (e.path(), is_dir, e.file_name() == ".git")
        })
        .collect()
}

impl Tree {
    fn take(root: PathBuf) -> Tree {
        let mut t = Tree {
            root,
            read: HashSet::new(),
            seen: HashSet::new(),
        };
        let mut queue = VecDeque::from([t.root.clone()]);
        while let Some(dir) = queue.pop_front() {
            if t.read.len() >= MAX_DIRS {
                break;
            }
            for (path, is_dir, is_git) in entries(&dir) {
                if is_dir && !is_git {
                    queue.push_back(path.clone());
                }
                if is_dir || is_git {
                    t.seen.insert(path);
                }
            }
            t.read.insert(dir);
        }
        t
    }

    /// The `.git` entries the step made: in a directory read before the
    /// step that had none, or in a directory the step made. Directories
    /// the tree had are looked through first, so new ones cannot crowd
    /// them out of the bound.
    fn planted(&self, id: &str) -> Vec<PathBuf> {
        let mut planted = Vec::new();
        // (directory, made by the step)
        let (mut old, mut new) = (VecDeque::from([self.root.clone()]), VecDeque::new());
        let mut visited = 0;
        while let Some((dir, fresh)) = old
            .pop_front()
            .map(|d| (d, false))
            .or_else(|| new.pop_front().map(|d| (d, true)))
        {
            visited += 1;
            if visited > MAX_DIRS {
                tracing::warn!(%id, root = %self.root.display(), "wrap: this checkout has more than {MAX_DIRS} directories; a repository the step made beyond them was not looked for");
                break;
            }
            let known = self.read.contains(&dir);
            for (path, is_dir, is_git) in entries(&dir) {
                let made = fresh || (known && !self.seen.contains(&path));
                match (is_git, is_dir) {
                    (true, _) if made => planted.push(path),
                    (true, _) | (false, false) => {}
                    (false, true) if made => new.push_back(path),
                    (false, true) => old.push_back(path),
                }
            }
        }
        planted
    }
}

/// Remove `path`, a whole tree for a directory (never through a link).
fn remove(path: &Path) -> std::io::Result<()> {
    if fs::symlink_metadata(path)?.is_dir() {
        fs::remove_dir_all(path)
    } else {
        fs::remove_file(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mkdirs(root: &Path, dirs: &[&str]) {
        for d in dirs {
            fs::create_dir_all(root.join(d)).unwrap();
        }
    }

    #[test]
    fn only_a_git_the_step_made_below_a_checkout_is_removed() {
        let tmp = crate::test_support::TempDir::new("nested");
        let root = tmp.path();
        mkdirs(
            root,
            &[
                "proj/.git/objects",
                "proj/src",
                "proj/vendor/lib/.git",
                "out",
            ],
        );
        let write = [root.join("proj"), root.join("out")].map(|p| p.display().to_string());
        let held = Trees::take(&write);
        // Made by the step: in an old directory, in a new one, a file.
        mkdirs(
            root,
            &[
                "proj/src/.git/objects",
                "proj/new/deep/.git",
                "out/clone/.git",
            ],
        );
        fs::write(root.join("proj/vendor/.git"), "gitdir: /x\n").unwrap();
        let e = held.check("t").unwrap_err();
        assert!(e.contains("inside the checkout"), "{e}");
        for gone in ["proj/src/.git", "proj/new/deep/.git", "proj/vendor/.git"] {
            assert!(!root.join(gone).exists(), "{gone}");
        }
        // The checkout's own, one it had below, and a clone outside it stay.
        for kept in ["proj/.git", "proj/vendor/lib/.git", "out/clone/.git"] {
            assert!(root.join(kept).is_dir(), "{kept}");
        }
        assert!(held.check("t").is_ok());
    }

    #[test]
    fn a_write_path_inside_a_checkout_is_held_whole() {
        let tmp = crate::test_support::TempDir::new("nested-in");
        let root = tmp.path();
        mkdirs(root, &["proj/.git", "proj/src", "plain/out"]);
        assert!(inside_checkout(&root.join("proj/src")));
        let write = [root.join("proj/src"), root.join("plain/out")];
        let write = write.map(|p| p.display().to_string());
        assert_eq!(roots(&write), [root.join("proj/src")]);
    }
}
