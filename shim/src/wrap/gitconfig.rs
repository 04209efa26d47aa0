//! Git configuration as git reads it, for the hold on what git runs from
//! (`repository`, `commit`): a repository's `core.hooksPath`, and the
//! configuration files git reads *besides* a repository's own control
//! files — the caller's global ones and every file a config includes.
//!
//! A red team's step with `--rw ~` (or a write path holding a dotfiles
//! checkout) left `.git/config` alone and wrote the file it includes, or
//! `~/.gitconfig` itself (`core.fsmonitor`, `core.hooksPath`, an alias):
//! the user's next `git`, in any repository, ran it outside any sandbox.
//! [`beyond`] names those files, and every hooks directory a
//! `core.hooksPath` names, so both tiers hold them like a repository's own
//! config.

use std::collections::HashSet;
use std::fs;
use std::path::{Path, PathBuf};

/// Git's own limit on nested includes.
const MAX_INCLUDE_DEPTH: usize = 10;
/// The most config files [`beyond`] reads (includes can fan out).
const MAX_FILES: usize = 200;
/// Past this, a config file is not read (git's are kilobytes).
const MAX_BYTES: u64 = 1 << 20;

/// One `key = value` of a config, its section's name lowercased without
/// the subsection (`[includeIf "gitdir:…"]` is `includeif`), its key
/// lowercased, its value as git reads it.
struct Entry {
    section: String,
    key: String,
    value: String,
}

/// Every `key = value` of `config`, in order. A key may follow its section
/// header on the same line (`[core] hooksPath = x`), as git allows.
fn entries(config: &str) -> Vec<Entry> {
    let mut section = String::new();
    let mut out = Vec::new();
    for raw in config.lines() {
        let mut line = raw.trim();
        if let Some(rest) = line.strip_prefix('[') {
            let Some(end) = header_end(rest) else {
                continue;
            };
            let name = rest[..end]
                .trim()
                .split(|c: char| c.is_whitespace() || c == '"')
                .next()
                .unwrap_or_default();
            // The old `[section.subsection]` form.
            let name = name.split('.').next().unwrap_or_default();
            section = name.to_ascii_lowercase();
            line = rest[end + 1..].trim();
        }
        if let Some((key, value)) = line.split_once('=') {
            out.push(Entry {
                section: section.clone(),
                key: key.trim().to_ascii_lowercase(),
                value: config_value(value),
            });
        }
    }
    out
}

/// Where a section header's `]` is: the first one outside the quoted
/// subsection.
fn header_end(rest: &str) -> Option<usize> {
    let mut quoted = false;
    let mut escaped = false;
    for (i, c) in rest.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            '"' => quoted = !quoted,
            ']' if !quoted => return Some(i),
            _ => {}
        }
    }
    None
}

/// A git config value as git reads it: a quoted part kept whole (`\"` and
/// `\\` unescaped), an unquoted `#` or `;` starting a comment
/// (`hooksPath = .husky # hooks` names `.husky`).
fn config_value(raw: &str) -> String {
    let mut out = String::new();
    let mut quoted = false;
    let mut chars = raw.trim().chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => quoted = !quoted,
            '\\' => out.extend(chars.next()),
            '#' | ';' if !quoted => break,
            c => out.push(c),
        }
    }
    out.trim_end().to_owned()
}

/// `~/x` as the caller's home, an absolute path as itself; `None` for a
/// relative one (whose base the caller decides) or no home.
fn absolute(v: &str) -> Option<PathBuf> {
    if let Some(rest) = v.strip_prefix("~/") {
        Some(PathBuf::from(std::env::var_os("HOME")?).join(rest))
    } else {
        v.starts_with('/').then(|| PathBuf::from(v))
    }
}

/// The last `core.hooksPath` of `config`, unresolved.
fn hooks_value(config: &str) -> Option<String> {
    entries(config)
        .into_iter()
        .rfind(|e| e.section == "core" && e.key == "hookspath")
        .map(|e| e.value)
        .filter(|v| !v.is_empty())
}

/// `core.hooksPath` of the config text of the git directory `git`, as a
/// path (a relative one is the working tree's, `~/` the user's home):
/// hooks there run like the repository's own.
pub(super) fn hooks_path_in(config: &str, git: &Path) -> Option<PathBuf> {
    let v = hooks_value(config)?;
    if v.starts_with("~/") || v.starts_with('/') {
        return absolute(&v);
    }
    Some(if git.file_name().is_some_and(|n| n == ".git") {
        git.parent()?.join(v)
    } else {
        git.join(v)
    })
}

/// The files the config `file` (text `config`) includes: `include.path`
/// and `includeIf.<condition>.path`, whatever the condition (it may hold
/// for the next repository git runs in); a relative path is the including
/// file's directory's, as git reads it.
fn includes(config: &str, file: &Path) -> Vec<PathBuf> {
    entries(config)
        .into_iter()
        .filter(|e| matches!(e.section.as_str(), "include" | "includeif") && e.key == "path")
        .filter(|e| !e.value.is_empty())
        .filter_map(|e| {
            absolute(&e.value).or_else(|| {
                (!e.value.starts_with('~')).then(|| file.parent().map(|d| d.join(&e.value)))?
            })
        })
        .collect()
}

/// The caller's global and system config files, as git finds them
/// (`GIT_CONFIG_GLOBAL` and `GIT_CONFIG_SYSTEM` included).
fn global_files() -> Vec<PathBuf> {
    let env = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let home = env("HOME");
    let xdg = env("XDG_CONFIG_HOME").or_else(|| home.as_ref().map(|h| h.join(".config")));
    [
        env("GIT_CONFIG_GLOBAL"),
        env("GIT_CONFIG_SYSTEM"),
        home.map(|h| h.join(".gitconfig")),
        xdg.map(|x| x.join("git/config")),
        Some(PathBuf::from("/etc/gitconfig")),
    ]
    .into_iter()
    .flatten()
    .collect()
}

fn read(file: &Path) -> Option<String> {
    let f = fs::File::open(file).ok()?;
    if !f.metadata().ok()?.is_file() {
        return None;
    }
    let mut text = String::new();
    std::io::Read::read_to_string(&mut std::io::Read::take(f, MAX_BYTES), &mut text).ok()?;
    Some(text)
}

/// What git reads beyond the repositories' control files that a step with
/// the write paths `write` could change: the global config files, every
/// file a config includes (followed from those and from the repositories'
/// configs in `git_dirs`, as deep as git follows them), where a config is a
/// link also the file it names, and the hooks directory a `core.hooksPath`
/// of any of them names (a relative one only for a repository's, as its
/// working tree's), in whichever write path it lies. Absolute, lexically normal, each
/// inside a write path and not itself granted (a write path at or inside
/// it is the user's explicit grant).
pub fn beyond(write: &[String], git_dirs: &[PathBuf]) -> Vec<PathBuf> {
    // Nothing is writable: no file to read.
    if write.is_empty() {
        return Vec::new();
    }
    let writable = |p: &Path| write.iter().any(|w| p.starts_with(w));
    let granted = |p: &Path| write.iter().any(|w| Path::new(w).starts_with(p));
    // Each file with its include depth and the git directory whose config
    // included it (`None`: a global one).
    let mut queue: Vec<(PathBuf, usize, Option<&Path>)> =
        global_files().into_iter().map(|f| (f, 0, None)).collect();
    for git in git_dirs {
        for name in ["config", "config.worktree"] {
            queue.push((git.join(name), 0, Some(git)));
        }
    }
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    while let Some((file, depth, repo)) = queue.pop() {
        let file = super::inline::lexical(&file);
        if seen.len() >= MAX_FILES || !seen.insert(file.clone()) {
            continue;
        }
        // A repository's own config is the repository hold's.
        if repo.is_none() || depth > 0 {
            out.push(file.clone());
        }
        if let Ok(real) = fs::canonicalize(&file) {
            if real != file {
                out.push(real);
            }
        }
        let Some(text) = read(&file) else {
            continue;
        };
        // A relative hooks path is each repository's own: followed for the
        // repository whose config (or included file) says it.
        out.extend(match repo {
            Some(git) => hooks_path_in(&text, git),
            None => hooks_value(&text).as_deref().and_then(absolute),
        });
        if depth < MAX_INCLUDE_DEPTH {
            for inc in includes(&text, &file) {
                queue.push((inc, depth + 1, repo));
            }
        }
    }
    let mut out: Vec<PathBuf> = out
        .into_iter()
        .map(|p| super::inline::lexical(&p))
        .filter(|p| writable(p) && !granted(p))
        .collect();
    out.sort();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hooks_path_is_read_as_git_reads_it() {
        let cases: &[(&str, &str, Option<&str>)] = &[
            (
                "/w/repo/.git",
                "[core]\n\thooksPath = .husky\n",
                Some("/w/repo/.husky"),
            ),
            // A trailing comment is not part of the value; quotes are removed.
            (
                "/w/repo/.git",
                "[Core]\n  hookspath = .husky # managed by husky\n",
                Some("/w/repo/.husky"),
            ),
            (
                "/w/repo/.git",
                "[core]\nhooksPath = \"git hooks\" ; x\n",
                Some("/w/repo/git hooks"),
            ),
            (
                "/w/repo/.git",
                "[core]\nhooksPath = /srv/hooks\n",
                Some("/srv/hooks"),
            ),
            // A key on the header's line counts.
            (
                "/w/repo/.git",
                "[core] hooksPath = /srv/h2\n",
                Some("/srv/h2"),
            ),
            // The last one wins; other sections do not count.
            (
                "/w/repo/.git",
                "[core]\nhooksPath = a\n[alias]\nhooksPath = b\n[core]\nhooksPath = c\n",
                Some("/w/repo/c"),
            ),
            ("/w/repo/.git", "[alias]\nhooksPath = b\n", None),
            ("/w/repo/.git", "[core]\nhooksPath =\n", None),
            // A bare repository's relative hooks path is its own directory's.
            (
                "/w/bare.git",
                "[core]\nhooksPath = h\n",
                Some("/w/bare.git/h"),
            ),
        ];
        for &(git, config, want) in cases {
            assert_eq!(
                hooks_path_in(config, Path::new(git)),
                want.map(PathBuf::from),
                "{config:?}"
            );
        }
    }

    #[test]
    fn includes_are_found_in_both_forms_whatever_the_condition() {
        let config = "[include]\n\tpath = team.inc\n\
            [includeIf \"gitdir:~/work/\"]\n\tpath = /etc/work.inc ; x\n\
            [includeIf \"onbranch:a]b\"] path = \"sub dir/c.inc\"\n\
            [alias]\n\tpath = not-an-include\n";
        assert_eq!(
            includes(config, Path::new("/h/.gitconfig")),
            ["/h/team.inc", "/etc/work.inc", "/h/sub dir/c.inc"]
                .map(PathBuf::from)
                .to_vec()
        );
    }
}
