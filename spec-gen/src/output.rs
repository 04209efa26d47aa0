//! Files written for a caller into places others may write too (the
//! denial report of `--report`, a learned policy, a pid file; spec-gen's
//! config.json, ignore files and suggested policy): written to a fresh
//! temporary name beside the target (`O_CREAT|O_EXCL|O_NOFOLLOW`) and
//! renamed over it, so a symlink planted at the target's name is replaced,
//! never written through. A red team's container replaced `/work/r.jsonl`
//! in its rw bind with a link to a root shell script, and root's report
//! line (its `comm` the container's choice) became that script; another
//! planted one in a bundle directory turned root's `ignore-files` into a
//! shell script of that user's lines.

use std::ffi::{OsStr, OsString};
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use rustix::fs::{self as rfs, Mode, OFlags};

/// Write `bytes` to `path` as a new file of mode `mode` (see the module).
pub fn replace(path: &Path, bytes: &[u8], mode: u32) -> std::io::Result<()> {
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let name = path
        .file_name()
        .ok_or_else(|| std::io::Error::other("names no file"))?;
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let dir = rfs::open(
        parent,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    let mut tmp = OsString::from(".");
    tmp.push(name);
    tmp.push(format!(
        ".sandboy-{}-{}",
        std::process::id(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    ));
    let tmp: &OsStr = &tmp;
    let fd = rfs::openat(
        &dir,
        tmp.as_bytes(),
        OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::from_raw_mode(mode),
    )?;
    let written = (|| {
        let mut file = std::fs::File::from(fd);
        file.write_all(bytes)?;
        rfs::fchmod(&file, Mode::from_raw_mode(mode))?;
        rfs::renameat(&dir, tmp.as_bytes(), &dir, name.as_bytes())?;
        Ok(())
    })();
    if written.is_err() {
        let _ = rfs::unlinkat(&dir, tmp.as_bytes(), rfs::AtFlags::empty());
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_planted_symlink_is_replaced_not_followed() {
        let dir = std::env::temp_dir().join(format!("sandboy-output-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let victim = dir.join("victim");
        std::fs::write(&victim, "keep").unwrap();
        let out = dir.join("report.jsonl");
        std::os::unix::fs::symlink(&victim, &out).unwrap();
        replace(&out, b"line\n", 0o600).unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
        assert!(!std::fs::symlink_metadata(&out)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(std::fs::read_to_string(&out).unwrap(), "line\n");
        assert_eq!(
            std::fs::read_dir(&dir).unwrap().count(),
            2,
            "a temporary file left"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
