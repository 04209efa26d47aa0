//! Landlock from the `dev.sandboy.landlock` annotation (SPEC §5).
//!
//! The ruleset is built with the three Landlock syscalls directly rather
//! than through the `landlock` crate's typed flags: raw access bits in the
//! annotation must reach the kernel unchanged (rights that a newer kernel
//! adds need no sandboy release), and whether the running kernel knows such
//! a bit is asked of the kernel itself (`landlock_create_ruleset` answers
//! EINVAL for an unknown bit).
//!
//! Everything that can fail happens in [`prepare`] (create time, inside the
//! container after pivot_root): the ruleset fd is created and filled there;
//! [`PreparedLandlock::restrict_self`] right before execve only calls
//! `landlock_restrict_self`.
//!
//! Semantics: every filesystem right the kernel's ABI knows is *handled*
//! (denied unless a rule grants it), so "all else is denied" holds; TCP
//! bind/connect are handled when the annotation has a `net` object; scopes as
//! listed.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::sync::Arc;

use sandboy_spec_gen::annotations::{
    self, access_bits, LandlockMode, LandlockRuleset, Scope, ACCESS_NAMES, FS_FILE_RIGHTS,
};

use crate::ConfineError;

const KEY: &str = annotations::LANDLOCK;

const CREATE_RULESET_VERSION: u32 = 1 << 0;
const RULE_PATH_BENEATH: libc::c_int = 1;
const RULE_NET_PORT: libc::c_int = 2;
const ACCESS_FS_EXECUTE: u64 = 1 << 0;
const ACCESS_FS_WRITE_FILE: u64 = 1 << 1;
const ACCESS_FS_READ_FILE: u64 = 1 << 2;
const ACCESS_NET_BIND_TCP: u64 = 1 << 0;
const ACCESS_NET_CONNECT_TCP: u64 = 1 << 1;
const SCOPE_ABSTRACT_UNIX_SOCKET: u64 = 1 << 0;
const SCOPE_SIGNAL: u64 = 1 << 1;
/// ABI 7: audit denials of the programs run after `execve` too (the
/// container payload), not only of the process that restricted itself.
const RESTRICT_SELF_LOG_NEW_EXEC_ON: u32 = 1 << 1;

/// Landlock ABI that introduced each known filesystem access bit.
const FS_BIT_ABI: &[(u32, i32)] = &[
    (0, 1),
    (1, 1),
    (2, 1),
    (3, 1),
    (4, 1),
    (5, 1),
    (6, 1),
    (7, 1),
    (8, 1),
    (9, 1),
    (10, 1),
    (11, 1),
    (12, 1),
    (13, 2), // refer
    (14, 3), // truncate
    (15, 5), // ioctl_dev
];
const NET_ABI: i32 = 4;
/// Signal and abstract-socket scoping (ABI 6): a domain's processes reach
/// no process and no abstract socket outside it.
pub const SCOPE_ABI: i32 = 6;
const LOG_FLAGS_ABI: i32 = 7;

#[repr(C)]
#[derive(Default)]
struct RulesetAttr {
    handled_access_fs: u64,
    handled_access_net: u64,
    scoped: u64,
}

#[repr(C, packed)]
struct PathBeneathAttr {
    allowed_access: u64,
    parent_fd: i32,
}

#[repr(C)]
struct NetPortAttr {
    allowed_access: u64,
    port: u64,
}

/// The Landlock ABI version of the running kernel; 0 when Landlock is not
/// available (not built in, or not enabled at boot).
pub fn abi_version() -> i32 {
    // SAFETY: with a NULL attr, size 0 and the VERSION flag the kernel reads
    // no memory and only returns the ABI version.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<RulesetAttr>(),
            0usize,
            CREATE_RULESET_VERSION,
        )
    };
    if rc < 0 {
        0
    } else {
        rc as i32
    }
}

fn create_ruleset(attr: &RulesetAttr) -> io::Result<OwnedFd> {
    // SAFETY: attr points to a live, initialised struct of the given size;
    // the kernel only reads it. The returned fd is new and owned by us.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            attr as *const RulesetAttr,
            std::mem::size_of::<RulesetAttr>(),
            0u32,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: rc is a fresh file descriptor (O_CLOEXEC) that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(rc as i32) })
}

/// Whether the running kernel accepts `bits` as handled filesystem rights.
fn kernel_knows_fs_bits(bits: u64) -> bool {
    create_ruleset(&RulesetAttr {
        handled_access_fs: bits,
        ..Default::default()
    })
    .is_ok()
}

/// Filesystem rights that Landlock ABI `abi` handles, of those sandboy knows.
pub fn known_fs_rights(abi: i32) -> u64 {
    FS_BIT_ABI
        .iter()
        .filter(|&&(_, a)| a <= abi)
        .fold(0, |acc, &(bit, _)| acc | 1u64 << bit)
}

fn right_name(bit: u32) -> String {
    ACCESS_NAMES
        .iter()
        .skip(3) // the groups
        .find(|&&(_, bits)| bits == 1u64 << bit)
        .map(|&(n, _)| n.to_string())
        .unwrap_or_else(|| format!("raw access bit 1<<{bit}"))
}

fn required_abi(bit: u32) -> String {
    FS_BIT_ABI
        .iter()
        .find(|&&(b, _)| b == bit)
        .map(|&(_, abi)| abi.to_string())
        .unwrap_or_else(|| "(newer than any sandboy knows)".to_string())
}

/// A Landlock ruleset, created and filled, ready for `restrict_self`.
#[derive(Debug, Clone)]
pub struct PreparedLandlock {
    ruleset: Arc<OwnedFd>,
    /// Filesystem rights the ruleset handles (a rule may grant only these).
    handled_fs: u64,
    restrict_flags: u32,
    abi: i32,
}

impl PreparedLandlock {
    /// The kernel's Landlock ABI the ruleset was built for.
    pub fn abi(&self) -> i32 {
        self.abi
    }

    /// Grants executing and reading exactly the one file `file` is open on
    /// (an `O_PATH` fd will do): the wasm host binary the init `execve`s
    /// after restricting itself. Nothing beneath or beside it.
    pub fn allow_executing(&self, file: BorrowedFd<'_>) -> Result<(), ConfineError> {
        let attr = PathBeneathAttr {
            allowed_access: (ACCESS_FS_EXECUTE | ACCESS_FS_READ_FILE) & self.handled_fs,
            parent_fd: file.as_raw_fd(),
        };
        add_rule(&self.ruleset, RULE_PATH_BENEATH, &attr)
            .map_err(|e| ConfineError::kernel("landlock_add_rule for the wasm host binary", e))
    }

    /// Grants reading and writing the container's `/dev/null`, when it is
    /// the null character device (1:3) itself, not a link or a file an
    /// image put there: libcontainer gives the startContainer hooks it
    /// spawns under the container's confinement `/dev/null` as stdout.
    pub fn allow_null_device(&self) -> Result<(), ConfineError> {
        let what = "landlock_add_rule for /dev/null";
        let fd = null_device(c"/dev/null").map_err(|e| ConfineError::kernel(what, e))?;
        let attr = PathBeneathAttr {
            allowed_access: (ACCESS_FS_READ_FILE | ACCESS_FS_WRITE_FILE) & self.handled_fs,
            parent_fd: fd.as_raw_fd(),
        };
        add_rule(&self.ruleset, RULE_PATH_BENEATH, &attr).map_err(|e| ConfineError::kernel(what, e))
    }

    /// Restricts the calling thread (and everything it executes).
    /// Needs `no_new_privs` or `CAP_SYS_ADMIN`.
    pub fn restrict_self(&self) -> Result<(), ConfineError> {
        // SAFETY: plain integer arguments; the ruleset fd is owned by self
        // and open for the duration of the call.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_landlock_restrict_self,
                self.ruleset.as_raw_fd(),
                self.restrict_flags,
            )
        };
        if rc < 0 {
            let err = io::Error::last_os_error();
            if err.raw_os_error() == Some(libc::EPERM) {
                return Err(ConfineError::Privilege { what: "Landlock" });
            }
            return Err(ConfineError::kernel("landlock_restrict_self", err));
        }
        Ok(())
    }
}

/// Downgrade handling per mode: error in `enforce`, warn in `best-effort`.
struct Policy {
    enforce: bool,
    abi: i32,
}

impl Policy {
    fn unsupported(&self, message: String, required_abi: String) -> Result<(), ConfineError> {
        if self.enforce {
            return Err(ConfineError::LandlockUnsupported {
                message,
                required_abi,
                kernel_abi: self.abi,
            });
        }
        tracing::warn!(
            annotation = KEY,
            kernel_abi = self.abi,
            required_abi = %required_abi,
            "Landlock best-effort: {message}; not enforced"
        );
        Ok(())
    }
}

/// Decodes the annotation value (a configuration error if malformed).
pub fn decode(value: &str) -> Result<LandlockRuleset, ConfineError> {
    LandlockRuleset::decode(value).map_err(|e| ConfineError::Annotation {
        key: KEY,
        message: format!("{} at line {} column {}", e.message, e.line, e.column),
        fix: "fix the JSON value (see SPEC §5)".into(),
    })
}

/// Per-rule access bits, checked for unknown names (configuration errors).
pub fn rule_bits(rs: &LandlockRuleset) -> Result<Vec<u64>, ConfineError> {
    rs.fs
        .iter()
        .enumerate()
        .map(|(i, rule)| {
            rule.access.iter().try_fold(0u64, |acc, a| {
                access_bits(a)
                    .map(|b| acc | b)
                    .map_err(|e| ConfineError::Annotation {
                        key: KEY,
                        message: format!("fs[{i}] ({}): {e}", rule.path),
                        fix: "correct the access list of that rule".into(),
                    })
            })
        })
        .collect()
}

/// Builds the ruleset: checks the kernel's ABI against what the annotation
/// asks (per mode), opens the rule paths (container paths: call after
/// pivot_root) and adds the rules. `Ok(None)`: nothing to apply (`off`, or
/// `best-effort` on a kernel without Landlock).
pub fn prepare(rs: &LandlockRuleset) -> Result<Option<PreparedLandlock>, ConfineError> {
    prepare_with_binds(rs, &[])
}

/// [`prepare`] for a container whose spec binds host directories at
/// `binds` (their destinations): storage others write (an earlier step,
/// the CI runner, the repository's own committed links), so a rule path
/// below one follows no symlink there, as below the container's own write
/// paths (see `open_rule_path`).
pub fn prepare_with_binds(
    rs: &LandlockRuleset,
    binds: &[&str],
) -> Result<Option<PreparedLandlock>, ConfineError> {
    let bits = rule_bits(rs)?;
    if rs.mode == LandlockMode::Off {
        tracing::debug!(annotation = KEY, "Landlock mode off");
        return Ok(None);
    }
    let abi = abi_version();
    let policy = Policy {
        enforce: rs.mode == LandlockMode::Enforce,
        abi,
    };
    if abi < 1 {
        policy.unsupported(
            "this kernel has no Landlock (not built in or not enabled at boot)".into(),
            "1".into(),
        )?;
        return Ok(None);
    }

    // Filesystem: which requested bits can this kernel enforce?
    let known = known_fs_rights(abi);
    let requested: u64 = bits.iter().fold(0, |a, b| a | b);
    let mut supported = requested & known;
    for bit in 0..64u32 {
        let b = 1u64 << bit;
        if requested & b == 0 || supported & b != 0 {
            continue;
        }
        // Known to sandboy but above the kernel's ABI, or unknown to sandboy:
        // ask the kernel.
        if FS_BIT_ABI.iter().all(|&(k, _)| k != bit) && kernel_knows_fs_bits(b) {
            supported |= b;
            continue;
        }
        policy.unsupported(
            format!("filesystem right {} is not supported", right_name(bit)),
            required_abi(bit),
        )?;
    }
    let mut attr = RulesetAttr {
        handled_access_fs: known | supported,
        ..Default::default()
    };

    // TCP ports (ABI 4).
    let mut net = rs.net.as_ref();
    if net.is_some() && abi < NET_ABI {
        policy.unsupported(
            "TCP bind/connect port rules (\"net\") are not supported".into(),
            NET_ABI.to_string(),
        )?;
        net = None;
    }
    if net.is_some() {
        attr.handled_access_net = ACCESS_NET_BIND_TCP | ACCESS_NET_CONNECT_TCP;
    }

    // Scopes (ABI 6).
    if !rs.scope.is_empty() {
        if abi < SCOPE_ABI {
            policy.unsupported(
                format!("scopes {:?} are not supported", rs.scope),
                SCOPE_ABI.to_string(),
            )?;
        } else {
            for s in &rs.scope {
                attr.scoped |= match s {
                    Scope::AbstractUnixSocket => SCOPE_ABSTRACT_UNIX_SOCKET,
                    Scope::Signal => SCOPE_SIGNAL,
                };
            }
        }
    }

    let ruleset =
        create_ruleset(&attr).map_err(|e| ConfineError::kernel("landlock_create_ruleset", e))?;

    // Where the container or others may make symlinks: a rule path below
    // one is opened without following any link there (see
    // `open_rule_path`).
    let planted: Vec<&str> = rs
        .fs
        .iter()
        .zip(&bits)
        .filter(|(_, &b)| b & annotations::FS_MAKE_SYM != 0)
        .map(|(r, _)| r.path.as_str())
        .chain(binds.iter().copied())
        .collect();
    for (index, (rule, &rule_bits)) in rs.fs.iter().zip(&bits).enumerate() {
        let mut allowed = rule_bits & attr.handled_access_fs;
        if allowed == 0 {
            continue;
        }
        let fd = match open_rule_path(&rule.path, &planted) {
            Ok(fd) => fd,
            Err(source) if policy.enforce => {
                return Err(ConfineError::LandlockPath {
                    index,
                    path: rule.path.clone(),
                    source,
                })
            }
            Err(err) => {
                tracing::warn!(annotation = KEY, path = %rule.path, %err,
                    "Landlock best-effort: fs[{index}] path cannot be opened; rule skipped");
                continue;
            }
        };
        if !is_dir(&fd)? {
            // Directory-only rights make landlock_add_rule fail on a file;
            // bits sandboy does not know are passed through for the kernel
            // to judge.
            let unknown = !known_fs_rights(i32::MAX);
            allowed &= FS_FILE_RIGHTS | unknown;
            if allowed == 0 {
                tracing::debug!(path = %rule.path, "Landlock: no file right in rule for a non-directory");
                continue;
            }
        }
        let attr = PathBeneathAttr {
            allowed_access: allowed,
            parent_fd: fd.as_raw_fd(),
        };
        add_rule(&ruleset, RULE_PATH_BENEATH, &attr).map_err(|e| {
            ConfineError::kernel(
                format!(
                    "annotation {KEY} fs[{index}]: landlock_add_rule for {:?} (access {allowed:#x})",
                    rule.path
                ),
                e,
            )
        })?;
    }

    if let Some(net) = net {
        let mut ports: Vec<(u16, u64)> = Vec::new();
        for (list, access) in [
            (&net.connect, ACCESS_NET_CONNECT_TCP),
            (&net.bind, ACCESS_NET_BIND_TCP),
        ] {
            for &port in list {
                match ports.iter_mut().find(|(p, _)| *p == port) {
                    Some((_, a)) => *a |= access,
                    None => ports.push((port, access)),
                }
            }
        }
        for (port, access) in ports {
            let attr = NetPortAttr {
                allowed_access: access,
                port: u64::from(port),
            };
            add_rule(&ruleset, RULE_NET_PORT, &attr).map_err(|e| {
                ConfineError::kernel(
                    format!("annotation {KEY} net: landlock_add_rule for TCP port {port}"),
                    e,
                )
            })?;
        }
    }

    let restrict_flags = if abi >= LOG_FLAGS_ABI {
        RESTRICT_SELF_LOG_NEW_EXEC_ON
    } else {
        0
    };
    Ok(Some(PreparedLandlock {
        ruleset: Arc::new(ruleset),
        handled_fs: attr.handled_access_fs,
        restrict_flags,
        abi,
    }))
}

/// An `O_PATH` fd of `path` if it is the null character device (1:3)
/// itself: not a link to it (not followed), not another device or file.
fn null_device(path: &std::ffi::CStr) -> io::Result<OwnedFd> {
    // SAFETY: a valid NUL-terminated path; O_PATH opens no content,
    // O_NOFOLLOW opens a symlink itself (refused below).
    let fd = unsafe {
        libc::open(
            path.as_ptr(),
            libc::O_PATH | libc::O_NOFOLLOW | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: open returned a new fd owned here.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: zeroed is a valid stat (plain integers); fstat fills it
    // from an fd open for the call.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: see above.
    if unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } != 0 {
        return Err(io::Error::last_os_error());
    }
    if st.st_mode & libc::S_IFMT == libc::S_IFCHR && st.st_rdev == libc::makedev(1, 3) {
        Ok(fd)
    } else {
        Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{path:?} is not the null device"),
        ))
    }
}

/// A rule path's fd. Below a path where symlinks may have been planted
/// (`planted`: the container's write paths and host binds, other than
/// `/`), no symlink is followed: a
/// step that replaced `/work/tools` (a rule of `exec`) by a link to `/`
/// chose the grant of every later container on the same checkout (a red
/// team read the image's /root that way). Such a rule fails like a missing
/// path (refused under `enforce`, skipped under `best-effort`). Links above
/// every write path (the image's `/bin -> usr/bin`) are followed.
fn open_rule_path(path: &str, planted: &[&str]) -> io::Result<OwnedFd> {
    let below = |w: &str| {
        w != "/"
            && path
                .strip_prefix(w.trim_end_matches('/'))
                .is_some_and(|rest| rest.starts_with('/'))
    };
    let Some(top) = planted.iter().filter(|w| below(w)).min_by_key(|w| w.len()) else {
        return open_path(path);
    };
    let mut fd = open_path(top)?;
    for name in path[top.trim_end_matches('/').len()..]
        .split('/')
        .filter(|c| !c.is_empty() && *c != ".")
    {
        let c = CString::new(name).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
        // SAFETY: fd is open, c a valid NUL-terminated name; O_PATH opens
        // no file content, and O_NOFOLLOW opens a symlink itself.
        let next = unsafe {
            libc::openat(
                fd.as_raw_fd(),
                c.as_ptr(),
                libc::O_PATH | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            )
        };
        if next < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: next is a fresh descriptor nothing else owns.
        fd = unsafe { OwnedFd::from_raw_fd(next) };
        if file_type(&fd)? == libc::S_IFLNK {
            return Err(io::Error::other(format!(
                "{name:?} is a symlink below {top} (a write path or a host bind), where a container or an earlier step could have planted it; remove the link"
            )));
        }
    }
    Ok(fd)
}

/// Where the rule path `path` really is, opened as [`open_rule_path`]
/// opens it (no link followed below a `planted` path): what a grant of it
/// would cover. Callers that rewrite a policy before confinement (wrap's
/// terminal carve-out, its metadata guard) resolve through this, not
/// `canonicalize`: a step's `data -> /` below its write path once turned
/// a grant of `~/w/data` into grants of every top-level directory.
pub fn resolve_rule_path(path: &str, planted: &[&str]) -> io::Result<std::path::PathBuf> {
    let fd = open_rule_path(path, planted)?;
    std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd()))
}

fn open_path(path: &str) -> io::Result<OwnedFd> {
    let c = CString::new(path).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    // SAFETY: c is a valid NUL-terminated string; O_PATH opens no file
    // content. The returned fd is new and owned by us.
    let fd = unsafe { libc::open(c.as_ptr(), libc::O_PATH | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fd is a fresh descriptor nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// `S_IFMT` of an open fd.
fn file_type(fd: &OwnedFd) -> io::Result<libc::mode_t> {
    // SAFETY: an all-zero `stat` is a valid value of this plain C struct.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: fd is open; st is a live, writable struct of the right type.
    if unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(st.st_mode & libc::S_IFMT)
}

fn is_dir(fd: &OwnedFd) -> Result<bool, ConfineError> {
    let t = file_type(fd).map_err(|e| ConfineError::kernel("Landlock: fstat of a rule path", e))?;
    Ok(t == libc::S_IFDIR)
}

fn add_rule<T>(ruleset: &OwnedFd, rule_type: libc::c_int, attr: &T) -> io::Result<()> {
    // SAFETY: attr points to a live struct of the layout the kernel expects
    // for rule_type (both are repr(C) copies of the UAPI structs); the kernel
    // only reads it.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_landlock_add_rule,
            ruleset.as_raw_fd(),
            rule_type,
            attr as *const T,
            0u32,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_null_device_itself_is_the_null_device() {
        assert!(null_device(c"/dev/null").is_ok());
        let dir = std::env::temp_dir().join(format!("null-device-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let link = dir.join("null");
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink("/dev/null", &link).unwrap();
        let file = dir.join("file");
        std::fs::write(&file, "").unwrap();
        let c = |p: &std::path::Path| CString::new(p.to_str().unwrap()).unwrap();
        for refused in [c(std::path::Path::new("/dev/zero")), c(&link), c(&file)] {
            let e = null_device(&refused).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::InvalidData, "{refused:?}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn known_rights_by_abi() {
        assert_eq!(known_fs_rights(1), 0x1fff);
        assert_eq!(known_fs_rights(2), 0x3fff);
        assert_eq!(known_fs_rights(4), 0x7fff);
        assert_eq!(known_fs_rights(5), 0xffff);
        assert_eq!(known_fs_rights(0), 0);
    }

    #[test]
    fn names_for_messages() {
        assert_eq!(right_name(14), "truncate");
        assert_eq!(right_name(40), "raw access bit 1<<40");
        assert_eq!(required_abi(15), "5");
    }

    #[test]
    fn unknown_name_is_config_error() {
        let rs = decode(r#"{"fs":[{"path":"/","access":["reed"]}]}"#).unwrap();
        let err = rule_bits(&rs).unwrap_err();
        assert!(err.is_config());
        assert!(err.to_string().contains("fs[0]"), "{err}");
        let err = decode(r#"{"fs":[{"path":"/"}]}"#).unwrap_err();
        assert!(err.is_config());
    }

    #[test]
    fn off_prepares_nothing() {
        let rs =
            decode(r#"{"mode":"off","fs":[{"path":"/nonexistent","access":["read"]}]}"#).unwrap();
        assert!(prepare(&rs).unwrap().is_none());
    }

    #[test]
    fn attr_layouts_match_uapi() {
        assert_eq!(std::mem::size_of::<PathBeneathAttr>(), 12);
        assert_eq!(std::mem::size_of::<NetPortAttr>(), 16);
        assert_eq!(std::mem::size_of::<RulesetAttr>(), 24);
    }
}
