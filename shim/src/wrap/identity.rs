//! Who the step runs as under `sandboy wrap` started as root (issue 14:
//! root in the step must not be host root). A policy's explicit
//! `[process] user` is kept, and `user = "0:0"` is the only way to run as
//! host root; without one the step runs as the user who called sudo
//! (`SUDO_UID`/`SUDO_GID`, unless that is root) or as nobody
//! (65534:65534), with no supplementary groups.
//!
//! Such a step cannot use root-only paths. Rather than letting it fail
//! halfway, [`check_reach`] tries, as that identity, every write path, the
//! working directory and the program before anything is made, and refuses
//! with the fix.

use std::path::{Path, PathBuf};

use nix::unistd::{access, AccessFlags, ForkResult, Gid, Uid};
use sandboy_spec_gen::policy::Policy;

use crate::error::{Failure, Result};

/// nobody:nogroup on Debian and most distributions.
pub const NOBODY: (u32, u32) = (65534, 65534);

/// The step's identity and where it came from (for messages and logs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Identity {
    pub uid: u32,
    pub gid: u32,
    pub source: Source,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// `[process] user` in the policy.
    Policy,
    /// `SUDO_UID`/`SUDO_GID`.
    Sudo,
    /// Neither: nobody.
    Nobody,
}

impl std::fmt::Display for Identity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let from = match self.source {
            Source::Policy => "the policy's [process] user",
            Source::Sudo => "the sudo caller",
            Source::Nobody => "nobody",
        };
        write!(f, "uid {} gid {} ({from})", self.uid, self.gid)
    }
}

/// The identity for `policy`, given the environment's `SUDO_UID` and
/// `SUDO_GID`.
pub fn choose(policy: &Policy, sudo_uid: Option<&str>, sudo_gid: Option<&str>) -> Identity {
    if policy.user_set {
        return Identity {
            uid: policy.uid,
            gid: policy.gid,
            source: Source::Policy,
        };
    }
    caller(sudo_uid, sudo_gid)
}

/// The sudo caller from `SUDO_UID`/`SUDO_GID` (not root), else nobody.
pub fn caller(sudo_uid: Option<&str>, sudo_gid: Option<&str>) -> Identity {
    let sudo_uid = sudo_uid
        .and_then(|u| u.parse::<u32>().ok())
        .filter(|&u| u != 0);
    match sudo_uid {
        Some(uid) => Identity {
            uid,
            gid: sudo_gid
                .and_then(|g| g.parse::<u32>().ok())
                .unwrap_or(NOBODY.1),
            source: Source::Sudo,
        },
        None => Identity {
            uid: NOBODY.0,
            gid: NOBODY.1,
            source: Source::Nobody,
        },
    }
}

/// The identity for `policy` from this process's environment.
pub fn from_env(policy: &Policy) -> Identity {
    let var = |k: &str| std::env::var(k).ok();
    choose(
        policy,
        var("SUDO_UID").as_deref(),
        var("SUDO_GID").as_deref(),
    )
}

/// What the step must be able to do with a host path.
pub struct Need {
    pub path: PathBuf,
    pub flags: AccessFlags,
    /// The path's role, for the message ("write path", …).
    pub what: &'static str,
}

/// Refuse (exit 2) when `who` cannot use one of `needs`: checked with
/// `access(2)` in a child that has taken on the identity, so modes, ACLs
/// and every parent directory count exactly as they will for the step
/// (the first 250 needs: the answer travels in the exit status).
pub fn check_reach(policy: &Policy, who: Identity, needs: &[Need]) -> Result<()> {
    if who.uid == 0 || needs.is_empty() {
        return Ok(());
    }
    let Some(i) = first_unreachable(who, needs)? else {
        return Ok(());
    };
    let n = &needs[i];
    Err(Failure::config(format!(
        "{}: the step runs as {who}, which cannot use the {} {}; give that identity access \
         (e.g. chown {}:{} it), run sandboy wrap through sudo from a user who can, or set \
         [process] user = \"0:0\" to run the step as host root",
        policy.file,
        n.what,
        n.path.display(),
        who.uid,
        who.gid
    )))
}

/// The index of the first need `who` fails, from a forked child.
fn first_unreachable(who: Identity, needs: &[Need]) -> Result<Option<usize>> {
    const SETUP_FAILED: i32 = 255;
    // SAFETY: wrap is single-threaded here; the child only changes its
    // credentials, calls access(2) and _exits.
    match unsafe { nix::unistd::fork() } {
        Ok(ForkResult::Child) => {
            let code = (|| {
                nix::unistd::setgroups(&[]).ok()?;
                nix::unistd::setresgid(
                    Gid::from_raw(who.gid),
                    Gid::from_raw(who.gid),
                    Gid::from_raw(who.gid),
                )
                .ok()?;
                nix::unistd::setresuid(
                    Uid::from_raw(who.uid),
                    Uid::from_raw(who.uid),
                    Uid::from_raw(who.uid),
                )
                .ok()?;
                let bad = needs
                    .iter()
                    .take(250)
                    .position(|n| access(&n.path, n.flags).is_err());
                Some(bad.map_or(0, |i| i as i32 + 1))
            })()
            .unwrap_or(SETUP_FAILED);
            // SAFETY: _exit is always sound.
            unsafe { libc::_exit(code) }
        }
        Ok(ForkResult::Parent { child }) => match nix::sys::wait::waitpid(child, None) {
            Ok(nix::sys::wait::WaitStatus::Exited(_, 0)) => Ok(None),
            Ok(nix::sys::wait::WaitStatus::Exited(_, code)) if code != SETUP_FAILED => {
                Ok(Some(code as usize - 1))
            }
            _ => Err(Failure::runtime(format!(
                "wrap: could not check the paths the step needs as uid {} gid {}",
                who.uid, who.gid
            ))),
        },
        Err(e) => Err(Failure::runtime(format!("fork: {e}"))),
    }
}

/// The needs of a wrapped command: write and search its write paths
/// (files: write), enter its working directory, run its program.
pub fn needs(writes: &[&Path], cwd: &Path, program: &Path) -> Vec<Need> {
    let mut out: Vec<Need> = writes
        .iter()
        .map(|w| Need {
            path: w.to_path_buf(),
            flags: if w.is_dir() {
                AccessFlags::W_OK | AccessFlags::X_OK
            } else {
                AccessFlags::W_OK
            },
            what: "write path",
        })
        .collect();
    out.push(Need {
        path: cwd.to_path_buf(),
        flags: AccessFlags::X_OK,
        what: "working directory",
    });
    out.push(Need {
        path: program.to_path_buf(),
        flags: AccessFlags::X_OK,
        what: "program",
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(extra: &str) -> Policy {
        Policy::parse(
            &format!("version = 1\n[process]\nargs = [\"true\"]\n{extra}"),
            "p.toml",
            Path::new("/"),
        )
        .unwrap()
    }

    #[test]
    fn explicit_user_wins_then_sudo_then_nobody() {
        let root = policy("user = \"0:0\"");
        let who = choose(&root, Some("1000"), Some("1000"));
        assert_eq!((who.uid, who.gid, who.source), (0, 0, Source::Policy));
        let default = policy("");
        let who = choose(&default, Some("1000"), Some("1001"));
        assert_eq!((who.uid, who.gid, who.source), (1000, 1001, Source::Sudo));
        // sudo from root, garbage, nothing: nobody, never root.
        for (u, g) in [(Some("0"), Some("0")), (Some("x"), None), (None, None)] {
            let who = choose(&default, u, g);
            assert_eq!(
                (who.uid, who.gid, who.source),
                (65534, 65534, Source::Nobody)
            );
        }
        // SUDO_UID without SUDO_GID: nogroup.
        let who = choose(&default, Some("1000"), None);
        assert_eq!((who.uid, who.gid), (1000, 65534));
    }
}
