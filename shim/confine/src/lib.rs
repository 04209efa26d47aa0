//! Confinement of a container's init, applied right before `execve`:
//! **Landlock**, then **seccomp**, from the `dev.sandboy.landlock` annotation
//! and the spec's `linux.seccomp`, plus an **fd sweep** (everything above
//! `3 + preserve_fds` becomes close-on-exec).
//!
//! Two phases, matching libcontainer's executor:
//!
//! * [`Confinement::prepare`] in `Executor::validate` (create time, inside
//!   the container init after pivot_root): decodes the annotation, compiles
//!   the seccomp profile, checks the kernel's Landlock ABI, opens the rule
//!   paths and builds the Landlock ruleset. Everything that can fail without
//!   changing the process fails here, so `create` reports it.
//! * [`Confinement::apply`] in `Executor::exec` right before `execve`: marks
//!   fds close-on-exec, restricts itself with Landlock, installs the seccomp
//!   program (one BPF program, see [`seccomp`]). Any failure is an error: a spec with `linux.seccomp` never runs
//!   unfiltered.
//!
//! The fd sweep runs first (close-on-exec only takes effect at `execve`, so
//! the order is equivalent), which keeps it from being refused by the
//! confinement it precedes.

mod error;
pub mod fds;
pub mod landlock;
pub mod seccomp;

use std::io;

use oci_spec::runtime::Spec;
use sandboy_spec_gen::annotations;

pub use error::ConfineError;
pub use landlock::PreparedLandlock;
pub use seccomp::CompiledSeccomp;

/// Everything to apply to the container's init before `execve`.
///
/// Cheap to clone (the Landlock ruleset fd is shared), so it can live in a
/// `Clone` executor; [`Confinement::apply`] consumes one copy.
#[derive(Debug, Clone)]
pub struct Confinement {
    landlock: Option<PreparedLandlock>,
    seccomp: Option<CompiledSeccomp>,
    /// Programs installed after `seccomp`, in order (a node policy's on top
    /// of the engine's profile, the egress guard): the kernel runs all of
    /// them and the most restrictive verdict wins.
    second: Vec<CompiledSeccomp>,
    preserve_fds: u32,
}

/// The destinations of the spec's bind mounts (type `bind`, or a `bind`
/// or `rbind` option).
fn bind_destinations(spec: &Spec) -> Vec<&str> {
    spec.mounts()
        .iter()
        .flatten()
        .filter(|m| {
            m.typ().as_deref() == Some("bind")
                || m.options()
                    .iter()
                    .flatten()
                    .any(|o| o == "bind" || o == "rbind")
        })
        .filter_map(|m| m.destination().to_str())
        .collect()
}

impl Confinement {
    /// Prepares the confinement a spec asks for (see the crate docs for
    /// when to call it). `preserve_fds` is `--preserve-fds`.
    pub fn prepare(spec: &Spec, preserve_fds: u32) -> Result<Self, ConfineError> {
        Self::prepare_with(spec, preserve_fds, None)
    }

    /// [`Confinement::prepare`] with the spec's `linux.seccomp` already
    /// compiled (by the runtime, before the container existed).
    pub fn prepare_with(
        spec: &Spec,
        preserve_fds: u32,
        seccomp: Option<CompiledSeccomp>,
    ) -> Result<Self, ConfineError> {
        let ruleset = spec
            .annotations()
            .as_ref()
            .and_then(|a| a.get(annotations::LANDLOCK))
            .map(|v| landlock::decode(v))
            .transpose()?;
        let seccomp = match seccomp {
            Some(compiled) => Some(compiled),
            None => spec
                .linux()
                .as_ref()
                .and_then(|l| l.seccomp().as_ref())
                .map(seccomp::compile)
                .transpose()?,
        };
        let landlock = match &ruleset {
            Some(rs) => landlock::prepare_with_binds(rs, &bind_destinations(spec))?,
            None => None,
        };
        if landlock.is_some() && !may_confine()? {
            return Err(ConfineError::Privilege { what: "Landlock" });
        }
        if seccomp.is_some() && !may_confine()? {
            return Err(ConfineError::Privilege { what: "seccomp" });
        }
        tracing::debug!(
            landlock = landlock.is_some(),
            seccomp_insns = seccomp.as_ref().map_or(0, |s| s.program().len()),
            preserve_fds,
            "confinement prepared"
        );
        Ok(Self {
            landlock,
            seccomp,
            second: Vec::new(),
            preserve_fds,
        })
    }

    /// Adds a further seccomp program, installed after the spec's own
    /// (and after those added before it).
    pub fn with_second_seccomp(
        mut self,
        second: Option<CompiledSeccomp>,
    ) -> Result<Self, ConfineError> {
        if second.is_some() && !may_confine()? {
            return Err(ConfineError::Privilege { what: "seccomp" });
        }
        self.second.extend(second);
        Ok(self)
    }

    /// Only an fd sweep: no Landlock, no seccomp.
    pub fn fd_sweep_only(preserve_fds: u32) -> Self {
        Self {
            landlock: None,
            seccomp: None,
            second: Vec::new(),
            preserve_fds,
        }
    }

    /// Lets the confined process execute (and read) the one file `file` is
    /// open on, when Landlock applies; see
    /// [`PreparedLandlock::allow_executing`]. Call before [`Confinement::apply`].
    pub fn allow_executing(&self, file: std::os::fd::BorrowedFd<'_>) -> Result<(), ConfineError> {
        match &self.landlock {
            Some(ll) => ll.allow_executing(file),
            None => Ok(()),
        }
    }

    /// Lets the confined process read and write `/dev/null` (the null
    /// device only), when Landlock applies; see
    /// [`PreparedLandlock::allow_null_device`]. Call before [`Confinement::apply`].
    pub fn allow_null_device(&self) -> Result<(), ConfineError> {
        match &self.landlock {
            Some(ll) => ll.allow_null_device(),
            None => Ok(()),
        }
    }

    /// Whether Landlock will be applied.
    pub fn has_landlock(&self) -> bool {
        self.landlock.is_some()
    }

    /// Whether a seccomp profile will be installed.
    pub fn has_seccomp(&self) -> bool {
        self.seccomp.is_some() || !self.second.is_empty()
    }

    /// Whether the seccomp profile has user-notification rules.
    pub fn has_notify(&self) -> bool {
        self.seccomp.as_ref().is_some_and(|s| s.has_notify())
    }

    /// Applies it to the calling process: fd sweep, Landlock, seccomp. Call
    /// right before `execve`; on error the caller must not exec. Returns the
    /// seccomp user-notification listener, if the profile has one.
    pub fn apply(self) -> Result<Option<std::os::fd::OwnedFd>, ConfineError> {
        fds::mark_cloexec(self.preserve_fds)?;
        if let Some(ll) = &self.landlock {
            ll.restrict_self()?;
        }
        let listener = match &self.seccomp {
            Some(sc) => sc.install()?,
            None => None,
        };
        for second in &self.second {
            second.install()?;
        }
        Ok(listener)
    }
}

/// Whether `no_new_privs` is set on the calling thread.
pub fn no_new_privs() -> Result<bool, ConfineError> {
    // SAFETY: PR_GET_NO_NEW_PRIVS takes no pointers and returns 0 or 1.
    let rc = unsafe { libc::prctl(libc::PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) };
    if rc < 0 {
        return Err(ConfineError::kernel(
            "prctl(PR_GET_NO_NEW_PRIVS)",
            io::Error::last_os_error(),
        ));
    }
    Ok(rc == 1)
}

/// Whether `CAP_SYS_ADMIN` is in the calling thread's effective set.
pub fn has_cap_sys_admin() -> Result<bool, ConfineError> {
    #[repr(C)]
    struct Header {
        version: u32,
        pid: i32,
    }
    #[repr(C)]
    #[derive(Default, Clone, Copy)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    const LINUX_CAPABILITY_VERSION_3: u32 = 0x2008_0522;
    const CAP_SYS_ADMIN: u32 = 21;
    let mut header = Header {
        version: LINUX_CAPABILITY_VERSION_3,
        pid: 0,
    };
    let mut data = [Data::default(); 2];
    // SAFETY: header and data are live, writable and of the layout capget
    // expects for version 3 (a header and two data structs).
    let rc = unsafe {
        libc::syscall(
            libc::SYS_capget,
            &mut header as *mut Header,
            data.as_mut_ptr(),
        )
    };
    if rc < 0 {
        return Err(ConfineError::kernel("capget", io::Error::last_os_error()));
    }
    Ok(data[0].effective & (1 << CAP_SYS_ADMIN) != 0)
}

/// Landlock and seccomp may be installed by an unprivileged process only
/// with `no_new_privs`.
fn may_confine() -> Result<bool, ConfineError> {
    Ok(no_new_privs()? || has_cap_sys_admin()?)
}
