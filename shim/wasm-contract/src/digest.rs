//! SHA-256 and lower-case hex: the component digest in SARIF provenance,
//! `adapt --list`, and the compile cache's key.

use sha2::{Digest, Sha256};

/// Lower-case hex.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The 32 bytes that 64 hex digits (either case) spell, or `None`.
pub fn unhex32(hex: &str) -> Option<[u8; 32]> {
    if hex.len() != 64 || !hex.is_ascii() {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, b) in out.iter_mut().enumerate() {
        *b = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(out)
}

/// SHA-256 of `bytes`.
pub fn sha256(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

/// SHA-256 of what `reader` yields, read in blocks, refusing more than
/// `limit` bytes (`None` then, or on a read error): a file can be hashed
/// without being held in memory, and an oversized one costs `limit` at
/// most.
pub fn sha256_reader(mut reader: impl std::io::Read, limit: u64) -> Option<[u8; 32]> {
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 64 * 1024];
    let mut total = 0u64;
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) => return Some(hasher.finalize().into()),
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => return None,
        };
        total += n as u64;
        if total > limit {
            return None;
        }
        hasher.update(&buf[..n]);
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn streamed_digest_is_the_same_and_bounded() {
        let data = vec![7u8; 200_000];
        assert_eq!(
            super::sha256_reader(&data[..], 200_000),
            Some(super::sha256(&data))
        );
        assert_eq!(super::sha256_reader(&data[..], 199_999), None);
    }

    #[test]
    fn hex_round_trips_and_refuses_what_is_not_64_digits() {
        let b = super::sha256(b"x");
        assert_eq!(super::unhex32(&super::hex(&b)), Some(b));
        assert_eq!(super::unhex32(&super::hex(&b).to_uppercase()), Some(b));
        assert_eq!(super::unhex32(&super::hex(&b)[..62]), None);
        assert_eq!(
            super::unhex32(&format!("{}zz", &super::hex(&b)[..62])),
            None
        );
        assert_eq!(super::unhex32(&format!("{}é", &super::hex(&b)[..62])), None);
    }

    #[test]
    fn empty_digest() {
        assert_eq!(
            super::hex(&super::sha256(b"")),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }
}
