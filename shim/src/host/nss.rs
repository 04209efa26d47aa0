//! The image's NSS modules never load into the runtime's clones.
//!
//! libcontainer's init and exec'd processes are clones of this process (no
//! exec in between), and when the spec sets no `HOME` they look the user up
//! with getpwuid(3): after `pivot_root`, before sandboy's executor applies
//! Landlock and seccomp. glibc then reads the *image's*
//! `/etc/nsswitch.conf` and `dlopen`s the modules it names from the image:
//! an image with `passwd: evil` and a `libnss_evil.so.2` ran its
//! constructor in the container's init, unconfined (found in stop 35:
//! `unshare(CLONE_NEWUSER)`, denied by every policy, succeeded there, and a
//! child forked there would never be confined at all). runc and crun parse
//! `/etc/passwd` themselves.
//!
//! So before a container process is cloned, the user and group databases
//! are pinned to glibc's own `files` service (`__nss_configure_lookup`,
//! `<nss.h>`): a lookup in a clone still reads the container's
//! `/etc/passwd` and `/etc/group`, as runc does, and loads no code. One
//! lookup here loads `files` from the host where it is still a module
//! (glibc < 2.34 builds it outside libc). A `create` or `exec` process
//! that looked users up on the host afterwards would see local users only
//! (none does; `list` and `state` never pin); host name lookups (`hosts`,
//! the egress gateway's) are untouched. musl has no NSS. The static-pie
//! build (`.cargo/config.toml`) links glibc statically: its `files` is
//! built in, so no module is loaded at all, and the pin still applies.

/// The databases a container process may look up (users, groups, the
/// supplementary groups `initgroups` finds), each limited to `files`.
const DATABASES: &[&std::ffi::CStr] = &[c"passwd", c"group", c"initgroups", c"shadow", c"gshadow"];

/// Pin [`DATABASES`] to `files` (once per process). Called right before a
/// container's processes are built (`create`, `exec`); an error (glibc
/// refused a database) stops them: the image's modules could load.
pub fn files_only() -> crate::error::Result<()> {
    static PINNED: std::sync::OnceLock<Result<(), String>> = std::sync::OnceLock::new();
    PINNED
        .get_or_init(pin)
        .clone()
        .map_err(crate::error::Failure::runtime)
}

#[cfg(target_env = "gnu")]
fn pin() -> Result<(), String> {
    extern "C" {
        fn __nss_configure_lookup(
            db: *const libc::c_char,
            service_line: *const libc::c_char,
        ) -> libc::c_int;
    }
    for db in DATABASES {
        // SAFETY: both arguments are NUL-terminated strings that outlive
        // the call; glibc copies what it keeps. The runtime is
        // single-threaded here (before libcontainer clones).
        let rc = unsafe { __nss_configure_lookup(db.as_ptr(), c"files".as_ptr()) };
        if rc != 0 {
            return Err(format!(
                "cannot limit the {db:?} database to glibc's files service (__nss_configure_lookup), so the image's NSS modules could load into the container's init; not starting it"
            ));
        }
    }
    // Loads the `files` service from the host where it is a module.
    let _ = nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(0));
    Ok(())
}

#[cfg(not(target_env = "gnu"))]
fn pin() -> Result<(), String> {
    Ok(())
}
