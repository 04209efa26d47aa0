//! The process an `exec` adds, held to what the container's init got.
//!
//! Engines never exec with flags: podman and containerd write a
//! process.json (`exec --process`) from the image and the engine's
//! defaults, which libcontainer takes as it is. Red teams ran such a
//! process as the engine's uid 0 in a container whose policy said
//! `user = "65534:65534"`, with the engine's 1024 open files under a
//! policy's `nofile = 64`, and without `no_new_privs` under an init that
//! has it. So the file is checked as a config.json's process is and, in a
//! policy-confined container, rewritten onto a copy:
//!
//! * the user is the init's (uid, gid, supplementary groups);
//! * every resource limit is no looser than the init's;
//! * `noNewPrivileges` is true when the init's is (any container);
//! * capabilities lose [`PLANT`](crate::init::privilege::PLANT).

use std::path::{Path, PathBuf};

use oci_spec::runtime::{PosixRlimit, Process, Spec, User};

use crate::error::{Failure, Result};

/// A process.json of the runtime's own, removed when dropped.
pub struct TempProcess(pub PathBuf);

impl Drop for TempProcess {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Read and check process.json `p`; a copy in `state_dir` held to `init`
/// (see the module's documentation), or `None` when it needs no change.
pub fn held_to_init(p: &Path, state_dir: &Path, init: &Spec) -> Result<Option<TempProcess>> {
    let at = format!("--process {}", p.display());
    let text = sandboy_spec_gen::input::read_bytes(p, sandboy_spec_gen::input::TEXT_MAX, 0)
        .map_err(|e| Failure::config(format!("{at}: {e}")))?;
    let mut process: Process = serde_json::from_slice(&text).map_err(|e| {
        Failure::config(format!(
            "{at}:{}:{}: invalid process.json: {e}; fix the field to match the OCI runtime-spec's process",
            e.line(),
            e.column()
        ))
    })?;
    super::bundle::check_process(&process, &at)?;
    let before = process.clone();
    let init_process = init.process().as_ref();
    if init_process.and_then(|p| p.no_new_privileges()) == Some(true) {
        process.set_no_new_privileges(Some(true));
    }
    if crate::init::privilege::policy_confined(init) {
        if let Some(caps) = process.capabilities() {
            process.set_capabilities(Some(crate::init::privilege::without_plant(caps).0));
        }
        if let Some(ip) = init_process {
            hold_user(&mut process, ip.user());
            process.set_rlimits(clamped(
                process.rlimits().as_deref(),
                ip.rlimits().as_deref(),
            ));
        }
    }
    if process == before {
        return Ok(None);
    }
    let copy = state_dir.join(format!("exec-process-{}.json", std::process::id()));
    let json = serde_json::to_vec(&process).map_err(|e| Failure::runtime(e.to_string()))?;
    sandboy_spec_gen::output::replace(&copy, &json, 0o600)?;
    Ok(Some(TempProcess(copy)))
}

/// The init's user in place of the file's, said once when they differed.
fn hold_user(process: &mut Process, init: &User) {
    let asked = process.user();
    let same = asked.uid() == init.uid()
        && asked.gid() == init.gid()
        && asked.additional_gids() == init.additional_gids();
    if !same {
        tracing::warn!(
            asked = %format!("{}:{}", asked.uid(), asked.gid()),
            runs_as = %format!("{}:{}", init.uid(), init.gid()),
            "exec: a policy-confined container's processes run as its init's user; the process.json's user was replaced"
        );
        process.set_user(init.clone());
    }
}

/// `asked`'s limits, each no looser than the init's of the same type, and
/// the init's for the types `asked` leaves out (libcontainer would give
/// the runtime's own).
fn clamped(
    asked: Option<&[PosixRlimit]>,
    init: Option<&[PosixRlimit]>,
) -> Option<Vec<PosixRlimit>> {
    let init = init.unwrap_or_default();
    let mut out: Vec<PosixRlimit> = asked.unwrap_or_default().to_vec();
    for limit in init {
        match out.iter_mut().find(|r| r.typ() == limit.typ()) {
            Some(r) => {
                *r = rlimit(
                    r.typ(),
                    r.soft().min(limit.soft()),
                    r.hard().min(limit.hard()),
                )
            }
            None => out.push(*limit),
        }
    }
    (!out.is_empty()).then_some(out)
}

fn rlimit(typ: oci_spec::runtime::PosixRlimitType, soft: u64, hard: u64) -> PosixRlimit {
    oci_spec::runtime::PosixRlimitBuilder::default()
        .typ(typ)
        .soft(soft)
        .hard(hard)
        .build()
        .expect("every field set")
}

/// `exec --user`/`--additional-gids` into a policy-confined container
/// must name the init's user: the policy says who its processes are.
pub fn check_user_flags(init: &Spec, uid: Option<u32>, gid: Option<u32>) -> Result<()> {
    if !crate::init::privilege::policy_confined(init) {
        return Ok(());
    }
    let Some(user) = init.process().as_ref().map(|p| p.user()) else {
        return Ok(());
    };
    let differs = uid.is_some_and(|u| u != user.uid()) || gid.is_some_and(|g| g != user.gid());
    if differs {
        return Err(Failure::config(format!(
            "exec --user: this container is confined by a policy whose processes run as {}:{}; leave --user out or give that user",
            user.uid(),
            user.gid()
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use oci_spec::runtime::PosixRlimitType;

    fn limit(typ: PosixRlimitType, soft: u64, hard: u64) -> PosixRlimit {
        rlimit(typ, soft, hard)
    }

    #[test]
    fn limits_are_never_looser_than_the_inits() {
        let init = [limit(PosixRlimitType::RlimitNofile, 64, 64)];
        let asked = [
            limit(PosixRlimitType::RlimitNofile, 1024, 4096),
            limit(PosixRlimitType::RlimitCore, 0, 0),
        ];
        let out = clamped(Some(&asked), Some(&init)).unwrap();
        assert_eq!(out[0], limit(PosixRlimitType::RlimitNofile, 64, 64));
        assert_eq!(out[1], limit(PosixRlimitType::RlimitCore, 0, 0));
        // Tighter than the init's: kept; left out: the init's.
        let tight = [limit(PosixRlimitType::RlimitNofile, 16, 32)];
        assert_eq!(clamped(Some(&tight), Some(&init)).unwrap(), tight);
        assert_eq!(clamped(None, Some(&init)).unwrap(), init);
        assert_eq!(clamped(None, None), None);
    }
}
