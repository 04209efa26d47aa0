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
//! * `noNewPrivileges` is true when the init's is (any container);
//! * capabilities lose [`PLANT`](crate::init::privilege::PLANT).
//!
//! Resource limits are held where every exec'd process passes, file or
//! not: the executor lowers them to the init's
//! ([`no_looser_than`](crate::init::privilege::no_looser_than)).

use std::path::{Path, PathBuf};

use oci_spec::runtime::{Process, Spec, User};

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
