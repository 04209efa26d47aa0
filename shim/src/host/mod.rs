//! Protections of the host against the runtime's own containers that are not
//! about one container: the sealed copy of the runtime binary
//! (CVE-2019-5736), the files written for the caller after a container
//! ran, which never follow a link it planted, and the opening of files a
//! container (or its owner) controls, which never blocks; and the
//! image's NSS modules, which never load into the runtime's clones; and
//! no handle on the host's procfs inherited by a container's processes.

/// The writer that never follows a planted link (spec-gen's, shared).
pub use sandboy_spec_gen::output;
pub mod nss;
pub mod procfs;
pub mod sealed_exe;

use std::fs::File;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// `path` open for reading when it is a regular file; `InvalidInput`
/// ("not a regular file") otherwise. The open itself never blocks: a FIFO
/// or a device planted where a payload or an input was expected once hung
/// root's `create` past every deadline in a blocking `open(2)`.
pub fn open_regular(path: &Path) -> std::io::Result<File> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)?;
    if !file.metadata()?.is_file() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "not a regular file",
        ));
    }
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::open_regular;

    #[test]
    fn a_fifo_is_refused_at_once_and_a_file_opens() {
        let dir = std::env::temp_dir().join(format!("sandboy-open-regular-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let fifo = dir.join("p");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        let e = open_regular(&fifo).unwrap_err();
        assert_eq!(e.to_string(), "not a regular file");
        let file = dir.join("f");
        std::fs::write(&file, b"x").unwrap();
        assert!(open_regular(&file).is_ok());
        assert!(open_regular(&dir).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
