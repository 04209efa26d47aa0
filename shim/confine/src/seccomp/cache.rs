//! Compiled profiles, serialised and cached on disk.
//!
//! An entry is `<dir>/<key>.bpf`, the key being the sha256 of the profile's
//! canonical JSON (object keys sorted), the architecture, sandboy's version
//! and the format version, so that a new compiler never reads an old
//! compiler's programs. Entries are written atomically (a private temporary
//! file, mode 0600, renamed into place) and checked on every load; a bad or
//! unreadable entry is ignored and rewritten. The cache only saves time: any
//! failure to use it falls back to compiling.

use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use oci_spec::runtime::LinuxSeccomp;
use sandboy_spec_gen::syscalls::Arch;
use seccompiler::sock_filter;
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::{bpf, compile_for, CompiledSeccomp};
use crate::ConfineError;

/// Bumped whenever the compiler's output or this format changes.
const FORMAT: &str = "sandboy-seccomp-cache-2";
const MAGIC: &[u8; 8] = b"SBOYBPF1";
/// magic, sha256 of the rest, flags (u64), instruction count (u32), zero (u32).
const HEADER: usize = 8 + 32 + 8 + 4 + 4;
/// The flags a program may carry (what `super::flags` produces).
const KNOWN_FLAGS: libc::c_ulong = libc::SECCOMP_FILTER_FLAG_TSYNC
    | libc::SECCOMP_FILTER_FLAG_LOG
    | libc::SECCOMP_FILTER_FLAG_SPEC_ALLOW;

fn bad(message: impl Into<String>) -> ConfineError {
    ConfineError::SeccompCache {
        message: message.into(),
    }
}

impl CompiledSeccomp {
    /// The program and its flags as bytes (little-endian, a multiple of 8
    /// long, with a sha256 checksum); [`CompiledSeccomp::from_bytes`] reads
    /// them back.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut body = Vec::with_capacity(16 + 8 * self.program.len());
        #[allow(clippy::useless_conversion)] // c_ulong is u32 on 32-bit targets
        let flags = u64::from(self.flags);
        body.extend_from_slice(&flags.to_le_bytes());
        body.extend_from_slice(&(self.program.len() as u32).to_le_bytes());
        body.extend_from_slice(&0u32.to_le_bytes());
        for i in &self.program {
            body.extend_from_slice(&i.code.to_le_bytes());
            body.extend_from_slice(&[i.jt, i.jf]);
            body.extend_from_slice(&i.k.to_le_bytes());
        }
        let mut out = Vec::with_capacity(40 + body.len());
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&Sha256::digest(&body));
        out.extend_from_slice(&body);
        out
    }

    /// Reads [`CompiledSeccomp::to_bytes`] back, refusing anything that is
    /// not exactly such bytes: wrong length or checksum, flags sandboy does
    /// not set, an instruction outside the set sandboy emits, or a jump out
    /// of the program.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, ConfineError> {
        if bytes.len() < HEADER || bytes.len() & 7 != 0 {
            return Err(bad(format!("{} bytes", bytes.len())));
        }
        let (magic, rest) = bytes.split_at(8);
        let (sum, body) = rest.split_at(32);
        if magic != MAGIC {
            return Err(bad("not a sandboy seccomp program"));
        }
        if Sha256::digest(body).as_slice() != sum {
            return Err(bad("checksum mismatch"));
        }
        let word = |at: usize, n: usize| &body[at..at + n];
        let flags = u64::from_le_bytes(word(0, 8).try_into().expect("8 bytes"));
        let count = u32::from_le_bytes(word(8, 4).try_into().expect("4 bytes")) as usize;
        let insns = &body[16..];
        if insns.len() != 8 * count || word(12, 4) != [0; 4] {
            return Err(bad(format!(
                "{count} instructions in {} bytes",
                insns.len()
            )));
        }
        let flags = libc::c_ulong::try_from(flags)
            .ok()
            .filter(|f| f & !KNOWN_FLAGS == 0)
            .ok_or_else(|| bad(format!("flags {flags:#x}")))?;
        let program: Vec<sock_filter> = insns
            .chunks_exact(8)
            .map(|c| sock_filter {
                code: u16::from_le_bytes([c[0], c[1]]),
                jt: c[2],
                jf: c[3],
                k: u32::from_le_bytes([c[4], c[5], c[6], c[7]]),
            })
            .collect();
        bpf::well_formed(&program).map_err(bad)?;
        Ok(CompiledSeccomp::new(program, flags))
    }
}

/// `v` with every object's keys sorted, as compact JSON text.
fn canonical(v: &Value) -> String {
    match v {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let fields: Vec<String> = keys
                .into_iter()
                .map(|k| format!("{}:{}", Value::String(k.clone()), canonical(&map[k])))
                .collect();
            format!("{{{}}}", fields.join(","))
        }
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(canonical).collect();
            format!("[{}]", items.join(","))
        }
        other => other.to_string(),
    }
}

/// The cache key of `seccomp` compiled for `arch` (hex sha256).
pub fn cache_key(seccomp: &LinuxSeccomp, arch: Arch) -> String {
    let json = serde_json::to_value(seccomp).map_or_else(|e| e.to_string(), |v| canonical(&v));
    let mut h = Sha256::new();
    for part in [FORMAT, env!("CARGO_PKG_VERSION"), arch.name(), &json] {
        h.update((part.len() as u64).to_le_bytes());
        h.update(part.as_bytes());
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// [`super::compile`] through the cache in `cache_dir` (created, mode
/// 0700, if missing): a valid entry is returned as is, otherwise the
/// profile is compiled and the entry (re)written.
pub fn compile_cached(
    seccomp: &LinuxSeccomp,
    cache_dir: &Path,
) -> Result<CompiledSeccomp, ConfineError> {
    let arch = super::native_arch()?;
    compile_cached_for(seccomp, arch, cache_dir)
}

/// [`compile_cached`] for `arch`.
pub fn compile_cached_for(
    seccomp: &LinuxSeccomp,
    arch: Arch,
    cache_dir: &Path,
) -> Result<CompiledSeccomp, ConfineError> {
    let path = cache_dir.join(format!("{}.bpf", cache_key(seccomp, arch)));
    match fs::read(&path).map(|b| CompiledSeccomp::from_bytes(&b)) {
        Ok(Ok(compiled)) => return Ok(compiled),
        Ok(Err(e)) => tracing::debug!(path = %path.display(), "seccomp cache: {e}; recompiling"),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => tracing::debug!(path = %path.display(), "seccomp cache: {e}; recompiling"),
    }
    let compiled = compile_for(seccomp, arch)?;
    if let Err(e) = store(cache_dir, &path, &compiled.to_bytes()) {
        tracing::debug!(path = %path.display(), "seccomp cache: cannot write: {e}");
    }
    Ok(compiled)
}

/// Writes `bytes` to `path` atomically: a new private file in the same
/// directory, renamed over `path`.
fn store(dir: &Path, path: &Path, bytes: &[u8]) -> io::Result<()> {
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    let tmp = tmp_path(path);
    let result = (|| {
        let mut f = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_CLOEXEC | libc::O_NOFOLLOW)
            .open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

fn tmp_path(path: &Path) -> PathBuf {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".tmp.{}.{nanos}", std::process::id()));
    path.with_file_name(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profile() -> LinuxSeccomp {
        serde_json::from_str(
            r#"{"defaultAction":"SCMP_ACT_ERRNO","flags":["SECCOMP_FILTER_FLAG_LOG"],"syscalls":[
                {"names":["read","write"],"action":"SCMP_ACT_ALLOW"},
                {"names":["dup"],"action":"SCMP_ACT_ALLOW","args":[{"index":0,"value":3,"op":"SCMP_CMP_LT"}]}]}"#,
        )
        .unwrap()
    }

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "sandboy-seccomp-cache-{}-{name}",
            std::process::id()
        ));
        let _ = fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn bytes_round_trip_and_tampering_is_refused() {
        let c = compile_for(&profile(), Arch::X86_64).unwrap();
        let bytes = c.to_bytes();
        assert_eq!(bytes.len() % 8, 0);
        assert_eq!(CompiledSeccomp::from_bytes(&bytes).unwrap(), c);
        for at in [0, 20, 45, bytes.len() - 1] {
            let mut b = bytes.clone();
            b[at] ^= 1;
            assert!(CompiledSeccomp::from_bytes(&b).is_err(), "byte {at}");
        }
        assert!(CompiledSeccomp::from_bytes(&bytes[..bytes.len() - 8]).is_err());
    }

    #[test]
    fn checksummed_but_foreign_programs_are_refused() {
        let c = compile_for(&profile(), Arch::X86_64).unwrap();
        let mut alien = c.clone();
        alien.program[1].code = (libc::BPF_LDX | libc::BPF_MEM) as u16;
        assert!(CompiledSeccomp::from_bytes(&alien.to_bytes()).is_err());
        let mut far = c;
        far.program[1].jt = 250;
        assert!(CompiledSeccomp::from_bytes(&far.to_bytes()).is_err());
    }

    #[test]
    fn cache_hit_and_corrupted_entry_rewritten() {
        let dir = scratch("hit");
        let p = profile();
        let first = compile_cached_for(&p, Arch::X86_64, &dir).unwrap();
        assert_eq!(first, compile_for(&p, Arch::X86_64).unwrap());
        let path = dir.join(format!("{}.bpf", cache_key(&p, Arch::X86_64)));
        let meta = fs::metadata(&path).unwrap();
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(meta.permissions().mode() & 0o777, 0o600);
        assert_eq!(compile_cached_for(&p, Arch::X86_64, &dir).unwrap(), first);

        let good = fs::read(&path).unwrap();
        let mut corrupt = good.clone();
        let last = corrupt.len() - 3;
        corrupt[last] ^= 0x40;
        fs::write(&path, &corrupt).unwrap();
        assert_eq!(compile_cached_for(&p, Arch::X86_64, &dir).unwrap(), first);
        assert_eq!(fs::read(&path).unwrap(), good, "entry not rewritten");
        // Only the entry is left: no temporary files.
        assert_eq!(fs::read_dir(&dir).unwrap().count(), 1);
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn key_depends_on_profile_and_arch_not_key_order() {
        let p = profile();
        let same: LinuxSeccomp = serde_json::from_str(
            r#"{"syscalls":[
                {"action":"SCMP_ACT_ALLOW","names":["read","write"]},
                {"args":[{"op":"SCMP_CMP_LT","index":0,"value":3}],"names":["dup"],"action":"SCMP_ACT_ALLOW"}],
                "flags":["SECCOMP_FILTER_FLAG_LOG"],"defaultAction":"SCMP_ACT_ERRNO"}"#,
        )
        .unwrap();
        assert_eq!(cache_key(&p, Arch::X86_64), cache_key(&same, Arch::X86_64));
        assert_ne!(cache_key(&p, Arch::X86_64), cache_key(&p, Arch::Aarch64));
        let mut other = p.clone();
        other.set_default_errno_ret(Some(38));
        assert_ne!(cache_key(&p, Arch::X86_64), cache_key(&other, Arch::X86_64));
    }
}
