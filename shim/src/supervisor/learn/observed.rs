//! What a learned command or container touched, and the policy that allows
//! exactly that: paths collapsed to a depth, protected paths (and the
//! spec's hidden ones) never granted, the default deny list kept.

use std::collections::BTreeSet;

use sandboy_spec_gen::suggest::edit;
use sandboy_spec_gen::suggest::protect::{
    collapse_siblings, outermost, parent, protected_for, under,
};
use sandboy_spec_gen::suggest::Edit;

/// One observed access.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Access {
    Read(String),
    Write(String),
    Exec(String),
    /// An entry made or removed in a directory (the directory is written).
    Change(String),
    /// A rename or link: both directories are written.
    Move(String, String),
    Port {
        bind: bool,
        udp: bool,
        port: u16,
    },
}

impl Access {
    /// An open(2) by its flags: writing an existing file writes the file;
    /// creating one (`exists`: whether it does now) writes its directory.
    pub fn open(path: String, flags: i32, exists: bool) -> Access {
        let writes = flags & libc::O_ACCMODE != libc::O_RDONLY || flags & libc::O_TRUNC != 0;
        if flags & libc::O_CREAT != 0 && !exists {
            Access::Change(path)
        } else if writes {
            Access::Write(path)
        } else {
            Access::Read(path)
        }
    }
}

impl Access {
    /// The same access with every path as `real` gives it (symlinks
    /// resolved, see `notify::Root::real`).
    pub fn resolved(self, real: impl Fn(&str) -> String) -> Access {
        match self {
            Access::Read(p) => Access::Read(real(&p)),
            Access::Write(p) => Access::Write(real(&p)),
            Access::Exec(p) => Access::Exec(real(&p)),
            Access::Change(p) => Access::Change(real(&p)),
            Access::Move(a, b) => Access::Move(real(&a), real(&b)),
            port @ Access::Port { .. } => port,
        }
    }
}

/// Everything seen, de-duplicated.
#[derive(Debug, Default)]
pub struct Observed {
    read: BTreeSet<String>,
    write: BTreeSet<String>,
    exec: BTreeSet<String>,
    connect: BTreeSet<u16>,
    bind: BTreeSet<u16>,
    udp: BTreeSet<u16>,
    /// Recorded paths that existed when they were used (`add`'s `exists`).
    present: BTreeSet<String>,
    pub calls: u64,
}

impl Observed {
    /// Record `a`; `exists` says, for each path recorded, whether it
    /// exists now (see [`Observed::existed`]).
    pub fn add(&mut self, a: Access, exists: impl Fn(&str) -> bool) {
        self.calls += 1;
        let mut keep = |set: fn(&mut Self) -> &mut BTreeSet<String>, p: String| {
            if exists(&p) {
                self.present.insert(p.clone());
            }
            set(self).insert(p);
        };
        match a {
            Access::Read(p) => keep(|o| &mut o.read, p),
            Access::Write(p) => keep(|o| &mut o.write, p),
            Access::Exec(p) => keep(|o| &mut o.exec, p),
            Access::Change(p) => keep(|o| &mut o.write, parent(&p)),
            Access::Move(a, b) => {
                keep(|o| &mut o.write, parent(&a));
                keep(|o| &mut o.write, parent(&b));
            }
            Access::Port { port: 0, .. } => {}
            Access::Port {
                udp: true, port, ..
            } => drop(self.udp.insert(port)),
            Access::Port {
                bind: true, port, ..
            } => drop(self.bind.insert(port)),
            Access::Port { port, .. } => drop(self.connect.insert(port)),
        }
    }

    /// Whether `path` existed when it was recorded (for a container, whose
    /// root is gone when the policy is written).
    pub fn existed(&self, path: &str) -> bool {
        self.present.contains(path)
    }

    /// The edits that allow what was seen, and notes on what was left out:
    /// only paths for which `exists` holds (a failed probe of a missing
    /// file needs no rule), none of `hidden` (the spec's masked paths).
    pub fn edits(
        &self,
        depth: usize,
        hidden: &[String],
        exists: &dyn Fn(&str) -> bool,
    ) -> (Vec<Edit>, Vec<String>) {
        let mut notes = Vec::new();
        let mut edits = Vec::new();
        let mut lists = [
            ("read", &self.read),
            ("write", &self.write),
            ("exec", &self.exec),
        ]
        .map(|(list, set)| (list, paths(set, depth, list, hidden, exists, &mut notes)));
        // [fs] write grants reading too: no read entry below a write one
        // (nor one for a file the run itself made there).
        let writes = lists[1].1.clone();
        lists[0].1.retain(|r| !writes.iter().any(|w| under(r, w)));
        for (list, found) in lists {
            edits.extend(found.into_iter().map(|path| Edit::Path { list, path }));
        }
        for (list, set) in [("connect", &self.connect), ("bind", &self.bind)] {
            edits.extend(set.iter().map(|&port| Edit::Port { list, port }));
        }
        if !self.udp.is_empty() {
            notes.push(format!(
                "UDP ports {:?} were used; add them to [net] udp by hand if the step needs them (UDP is not port-scoped on this kernel)",
                self.udp
            ));
        }
        (edits, notes)
    }
}

/// One list's paths: only those that exist, per-process /proc paths left
/// to the tier, protected paths dropped, the rest cut to `depth`
/// components unless the cut would be protected, and nothing under another
/// entry.
fn paths(
    set: &BTreeSet<String>,
    depth: usize,
    list: &str,
    hidden: &[String],
    exists: &dyn Fn(&str) -> bool,
    notes: &mut Vec<String>,
) -> Vec<String> {
    let mut out = BTreeSet::new();
    let mut per_process = false;
    for p in set {
        if per_process_proc(p) {
            per_process = true;
            continue;
        }
        if !exists(p) {
            continue;
        }
        if protected_for(list, p, hidden) {
            notes.push(format!("not granted: {list} {p} (a protected path)"));
            continue;
        }
        let cut = cut(p, depth);
        out.insert(if protected_for(list, &cut, hidden) {
            p.clone()
        } else {
            cut
        });
    }
    if per_process {
        notes.push(format!(
            "not learned: {list} of /proc/<pid> paths (they differ each run; give [fs] {list} \"/proc\" by hand if the step needs them)"
        ));
    }
    // Not into a top-level directory (`/usr`, `/etc`), never a protected one.
    let may = |dir: &str| parent(dir) != "/" && !protected_for(list, dir, hidden);
    let (out, collapsed) = collapse_siblings(out, SIBLINGS, may);
    for (dir, n) in collapsed {
        notes.push(format!(
            "collapsed: {n} {list} entries in {dir} became {dir:?}"
        ));
    }
    outermost(&out)
}

/// How many entries of one directory make it the entry.
const SIBLINGS: usize = 3;

fn per_process_proc(p: &str) -> bool {
    let mut parts = p.split('/').skip(1);
    parts.next() == Some("proc")
        && parts.next().is_some_and(|c| {
            c == "self" || c == "thread-self" || c.bytes().all(|b| b.is_ascii_digit())
        })
}

/// `path` cut to its first `depth` components (0: uncut).
fn cut(path: &str, depth: usize) -> String {
    if depth == 0 {
        return path.to_owned();
    }
    let parts: Vec<&str> = path.split('/').filter(|c| !c.is_empty()).collect();
    if parts.len() <= depth {
        return path.to_owned();
    }
    format!("/{}", parts[..depth].join("/"))
}

/// The learned policy: `base` (or a minimal policy) with the edits, under
/// a header saying how it was learned.
pub fn policy_text(base: Option<&str>, edits: &[Edit], header: &str) -> String {
    let minimal = "version = 1\nname = \"learned\"\n\n[syscalls]\ndefault_deny = true\n";
    let body = edit::apply(base.unwrap_or(minimal), edits);
    format!("{header}{body}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn collapse_exists_and_protected() {
        let mut o = Observed::default();
        for p in [
            "/usr/include/stdio.h",
            "/usr/include/x86_64-linux-gnu/bits/types.h",
            "/etc/shadow",
            "/usr/lib/os-release",
            "/usr/bin/env",
            "/usr/bin/sh",
            "/usr/bin/true",
        ] {
            o.add(Access::Read(p.into()), |_| false);
        }
        o.add(Access::Read("/nonexistent/probe".into()), |_| false);
        o.add(Access::Read("/proc/self/maps".into()), |_| false);
        o.add(Access::Change("/tmp/ccX.s".into()), |_| false);
        o.add(
            Access::Port {
                bind: false,
                udp: false,
                port: 443,
            },
            |_| false,
        );
        let (edits, notes) = o.edits(3, &[], &|p| Path::new(p).exists());
        assert_eq!(
            edits,
            [
                Edit::Path {
                    list: "read",
                    path: "/usr/bin".into()
                },
                Edit::Path {
                    list: "read",
                    path: "/usr/include/stdio.h".into()
                },
                Edit::Path {
                    list: "read",
                    path: "/usr/include/x86_64-linux-gnu".into()
                },
                Edit::Path {
                    list: "read",
                    path: "/usr/lib/os-release".into()
                },
                // Not the host's shared /tmp: the compiler's temporary
                // file there is a note (the namespaces tier gives the step
                // a /tmp of its own).
                Edit::Port {
                    list: "connect",
                    port: 443
                },
            ]
        );
        assert_eq!(notes.len(), 4, "{notes:?}");
        assert!(
            notes
                .iter()
                .any(|n| n == "not granted: write /tmp (a protected path)"),
            "{notes:?}"
        );
        let text = policy_text(None, &edits, "# learned\n");
        assert!(text.starts_with("# learned\nversion = 1"), "{text}");
        assert!(text.contains("default_deny = true"), "{text}");
    }

    /// A container's policy: existence as recorded at the call (its root
    /// is gone at the end), masked paths never granted, no read entry
    /// below a write entry.
    #[test]
    fn container_paths_existence_hidden_and_reads_under_writes() {
        let mut o = Observed::default();
        let present = ["/etc/passwd", "/out", "/out/f", "/secret/key", "/bin/sh"];
        let exists = |p: &str| present.contains(&p);
        o.add(Access::Read("/etc/passwd".into()), exists);
        o.add(Access::Read("/etc/missing".into()), exists);
        o.add(Access::Change("/out/f".into()), exists);
        o.add(Access::Read("/out/f".into()), exists);
        o.add(Access::Read("/secret/key".into()), exists);
        o.add(Access::Exec("/bin/sh".into()), exists);
        assert!(o.existed("/out") && !o.existed("/etc/missing"));
        let hidden = ["/secret".to_owned()];
        let (edits, notes) = o.edits(0, &hidden, &|p| o.existed(p));
        let path = |list, p: &str| Edit::Path {
            list,
            path: p.into(),
        };
        assert_eq!(
            edits,
            [
                path("read", "/etc/passwd"),
                path("write", "/out"),
                path("exec", "/bin/sh"),
            ]
        );
        assert!(notes.iter().any(|n| n.contains("/secret/key")), "{notes:?}");
    }
}
