//! CAP_SYS_ADMIN held just long enough to confine without no_new_privs.
//!
//! The kernel installs Landlock and seccomp only for a process that has
//! no_new_privs or CAP_SYS_ADMIN. A spec asking for confinement with
//! `noNewPrivileges: false` and without CAP_SYS_ADMIN (Docker's and podman's
//! default shape) must still run exactly as written: no no_new_privs (setuid
//! binaries keep working), the filters installed, and nothing but the spec's
//! capabilities left. runc does it by installing seccomp before it drops
//! capabilities; libcontainer drops them before the executor runs. So
//! sandboy adds CAP_SYS_ADMIN (and CAP_SETPCAP, to shrink the bounding set
//! afterwards) to the sets libcontainer applies, installs the filters, and
//! drops the held capabilities right after, before `execve` — or runs
//! nothing if that drop fails.

use std::collections::HashSet;

use oci_spec::runtime::{Capabilities, Capability, LinuxCapabilities, Spec};

/// In a shadow bundle: the capabilities sandboy added, as a JSON array.
pub const HELD_FILE: &str = "held-capabilities";

/// The capabilities the init must hold beyond the spec's to install the
/// confinement the spec asks for; empty when it needs none.
pub fn to_hold(spec: &Spec) -> Vec<Capability> {
    let Some(process) = spec.process() else {
        return Vec::new();
    };
    if process.no_new_privileges() == Some(true)
        || !crate::init::executor::confinement_requested(spec)
    {
        return Vec::new();
    }
    // No capabilities section: libcontainer leaves root's full set alone.
    let Some(caps) = process.capabilities() else {
        return Vec::new();
    };
    let has = |set: &Option<Capabilities>, cap| set.as_ref().is_some_and(|s| s.contains(&cap));
    let mut held = Vec::new();
    let sys_admin = Capability::SysAdmin;
    if !(has(caps.effective(), sys_admin)
        && has(caps.permitted(), sys_admin)
        && has(caps.bounding(), sys_admin))
    {
        held.push(sys_admin);
        // Dropping CAP_SYS_ADMIN from the bounding set again needs SETPCAP.
        if !(has(caps.effective(), Capability::Setpcap)
            && has(caps.permitted(), Capability::Setpcap)
            && has(caps.bounding(), Capability::Setpcap))
        {
            held.push(Capability::Setpcap);
        }
    }
    held
}

/// Add `held` to the bounding, effective and permitted sets of the spec's
/// process (what libcontainer will leave the init with).
pub fn augment(spec: &mut Spec, held: &[Capability]) {
    let Some(mut process) = spec.process().clone() else {
        return;
    };
    let Some(mut caps) = process.capabilities().clone() else {
        return;
    };
    let add = |set: &Option<Capabilities>| -> Option<Capabilities> {
        let mut s = set.clone().unwrap_or_default();
        s.extend(held.iter().copied());
        Some(s)
    };
    caps.set_bounding(add(caps.bounding()));
    caps.set_effective(add(caps.effective()));
    caps.set_permitted(add(caps.permitted()));
    process.set_capabilities(Some(caps));
    spec.set_process(Some(process));
}

/// The spec's capability sets without `held`.
fn without(caps: &LinuxCapabilities, held: &[Capability]) -> LinuxCapabilities {
    let strip = |set: &Option<Capabilities>| -> Option<Capabilities> {
        set.as_ref().map(|s| {
            s.iter()
                .filter(|c| !held.contains(c))
                .copied()
                .collect::<HashSet<_>>()
        })
    };
    let mut out = caps.clone();
    out.set_bounding(strip(caps.bounding()));
    out.set_effective(strip(caps.effective()));
    out.set_permitted(strip(caps.permitted()));
    out.set_inheritable(strip(caps.inheritable()));
    out.set_ambient(strip(caps.ambient()));
    out
}

/// Drop `held` from the calling process: the sets become the running spec's
/// sets without them (bounding first, while CAP_SETPCAP is still held).
/// Called after the filters are installed, so the profile must allow
/// `capset` and `prctl`, as it must for runc.
pub fn release(spec: &Spec, held: &[Capability]) -> Result<(), String> {
    if held.is_empty() {
        return Ok(());
    }
    let caps = spec
        .process()
        .as_ref()
        .and_then(|p| p.capabilities().clone())
        .ok_or("the process has no capability sets to return to")?;
    let target = without(&caps, held);
    let syscall = libcontainer::syscall::syscall::create_syscall();
    libcontainer::capabilities::drop_privileges(&target, syscall.as_ref()).map_err(|e| {
        format!(
            "cannot drop {}, held only to install the confinement: {e} \
             (the seccomp profile must allow capset and prctl)",
            serde_json::to_string(held).unwrap_or_default()
        )
    })
}

/// Read the held list a shadow bundle recorded (empty when none).
pub fn read_held(shadow_dir: &std::path::Path) -> Vec<Capability> {
    std::fs::read(shadow_dir.join(HELD_FILE))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use oci_spec::runtime::{LinuxBuilder, LinuxSeccompBuilder, ProcessBuilder, SpecBuilder};

    fn spec(nnp: Option<bool>, effective: &[Capability]) -> Spec {
        let set: Capabilities = effective.iter().copied().collect();
        let caps = LinuxCapabilities::default();
        let mut caps = caps;
        caps.set_bounding(Some(set.clone()));
        caps.set_effective(Some(set.clone()));
        caps.set_permitted(Some(set));
        let mut process = ProcessBuilder::default().build().unwrap();
        process.set_no_new_privileges(nnp);
        process.set_capabilities(Some(caps));
        SpecBuilder::default()
            .process(process)
            .linux(
                LinuxBuilder::default()
                    .seccomp(LinuxSeccompBuilder::default().build().unwrap())
                    .build()
                    .unwrap(),
            )
            .build()
            .unwrap()
    }

    #[test]
    fn holds_only_what_confinement_needs() {
        let chown = [Capability::Chown];
        assert_eq!(
            to_hold(&spec(Some(false), &chown)),
            vec![Capability::SysAdmin, Capability::Setpcap]
        );
        assert!(to_hold(&spec(Some(true), &chown)).is_empty());
        assert!(to_hold(&spec(None, &[Capability::SysAdmin, Capability::Setpcap])).is_empty());
        assert_eq!(
            to_hold(&spec(None, &[Capability::Setpcap])),
            vec![Capability::SysAdmin]
        );
    }

    #[test]
    fn augment_then_without_is_the_original() {
        let original = spec(None, &[Capability::Chown, Capability::Kill]);
        let held = to_hold(&original);
        let mut augmented = original.clone();
        augment(&mut augmented, &held);
        let caps = |s: &Spec| {
            s.process()
                .as_ref()
                .unwrap()
                .capabilities()
                .clone()
                .unwrap()
        };
        assert!(caps(&augmented)
            .effective()
            .as_ref()
            .unwrap()
            .contains(&Capability::SysAdmin));
        assert_eq!(without(&caps(&augmented), &held), caps(&original));
    }
}
