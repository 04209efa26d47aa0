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
//! git starts that walk from the *physical* directory, so a link is a way
//! into a repository too: a red team's step under `--rw . --rw ../out2`
//! made `../out2/r/.git` (output, allowed) and replaced `src` with
//! `src -> ../out2/r`; the user's next `git status` in `src` ran its
//! `core.fsmonitor`. So a link the step made or changed below a host
//! checkout is resolved after the step, link by link as the kernel would
//! ([`Links`]), and held like a planted `.git` when its target lies at or
//! below a directory with a `.git` other than the repository the link's
//! own directory belongs to (a new one in another write path, or one the
//! host had). The rule is that narrow on purpose: links to anything
//! without a `.git` above it (a venv's `bin/python -> /usr/bin/python3`,
//! `node_modules/.bin` links within the checkout, a package store) are
//! the step's output. A link the checkout already had is its content,
//! even if the step makes a repository where it points.
//!
//! The landlock tier looks through the live tree, so its look is bounded
//! like the hold's: checkouts are found [`repository::DEPTH`] levels below
//! a write path, and below each, the first [`repository::MAX_DIRS`]
//! directories (breadth-first, the ones the tree had before the step
//! first) are looked through; a `.git` or link made beyond them stays (a
//! warning says the look stopped), and so do the links left once
//! [`MAX_LINKS`] hops have been followed in a tree (a warning). The commit
//! reads only what the step wrote, all of it, and refuses a commit whose
//! links need more than [`MAX_LINKS`] hops (nothing is lost: nothing was
//! written).
//!
//! [`repository::DEPTH`]: super::repository::DEPTH
//! [`repository::MAX_DIRS`]: super::repository::MAX_DIRS

use std::collections::{HashMap, HashSet, VecDeque};
use std::ffi::OsString;
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
/// directories it read, their subdirectories and `.git` entries, and
/// their links with their targets.
struct Tree {
    root: PathBuf,
    read: HashSet<PathBuf>,
    /// Directories read that had git's shape before the step.
    shaped: HashSet<PathBuf>,
    seen: HashSet<PathBuf>,
    links: HashMap<PathBuf, PathBuf>,
}

/// What the step made in a tree: `.git` entries, and links it made or
/// changed.
#[derive(Default)]
struct Made {
    gits: Vec<PathBuf>,
    /// Directories the step gave git's shape ([`git_shaped`]).
    bare: Vec<PathBuf>,
    links: Vec<PathBuf>,
}

/// Whether git takes `dir` itself for a repository on its walk up (a
/// bare one: `HEAD` and `objects`, no `.git` needed). A red team's step
/// wrote `src/{HEAD,objects,refs,config}` with `core.worktree = .`, and
/// the user's next `git status` in `src` ran its `core.fsmonitor`.
fn git_shaped(view: impl Fn(&Path) -> bool, dir: &Path) -> bool {
    view(&dir.join("HEAD")) && view(&dir.join("objects"))
}

fn exists(p: &Path) -> bool {
    fs::symlink_metadata(p).is_ok()
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
    /// `.git` it made below a checkout, then each link it made there into
    /// a repository (`Links`). `Err` names the first.
    pub fn check(&self, id: &str) -> Result<(), String> {
        let mut first = None;
        for t in &self.0 {
            let made = t.planted(id);
            for planted in made.gits {
                let removed = remove(&planted);
                first.get_or_insert(refusal("a repository", &planted, &t.root, removed));
            }
            // Its HEAD goes: without one it is no repository to git, and
            // the rest of the directory may be the step's work.
            for dir in made.bare {
                let removed = fs::remove_file(dir.join("HEAD"));
                let what = "a bare repository (HEAD and objects)";
                first.get_or_insert(refusal(what, &dir, &t.root, removed));
            }
            for (link, repo) in t.foreign_links(&made.links, id) {
                let what = format!("a link into the repository {}", repo.display());
                let removed = fs::remove_file(&link);
                first.get_or_insert(refusal(&what, &link, &t.root, removed));
            }
        }
        first.map_or(Ok(()), Err)
    }
}

/// The line that says the step made `what` at `path` in the checkout
/// `root`, and whether it was `removed`.
fn refusal(what: &str, path: &Path, root: &Path, removed: std::io::Result<()>) -> String {
    let made = format!(
        "the step made {what} at {}, inside the checkout {}",
        path.display(),
        root.display()
    );
    match removed {
        Ok(()) => format!("{made}; git runs that repository's config and hooks in your next git command there, outside any sandbox, so it was removed"),
        Err(e) => format!("{made}, and removing it failed ({e}): remove it before running git there"),
    }
}

/// One entry of a directory, never looked at through a link.
struct Entry {
    path: PathBuf,
    is_dir: bool,
    is_git: bool,
    is_link: bool,
}

fn entries(dir: &Path) -> Vec<Entry> {
    let Ok(list) = fs::read_dir(dir) else {
        return Vec::new();
    };
    list.flatten()
        .map(|e| {
            let kind = e.file_type().ok();
            Entry {
                path: e.path(),
                is_dir: kind.is_some_and(|t| t.is_dir()),
                is_git: e.file_name() == ".git",
                is_link: kind.is_some_and(|t| t.is_symlink()),
            }
        })
        .collect()
}

impl Tree {
    fn take(root: PathBuf) -> Tree {
        let mut t = Tree {
            root,
            read: HashSet::new(),
            shaped: HashSet::new(),
            seen: HashSet::new(),
            links: HashMap::new(),
        };
        let mut queue = VecDeque::from([t.root.clone()]);
        while let Some(dir) = queue.pop_front() {
            if t.read.len() >= MAX_DIRS {
                break;
            }
            for e in entries(&dir) {
                if e.is_link && !e.is_git {
                    if let Ok(target) = fs::read_link(&e.path) {
                        t.links.insert(e.path.clone(), target);
                    }
                }
                if e.is_dir && !e.is_git {
                    queue.push_back(e.path.clone());
                }
                if e.is_dir || e.is_git {
                    t.seen.insert(e.path);
                }
            }
            if git_shaped(exists, &dir) {
                t.shaped.insert(dir.clone());
            }
            t.read.insert(dir);
        }
        t
    }

    /// The `.git` entries the step made, and the links it made or changed:
    /// in a directory read before the step, or in a directory the step
    /// made. Directories the tree had are looked through first, so new
    /// ones cannot crowd them out of the bound.
    fn planted(&self, id: &str) -> Made {
        let mut made = Made::default();
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
                tracing::warn!(%id, root = %self.root.display(), "wrap: this checkout has more than {MAX_DIRS} directories; a repository or link the step made beyond them was not looked for");
                break;
            }
            let known = self.read.contains(&dir);
            if !self.shaped.contains(&dir) && git_shaped(exists, &dir) {
                made.bare.push(dir);
                continue;
            }
            for e in entries(&dir) {
                let is_new = fresh || (known && !self.seen.contains(&e.path));
                let link = e.is_link && !e.is_git;
                if link && (fresh || (known && self.changed_link(&e.path))) {
                    made.links.push(e.path.clone());
                }
                match (e.is_git, e.is_dir) {
                    (true, _) if is_new => made.gits.push(e.path),
                    (true, _) | (false, false) => {}
                    (false, true) if is_new => new.push_back(e.path),
                    (false, true) => old.push_back(e.path),
                }
            }
        }
        made
    }

    /// Whether the link at `path` is not the one the tree had there.
    fn changed_link(&self, path: &Path) -> bool {
        self.links.get(path) != fs::read_link(path).ok().as_ref()
    }

    /// Of the links the step made or changed, those into a repository
    /// other than their directory's, with it; up to [`MAX_LINKS`] hops.
    fn foreign_links(&self, links: &[PathBuf], id: &str) -> Vec<(PathBuf, PathBuf)> {
        let view = View::default();
        let mut follow = Links::new(&view);
        let mut foreign = Vec::new();
        for link in links {
            match follow.foreign_repository(link) {
                Ok(Some(repo)) => foreign.push((link.clone(), repo)),
                Ok(None) => {}
                Err(Spent) => {
                    tracing::warn!(%id, root = %self.root.display(), "wrap: the step's links in this checkout lead through more than {MAX_LINKS} links; the rest were not followed");
                    break;
                }
            }
        }
        foreign
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

/// Link hops followed per held tree (the landlock tier's look, one
/// commit's walk): each link met while resolving the step's links counts.
pub(super) const MAX_LINKS: usize = 10_000;

/// Hops one resolution follows before it gives up, as the kernel does
/// (`ELOOP`): such a link cannot be entered, so it leads nowhere.
const MAX_HOPS: usize = 40;

/// Where a host path is looked at after the step. The landlock tier and
/// the namespaces tier's pid 1 (whose root shows each staged write path's
/// merged view at its path) look at the path itself; root wrap's commit
/// looks at each staged write path through its merged view, so a
/// repository another write path staged counts before it is committed.
#[derive(Debug, Clone, Default)]
pub struct View {
    /// (write path on the host, its merged view), longest first.
    staged: Vec<(PathBuf, PathBuf)>,
}

impl View {
    /// Root wrap's: each `(write path, merged view)` pair, a nested write
    /// path before the one it is in, as its bind lies on top.
    pub fn staged(mut staged: Vec<(PathBuf, PathBuf)>) -> View {
        staged.sort_by_key(|(host, _)| std::cmp::Reverse(host.as_os_str().len()));
        View { staged }
    }

    /// Where the host path `p` is looked at.
    fn at(&self, p: &Path) -> PathBuf {
        self.staged
            .iter()
            .find_map(|(host, merged)| Some(merged.join(p.strip_prefix(host).ok()?)))
            .unwrap_or_else(|| p.to_path_buf())
    }

    fn exists(&self, p: &Path) -> bool {
        fs::symlink_metadata(self.at(p)).is_ok()
    }

    fn read_link(&self, p: &Path) -> Option<PathBuf> {
        let at = self.at(p);
        fs::symlink_metadata(&at).ok()?.is_symlink().then_some(())?;
        fs::read_link(at).ok()
    }
}

/// The link bound of one tree is spent: the link was not followed.
#[derive(Debug)]
pub(super) struct Spent;

/// Follows the links a step made below a checkout, up to [`MAX_LINKS`]
/// hops in all (one tree's worth; see the module's documentation).
pub(super) struct Links<'v> {
    view: &'v View,
    left: usize,
}

impl<'v> Links<'v> {
    pub fn new(view: &'v View) -> Links<'v> {
        Links {
            view,
            left: MAX_LINKS,
        }
    }

    /// The repository other than its own directory's that the link at the
    /// host path `link` leads into, if any.
    pub fn foreign_repository(&mut self, link: &Path) -> Result<Option<PathBuf>, Spent> {
        let own = match link.parent() {
            Some(dir) => self.resolve(dir)?.and_then(|d| self.repository(&d)),
            None => None,
        };
        let theirs = self.resolve(link)?.and_then(|t| self.repository(&t));
        Ok(theirs.filter(|t| Some(t) != own.as_ref()))
    }

    /// The nearest directory at or above the physical path `p` that has a
    /// `.git` (directory, `gitdir:` file or link) or is one by its shape
    /// (a bare repository): git's own walk up.
    fn repository(&self, p: &Path) -> Option<PathBuf> {
        let exists = |p: &Path| self.view.exists(p);
        p.ancestors()
            .find(|a| exists(&a.join(".git")) || git_shaped(exists, a))
            .map(Path::to_path_buf)
    }

    /// The physical path of the absolute path `p`, link by link (relative
    /// targets against their directory; what does not exist is taken as
    /// named). `None`: a loop, which cannot be entered.
    fn resolve(&mut self, p: &Path) -> Result<Option<PathBuf>, Spent> {
        let mut done = PathBuf::from("/");
        let mut rest = names(p);
        let mut hops = 0;
        while let Some(name) = rest.pop_front() {
            if name == ".." {
                done.pop();
                continue;
            }
            let next = done.join(&name);
            let Some(target) = self.view.read_link(&next) else {
                done = next;
                continue;
            };
            self.left = self.left.checked_sub(1).ok_or(Spent)?;
            hops += 1;
            if hops > MAX_HOPS {
                return Ok(None);
            }
            if target.is_absolute() {
                done = PathBuf::from("/");
            }
            for n in names(&target).into_iter().rev() {
                rest.push_front(n);
            }
        }
        Ok(Some(done))
    }
}

/// The names of `p` to walk, `..` kept (a link may stand before it).
fn names(p: &Path) -> VecDeque<OsString> {
    crate::container::mounts::components(p).into()
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
    fn a_directory_the_step_gave_git_s_shape_loses_its_head() {
        use std::os::unix::fs::symlink;
        let tmp = crate::test_support::TempDir::new("nested-bare");
        let root = tmp.path();
        mkdirs(
            root,
            &["proj/.git", "proj/src", "proj/fixture/objects", "out"],
        );
        fs::write(root.join("proj/fixture/HEAD"), "ref: refs/heads/main\n").unwrap();
        let write = [root.join("proj"), root.join("out")].map(|p| p.display().to_string());
        let held = Trees::take(&write);
        // Made by the step: an old directory given the shape, a new one,
        // a bare clone outside the checkout, a link from the checkout to it.
        for d in ["proj/src", "proj/new/r", "out/bare"] {
            mkdirs(root, &[&format!("{d}/objects"), &format!("{d}/refs")]);
            fs::write(root.join(d).join("HEAD"), "ref: refs/heads/main\n").unwrap();
            fs::write(root.join(d).join("config"), "[core]\n\tworktree = .\n").unwrap();
        }
        fs::write(root.join("proj/src/main.c"), "int main;\n").unwrap();
        symlink("../out/bare", root.join("proj/lib")).unwrap();
        let e = held.check("t").unwrap_err();
        assert!(e.contains("bare repository"), "{e}");
        for gone in ["proj/src/HEAD", "proj/new/r/HEAD", "proj/lib"] {
            assert!(fs::symlink_metadata(root.join(gone)).is_err(), "{gone}");
        }
        // The step's other files, the fixture the checkout had, the clone
        // outside it stay.
        for kept in ["proj/src/main.c", "proj/fixture/HEAD", "out/bare/HEAD"] {
            assert!(root.join(kept).is_file(), "{kept}");
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

    #[test]
    fn a_link_the_step_made_into_another_repository_is_removed() {
        use std::os::unix::fs::symlink;
        let tmp = crate::test_support::TempDir::new("nested-links");
        let root = tmp.path();
        mkdirs(
            root,
            &["proj/.git", "proj/src", "proj/lib", "out", "sys/bin"],
        );
        fs::write(root.join("sys/bin/python3"), "").unwrap();
        symlink("../out/old", root.join("proj/had")).unwrap();
        let write = [root.join("proj"), root.join("out")].map(|p| p.display().to_string());
        let held = Trees::take(&write);
        // The step makes a repository where repositories are output, and
        // links into it, through a link it also made, and elsewhere.
        mkdirs(
            root,
            &["out/r/.git", "out/r/sub", "out/old/.git", "proj/new"],
        );
        fs::remove_dir(root.join("proj/src")).unwrap();
        symlink("../out/r", root.join("proj/src")).unwrap();
        symlink(root.join("proj/src/sub"), root.join("proj/new/deep")).unwrap();
        symlink(root.join("sys/bin/python3"), root.join("proj/new/python")).unwrap();
        symlink("../lib", root.join("proj/new/lib")).unwrap();
        let e = held.check("t").unwrap_err();
        assert!(
            e.contains("a link into the repository") && e.contains("proj/src"),
            "{e}"
        );
        for gone in ["proj/src", "proj/new/deep"] {
            assert!(fs::symlink_metadata(root.join(gone)).is_err(), "{gone}");
        }
        // A link to a system file, one within the checkout, and one the
        // checkout had stay.
        for kept in ["proj/new/python", "proj/new/lib", "proj/had"] {
            assert!(fs::symlink_metadata(root.join(kept)).is_ok(), "{kept}");
        }
        assert!(held.check("t").is_ok());
    }

    #[test]
    fn a_staged_view_shows_a_repository_before_it_is_committed() {
        use std::os::unix::fs::symlink;
        let tmp = crate::test_support::TempDir::new("nested-view");
        let root = tmp.path();
        mkdirs(root, &["proj/.git", "out", "merged/r/.git"]);
        symlink(root.join("out/r/x"), root.join("proj/link")).unwrap();
        let view = View::staged(vec![(root.join("out"), root.join("merged"))]);
        let repo = Links::new(&view).foreign_repository(&root.join("proj/link"));
        assert_eq!(repo.unwrap(), Some(root.join("out/r")));
        let host = View::default();
        let repo = Links::new(&host).foreign_repository(&root.join("proj/link"));
        assert_eq!(repo.unwrap(), None);
    }
}
