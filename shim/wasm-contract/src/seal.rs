//! The key that seals an ordinary user's compile cache.
//!
//! Compiled code is native code the host loads. Root's cache lives in the
//! state root, which no container can write; an ordinary user's lives in
//! their runtime or home directory, which the same user's confined steps
//! may be granted (`write = ["~/.cache"]` is an ordinary grant for build
//! tools), and a red team's step rewrote an entry there, its CRC
//! recomputed, so that the next `adapt` ran the step's code under the real
//! component's digest. So those entries carry an HMAC-SHA-256 tag under a
//! per-user key the runtime keeps in the kernel's user keyring (out of
//! every confined step's reach: `keyctl`, `add_key` and `request_key` are
//! on the default deny list) and hands to the host in its environment
//! ([`ENV`]), never on a command line, which any user may read.

use crate::digest::{hex, sha256, unhex32};

/// The variable the runtime sets for `sandboy-wasm prepare` and `adapt`.
pub const ENV: &str = "SANDBOY_WASM_CACHE_KEY";

/// A 32-byte key; its `Debug` never shows it.
#[derive(Clone, PartialEq, Eq)]
pub struct CacheKey(pub [u8; 32]);

impl std::fmt::Debug for CacheKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CacheKey({})", self.id())
    }
}

impl CacheKey {
    /// The value of [`ENV`] that hands this key over.
    pub fn to_env(&self) -> String {
        hex(&self.0)
    }

    /// The key in this process's [`ENV`]: `Ok(None)` when it is unset,
    /// an error naming the variable when it is not 64 hex digits.
    pub fn from_env() -> Result<Option<CacheKey>, String> {
        match std::env::var_os(ENV) {
            None => Ok(None),
            Some(v) => v
                .to_str()
                .and_then(unhex32)
                .map(|k| Some(CacheKey(k)))
                .ok_or_else(|| format!("{ENV} is not 64 hex digits")),
        }
    }

    /// A name for the key that does not reveal it (16 hex digits of its
    /// digest): memo keys and logs tell keys apart with it.
    pub fn id(&self) -> String {
        hex(&sha256(&self.0)[..8])
    }
}

#[cfg(test)]
mod tests {
    use super::CacheKey;

    #[test]
    fn debug_and_id_do_not_show_the_key() {
        let k = CacheKey([0xab; 32]);
        let shown = format!("{k:?} {}", k.id());
        assert!(!shown.contains("abab"), "{shown}");
        assert_eq!(k.id().len(), 16);
        assert_eq!(k.to_env().len(), 64);
    }
}
