//! The key sealing an ordinary user's compile cache
//! (`sandboy_wasm_contract::seal`), kept in the kernel's user keyring: it
//! lives as long as the user's keyring (until reboot), needs no file a
//! confined step could be granted, and no confined step can ask for it
//! (`keyctl`, `add_key` and `request_key` are on the default deny list).
//! A lost key only costs a recompile: entries sealed with the old one are
//! refused and rewritten.

use std::ffi::CStr;
use std::io;

use sandboy_wasm_contract::seal::CacheKey;

const KEY_TYPE: &CStr = c"user";
const DESCRIPTION: &CStr = c"sandboy:wasm-cache";

// <linux/keyctl.h>
const KEY_SPEC_USER_KEYRING: libc::c_long = -4;
const KEYCTL_SEARCH: libc::c_long = 10;
const KEYCTL_READ: libc::c_long = 11;

/// The user's key, made (32 random bytes) when the keyring has none.
pub fn cache_key() -> io::Result<CacheKey> {
    match search().and_then(read) {
        Err(e) if e.raw_os_error() == Some(libc::ENOKEY) => add(),
        other => other,
    }
}

/// The key's serial in the user keyring.
fn search() -> io::Result<libc::c_long> {
    // SAFETY: keyctl(KEYCTL_SEARCH) reads two NUL-terminated strings that
    // outlive the call and writes nothing into this process.
    let serial = unsafe {
        libc::syscall(
            libc::SYS_keyctl,
            KEYCTL_SEARCH,
            KEY_SPEC_USER_KEYRING,
            KEY_TYPE.as_ptr(),
            DESCRIPTION.as_ptr(),
            0 as libc::c_long,
        )
    };
    if serial < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(serial)
}

fn read(serial: libc::c_long) -> io::Result<CacheKey> {
    let mut key = [0u8; 32];
    // SAFETY: keyctl(KEYCTL_READ) writes at most `key.len()` bytes into
    // `key`, which is valid for that many bytes for the whole call.
    let n = unsafe {
        libc::syscall(
            libc::SYS_keyctl,
            KEYCTL_READ,
            serial,
            key.as_mut_ptr(),
            key.len(),
        )
    };
    match n {
        n if n < 0 => Err(io::Error::last_os_error()),
        32 => Ok(CacheKey(key)),
        // Not ours (made by hand, or by another program): replaced.
        _ => Err(io::Error::from_raw_os_error(libc::ENOKEY)),
    }
}

/// A new random key in the user keyring (replacing one of the wrong size).
/// Two first runs racing each add one; the later wins, and the entries the
/// other sealed are refused and rewritten once.
fn add() -> io::Result<CacheKey> {
    let mut key = [0u8; 32];
    rustix::rand::getrandom(&mut key, rustix::rand::GetRandomFlags::empty())
        .map_err(io::Error::from)
        .and_then(|n| match n {
            32 => Ok(()),
            _ => Err(io::Error::other("getrandom: short read")),
        })?;
    // SAFETY: add_key reads two NUL-terminated strings and `key.len()`
    // bytes of `key`, all valid for the whole call, and writes nothing
    // into this process.
    let serial = unsafe {
        libc::syscall(
            libc::SYS_add_key,
            KEY_TYPE.as_ptr(),
            DESCRIPTION.as_ptr(),
            key.as_ptr(),
            key.len(),
            KEY_SPEC_USER_KEYRING,
        )
    };
    if serial < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(CacheKey(key))
}

#[cfg(test)]
mod tests {
    /// The key is made once and then found: two asks give the same key
    /// (this process's user keyring). Where an outer seccomp profile
    /// refuses keyctl, the refusal is the kernel's, which `user_cache`
    /// answers with no sealed cache.
    #[test]
    fn the_key_is_made_once_and_then_found() {
        match super::cache_key() {
            Ok(first) => assert_eq!(super::cache_key().unwrap(), first),
            Err(e) => assert!(
                matches!(
                    e.raw_os_error(),
                    Some(libc::EPERM | libc::ENOSYS | libc::EACCES)
                ),
                "{e}"
            ),
        }
    }
}
