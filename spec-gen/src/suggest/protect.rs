//! Paths no suggestion or learned policy grants without being forced, and
//! the path-set shaping both share (sibling collapse, outermost entries).

use std::collections::{BTreeMap, BTreeSet};

/// The whole filesystem, process memory, credentials, the runtime's state.
const PROTECTED: &[&str] = &[
    "/",
    "/proc/*/mem",
    "/proc/*/task/*/mem",
    "/proc/kcore",
    "/dev/mem",
    "/etc/shadow",
    "/etc/gshadow",
    "/run/sandboy",
    "/var/run/sandboy",
    // Login sessions' runtime directories ($XDG_RUNTIME_DIR): the user's
    // sandboy state root (whose hooks the user's own `delete` runs), and
    // the session's sockets.
    "/run/user",
    "/run/user/*",
    // Root's persistence.
    "/etc/sudoers",
    "/etc/sudoers.d",
    "/etc/crontab",
    "/etc/cron.d",
];
/// Names protected wherever they are: credential directories and files
/// of a home directory (`~/.ssh` and friends).
const PROTECTED_NAMES: &[&str] = &[
    ".ssh",
    ".gnupg",
    ".aws",
    ".azure",
    ".kube",
    ".docker",
    ".password-store",
    ".netrc",
    ".git-credentials",
    ".pgpass",
    // Tokens of most tools (gh, gcloud, rclone, …) and user services live
    // under ~/.config: a learned `git status` once granted it whole.
    ".config",
    // Shell and session start-up files: a line written there runs in the
    // user's next shell, outside any sandbox.
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".bash_logout",
    ".profile",
    ".zshrc",
    ".zshenv",
    ".zprofile",
    ".zlogin",
    ".cshrc",
    ".tcshrc",
    ".xprofile",
    ".xinitrc",
    ".pam_environment",
];

/// Whether granting `path` would grant something protected: the path is
/// one, lies inside one, or holds one (a listed path, one of `hidden`, or
/// a home directory, where the protected names live: a red team's learned
/// policy granted `write = ["/home/u"]`, `~/.ssh` with it, because a step
/// created a dotfile there).
pub fn protected(path: &str, hidden: &[String]) -> bool {
    crate::policy::through_magic_link(path)
        || PROTECTED.iter().any(|p| glob_match(p, path))
        || path.split('/').any(|c| PROTECTED_NAMES.contains(&c))
        || hidden.iter().any(|h| under(path, h) || under(h, path))
        || path != "/"
            && PROTECTED
                .iter()
                .any(|p| !p.contains('*') && *p != "/" && under(p, path))
        || homes().iter().any(|h| under(h, path))
        || runtime_dirs()
            .iter()
            .any(|d| under(path, d) || under(d, path))
        || holds_protected_name(path)
}

/// Directories every process of the host shares: granting one grants the
/// other processes' files in it (POSIX shared memory and semaphores, the
/// user's Kerberos ticket cache `/tmp/krb5cc_<uid>`, tmux and ssh control
/// sockets). A step that made one file there learned the whole directory.
const SHARED: &[&str] = &["/tmp", "/var/tmp", "/dev/shm", "/dev/mqueue"];

/// Whether granting **write** to `path` would grant something protected:
/// all of [`protected`], and also
///
/// * a shared directory itself ([`SHARED`]; what is below it stays
///   grantable);
/// * a home's dot-entries and `~/bin`, and anything below them: tools run
///   what is written there outside any sandbox (`~/.local/bin` is first on
///   Debian's `PATH`, `~/.gitconfig`'s `core.fsmonitor` runs at the next
///   `git`, a `.pth` file in `~/.local/lib` at the next python), so a
///   narrow list of names was never enough;
/// * a repository's control directory (`.git`, its hooks and config run at
///   the user's next `git`) or a directory holding one (a checkout).
pub fn protected_write(path: &str, hidden: &[String]) -> bool {
    protected(path, hidden)
        || SHARED.contains(&path)
        || homes().iter().any(|h| {
            path.strip_prefix(h.as_str())
                .and_then(|rest| rest.strip_prefix('/'))
                .and_then(|rest| rest.split('/').next())
                .is_some_and(|first| first.starts_with('.') || first == "bin")
        })
        || path.split('/').any(|c| c == ".git")
        || std::path::Path::new(path).join(".git").exists()
}

/// [`protected_write`] for `list = "write"`, [`protected`] otherwise, of
/// the path and of what it resolves to on this host: a rule on a link's
/// name grants its target (a learned step linked a name it had touched to
/// `/` before the policy was written; `suggest` took a report's name that
/// was such a link). `/bin/sh` on a merged-/usr host is judged as
/// `/usr/bin/dash` too, which stays grantable.
pub fn protected_for(list: &str, path: &str, hidden: &[String]) -> bool {
    let check = |p: &str| {
        if list == "write" {
            protected_write(p, hidden)
        } else {
            protected(p, hidden)
        }
    };
    check(path) || resolved_elsewhere(path).is_some_and(|real| check(&real))
}

/// What `path` resolves to on this host, when that is another path (a
/// link on the way); `None` when it does not resolve or is itself.
pub fn resolved_elsewhere(path: &str) -> Option<String> {
    let real = std::fs::canonicalize(path).ok()?;
    let real = real.to_str()?;
    (real != path).then(|| real.to_string())
}

/// The caller's `$XDG_RUNTIME_DIR` and sandboy's user caches (compiled
/// WebAssembly a step could swap for its own code).
fn runtime_dirs() -> &'static [String] {
    static DIRS: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    DIRS.get_or_init(|| {
        let env = |k: &str| std::env::var(k).ok().filter(|v| v.starts_with('/'));
        let cache = env("XDG_CACHE_HOME").or_else(|| env("HOME").map(|h| format!("{h}/.cache")));
        env("XDG_RUNTIME_DIR")
            .into_iter()
            .chain(cache.map(|c| format!("{c}/sandboy")))
            .filter_map(|d| normal(&d))
            .filter(|d| d != "/")
            .collect()
    })
}

/// Whether `path` is a directory holding a protected name (a service
/// account's home with `.ssh` in it: not among the login homes).
fn holds_protected_name(path: &str) -> bool {
    std::fs::read_dir(path).is_ok_and(|entries| {
        entries.flatten().any(|e| {
            e.file_name()
                .to_str()
                .is_some_and(|n| PROTECTED_NAMES.contains(&n))
        })
    })
}

/// The people's home directories: `/root`, `$HOME`, and those of the
/// `/etc/passwd` entries with a login uid (1000 to 60000, `login.defs`'
/// defaults; system accounts' "homes" are `/usr/games`, `/var/www`, `/bin`
/// and the like, which hold no credentials and must stay grantable).
fn homes() -> &'static [String] {
    static HOMES: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    HOMES.get_or_init(|| {
        let passwd = std::fs::read_to_string("/etc/passwd").unwrap_or_default();
        let mut out: Vec<String> = passwd
            .lines()
            .filter_map(|l| {
                let f: Vec<&str> = l.split(':').collect();
                let uid: u32 = f.get(2)?.parse().ok()?;
                (1000..=60000).contains(&uid).then_some(*f.get(5)?)
            })
            .chain(["/root"])
            .map(str::to_owned)
            .chain(std::env::var("HOME").ok())
            .map(|h| h.trim_end_matches('/').to_owned())
            .filter(|h| h.starts_with('/') && h.len() > 1 && h != "/nonexistent")
            .collect();
        out.sort();
        out.dedup();
        out
    })
}

/// `path` in its one spelling: absolute, no empty or `.` component, no
/// trailing `/`; `None` for a relative path or one with `..` (whose
/// meaning depends on the symlinks along it).
pub fn normal(path: &str) -> Option<String> {
    if !path.starts_with('/') {
        return None;
    }
    let mut out = String::new();
    for c in path.split('/').filter(|c| !c.is_empty() && *c != ".") {
        if c == ".." {
            return None;
        }
        out.push('/');
        out.push_str(c);
    }
    Some(if out.is_empty() { "/".into() } else { out })
}

/// Whether `path` is `dir` or below it.
pub fn under(path: &str, dir: &str) -> bool {
    dir == "/"
        || path == dir
        || path
            .strip_prefix(dir)
            .is_some_and(|rest| rest.starts_with('/'))
}

/// The directory holding `path` (`/` for a top-level entry).
pub fn parent(path: &str) -> String {
    match path.trim_end_matches('/').rfind('/') {
        Some(0) | None => "/".into(),
        Some(i) => path[..i].to_owned(),
    }
}

/// Paths grouped by directory: a directory holding `at_least` of them
/// (0: never) for which `may` holds replaces them. The new set, and each
/// collapse as (directory, how many it replaced), for the caller's notes.
pub fn collapse_siblings(
    paths: BTreeSet<String>,
    at_least: usize,
    may: impl Fn(&str) -> bool,
) -> (BTreeSet<String>, Vec<(String, usize)>) {
    if at_least == 0 {
        return (paths, Vec::new());
    }
    let mut by_dir: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for p in paths {
        by_dir.entry(parent(&p)).or_default().push(p);
    }
    let mut out = BTreeSet::new();
    let mut collapsed = Vec::new();
    for (dir, kids) in by_dir {
        if kids.len() >= at_least && may(&dir) {
            collapsed.push((dir.clone(), kids.len()));
            out.insert(dir);
        } else {
            out.extend(kids);
        }
    }
    (out, collapsed)
}

/// The entries no other entry of `set` holds (an entry under another adds
/// nothing to a rule list).
pub fn outermost(set: &BTreeSet<String>) -> Vec<String> {
    set.iter()
        .filter(|p| !set.iter().any(|q| q != *p && under(p, q)))
        .cloned()
        .collect()
}

/// `*` matches one path component.
fn glob_match(pattern: &str, path: &str) -> bool {
    let p: Vec<&str> = pattern.split('/').collect();
    let q: Vec<&str> = path.split('/').collect();
    p.len() == q.len() && p.iter().zip(&q).all(|(a, b)| *a == "*" || a == b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_is_judged_by_its_target_too() {
        let dir = std::env::temp_dir().join(format!("sandboy-protect-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("plain")).unwrap();
        std::os::unix::fs::symlink("/", dir.join("root")).unwrap();
        std::os::unix::fs::symlink("/usr", dir.join("usr")).unwrap();
        let at = |n: &str| dir.join(n).to_str().unwrap().to_string();
        assert!(protected_for("read", &at("root"), &[]), "a link to /");
        assert!(!protected_for("read", &at("usr"), &[]), "a link to /usr");
        assert!(!protected_for("read", &at("plain"), &[]), "a directory");
        assert_eq!(resolved_elsewhere(&at("root")).as_deref(), Some("/"));
        assert_eq!(resolved_elsewhere(&at("plain")), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn paths_have_one_spelling() {
        for (raw, want) in [
            ("//", Some("/")),
            ("/.", Some("/")),
            ("/etc//shadow", Some("/etc/shadow")),
            ("/etc/./shadow/", Some("/etc/shadow")),
            ("/etc/../etc/shadow", None),
            ("etc/shadow", None),
        ] {
            assert_eq!(normal(raw).as_deref(), want, "{raw}");
        }
        assert!(protected(&normal("/etc//shadow").unwrap(), &[]));
        assert!(protected("/proc/1/task/1/mem", &[]));
    }

    #[test]
    fn what_is_protected() {
        for p in [
            "/",
            "/etc/shadow",
            "/proc/1/mem",
            "/home/u/.ssh/id",
            "/home/u/.docker/config.json",
            "/root",
            "/etc",
            "/run",
            "/data",
            // Magic links: these are "/", every home, a process's cwd.
            "/proc/self/root",
            "/proc/thread-self/root/home",
            "/proc/1/task/1/cwd",
            "/dev/fd/3",
            "/run/user/1000",
            "/home/u/.config",
            "/home/u/.config/gh/hosts.yml",
            "/home/u/.bashrc",
            "/etc/cron.d",
        ] {
            assert!(protected(p, &["/data/secret".into()]), "{p}");
        }
        for p in [
            "/usr",
            "/etc/passwd",
            "/proc/1/maps",
            "/home/u/src",
            "/root/src",
        ] {
            assert!(!protected(p, &[]), "{p}");
        }
        // Writes: shared directories themselves, a home's dot-entries and
        // bin, a repository's control directory and a checkout.
        let home = homes().iter().find(|h| h.as_str() != "/root").cloned();
        for h in home.iter().chain(Some(&"/root".to_string())) {
            for p in [
                format!("{h}/.local"),
                format!("{h}/.local/bin/ls"),
                format!("{h}/.gitconfig"),
                format!("{h}/.npmrc"),
                format!("{h}/bin"),
            ] {
                assert!(protected_write(&p, &[]), "{p}");
                assert!(!protected(&p, &[]), "{p}: reads stay grantable");
            }
            assert!(
                !protected_write(&format!("{h}/src/out"), &[]),
                "{h}/src/out"
            );
        }
        for p in [
            "/tmp",
            "/dev/shm",
            "/var/tmp",
            "/dev/mqueue",
            "/w/.git/hooks",
            "/w/.git",
        ] {
            assert!(protected_write(p, &[]), "{p}");
        }
        for p in ["/tmp/build", "/dev/shm/x", "/w/src"] {
            assert!(!protected_write(p, &[]), "{p}");
        }
        // A home directory holds the protected names: it and what holds
        // it are protected, what is inside it is not.
        let home = homes().iter().find(|h| h.as_str() != "/root").cloned();
        for h in home.iter().chain(Some(&"/root".to_string())) {
            assert!(protected(h, &[]), "{h}");
            assert!(protected(&parent(h), &[]), "{h}");
            assert!(!protected(&format!("{h}/src"), &[]), "{h}/src");
        }
    }
}
