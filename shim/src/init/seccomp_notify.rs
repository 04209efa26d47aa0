//! Seccomp user notification (`SCMP_ACT_NOTIFY` + `listenerPath`): the
//! listener fd the kernel returns when the filter goes in is sent, with the
//! container's state, to the agent listening on `listenerPath` (runtime-spec
//! "ContainerProcessState", one SCM_RIGHTS fd named `seccompFd`).
//!
//! The filter is installed inside the container, where the host's
//! `listenerPath` is out of reach; so the runtime connects to the agent
//! before the container process is cloned, and the clone inherits the
//! connected socket and an fd of the host's /proc (to name its own pid as the
//! host sees it, which the agent checks against `state`).
//!
//! `run --learn` uses the same channel with the container's own supervisor
//! as the agent ([`Channel::pair`]): one end of a socket pair made before
//! the clone, the other kept for the supervisor.

use std::io::IoSlice;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;
use std::path::Path;

use nix::sys::socket::{sendmsg, ControlMessage, MsgFlags};
use oci_spec::runtime::Spec;

use crate::error::{Failure, Result};

/// Held by the runtime process until the container process exists.
pub struct Channel {
    sock: UnixStream,
    host_proc: OwnedFd,
}

/// What the container process needs to send the listener: the inherited
/// fds (by number) and the state to describe itself with.
#[derive(Clone, Debug)]
pub struct Target {
    sock: RawFd,
    host_proc: RawFd,
    id: String,
    bundle: String,
    metadata: Option<String>,
    annotations: serde_json::Value,
}

impl Channel {
    /// Connects to the agent when the spec's profile notifies; `None` when
    /// it does not.
    pub fn open(spec: &Spec) -> Result<Option<Channel>> {
        let Some(seccomp) = spec.linux().as_ref().and_then(|l| l.seccomp().as_ref()) else {
            return Ok(None);
        };
        let notifies = sandboy_confine::seccomp::notifies(seccomp);
        let Some(path) = seccomp.listener_path().as_ref().filter(|_| notifies) else {
            return Ok(None);
        };
        let sock = UnixStream::connect(path).map_err(|e| {
            Failure::runtime(format!(
                "linux.seccomp.listenerPath {}: cannot connect to the seccomp agent: {e}",
                path.display()
            ))
        })?;
        let host_proc = std::fs::File::open("/proc")
            .map(OwnedFd::from)
            .map_err(|e| Failure::runtime(format!("/proc: {e}")))?;
        Ok(Some(Channel { sock, host_proc }))
    }

    /// A channel whose agent is this runtime's own supervisor: the other
    /// end of the pair, for it to receive the listener on.
    pub fn pair() -> Result<(Channel, OwnedFd)> {
        let (sock, agent) =
            UnixStream::pair().map_err(|e| Failure::runtime(format!("learn: socketpair: {e}")))?;
        let host_proc = std::fs::File::open("/proc")
            .map(OwnedFd::from)
            .map_err(|e| Failure::runtime(format!("/proc: {e}")))?;
        Ok((Channel { sock, host_proc }, OwnedFd::from(agent)))
    }

    /// The container-side handle (valid while `self` lives).
    pub fn target(&self, id: &str, bundle: &Path, spec: &Spec) -> Target {
        let seccomp = spec.linux().as_ref().and_then(|l| l.seccomp().as_ref());
        Target {
            sock: self.sock.as_raw_fd(),
            host_proc: self.host_proc.as_raw_fd(),
            id: id.to_owned(),
            bundle: bundle.display().to_string(),
            metadata: seccomp.and_then(|s| s.listener_metadata().clone()),
            annotations: serde_json::to_value(spec.annotations().clone().unwrap_or_default())
                .unwrap_or_default(),
        }
    }
}

impl Target {
    /// Send `listener` to the agent; consumes (closes) both fds here.
    pub fn send(&self, listener: OwnedFd) -> std::result::Result<(), String> {
        // SAFETY: the fds were inherited from the runtime, which keeps its
        // copies open until the clone exists; this process owns its own.
        let sock = unsafe { OwnedFd::from_raw_fd(self.sock) };
        // SAFETY: as above.
        let host_proc = unsafe { OwnedFd::from_raw_fd(self.host_proc) };
        let pid: i32 = nix::fcntl::readlinkat(Some(host_proc.as_raw_fd()), "self")
            .map_err(|e| format!("host /proc/self: {e}"))?
            .to_string_lossy()
            .parse()
            .map_err(|e| format!("host /proc/self: {e}"))?;
        let state = serde_json::json!({
            "ociVersion": oci_spec::runtime::VERSION,
            "fds": ["seccompFd"],
            "pid": pid,
            "metadata": self.metadata.clone().unwrap_or_default(),
            "state": {
                "ociVersion": oci_spec::runtime::VERSION,
                "id": self.id,
                "status": "creating",
                "pid": pid,
                "bundle": self.bundle,
                "annotations": self.annotations,
            },
        });
        let body = serde_json::to_vec(&state).map_err(|e| e.to_string())?;
        let fds = [listener.as_raw_fd()];
        sendmsg::<()>(
            sock.as_raw_fd(),
            &[IoSlice::new(&body)],
            &[ControlMessage::ScmRights(&fds)],
            MsgFlags::empty(),
            None,
        )
        .map_err(|e| format!("sending the seccomp listener to the agent: {e}"))?;
        Ok(())
    }
}
