//! Files a user names as input (a policy, a denial report, `--base`, a
//! bundle's config.json, a node policy): read only when they are regular
//! files, opened without blocking and read within a cap. A FIFO would
//! otherwise hang the reader forever and `/dev/zero` fill its memory
//! (a red team did both); both are refused at once, saying what the path is.

use std::fs::File;
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

/// The largest policy, config.json or `--base` read (a policy of 20,000
/// rules is about 1 MiB).
pub const TEXT_MAX: u64 = 16 << 20;
/// The largest denial report read: reports hold one line per distinct
/// refusal, so even a busy container's stays far below this.
pub const REPORT_MAX: u64 = 64 << 20;

/// Why an input was not read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// Not a regular file: what it is instead.
    #[error("it is {0}, not a regular file")]
    NotRegular(&'static str),
    /// Larger than the cap.
    #[error("it is larger than {} MiB", .0 >> 20)]
    TooLarge(u64),
    /// Text that is not UTF-8, from this line and column on (1-based).
    #[error("it is not UTF-8 text (the first bad byte is at line {line}, column {column})")]
    NotUtf8 { line: usize, column: usize },
}

/// Open `path` (`O_NONBLOCK`, so a FIFO does not wait for a writer; plus
/// `extra` open flags such as `O_NOFOLLOW`) and check it is a regular file.
pub fn open_regular(path: &Path, extra: i32) -> Result<File, ReadError> {
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC | extra)
        .open(path)?;
    let t = f.metadata()?.file_type();
    if t.is_file() {
        return Ok(f);
    }
    Err(ReadError::NotRegular(if t.is_fifo() {
        "a FIFO"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_dir() {
        "a directory"
    } else {
        "a special file"
    }))
}

/// The bytes of a regular file, at most `max` of them.
pub fn read_bytes(path: &Path, max: u64, extra: i32) -> Result<Vec<u8>, ReadError> {
    let f = open_regular(path, extra)?;
    let mut bytes = Vec::new();
    f.take(max + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max {
        return Err(ReadError::TooLarge(max));
    }
    Ok(bytes)
}

/// [`read_bytes`] as UTF-8 text.
pub fn read_text(path: &Path, max: u64) -> Result<String, ReadError> {
    String::from_utf8(read_bytes(path, max, 0)?).map_err(|e| {
        let good = &e.as_bytes()[..e.utf8_error().valid_up_to()];
        let line_start = good.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        ReadError::NotUtf8 {
            line: good.iter().filter(|&&b| b == b'\n').count() + 1,
            column: good.len() - line_start + 1,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn special_files_and_oversized_ones_are_refused_at_once() {
        let e = read_text(Path::new("/dev/zero"), TEXT_MAX).unwrap_err();
        assert_eq!(
            e.to_string(),
            "it is a character device, not a regular file"
        );
        let e = read_text(Path::new("/"), TEXT_MAX).unwrap_err();
        assert!(matches!(e, ReadError::NotRegular("a directory")), "{e}");
        let dir = std::env::temp_dir().join(format!("sandboy-input-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let fifo = dir.join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a NUL-terminated path; mkfifo only reads it.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let e = read_text(&fifo, TEXT_MAX).unwrap_err();
        assert!(matches!(e, ReadError::NotRegular("a FIFO")), "{e}");
        let big = dir.join("big");
        std::fs::write(&big, vec![b'a'; 11]).unwrap();
        assert!(matches!(read_text(&big, 10), Err(ReadError::TooLarge(10))));
        assert_eq!(read_text(&big, 11).unwrap(), "a".repeat(11));
        std::fs::write(&big, b"ok\nab\xffc").unwrap();
        let e = read_text(&big, 100).unwrap_err();
        assert!(
            matches!(e, ReadError::NotUtf8 { line: 2, column: 3 }),
            "{e}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
