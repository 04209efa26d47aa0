//! The landlock tier never grants the user's other terminals through a
//! wider grant.
//!
//! That tier runs on the host's `/dev`: under `--ro /` (or any grant of
//! `/dev`) a step opened another terminal of the same user
//! (`/dev/pts/N`, mode 0620, the user's own) and `read` it, taking the
//! keystrokes meant for that shell — a `sudo` password, say (a red team,
//! stop 36). Landlock can only grant, never take a subpath back, so a
//! grant that covers the terminals is replaced by grants of each of its
//! other entries, down the path to them ("carving"). The caller's own
//! terminal stays (its stdio, which the step already holds, and
//! `/dev/tty`); a path the policy names itself (`/dev/pts`) is granted as
//! written. The namespaces tier and containers have a `/dev` of their own.
//!
//! What a carve costs: a grant of `/` or `/dev` becomes grants of the
//! entries they have at the start; an entry made there later (rare in
//! both) is not covered, and neither is a link there whose target is a
//! terminal (`/dev/ptmx -> pts/ptmx` where `/dev/pts` has the
//! multiplexer): a step that makes terminals of its own (`script`,
//! `expect`) needs `/dev/pts` named in the policy.

use std::path::{Path, PathBuf};

use sandboy_spec_gen::policy::Policy;

/// The directory the terminals live in, on the host.
const DEV: &str = "/dev";

/// Whether `name` in `/dev` is a terminal another process of the user may
/// own: the pseudo-terminals, virtual consoles and their screen buffers.
/// `/dev/tty` (the caller's controlling terminal) and `/dev/ptmx` (new
/// terminals, whose ends are below `/dev/pts`) are not.
fn terminal(name: &str) -> bool {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    name == "pts" || name.strip_prefix("tty").is_some_and(digits) || name.starts_with("vcs")
}

/// Rewrite the policy's read, exec and write lists so that no grant
/// covers a terminal of `/dev` the policy does not name itself.
pub fn withhold(policy: &mut Policy) {
    let own = own_terminals();
    for list in [&mut policy.read, &mut policy.exec, &mut policy.write] {
        let mut out = Vec::with_capacity(list.len());
        for entry in list.drain(..) {
            match Path::new(&entry) {
                p if Path::new(DEV).starts_with(p) => {
                    out.extend(carve(p, &own).into_iter().map(path_string));
                }
                _ => out.push(entry),
            }
        }
        out.sort();
        out.dedup();
        *list = out;
    }
}

/// The entries of `from` and of every directory between it and `/dev`
/// (exclusive), and of `/dev` except its terminals; plus `own`, the
/// caller's terminals below `/dev`.
fn carve(from: &Path, own: &[PathBuf]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut dir = from.to_path_buf();
    loop {
        let next = Path::new(DEV)
            .strip_prefix(&dir)
            .ok()
            .and_then(|rest| rest.components().next())
            .map(|c| c.as_os_str().to_os_string());
        let Ok(entries) = std::fs::read_dir(&dir) else {
            // Unreadable: grant nothing below it (fail closed).
            return out;
        };
        for e in entries.flatten() {
            let name = e.file_name();
            // A link is no grant of its own: a rule holds its target's
            // inode, granted where it really lives (or, for `/dev/stderr`
            // and its kin, a magic link Landlock refuses as a rule).
            let link = e.file_type().map_or(true, |t| t.is_symlink());
            let skip = link
                || match &next {
                    Some(n) => &name == n,
                    None => name.to_str().is_some_and(terminal),
                };
            if !skip {
                out.push(dir.join(&name));
            }
        }
        match next {
            Some(n) => dir.push(n),
            None => break,
        }
    }
    out.extend(own.iter().cloned());
    out
}

/// The terminals the caller's stdio are, when they are among those
/// [`carve`] leaves out.
fn own_terminals() -> Vec<PathBuf> {
    (0..3)
        .filter_map(|fd| std::fs::read_link(format!("/proc/self/fd/{fd}")).ok())
        .filter(|p| {
            p.parent() == Some(Path::new("/dev/pts"))
                || (p.parent() == Some(Path::new(DEV))
                    && p.file_name().and_then(|n| n.to_str()).is_some_and(terminal))
        })
        .collect()
}

fn path_string(p: PathBuf) -> String {
    p.to_string_lossy().into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terminals_are_named_and_the_callers_tty_is_not() {
        for name in ["pts", "tty1", "tty63", "vcs", "vcsa2", "vcsu"] {
            assert!(terminal(name), "{name}");
        }
        for name in ["tty", "ttyS", "ptmx", "null", "ttyx1", "shm"] {
            assert!(!terminal(name), "{name}");
        }
    }

    #[test]
    fn a_grant_of_the_root_keeps_every_entry_but_the_terminals() {
        let got = carve(Path::new("/"), &[]);
        let has = |p: &str| got.iter().any(|g| g == Path::new(p));
        assert!(has("/usr") && has("/etc") && has("/dev/null") && has("/dev/tty"));
        assert!(!has("/dev/stderr"), "a link is not a rule");
        assert!(
            !has("/") && !has("/dev"),
            "the carved directories themselves"
        );
        assert!(!has("/dev/pts"), "{got:?}");
        assert!(got.iter().all(|g| !g.starts_with("/dev/pts")));
    }

    #[test]
    fn the_callers_own_terminal_is_kept_and_a_named_one_stays() {
        let own = [PathBuf::from("/dev/pts/7")];
        let got = carve(Path::new("/dev"), &own);
        assert!(got.contains(&PathBuf::from("/dev/pts/7")));
        assert!(!got.contains(&PathBuf::from("/dev/pts")));
        let src = "version = 1\n[fs]\nread = [\"/usr\", \"/dev/pts\"]\n";
        let mut p = Policy::parse(src, "t.toml", Path::new("/")).unwrap();
        withhold(&mut p);
        assert_eq!(
            p.read,
            ["/dev/pts", "/usr"],
            "not below a terminal: as written"
        );
    }
}
