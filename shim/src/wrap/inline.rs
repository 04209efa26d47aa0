//! Inline rules (`--ro`, `--rw`, `--exec`, `--connect`, `--bind`,
//! `--timeout`), landrun-style: one-off confinement without a policy file.
//!
//! The flags are written out as policy TOML and validated by
//! `Policy::parse` like any file, so there is one validation path and one
//! model. With `--policy` too, the file is validated on its own (its errors
//! keep their file:line:column) and the flags' rules are added to it.
//!
//! Relative flag paths become `.`-anchored entries, resolved and checked
//! by `Policy::resolve_relative` in `wrap::load_policy` like a policy
//! file's (one mechanism): a checkout's committed `out -> ..` made
//! `--rw ./out` grant the parent directory when flags were made absolute
//! here instead (a red team). A flag's `~` is the shell's business: a
//! quoted one names a directory `~` in the working directory, as before.

use std::path::Path;

use sandboy_spec_gen::policy::{NetNamespace, Policy};

use crate::error::{Failure, Result};

/// The inline rules from the command line.
#[derive(Debug, Clone, Default)]
pub struct InlineRules {
    pub ro: Vec<String>,
    pub rw: Vec<String>,
    pub exec: Vec<String>,
    pub connect: Vec<u16>,
    pub bind: Vec<u16>,
    pub timeout: Option<String>,
}

impl InlineRules {
    pub fn is_empty(&self) -> bool {
        self.ro.is_empty()
            && self.rw.is_empty()
            && self.exec.is_empty()
            && self.connect.is_empty()
            && self.bind.is_empty()
            && self.timeout.is_none()
    }

    /// The rules as policy TOML. `namespace` is the network namespace the
    /// chosen tier gives (flags do not ask for one themselves).
    pub fn to_toml(&self, cwd: &Path, namespace: NetNamespace) -> String {
        let list = |paths: &[String]| {
            paths
                .iter()
                .map(|p| quote(&entry(cwd, p)))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let ports = |ports: &[u16]| {
            ports
                .iter()
                .map(u16::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        };
        let namespace = match namespace {
            NetNamespace::None => "none",
            NetNamespace::Host => "host",
        };
        let mut t = format!(
            "version = 1\nname = \"inline\"\n[fs]\nread = [{}]\nwrite = [{}]\nexec = [{}]\n\
             [net]\nnamespace = \"{namespace}\"\nconnect = [{}]\nbind = [{}]\n\
             [process]\nargs = [\"true\"]\n",
            list(&self.ro),
            list(&self.rw),
            list(&self.exec),
            ports(&self.connect),
            ports(&self.bind),
        );
        if let Some(d) = &self.timeout {
            t.push_str(&format!("[limits]\ntimeout = {}\n", quote(d)));
        }
        t
    }

    /// The rules as a validated policy (errors are located in "--flags").
    pub fn policy(&self, cwd: &Path, namespace: NetNamespace) -> Result<Policy> {
        Policy::parse(&self.to_toml(cwd, namespace), "<command-line flags>", cwd)
            .map_err(|e| Failure::config(e.to_string()))
    }
}

/// Adds the rules of `extra` (from flags) to `base` (from a file): lists
/// are extended, a timeout from the flags replaces the file's.
pub fn merge(base: &mut Policy, extra: Policy) {
    fn extend<T: PartialEq>(to: &mut Vec<T>, from: Vec<T>) {
        for x in from {
            if !to.contains(&x) {
                to.push(x);
            }
        }
    }
    extend(&mut base.read, extra.read);
    extend(&mut base.write, extra.write);
    extend(&mut base.exec, extra.exec);
    extend(&mut base.relative, extra.relative);
    extend(&mut base.connect, extra.connect);
    extend(&mut base.bind, extra.bind);
    if extra.timeout.is_some() {
        base.timeout = extra.timeout;
    }
}

/// A TOML basic string (JSON's escapes are all valid TOML ones).
fn quote(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into())
}

/// A flag's path as a policy entry: an absolute one as given, a relative
/// one anchored at the working directory (`./p`). `..` is folded
/// lexically first (policy paths may not hold it): where it leads out of
/// the working directory (`--rw ../out`), the caller named a path outside
/// the checkout, which is given absolute.
fn entry(cwd: &Path, p: &str) -> String {
    if p.starts_with('/') {
        return p.to_string();
    }
    if !p.split('/').any(|c| c == "..") {
        return match p {
            "." => p.to_string(),
            _ if p.starts_with("./") => p.to_string(),
            _ => format!("./{p}"),
        };
    }
    let folded = lexical(&cwd.join(p));
    match folded.strip_prefix(lexical(cwd)) {
        Ok(rest) if rest.as_os_str().is_empty() => ".".to_string(),
        Ok(rest) => format!("./{}", rest.display()),
        Err(_) => folded.display().to_string(),
    }
}

/// The absolute path `p` with `.` and `..` folded lexically, as git and
/// the shell join paths (`..` leaves the directory it names).
pub fn lexical(p: &Path) -> std::path::PathBuf {
    let mut out = std::path::PathBuf::from("/");
    for c in p.components() {
        match c {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::Normal(n) => out.push(n),
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_become_a_valid_policy() {
        let r = InlineRules {
            ro: vec!["/etc".into(), "src".into()],
            rw: vec!["./out".into()],
            exec: vec!["/usr/bin".into()],
            connect: vec![443],
            bind: vec![],
            timeout: Some("30s".into()),
        };
        let cwd = Path::new("/work/repo");
        let mut p = r.policy(cwd, NetNamespace::Host).unwrap();
        p.resolve_relative(cwd, Path::new("/home/u")).unwrap();
        assert_eq!(p.read, ["/etc", "/work/repo/src"]);
        assert_eq!(p.write, ["/work/repo/out"]);
        assert_eq!(p.connect, [443]);
        assert!(p.timeout.is_some());
        assert_eq!(p.net_namespace, NetNamespace::Host);
    }

    #[test]
    fn bad_flag_values_are_config_errors() {
        let r = InlineRules {
            timeout: Some("30".into()),
            ..Default::default()
        };
        let e = r.policy(Path::new("/"), NetNamespace::Host).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(e.message.contains("command-line flags"), "{}", e.message);
    }

    #[test]
    fn relative_flags_are_anchored_entries() {
        let cwd = Path::new("/a/b");
        for (flag, shown) in [
            ("/x", "/x"),
            (".", "."),
            ("./out", "./out"),
            ("out/x", "./out/x"),
            ("~/x", "./~/x"),
            ("c/../d", "./d"),
            ("c/..", "."),
            ("../c/./d", "/a/c/d"),
            ("../../..", "/"),
        ] {
            assert_eq!(entry(cwd, flag), shown, "{flag}");
        }
    }

    #[test]
    fn a_flag_through_a_checkouts_symlink_is_refused_like_a_files_entry() {
        let tmp = crate::test_support::TempDir::new("inline-link");
        let cwd = tmp.path().join("proj");
        std::fs::create_dir_all(&cwd).unwrap();
        std::os::unix::fs::symlink("..", cwd.join("out")).unwrap();
        let r = InlineRules {
            rw: vec!["./out".into()],
            ..Default::default()
        };
        let mut p = r.policy(&cwd, NetNamespace::Host).unwrap();
        let e = p.resolve_relative(&cwd, Path::new("/home/u")).unwrap_err();
        assert!(
            e.to_string()
                .contains("leaves the working directory through a symlink"),
            "{e}"
        );
        assert!(p.write.is_empty(), "{:?}", p.write);
    }
}
