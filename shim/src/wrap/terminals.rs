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
//! A grant is judged by what it resolves to, since Landlock opens a rule
//! path through its links: a name a step linked to `/dev` in an earlier
//! run is carved like `/dev` itself, and one that leads to a terminal is
//! dropped. Terminals are known by their device numbers, not their names:
//! a serial or hypervisor console a user logged in on (`/dev/ttyS0`,
//! `/dev/hvc0`) is the user's as much as a pseudo-terminal is.
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

/// Character-device majors of terminals (Linux `devices.txt`): legacy
/// BSD ptys (2, 3), virtual consoles and serial ports (4), consoles and
/// their screen buffers (7), Unix98 pty slaves (136–143), USB ACM and
/// serial (166, 188), low-density serial ports (204) and hypervisor
/// consoles (229).
const TERMINAL_MAJORS: &[u64] = &[
    2, 3, 4, 7, 136, 137, 138, 139, 140, 141, 142, 143, 166, 188, 204, 229,
];

/// Whether the device `rdev` is a terminal another process of the user
/// may hold. Major 5 is the caller's own `/dev/tty` (5, 0) and the pty
/// multiplexer `/dev/ptmx` (5, 2), which stay; `/dev/console` (5, 1) does
/// not.
fn terminal_device(rdev: u64) -> bool {
    let (major, minor) = (libc::major(rdev) as u64, libc::minor(rdev) as u64);
    TERMINAL_MAJORS.contains(&major) || (major == 5 && minor == 1)
}

/// Whether an entry of `/dev` is withheld: the pseudo-terminals'
/// directory, and every terminal device.
fn terminal(dir_entry: &std::fs::DirEntry) -> bool {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    dir_entry.file_name() == "pts"
        || dir_entry
            .metadata()
            .is_ok_and(|m| m.file_type().is_char_device() && terminal_device(m.rdev()))
}

/// Rewrite the policy's read, exec and write lists so that no grant
/// covers a terminal of `/dev` the policy does not name itself.
/// An entry is resolved as Landlock's rule will be (no link followed below
/// a write path, where the step may have planted one); one that cannot be
/// is kept as written, for the confinement to refuse.
pub fn withhold(policy: &mut Policy) {
    let own = own_terminals();
    let write = policy.write.clone();
    let planted: Vec<&str> = write.iter().map(String::as_str).collect();
    for list in [&mut policy.read, &mut policy.exec, &mut policy.write] {
        let mut out = Vec::with_capacity(list.len());
        for entry in list.drain(..) {
            let Ok(real) = sandboy_confine::landlock::resolve_rule_path(&entry, &planted) else {
                out.push(entry);
                continue;
            };
            if Path::new(DEV).starts_with(&real) {
                out.extend(carve(&real, &own).into_iter().map(path_string));
            } else if leads_to_a_terminal(&entry, &real) && !own.contains(&real) {
                tracing::warn!(path = %entry, to = %real.display(), "wrap: not granted: it leads to a terminal of another process (name the terminal itself to grant it)");
            } else {
                out.push(entry);
            }
        }
        out.sort();
        out.dedup();
        *list = out;
    }
}

/// Whether a grant written as `entry` reaches a terminal through a link:
/// it resolves (`real`) into `/dev/pts` or to a terminal device while
/// `entry` itself names neither.
fn leads_to_a_terminal(entry: &str, real: &Path) -> bool {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    // `entry` as written: its own inode, not a link's target.
    let names = |p: &Path| {
        p.starts_with("/dev/pts")
            || std::fs::symlink_metadata(p)
                .is_ok_and(|m| m.file_type().is_char_device() && terminal_device(m.rdev()))
    };
    names(real) && !names(Path::new(entry))
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
                    None => terminal(&e),
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

/// The terminals the caller's stdio are (by path), when they are among
/// those [`carve`] leaves out.
fn own_terminals() -> Vec<PathBuf> {
    use std::os::unix::fs::MetadataExt;
    (0..3)
        .filter_map(|fd| std::fs::read_link(format!("/proc/self/fd/{fd}")).ok())
        .filter(|p| {
            p.starts_with("/dev/pts")
                || (p.parent() == Some(Path::new(DEV))
                    && std::fs::metadata(p).is_ok_and(|m| terminal_device(m.rdev())))
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
    fn terminals_are_known_by_their_device_numbers() {
        let dev = |major: u32, minor: u32| libc::makedev(major, minor);
        // A pty slave, a virtual console, a serial port, a screen buffer,
        // a hypervisor console, the system console.
        for (major, minor) in [(136, 3), (4, 1), (4, 64), (7, 0), (229, 0), (5, 1)] {
            assert!(terminal_device(dev(major, minor)), "{major},{minor}");
        }
        // /dev/tty, /dev/ptmx, /dev/null, a disk.
        for (major, minor) in [(5, 0), (5, 2), (1, 3), (8, 0)] {
            assert!(!terminal_device(dev(major, minor)), "{major},{minor}");
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
        assert!(
            !has("/dev/pts") && !has("/dev/ttyS0") && !has("/dev/console"),
            "{got:?}"
        );
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
