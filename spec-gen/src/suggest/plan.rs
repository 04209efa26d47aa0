//! From refusals to policy edits: which list gets which entry, what is
//! collapsed, what is protected, what is already allowed.

use std::collections::{BTreeMap, BTreeSet};

use super::protect::{collapse_siblings, outermost, under};
use super::report::Refused;
use crate::policy::DEFAULT_DENY;
use crate::Policy;

/// One change to the policy.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Edit {
    /// Add a path to `[fs] <list>` (`read`, `write` or `exec`).
    Path { list: &'static str, path: String },
    /// Add a port to `[net] <list>` (`connect` or `bind`).
    Port { list: &'static str, port: u16 },
    /// Let a syscall through: out of `[syscalls] deny`, and into `allow`
    /// when it is on the built-in default-deny list.
    Syscall(String),
    /// Remove a Landlock scope (`signal`, `abstract-unix-socket`).
    Scope(String),
}

/// How to plan.
#[derive(Debug, Clone)]
pub struct Options {
    /// Also suggest protected paths.
    pub force: bool,
    /// Paths refused in one directory at least this many times are
    /// replaced by the directory (0: never collapse).
    pub collapse: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            force: false,
            collapse: 3,
        }
    }
}

/// The edits, in a stable order, and what to tell the user.
#[derive(Debug, Clone, Default)]
pub struct Plan {
    pub edits: Vec<Edit>,
    pub notes: Vec<String>,
}

pub fn plan(policy: &Policy, refused: &[Refused], opts: &Options) -> Plan {
    let mut plan = Plan::default();
    let mut paths: BTreeMap<&'static str, BTreeSet<String>> = BTreeMap::new();
    let mut edits = BTreeSet::new();
    for r in refused {
        let what = format!("{} {} (report line {})", r.kind, r.target, r.line);
        if r.allow.is_none() {
            plan.notes.push(format!(
                "not suggested: {what}: a hard rule (a hidden path or the runtime's own protection) no policy change relaxes"
            ));
            continue;
        }
        let fs_list = match r.kind.as_str() {
            "read" => Some("read"),
            "exec" => Some("exec"),
            "write" | "truncate" | "ioctl-dev" | "create" | "remove" | "rename" => Some("write"),
            _ => None,
        };
        if let Some(list) = fs_list {
            paths.entry(list).or_default().insert(r.target.clone());
            continue;
        }
        match r.kind.as_str() {
            "connect" | "bind" => match r.target.parse::<u16>() {
                Ok(port) => {
                    let list = if r.kind == "connect" {
                        "connect"
                    } else {
                        "bind"
                    };
                    let have = if list == "connect" {
                        &policy.connect
                    } else {
                        &policy.bind
                    };
                    if have.contains(&port) {
                        plan.notes
                            .push(format!("already allowed: {what} is in [net] {list}"));
                    } else {
                        edits.insert(Edit::Port { list, port });
                    }
                }
                Err(_) => plan
                    .notes
                    .push(format!("not suggested: {what}: not a port number")),
            },
            "syscall" => {
                if policy.deny.contains(&r.target) {
                    edits.insert(Edit::Syscall(r.target.clone()));
                } else {
                    plan.notes.push(format!(
                        "not suggested: {what}: the policy does not deny it (another filter, e.g. the engine's, did)"
                    ));
                }
            }
            "signal" | "abstract-unix-socket" => {
                let scoped = policy.scope.iter().any(|s| {
                    serde_json::to_value(s).is_ok_and(|v| v.as_str() == Some(r.kind.as_str()))
                });
                if scoped {
                    edits.insert(Edit::Scope(r.kind.clone()));
                } else {
                    plan.notes.push(format!(
                        "not suggested: {what}: [net] scope does not hold it"
                    ));
                }
            }
            _ => plan
                .notes
                .push(format!("not suggested: {what}: unknown kind")),
        }
    }
    for (list, set) in paths {
        for path in fs_paths(policy, list, set, opts, &mut plan.notes) {
            edits.insert(Edit::Path { list, path });
        }
    }
    plan.edits = edits.into_iter().collect();
    plan
}

/// One `[fs]` list's additions: collapsed, protected ones dropped (unless
/// forced), those already covered by an entry skipped.
fn fs_paths(
    policy: &Policy,
    list: &'static str,
    refused: BTreeSet<String>,
    opts: &Options,
    notes: &mut Vec<String>,
) -> Vec<String> {
    let have: &[String] = match list {
        "read" => &policy.read,
        "write" => &policy.write,
        _ => &policy.exec,
    };
    let mut wanted = BTreeSet::new();
    for raw in refused {
        // The protected-path checks compare text: a report's `//`, `/./`
        // or trailing `/` once spelled `/` and `/etc/shadow` past them.
        let Some(path) = super::protect::normal(&raw) else {
            notes.push(format!(
                "not suggested: {list} {raw:?}: not an absolute path without \"..\""
            ));
            continue;
        };
        if let Some(by) = have.iter().find(|h| under(&path, h)) {
            notes.push(format!(
                "already allowed: {path} is under [fs] {list} {by:?}; the refusal came from elsewhere (a hidden path, a mount, another filter)"
            ));
        } else if !opts.force && protected(list, &path, policy) {
            notes.push(format!(
                "not suggested: {list} {path}: a protected path (pass --force to suggest it anyway)"
            ));
        } else {
            wanted.insert(path);
        }
    }
    let may = |dir: &str| dir != "/" && (opts.force || !protected(list, dir, policy));
    let (wanted, collapsed) = collapse_siblings(wanted, opts.collapse, may);
    for (dir, n) in collapsed {
        notes.push(format!(
            "collapsed: {n} refused {list} paths in {dir} become {dir:?} (--collapse 0 keeps them apart)"
        ));
    }
    outermost(&wanted)
}

fn protected(list: &str, path: &str, policy: &Policy) -> bool {
    super::protect::protected_for(list, path, &policy.hide)
}

/// Whether `[syscalls] allow` is needed for `name` (it is on the built-in
/// default-deny list).
pub fn on_default_deny(name: &str) -> bool {
    DEFAULT_DENY.contains(&name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(extra: &str) -> Policy {
        let src =
            format!("version = 1\n[fs]\nread = [\"/usr\"]\nhide = [\"/data/secret\"]\n{extra}");
        Policy::parse(&src, "p.toml", std::path::Path::new("/")).unwrap()
    }

    fn refused(kind: &str, target: &str) -> Refused {
        Refused {
            kind: kind.into(),
            target: target.into(),
            allow: Some(String::new()),
            line: 1,
        }
    }

    #[test]
    fn siblings_collapse_and_protected_paths_stay_out() {
        let p = policy("");
        let r: Vec<Refused> = [
            "/opt/a/1",
            "/opt/a/2",
            "/opt/a/3",
            "/opt/b",
            "/etc/shadow",
            "/root/.ssh/id",
        ]
        .iter()
        .map(|t| refused("read", t))
        .collect();
        let plan = plan(&p, &r, &Options::default());
        let paths: Vec<_> = plan
            .edits
            .iter()
            .map(|e| match e {
                Edit::Path { path, .. } => path.as_str(),
                _ => "",
            })
            .collect();
        assert_eq!(paths, ["/opt/a", "/opt/b"]);
        assert_eq!(
            plan.notes
                .iter()
                .filter(|n| n.contains("protected"))
                .count(),
            2
        );
        assert!(plan.notes.iter().any(|n| n.starts_with("collapsed: 3")));
    }

    #[test]
    fn nothing_is_added_twice_or_above_a_hidden_path() {
        let p = policy("");
        let r = [refused("read", "/usr/lib/x"), refused("write", "/data")];
        let plan = plan(&p, &r, &Options::default());
        assert!(plan.edits.is_empty(), "{:?}", plan.edits);
        assert_eq!(plan.notes.len(), 2, "{:?}", plan.notes);
        let forced = super::plan(
            &p,
            &r[1..],
            &Options {
                force: true,
                collapse: 3,
            },
        );
        assert_eq!(forced.edits.len(), 1);
    }

    #[test]
    fn ports_syscalls_and_scopes() {
        let p = policy("[net]\nconnect = [443]\n");
        let r = [
            refused("connect", "443"),
            refused("connect", "80"),
            refused("syscall", "ptrace"),
            refused("syscall", "getppid"),
            refused("signal", "pid 1 (sh)"),
        ];
        let plan = plan(&p, &r, &Options::default());
        assert_eq!(
            plan.edits,
            [
                Edit::Port {
                    list: "connect",
                    port: 80
                },
                Edit::Syscall("ptrace".into()),
                Edit::Scope("signal".into()),
            ]
        );
        assert_eq!(plan.notes.len(), 2, "{:?}", plan.notes);
    }
}
