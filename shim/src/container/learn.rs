//! `run --learn OUT.toml [--policy BASE.toml] --bundle B ID`: the bundle
//! runs observed rather than confined. Its Landlock rules and seccomp
//! profile are replaced by the learning filter (`supervisor::learn`), which
//! the init installs right before its execve and whose listener it sends to
//! the container's supervisor over a socket pair made before the clone
//! (`init::seccomp_notify::Channel::pair`); the supervisor observes until
//! every process of the container is gone, then writes the policy.

use std::os::fd::OwnedFd;
use std::path::PathBuf;

use super::bundle::Bundle;
use crate::error::{Failure, Result};
use crate::supervisor::learn::{self, notify, Learn, Origin, Root};

/// What `run --learn` asks of `create`.
#[derive(Debug, Clone)]
pub struct Learning {
    pub learn: Learn,
    /// The policy the learned one extends (`--policy`).
    pub base: Option<PathBuf>,
}

/// A learning container's set-up, made before anything exists.
pub struct Prepared {
    learn: Learn,
    base: Option<String>,
    origin: Origin,
}

/// Check what can be learned, and make `bundle` observed: its Landlock
/// annotation dropped, its seccomp profile (and the compiled filter the
/// init gets) replaced by the learning filter. `node_policy`: the node
/// applied a policy of its own, which learning would bypass: refused.
pub fn observe(l: &Learning, bundle: &mut Bundle, node_policy: bool) -> Result<Prepared> {
    if node_policy {
        return Err(Failure::config(
            "run --learn: this node applies a policy to every container (node configuration: default_policy, or a dev.sandboy.policy annotation); a learning container would run without it. Learn where no node policy applies, or drop --learn",
        ));
    }
    let base = learn::base_text(l.base.as_deref())?;
    let failed = |e: String| Failure::runtime(format!("learn: filter: {e}"));
    let profile = notify::profile().map_err(failed)?;
    bundle.seccomp = Some(notify::filter().map_err(failed)?);
    let spec = &mut bundle.spec;
    if let Some(mut a) = spec.annotations().clone() {
        a.remove(sandboy_spec_gen::annotations::LANDLOCK);
        spec.set_annotations(Some(a));
    }
    let mut linux = spec.linux().clone().expect("checked by Bundle::load");
    let hidden = linux.masked_paths().clone().unwrap_or_default();
    linux.set_seccomp(Some(profile));
    spec.set_linux(Some(linux));
    let args = spec
        .process()
        .as_ref()
        .and_then(|p| p.args().clone())
        .unwrap_or_default();
    Ok(Prepared {
        learn: l.learn.clone(),
        base,
        origin: Origin {
            how: "sandboy run --learn",
            what: format!(
                "the bundle {}, process {}",
                bundle.dir.display(),
                learn::quoted(&args)
            ),
            status: None,
            root: Root::Caller,
            hidden,
        },
    })
}

impl Prepared {
    /// The supervisor's duty, with its end of the listener's socket.
    pub fn duty(self, socket: OwnedFd) -> learn::Duty {
        learn::Duty {
            learn: self.learn,
            base: self.base,
            origin: self.origin,
            socket,
        }
    }
}
