//! The container side of the egress gateway (`dev.sandboy.egress`, see
//! docs/egress.md): the resolver files bound over the image's, and the
//! gateway's sockets made inside the container's network namespace before
//! the payload starts (the supervisor serves them).

use std::path::Path;

use oci_spec::runtime::{Mount, Spec};
use sandboy_spec_gen::annotations;

use sandboy_confine::CompiledSeccomp;

use crate::error::{Failure, Result};
use crate::supervisor::egress::{Duty, Listeners};

/// The container's resolver: the gateway's stub, over TCP (`use-vc`;
/// seccomp refuses UDP sockets unless the policy opens UDP).
pub const RESOLV_CONF: &str = "nameserver 127.0.0.53\noptions use-vc\n";
/// The container's hosts file: loopback only, so every other name goes to
/// the stub (an image's or the host's entries would point nowhere).
pub const HOSTS: &str = "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n";

/// The resolver files: name in the shadow bundle, destination, text
/// (unprivileged wrap binds the same over its root, `wrap::namespaces`).
pub const FILES: [(&str, &str, &str); 2] = [
    ("resolv.conf", "/etc/resolv.conf", RESOLV_CONF),
    ("hosts", "/etc/hosts", HOSTS),
];

/// Whether the spec asks for the gateway.
pub fn wants(spec: &Spec) -> bool {
    spec.annotations()
        .as_ref()
        .is_some_and(|a| a.contains_key(annotations::EGRESS))
}

/// The egress guard for a spec with the gateway (`None` without): a seccomp
/// filter of the runtime's own, installed after the spec's profile in the
/// init and in every `exec`, so that UDP (the stub's included), ICMP, raw
/// and other families' sockets fail with EPERM even when the spec's
/// profile — an engine's default — allows them (issue 17). `log`: audited
/// when the container's refusals are collected.
pub fn guard(spec: &Spec, log: bool) -> Result<Option<CompiledSeccomp>> {
    if !wants(spec) {
        return Ok(None);
    }
    let compiled =
        sandboy_confine::seccomp::compile(&sandboy_spec_gen::render::egress_seccomp())
            .map_err(|e| Failure::runtime(format!("the egress guard's seccomp filter: {e}")))?;
    Ok(Some(compiled.with_log(log)))
}

/// Bind the files of [`write_files`] (in `dir`) read-only over the
/// container's /etc/resolv.conf and /etc/hosts, replacing any mount an
/// engine put there.
pub fn mount_files(spec: &mut Spec, dir: &Path) {
    let mut mounts = spec.mounts().clone().unwrap_or_default();
    for (file, dest, _) in FILES {
        mounts.retain(|m| m.destination() != Path::new(dest));
        let mut m = Mount::default();
        m.set_destination(dest.into())
            .set_typ(Some("bind".into()))
            .set_source(Some(dir.join(file)))
            .set_options(Some(
                ["rbind", "ro", "nosuid", "nodev", "noexec"]
                    .map(String::from)
                    .to_vec(),
            ));
        mounts.push(m);
    }
    spec.set_mounts(Some(mounts));
}

/// Write the resolver files into `dir` (the shadow bundle's directory).
pub fn write_files(dir: &Path) -> std::io::Result<()> {
    for (file, _, text) in FILES {
        std::fs::write(dir.join(file), text)?;
    }
    Ok(())
}

/// The egress duty of a container whose init is `pid`: its rules checked
/// again (fail closed, exit 2) and its sockets bound in the init's network
/// namespace.
pub fn listen(map: &std::collections::HashMap<String, String>, pid: i32) -> Result<Option<Duty>> {
    let Some((rules, proxy_port)) = super::bundle::egress(map)? else {
        return Ok(None);
    };
    let listeners = super::loopback::within(
        pid,
        "starting the egress gateway",
        "binding its sockets",
        || Listeners::bind(&rules, proxy_port),
    )?;
    Ok(Some(Duty { rules, listeners }))
}
