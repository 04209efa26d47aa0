//! CVE-2019-5736: a process inside a container must never reach the runtime
//! binary through `/proc/<runtime pid>/exe` and overwrite it on the host.
//!
//! Commands that put a process into a container re-exec themselves from a
//! copy the container cannot write back to. The fast way (runc ≥ 1.2 does the
//! same) is zero-copy: a detached, read-only overlayfs whose only layers are
//! the binary's directory and an empty directory. Overlayfs with no upper
//! layer cannot be written through and, unlike a read-only bind mount, cannot
//! be remounted writable; being detached, it is in no mount table at all.
//! When that is not possible (no overlayfs, no `fsopen`, not privileged) the
//! binary is copied into a sealed memfd (`pentacle`), which costs a copy of
//! the whole binary per command.

use std::ffi::{CStr, CString};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

const OVERLAYFS_SUPER_MAGIC: libc::c_long = 0x794c_7630;
const FSOPEN_CLOEXEC: libc::c_uint = 1;
const FSCONFIG_SET_STRING: libc::c_uint = 1;
const FSCONFIG_CMD_CREATE: libc::c_uint = 6;
const FSMOUNT_CLOEXEC: libc::c_uint = 1;
const MOUNT_ATTR_RDONLY: libc::c_uint = 0x1;
const MOUNT_ATTR_NOSUID: libc::c_uint = 0x2;
const MOUNT_ATTR_NODEV: libc::c_uint = 0x4;

/// Make sure this process runs from a protected copy of its binary: return
/// at once if it already does, otherwise re-exec (this only returns on
/// failure). `empty_dir` is where the empty overlay layer may be created.
pub fn ensure(empty_dir: &Path) -> Result<(), String> {
    remember();
    // Set for the re-exec only: should the overlay copy not look protected
    // after all, fall back to the memfd instead of re-executing forever.
    let attempted = std::env::var_os(REEXEC_MARK).is_some();
    if attempted {
        std::env::remove_var(REEXEC_MARK);
    }
    if running_protected() {
        return Ok(());
    }
    if !attempted {
        let exe = std::fs::read_link("/proc/self/exe").map_err(|e| e.to_string());
        if let Ok(exe) = exe.and_then(|p| overlay_file(&p, empty_dir)) {
            // Only returns if the exec failed; then the memfd copy is tried.
            let _ = exec_fd(&exe);
        }
    }
    pentacle::ensure_sealed().map_err(|e| e.to_string()).or_else(|e| {
        let exe = std::fs::read_link("/proc/self/exe").map_err(|e| e.to_string())?;
        if unwritable_for_containers(&exe) {
            tracing::debug!(error = %e, path = %exe.display(), "no sealed copy of the binary; it runs in place: this user cannot write it, so neither can its containers");
            return Ok(());
        }
        Err(e)
    })
}

/// Whether the containers of this (non-root) caller cannot write `path`:
/// they are at most the caller, who may not write it either. Then the
/// binary needs no copy: an unprivileged caller without an overlay of its
/// own has only the memfd, which a host with `vm.memfd_noexec = 2` does
/// not let run (every rootless run failed there).
fn unwritable_for_containers(path: &Path) -> bool {
    !nix::unistd::geteuid().is_root()
        && matches!(
            nix::unistd::access(path, nix::unistd::AccessFlags::W_OK),
            Err(nix::errno::Errno::EACCES | nix::errno::Errno::EROFS | nix::errno::Errno::EPERM)
        )
}

const REEXEC_MARK: &str = "_SANDBOY_OVERLAY_REEXEC";

/// The empty overlay layer's directory under the state root.
pub const EMPTY_DIR: &str = ".exe-lower";

/// Where the binary was before any protected re-exec (whose
/// `/proc/self/exe` names a detached mount or a memfd): the directory its
/// sibling binaries are found in (the wasm host, adapters' install layout).
pub const EXE_ENV: &str = "_SANDBOY_EXE";

/// Records where this binary is, for [`original`]: set by an unprotected
/// process only (a value inherited from elsewhere is overwritten), kept by
/// its protected re-exec.
pub fn remember() {
    if running_protected() {
        return;
    }
    if let Ok(exe) = std::env::current_exe() {
        std::env::set_var(EXE_ENV, exe);
    }
}

/// The binary's path as the caller ran it (see [`remember`]).
pub fn original() -> Option<PathBuf> {
    std::env::var_os(EXE_ENV)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::current_exe().ok())
}

/// An fd of the binary `name` next to this one, protected the same way as
/// this binary: seen through a detached read-only overlay of their
/// directory, or else copied into a sealed memfd. `O_PATH` (overlay) or
/// read-only (memfd); executable with `execveat(fd, "", …, AT_EMPTY_PATH)`.
pub fn sibling(name: &str, empty_dir: &Path) -> Result<OwnedFd, String> {
    let exe = original().ok_or("cannot tell where the sandboy binary is")?;
    let path = exe
        .parent()
        .ok_or_else(|| format!("{}: no directory", exe.display()))?
        .join(name);
    match overlay_file(&path, empty_dir) {
        Ok(fd) => Ok(fd),
        Err(e) => {
            tracing::debug!(error = %e, path = %path.display(), "no overlay for the binary; copying it into a sealed memfd");
            let mut file =
                std::fs::File::open(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            match pentacle::SealOptions::new()
                .close_on_exec(true)
                .executable(true)
                .copy_and_seal(&mut file)
            {
                Ok(sealed) => Ok(OwnedFd::from(sealed)),
                // As for the runtime itself (see `ensure`).
                Err(_) if unwritable_for_containers(&path) => Ok(OwnedFd::from(file)),
                Err(e) => Err(format!("{}: sealed copy: {e}", path.display())),
            }
        }
    }
}

/// Running from the read-only overlay, or from a sealed memfd.
fn running_protected() -> bool {
    if pentacle::is_sealed() {
        return true;
    }
    let path = c"/proc/self/exe";
    // SAFETY: all-zero is a valid value of these plain-data structs.
    let (mut fs, mut vfs): (libc::statfs, libc::statvfs) = unsafe { std::mem::zeroed() };
    // SAFETY: `path` is NUL-terminated and the out buffers are valid for
    // writes of their own type.
    let ok = unsafe {
        libc::statfs(path.as_ptr(), &mut fs) == 0 && libc::statvfs(path.as_ptr(), &mut vfs) == 0
    };
    // A writable overlay (e.g. a container's root) is not protection.
    ok && fs.f_type as libc::c_long == OVERLAYFS_SUPER_MAGIC && (vfs.f_flag & libc::ST_RDONLY) != 0
}

/// An `O_PATH` fd of the binary `exe` seen through a fresh detached,
/// read-only, lower-only overlayfs of its directory.
fn overlay_file(exe: &Path, empty_dir: &Path) -> Result<OwnedFd, String> {
    let (Some(dir), Some(name)) = (exe.parent(), exe.file_name()) else {
        return Err(format!("{}: no directory", exe.display()));
    };
    // Overlayfs only runs lower-only (no writes possible) with two lower
    // layers; the binary's directory is on top so nothing can shadow it.
    std::fs::create_dir_all(empty_dir).map_err(|e| e.to_string())?;
    let lower = format!(
        "{}:{}",
        escape_lowerdir(dir.as_os_str().as_bytes()),
        escape_lowerdir(empty_dir.as_os_str().as_bytes())
    );

    // SAFETY: fsopen takes a NUL-terminated fs name and flags; the returned
    // fd is owned by us from here on.
    let ctx =
        check(unsafe { libc::syscall(libc::SYS_fsopen, c"overlay".as_ptr(), FSOPEN_CLOEXEC) })?;
    // SAFETY: fd returned by a successful fsopen, not owned elsewhere.
    let ctx = unsafe { OwnedFd::from_raw_fd(ctx) };
    fsconfig_string(&ctx, c"lowerdir", &lower)?;
    // Opportunistic, as in runc: silences xino warnings across filesystems.
    let _ = fsconfig_string(&ctx, c"xino", "off");
    // SAFETY: FSCONFIG_CMD_CREATE takes no key/value; ctx is a valid fs context.
    check(unsafe {
        libc::syscall(
            libc::SYS_fsconfig,
            ctx.as_raw_fd(),
            FSCONFIG_CMD_CREATE,
            std::ptr::null::<libc::c_char>(),
            std::ptr::null::<libc::c_void>(),
            0,
        )
    })?;
    // SAFETY: fsmount on a created context; the mount fd is owned below.
    let mnt = check(unsafe {
        libc::syscall(
            libc::SYS_fsmount,
            ctx.as_raw_fd(),
            FSMOUNT_CLOEXEC,
            MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
        )
    })?;
    // SAFETY: fd returned by a successful fsmount, not owned elsewhere.
    let mnt = unsafe { OwnedFd::from_raw_fd(mnt) };
    let name = CString::new(name.as_bytes()).map_err(|e| e.to_string())?;
    // SAFETY: openat on a valid directory fd with a NUL-terminated name.
    let fd = check(unsafe {
        libc::openat(
            mnt.as_raw_fd(),
            name.as_ptr(),
            libc::O_PATH | libc::O_NOFOLLOW | libc::O_CLOEXEC,
        ) as libc::c_long
    })?;
    // SAFETY: fd returned by a successful openat, not owned elsewhere. The
    // detached mount lives on as long as this fd (and later the exec) does.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn fsconfig_string(ctx: &OwnedFd, key: &CStr, value: &str) -> Result<(), String> {
    let value = CString::new(value).map_err(|e| e.to_string())?;
    // SAFETY: key and value are NUL-terminated and outlive the call.
    check(unsafe {
        libc::syscall(
            libc::SYS_fsconfig,
            ctx.as_raw_fd(),
            FSCONFIG_SET_STRING,
            key.as_ptr(),
            value.as_ptr(),
            0,
        )
    })
    .map(drop)
}

/// `execveat(fd, "", argv, environ, AT_EMPTY_PATH)` with this process's own
/// argv and environment. Returns only on failure.
fn exec_fd(fd: &OwnedFd) -> Result<(), String> {
    let args: Vec<CString> = std::env::args_os()
        .map(|a| CString::new(a.as_bytes()))
        .collect::<Result<_, _>>()
        .map_err(|e| e.to_string())?;
    let env: Vec<CString> = std::env::vars_os()
        .map(|(k, v)| CString::new([k.as_bytes(), b"=", v.as_bytes()].concat()))
        .chain(std::iter::once(CString::new(format!("{REEXEC_MARK}=1"))))
        .collect::<Result<_, _>>()
        .map_err(|e| e.to_string())?;
    let argv: Vec<*const libc::c_char> = args
        .iter()
        .map(|a| a.as_ptr())
        .chain(std::iter::once(std::ptr::null()))
        .collect();
    let envp: Vec<*const libc::c_char> = env
        .iter()
        .map(|e| e.as_ptr())
        .chain(std::iter::once(std::ptr::null()))
        .collect();
    // SAFETY: argv and envp are NULL-terminated arrays of NUL-terminated
    // strings that outlive the call; on success the call does not return.
    check(unsafe {
        libc::syscall(
            libc::SYS_execveat,
            fd.as_raw_fd(),
            c"".as_ptr(),
            argv.as_ptr(),
            envp.as_ptr(),
            libc::AT_EMPTY_PATH,
        )
    })
    .map(drop)
}

/// Overlayfs splits `lowerdir` on `:` and unescapes `\`.
fn escape_lowerdir(path: &[u8]) -> String {
    String::from_utf8_lossy(path)
        .replace('\\', "\\\\")
        .replace(':', "\\:")
}

fn check(rc: libc::c_long) -> Result<RawFd, String> {
    if rc < 0 {
        Err(std::io::Error::last_os_error().to_string())
    } else {
        Ok(rc as RawFd)
    }
}

#[cfg(test)]
mod tests {
    use super::escape_lowerdir;

    #[test]
    fn lowerdir_escapes_separators() {
        assert_eq!(escape_lowerdir(b"/a:b\\c"), "/a\\:b\\\\c");
    }
}
