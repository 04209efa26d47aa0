//! The checked, resolved policy that rendering and `explain` work from.

use std::collections::HashSet;
use std::ops::Range;
use std::path::{Path, PathBuf};

use super::egress::Egress;
use super::normalize;
use crate::annotations::{LandlockMode, Scope, WasmLimits};
use crate::error::Location;
use crate::units::{ByteSize, Span};

/// `[net] namespace`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NetNamespace {
    /// Own network namespace (loopback only).
    None,
    /// The host's network namespace.
    Host,
}

/// `[syscalls] action`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SeccompAction {
    /// Fail with EPERM.
    Errno,
    /// Kill the whole process.
    Kill,
    /// Allow but log.
    Log,
}

/// A validated bind mount.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BindMount {
    /// Absolute, canonical host path.
    pub source: PathBuf,
    pub destination: String,
    pub options: Vec<String>,
}

impl BindMount {
    pub fn read_only(&self) -> bool {
        self.options.iter().any(|o| o == "ro")
    }
}

/// Which `[fs]` list a path was granted by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Grant {
    Read,
    Exec,
    Write,
}

impl Grant {
    /// The key's name in `[fs]` (`read`, …).
    pub fn name(self) -> &'static str {
        match self {
            Grant::Read => "read",
            Grant::Exec => "exec",
            Grant::Write => "write",
        }
    }

    /// The policy key of the list (`fs.read`, …).
    pub fn key(self) -> &'static str {
        match self {
            Grant::Read => "fs.read",
            Grant::Exec => "fs.exec",
            Grant::Write => "fs.write",
        }
    }
}

/// Where a relative `[fs]` path is anchored at wrap time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Anchor {
    /// `.`, `./x`, `x/y`: the working directory.
    Cwd,
    /// `~`, `~/x`: the home directory.
    Home,
}

/// An `[fs]` path written relative (SPEC §8), kept out of
/// `read`/`exec`/`write` until [`Policy::resolve_relative`] anchors it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RelativePath {
    pub grant: Grant,
    pub anchor: Anchor,
    /// The path as written.
    pub written: String,
    /// The part below the anchor, normalized ("" for `.` and `~`).
    pub rest: String,
    pub location: Location,
    /// Byte range of the entry in the policy text.
    pub span: Range<usize>,
}

/// A validated, resolved policy.
#[derive(Debug, Clone)]
pub struct Policy {
    /// The file as the user named it (for messages and generated comments).
    pub file: String,
    /// `name`, or the file's stem when the policy has none.
    pub name: String,
    /// Hex sha256 of the policy file's bytes.
    pub sha256: String,
    pub landlock_mode: LandlockMode,
    /// Absolute, normalized, de-duplicated container paths.
    pub read: Vec<String>,
    pub exec: Vec<String>,
    pub write: Vec<String>,
    pub hide: Vec<String>,
    /// `[fs]` entries written relative, for `sandboy wrap` to anchor.
    pub relative: Vec<RelativePath>,
    pub mounts: Vec<BindMount>,
    pub net_namespace: NetNamespace,
    pub connect: Vec<u16>,
    pub bind: Vec<u16>,
    /// `[net] udp`: UDP ports opened (sorted, unique).
    pub udp: Vec<u16>,
    /// `[net] unix`: host pathname UNIX sockets open to unprivileged wrap.
    pub unix: bool,
    /// `[net] allow`, `deny`, `allow_cidr`.
    pub egress: Egress,
    pub scope: Vec<Scope>,
    pub default_deny: bool,
    /// Final deny list, sorted: default (if on) + deny − allow.
    pub deny: Vec<String>,
    pub action: SeccompAction,
    /// `[process] args`; empty when the policy has none (wrap supplies
    /// them, generate takes them from `--base`).
    pub args: Vec<String>,
    pub cwd: String,
    /// Environment including the `PATH` default.
    pub env: Vec<String>,
    pub uid: u32,
    pub gid: u32,
    /// Whether `[process] user` was written: `sandboy wrap` as root runs a
    /// step without one as an unprivileged identity, never as host root.
    pub user_set: bool,
    /// `[process] userns`: `Some(true)` maps container root into a user
    /// namespace, `Some(false)` keeps host ids, `None` lets `generate`
    /// decide (`crate::userns::choose`).
    pub userns: Option<bool>,
    pub memory: Option<ByteSize>,
    pub pids: Option<i64>,
    pub cpus: Option<f64>,
    pub nofile: Option<u64>,
    pub timeout: Option<Span>,
    /// `[limits] disk`: storage for every writable path.
    pub disk: Option<ByteSize>,
    /// `[limits] inodes`.
    pub inodes: Option<u64>,
    pub wasm: Option<WasmLimits>,
    pub ignore: Vec<String>,
}

/// Storage each writable path gets when `[limits] disk` is absent.
pub const DEFAULT_DISK: ByteSize = ByteSize(1 << 30);
/// Files and directories each writable path may hold when `[limits]
/// inodes` is absent.
pub const DEFAULT_INODES: u64 = 100_000;

impl Policy {
    /// `[limits] disk`, or [`DEFAULT_DISK`].
    pub fn disk_cap(&self) -> ByteSize {
        self.disk.unwrap_or(DEFAULT_DISK)
    }

    /// `[limits] inodes`, or [`DEFAULT_INODES`].
    pub fn inode_cap(&self) -> u64 {
        self.inodes.unwrap_or(DEFAULT_INODES)
    }

    /// Whether `process.args[0]` selects OCI-wasm mode.
    pub fn is_wasm(&self) -> bool {
        self.args.first().is_some_and(|a| a.ends_with(".wasm"))
    }

    /// The `[fs]` entries still written relative, with their locations.
    pub fn relative_paths(&self) -> Vec<RelativePath> {
        self.relative.clone()
    }

    /// Anchor every relative `[fs]` entry: `.`-style paths at `cwd`, `~`
    /// paths at `home`, normalized and merged into their lists (duplicates
    /// dropped). Both should be absolute; non-UTF-8 parts are replaced
    /// lossily, since container paths are strings.
    ///
    /// A `.`-style path must also stay in the working directory once its
    /// symlinks are resolved: a checkout is the repository's to shape, and
    /// a committed `build -> ../..` made `write = ["./build"]` grant the
    /// whole home directory (a red team). Such entries are located errors.
    pub fn resolve_relative(&mut self, cwd: &Path, home: &Path) -> Result<(), crate::Error> {
        if self.relative.is_empty() {
            return Ok(());
        }
        let real_cwd = std::fs::canonicalize(cwd).unwrap_or_else(|_| cwd.to_path_buf());
        let mut escapes = Vec::new();
        let set = |l: &[String]| l.iter().cloned().collect::<HashSet<String>>();
        let mut seen = [set(&self.read), set(&self.exec), set(&self.write)];
        for r in std::mem::take(&mut self.relative) {
            let base = match r.anchor {
                Anchor::Cwd => cwd,
                Anchor::Home => home,
            };
            let path = normalize(&base.join(&r.rest).to_string_lossy());
            if r.anchor == Anchor::Cwd {
                if let Ok(real) = std::fs::canonicalize(&path) {
                    if !real.starts_with(&real_cwd) {
                        escapes.push(crate::policy::diags::diagnostic(
                            &self.file,
                            r.location,
                            r.span.clone(),
                            &format!("fs.{}", r.grant.name()),
                            format!(
                                "path \"{}\" leaves the working directory through a symlink (to {})",
                                r.written,
                                real.display()
                            ),
                            None,
                            "remove the link from the checkout, or write the absolute path meant",
                        ));
                        continue;
                    }
                }
            }
            let (list, seen) = match r.grant {
                Grant::Read => (&mut self.read, &mut seen[0]),
                Grant::Exec => (&mut self.exec, &mut seen[1]),
                Grant::Write => (&mut self.write, &mut seen[2]),
            };
            push_unique(list, seen, path);
        }
        if escapes.is_empty() {
            Ok(())
        } else {
            Err(crate::Error::Policy(escapes))
        }
    }
}

/// Push `path` unless `seen` has it: order-preserving de-duplication in
/// linear time (a `Vec::contains` scan made 100,000 rules take a minute).
pub(crate) fn push_unique(list: &mut Vec<String>, seen: &mut HashSet<String>, path: String) {
    if seen.insert(path.clone()) {
        list.push(path);
    }
}
