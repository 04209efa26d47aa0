//! The dynamic loader and libraries of the wrapped program.
//!
//! A dynamically linked program needs its ELF interpreter (`PT_INTERP`,
//! e.g. `/lib64/ld-linux-x86-64.so.2`) to be *executable* — the kernel opens
//! it like the program itself — and its libraries and `/etc/ld.so.cache` to
//! be *readable*: Landlock does not govern `mmap(PROT_EXEC)`, so a library
//! needs only the read right. On Debian `/bin` and `/lib64` are symlinks
//! into `/usr`, so `exec = ["/usr/bin"]` alone could not run `sh`.
//!
//! Choice: resolve rather than add a blanket `[fs] system = true`. For the
//! program being executed (following one `#!` line to its interpreter) the
//! interpreter named in its `PT_INTERP` is granted read+exec (only that
//! file, and only a file in a standard library directory: the program may
//! be a checkout's, and its header the attacker's). A script's `#!` interpreter itself is not granted: the line is
//! the script's, so a checkout's `./ci.sh` starting `#!/usr/bin/perl` ran
//! perl under `--exec .` (a red team); it must be in `[fs] exec`, or the
//! exec is refused (126). When the program is dynamic, or when an `[fs] exec`
//! entry may run a dynamic program (a directory, a script, a dynamic ELF;
//! not a static ELF file), the standard library directories (`/lib`,
//! `/lib64`, `/usr/lib`, `/usr/lib64`, `/usr/local/lib`, those that exist)
//! and `/etc/ld.so.cache` are granted *read* only — never exec, so nothing
//! under `/usr/lib` becomes runnable — and the architecture's standard
//! loader read+exec. Static programs outside any `exec` entry get nothing.
//! The loader being executable lets a step run `ld.so FILE` on a readable
//! file; that residual is the same for any policy that runs dynamic
//! programs (issue #14 point 4 closes it with noexec write paths).

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use sandboy_spec_gen::policy::Policy;

const LIB_DIRS: &[&str] = &["/lib", "/lib64", "/usr/lib", "/usr/lib64", "/usr/local/lib"];
const LD_CACHE: &str = "/etc/ld.so.cache";
#[cfg(target_arch = "x86_64")]
const ARCH_LOADER: &str = "/lib64/ld-linux-x86-64.so.2";
#[cfg(target_arch = "aarch64")]
const ARCH_LOADER: &str = "/lib/ld-linux-aarch64.so.1";
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
const ARCH_LOADER: &str = "/lib/ld-linux.so.2";
const PT_INTERP: u32 = 3;

/// Adds what `program` (a host path; `None` if not found) needs to load to
/// the policy's `read` and `exec` lists.
pub fn grant(policy: &mut Policy, program: Option<&Path>) {
    let mut interps: Vec<PathBuf> = program.map(interpreters).unwrap_or_default();
    let dynamic = !interps.is_empty();
    // What children may run is what `[fs] exec` lists: a directory or a
    // script may hold a dynamic program, a static ELF file (the wasm host
    // `adapt` runs) never needs the loader.
    if !dynamic && policy.exec.iter().all(|e| static_elf(Path::new(e))) {
        return;
    }
    if Path::new(ARCH_LOADER).exists() {
        interps.push(ARCH_LOADER.into());
    }
    let add = |list: &mut Vec<String>, p: &Path| {
        let Ok(real) = std::fs::canonicalize(p) else {
            return;
        };
        let s = real.display().to_string();
        if !list.contains(&s) {
            tracing::debug!(path = %s, "wrap: granting the loader's needs");
            list.push(s);
        }
    };
    for i in interps.iter().filter(|i| a_loader(i)) {
        add(&mut policy.exec, i);
    }
    for d in LIB_DIRS.iter().chain(&[LD_CACHE]) {
        add(&mut policy.read, Path::new(d));
    }
}

/// Whether `interp`, a `PT_INTERP` the program's file names, may be
/// granted: a regular file in a standard library directory. The program
/// is the step's (a checkout's decoy can name any path there, `/` once,
/// which granted the whole file system); a loader elsewhere is granted by
/// naming it in `[fs] exec`.
fn a_loader(interp: &Path) -> bool {
    let Ok(real) = std::fs::canonicalize(interp) else {
        return false;
    };
    let regular = std::fs::metadata(&real).is_ok_and(|m| m.is_file());
    let in_lib = LIB_DIRS
        .iter()
        .filter_map(|d| std::fs::canonicalize(d).ok())
        .any(|d| real.starts_with(d));
    if !(regular && in_lib) {
        tracing::warn!(interp = %interp.display(), "wrap: the program's ELF interpreter is not granted: it is not a file in a standard library directory (name it in [fs] exec to grant it)");
    }
    regular && in_lib
}

/// Whether `path` is an ELF file without a `PT_INTERP`: running it needs
/// no loader. Anything else (a directory, a script, a file it cannot read)
/// may run a dynamic program. An ELF file whose headers cannot be parsed
/// counts as static, so nothing is granted for it: its exec then fails
/// rather than widening.
fn static_elf(path: &Path) -> bool {
    matches!(elf(path), Some(None))
}

/// The `PT_INTERP` of `program`, or of its `#!` interpreter if it is a
/// script (one level, as the kernel's binfmt_script).
fn interpreters(program: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    match shebang(program) {
        Some(interp) => out.extend(elf_interp(&interp)),
        None => out.extend(elf_interp(program)),
    }
    out
}

/// The interpreter of a `#!` line, read byte for byte as the kernel's
/// `binfmt_script` does: only space, tab and NUL separate, so a name
/// holding a vertical tab is one name. Reading it as text (Unicode
/// whitespace) once told sandboy `./p` while the kernel ran
/// `./p\v/../../usr/bin/sh` (a red team's decoy whose `PT_INTERP` was `/`).
fn shebang(path: &Path) -> Option<PathBuf> {
    use std::os::unix::ffi::OsStrExt;
    let mut head = [0u8; 256];
    let n = File::open(path).ok()?.read(&mut head).ok()?;
    let line = head[..n].strip_prefix(b"#!")?;
    let line = line.split(|&b| b == b'\n').next()?;
    let sep = |b: &u8| matches!(b, b' ' | b'\t' | 0);
    let start = line.iter().position(|b| !sep(b))?;
    let rest = &line[start..];
    let name = &rest[..rest.iter().position(sep).unwrap_or(rest.len())];
    Some(PathBuf::from(std::ffi::OsStr::from_bytes(name)))
}

/// The interpreter path in an ELF file's `PT_INTERP` program header
/// (little-endian ELF32/ELF64); `None` for static or non-ELF files.
pub fn elf_interp(path: &Path) -> Option<PathBuf> {
    elf(path).flatten()
}

/// `None` when `path` is no ELF file (or cannot be read); else its
/// `PT_INTERP`, `None` when it has none or its headers cannot be parsed
/// (short, big-endian, odd program headers). One open and read for both
/// questions [`static_elf`] and [`elf_interp`] ask.
fn elf(path: &Path) -> Option<Option<PathBuf>> {
    let mut f = File::open(path).ok()?;
    let mut head = Vec::with_capacity(64);
    f.by_ref().take(64).read_to_end(&mut head).ok()?;
    if !head.starts_with(b"\x7fELF") {
        return None;
    }
    match <[u8; 64]>::try_from(head) {
        Ok(h) if h[5] == 1 => Some(interpreter(&mut f, &h)),
        _ => Some(None),
    }
}

/// The `PT_INTERP` named by the program headers of `f`, whose ELF header
/// (little-endian) is `h`.
fn interpreter(f: &mut File, h: &[u8; 64]) -> Option<PathBuf> {
    let u16_at = |b: &[u8], o: usize| u16::from_le_bytes([b[o], b[o + 1]]) as u64;
    let u32_at = |b: &[u8], o: usize| u32::from_le_bytes(b[o..o + 4].try_into().unwrap()) as u64;
    let u64_at = |b: &[u8], o: usize| u64::from_le_bytes(b[o..o + 8].try_into().unwrap());
    let elf64 = h[4] == 2;
    let (phoff, phentsize, phnum) = if elf64 {
        (u64_at(h, 0x20), u16_at(h, 0x36), u16_at(h, 0x38))
    } else {
        (u32_at(h, 0x1c), u16_at(h, 0x2a), u16_at(h, 0x2c))
    };
    if !(32..=64).contains(&phentsize) || phnum > 256 {
        return None;
    }
    let mut ph = vec![0u8; (phentsize * phnum) as usize];
    f.seek(SeekFrom::Start(phoff)).ok()?;
    f.read_exact(&mut ph).ok()?;
    let (offset, size) = ph
        .chunks(phentsize as usize)
        .find(|p| u32_at(p, 0) == PT_INTERP as u64)
        .map(|p| {
            if elf64 {
                (u64_at(p, 8), u64_at(p, 0x20))
            } else {
                (u32_at(p, 4), u32_at(p, 0x10))
            }
        })?;
    if size == 0 || size > 4096 {
        return None;
    }
    let mut name = vec![0u8; size as usize];
    f.seek(SeekFrom::Start(offset)).ok()?;
    f.read_exact(&mut name).ok()?;
    let end = name.iter().position(|&b| b == 0).unwrap_or(name.len());
    let s = std::str::from_utf8(&name[..end]).ok()?;
    Some(PathBuf::from(s))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_interpreter_of_a_dynamic_program() {
        let sh = std::fs::canonicalize("/bin/sh").unwrap();
        let interp = elf_interp(&sh).expect("/bin/sh is dynamic on Debian");
        assert!(interp.to_str().unwrap().contains("ld-linux"), "{interp:?}");
    }

    #[test]
    fn a_shebang_is_split_where_the_kernel_splits_it() {
        let dir = std::env::temp_dir().join(format!("sandboy-shebang-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("s");
        for (line, want) in [
            (
                &b"#!./p\x0b/../usr/bin/sh\n"[..],
                &b"./p\x0b/../usr/bin/sh"[..],
            ),
            (b"#! \t/usr/bin/env  python3\n", b"/usr/bin/env"),
            (b"#!/bin/sh\xc2\xa0-x\n", b"/bin/sh\xc2\xa0-x"),
        ] {
            std::fs::write(&f, line).unwrap();
            use std::os::unix::ffi::OsStrExt;
            assert_eq!(shebang(&f).unwrap().as_os_str().as_bytes(), want);
        }
        std::fs::write(&f, b"#! \n").unwrap();
        assert_eq!(shebang(&f), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn only_a_file_in_a_library_directory_is_a_loader() {
        let real = std::fs::canonicalize(ARCH_LOADER).unwrap();
        assert!(a_loader(&real));
        assert!(!a_loader(Path::new("/")));
        assert!(!a_loader(Path::new("/usr/lib")));
        assert!(!a_loader(Path::new("/etc/passwd")));
        assert!(!a_loader(Path::new("/usr/bin/sh")));
    }

    #[test]
    fn only_an_elf_file_without_interpreter_is_static() {
        assert!(!static_elf(Path::new("/bin/sh")), "dynamic on Debian");
        assert!(!static_elf(Path::new("/")));
        assert!(!static_elf(Path::new("/etc/passwd")));
        // This test binary: static-pie where `crt-static` is on
        // (.cargo/config.toml), dynamic elsewhere.
        let me = std::env::current_exe().unwrap();
        assert_eq!(static_elf(&me), cfg!(target_feature = "crt-static"));
    }

    #[test]
    fn static_or_non_elf_files_have_none() {
        assert_eq!(elf_interp(Path::new("/etc/passwd")), None);
        assert_eq!(elf_interp(Path::new("/nonexistent")), None);
    }
}
