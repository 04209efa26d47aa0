//! The `owen.policy.toml` model and its validation (reference:
//! `docs/policy.md`).
//!
//! * [`model`]: the file as written, for its JSON Schema
//!   (`sandboy-spec-gen schema`).
//! * `reader`: typed, located reads from the spanned TOML tree, so that a
//!   wrong type or an unknown key is one diagnostic among many rather than
//!   the end of the run.
//! * `validate`: one check per table, each reporting every problem.
//! * [`checked`]: the resolved [`Policy`] (absolute mount sources, parsed
//!   sizes, final syscall deny list) that rendering and `explain` work from.

pub mod checked;
pub(crate) mod diags;
pub mod egress;
pub mod model;
mod reader;
mod validate;

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use toml::de::DeTable;

pub use checked::{
    Anchor, BindMount, Grant, NetNamespace, Policy, RelativePath, SeccompAction, DEFAULT_DISK,
    DEFAULT_INODES,
};
pub(crate) use diags::diagnostic;
pub use diags::{doc_link, DOC_SECTIONS};
pub use egress::{is_internal, valid_host, CidrRule, Egress, EgressWire, HostRule, RuleError};
pub use model::*;

use crate::error::{Diagnostic, Error, Location};
use diags::Diags;

/// The only policy format version this release understands.
pub const VERSION: i64 = 1;

/// The lowest RLIMIT_NOFILE a container or a wrapped step can be given:
/// libcontainer applies `process.rlimits` in its intermediate process,
/// before the init has opened /proc, the rootfs and its sockets (through
/// pathrs), and below this many descriptors those opens fail and the init
/// panics. Measured with libcontainer 0.7: 17 fails, 18 starts a plain
/// and a policy container and their `exec`; two more for a console socket
/// or a learning container's listener.
pub const NOFILE_FLOOR: u64 = 20;

/// The floor's reason, as error messages give it.
pub const NOFILE_FLOOR_WHY: &str = "the runtime applies RLIMIT_NOFILE before the container's init has opened /proc, the rootfs and its sockets, and needs that many descriptors to start the process";

/// sandboy's built-in seccomp deny list (`[syscalls] default_deny = true`).
///
/// Why these: each one either reaches kernel attack surface that a build
/// step or agent tool never needs (bpf, io_uring, userfaultfd, perf, keyrings,
/// module loading, kexec, handle-based opens that bypass path checks), or
/// changes state outside the container (mount and namespace games, clocks,
/// swap, reboot, accounting, quotas, x86 port I/O), or lets one process read
/// or steer another (ptrace, process_vm_*). `personality` stays allowed
/// (some build tools set it; policies can deny it), as do the NUMA calls
/// (mbind, migrate_pages, move_pages, set_mempolicy), which only affect the
/// caller's placement. Names missing on one architecture (iopl on aarch64)
/// are harmless: the runtime skips what an architecture lacks.
pub const DEFAULT_DENY: &[&str] = &[
    "acct",
    "add_key",
    "adjtimex",
    "bpf",
    "clock_adjtime",
    "clock_settime",
    "create_module",
    "delete_module",
    "fanotify_init",
    "finit_module",
    "fsconfig",
    "fsmount",
    "fsopen",
    "fspick",
    "get_kernel_syms",
    "init_module",
    "io_uring_enter",
    "io_uring_register",
    "io_uring_setup",
    "ioperm",
    "iopl",
    "kexec_file_load",
    "kexec_load",
    "keyctl",
    "lookup_dcookie",
    "mount",
    "mount_setattr",
    "move_mount",
    "name_to_handle_at",
    "nfsservctl",
    "open_by_handle_at",
    "open_tree",
    "open_tree_attr",
    "perf_event_open",
    "pivot_root",
    "process_vm_readv",
    "process_vm_writev",
    "ptrace",
    "query_module",
    "quotactl",
    "quotactl_fd",
    "reboot",
    "request_key",
    "setns",
    "settimeofday",
    "swapoff",
    "swapon",
    "syslog",
    "umount2",
    "unshare",
    "uselib",
    "userfaultfd",
    "vhangup",
];

/// Syscalls a policy may never deny: the runtime needs them after the
/// seccomp filter is loaded (Landlock is applied by the container's init
/// right before `execve`, seccomp through `prctl`/`seccomp`), and denying
/// them would make every container fail to start rather than confine it.
/// `execveat` is how the init starts the OCI-wasm host (from an fd), and
/// denying it while `execve` is allowed would confine nothing anyway.
pub const NEVER_DENY: &[&str] = &[
    "execve",
    "execveat",
    "landlock_add_rule",
    "landlock_create_ruleset",
    "landlock_restrict_self",
    "prctl",
    "seccomp",
];

/// `PATH` used when `[process] env` sets none (runc's default).
pub const DEFAULT_PATH: &str = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// Whether `path` goes through a magic link of /proc (`/proc/PID/root`,
/// `cwd`, `exe`, `fd/N`, `map_files/…`, `ns/…`, their `task/TID/`
/// forms, `/dev/fd/N`), which the kernel follows to a file chosen by the
/// process: Landlock's rule would land on `/` for `/proc/self/root`, so
/// such a path reads as narrow and grants anything. Never written by a
/// report (they carry resolved paths), refused in policies and suggestions.
pub fn through_magic_link(path: &str) -> bool {
    let c: Vec<&str> = path
        .split('/')
        .filter(|c| !c.is_empty() && *c != ".")
        .collect();
    let pid = |x: &str| {
        x == "self"
            || x == "thread-self"
            || (!x.is_empty() && x.bytes().all(|b| b.is_ascii_digit()))
    };
    let link = |rest: &[&str]| {
        matches!(
            rest,
            ["root" | "cwd" | "exe", ..] | ["fd" | "map_files" | "ns", _, ..]
        )
    };
    match c.as_slice() {
        ["proc", p, "task", t, rest @ ..] if pid(p) && pid(t) => link(rest),
        ["proc", p, rest @ ..] if pid(p) => link(rest),
        ["dev", "fd", _, ..] => true,
        _ => false,
    }
}

/// `src` with every `[[mount]]` table (up to the next table header)
/// blanked: a policy applied where host binds are not the policy's to add
/// (an adapter's container, an engine's spec through annotations). Lines
/// keep their numbers, so diagnostics still point right.
pub fn without_mounts(src: &str) -> String {
    let mut skip = false;
    src.lines()
        .map(|line| {
            let head = line.trim_start();
            if head.starts_with('[') {
                skip = head.starts_with("[[mount]]");
            }
            if skip {
                ""
            } else {
                line
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

impl Policy {
    /// Read and validate a policy file. Relative mount sources resolve
    /// against the file's directory.
    pub fn load(path: &Path) -> Result<Policy, Error> {
        let src = crate::input::read_text(path, crate::input::TEXT_MAX)
            .map_err(|e| Error::read("read policy", path, e))?;
        let dir = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        // Absolute, so that "does not exist" messages name the real place.
        let dir = std::path::absolute(&dir).unwrap_or(dir);
        Policy::parse(&src, &path.display().to_string(), &dir)
    }

    /// Validate policy text. `file` labels diagnostics (its stem is the
    /// default `name`); `base_dir` is where relative mount sources resolve.
    /// Every problem of the file comes back at once, except that a TOML
    /// syntax error stops before the checks.
    pub fn parse(src: &str, file: &str, base_dir: &Path) -> Result<Policy, Error> {
        let doc = DeTable::parse(src)
            .map_err(|e| Error::Policy(vec![syntax_diagnostic(src, file, &e)]))?;
        let stem = Path::new(file).file_stem().map_or_else(
            || "policy".to_string(),
            |s| s.to_string_lossy().into_owned(),
        );
        let cx = validate::Context {
            base_dir,
            default_name: &stem,
            bytes: src.as_bytes(),
        };
        let mut d = Diags::new(file, src);
        let policy = validate::policy(&doc, &cx, &mut d);
        if d.is_empty() {
            Ok(policy)
        } else {
            Err(Error::Policy(d.into_sorted()))
        }
    }
}

/// Hex sha256 of some bytes.
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A TOML syntax error, named after the key it is most likely in (found
/// in the partial tree the recovering parser builds up to the error).
fn syntax_diagnostic(src: &str, file: &str, e: &toml::de::Error) -> Diagnostic {
    let span = e.span().unwrap_or(0..0);
    let (partial, _) = DeTable::parse_recoverable(src);
    let key = reader::key_before(partial.get_ref(), span.start)
        .unwrap_or_else(|| "(top level)".to_string());
    let message = e.message().trim().replace('\n', "; ");
    diags::diagnostic(
        file,
        Location::of_offset(src, span.start),
        span,
        &key,
        message,
        None,
        "fix the TOML syntax at this position (strings need quotes, arrays need brackets)",
    )
}

/// Strip trailing slashes (except for `/`) and collapse `//` and `/./`.
pub(crate) fn normalize(p: &str) -> String {
    let parts: Vec<&str> = p
        .split('/')
        .filter(|c| !c.is_empty() && *c != ".")
        .collect();
    format!("/{}", parts.join("/"))
}

/// Whether container path `p` is `dir` or beneath it.
pub fn is_under(p: &str, dir: &str) -> bool {
    dir == "/" || p == dir || (p.starts_with(dir) && p.as_bytes().get(dir.len()) == Some(&b'/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths() {
        assert_eq!(normalize("/usr//bin/"), "/usr/bin");
        assert_eq!(normalize("/"), "/");
        assert!(is_under("/work/x", "/work"));
        assert!(!is_under("/workshop", "/work"));
        assert!(is_under("/a", "/"));
    }

    #[test]
    fn syntax_errors_name_their_key() {
        let src = "version = 1\n[limits]\npids = 3\n[net]\nconnect = [\n  1,\n  0 0,\n]\n";
        let err = Policy::parse(src, "x.toml", Path::new("/")).unwrap_err();
        let d = &err.diagnostics()[0];
        assert_eq!(d.key, "net.connect", "{err}");
        assert_eq!(d.location.line, 7, "{err}");
    }

    #[test]
    fn defaults_are_known_syscalls() {
        for name in DEFAULT_DENY.iter().chain(NEVER_DENY) {
            assert!(crate::syscalls::is_known(name), "{name}");
        }
        let mut sorted = DEFAULT_DENY.to_vec();
        sorted.sort_unstable();
        assert_eq!(sorted, DEFAULT_DENY, "keep DEFAULT_DENY sorted");
        assert!(!DEFAULT_DENY.iter().any(|d| NEVER_DENY.contains(d)));
    }
}
