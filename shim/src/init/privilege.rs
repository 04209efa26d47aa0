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
//!
//! The same mechanism lets a spec whose inheritable set goes beyond its
//! permitted set run as under runc: libcontainer applies effective, then
//! permitted, then inheritable, one capset each, and the kernel refuses an
//! inheritable set beyond pI ∪ pP once permitted is down (runc applies the
//! three at once). Such capabilities are held in effective and permitted
//! until the inheritable set is in place.
//!
//! What is held is recorded per set (only where the spec's set lacks it), so
//! the release returns to the spec's exact sets.

use std::collections::HashSet;

use oci_spec::runtime::{Capabilities, Capability, LinuxCapabilities, Spec};
use serde::{Deserialize, Serialize};

/// In a shadow bundle: the capabilities sandboy added, as JSON ([`Held`]).
pub const HELD_FILE: &str = "held-capabilities";

/// The capabilities added to each of the spec's sets, dropped again by
/// [`release`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Held {
    pub bounding: Vec<Capability>,
    pub effective: Vec<Capability>,
    pub permitted: Vec<Capability>,
}

impl Held {
    pub fn is_empty(&self) -> bool {
        self.bounding.is_empty() && self.effective.is_empty() && self.permitted.is_empty()
    }

    /// Without `keep` (an exec's `--cap`: asked for, so not dropped).
    pub fn except(mut self, keep: &[Capability]) -> Self {
        for set in [&mut self.bounding, &mut self.effective, &mut self.permitted] {
            set.retain(|c| !keep.contains(c));
        }
        self
    }
}

/// The capabilities the init must hold beyond the spec's: CAP_SYS_ADMIN
/// (and CAP_SETPCAP) to install the confinement the spec asks for, and the
/// inheritable ones outside the permitted set; empty when it needs none.
pub fn to_hold(spec: &Spec) -> Held {
    let Some(process) = spec.process() else {
        return Held::default();
    };
    // No capabilities section: libcontainer leaves root's full set alone.
    let Some(caps) = process.capabilities() else {
        return Held::default();
    };
    let has = |set: &Option<Capabilities>, cap| set.as_ref().is_some_and(|s| s.contains(&cap));
    let mut confine = Vec::new();
    let sys_admin = Capability::SysAdmin;
    let needs_confinement = process.no_new_privileges() != Some(true)
        && crate::init::executor::confinement_requested(spec);
    if needs_confinement
        && !(has(caps.effective(), sys_admin)
            && has(caps.permitted(), sys_admin)
            && has(caps.bounding(), sys_admin))
    {
        confine.push(sys_admin);
        // Dropping CAP_SYS_ADMIN from the bounding set again needs SETPCAP.
        if !(has(caps.effective(), Capability::Setpcap)
            && has(caps.permitted(), Capability::Setpcap)
            && has(caps.bounding(), Capability::Setpcap))
        {
            confine.push(Capability::Setpcap);
        }
    }
    // Outside the bounding set the kernel refuses them under runc too.
    let mut inheritable: Vec<Capability> = caps
        .inheritable()
        .iter()
        .flatten()
        .filter(|c| !has(caps.permitted(), **c) && has(caps.bounding(), **c))
        .copied()
        .collect();
    inheritable.sort_by_key(|c| c.to_string());
    let missing = |set: &Option<Capabilities>, from: &[Capability]| -> Vec<Capability> {
        let mut out: Vec<Capability> = Vec::new();
        for c in from {
            if !has(set, *c) && !out.contains(c) {
                out.push(*c);
            }
        }
        out
    };
    let both: Vec<Capability> = confine.iter().chain(&inheritable).copied().collect();
    Held {
        bounding: missing(caps.bounding(), &confine),
        effective: missing(caps.effective(), &both),
        permitted: missing(caps.permitted(), &both),
    }
}

/// Capabilities a container confined by a policy never holds: with them,
/// a file it makes in a rw bind works for host users, since the bind's
/// `nosuid`/`nodev` hold only inside the container. CAP_SETFCAP sets
/// `security.capability` through `setxattr` (file capabilities: the
/// setuid bit's twin, which the `setuid-modes` guard cannot see, since
/// seccomp cannot read the xattr's name; a red team's host user became
/// uid 0 this way), CAP_MKNOD makes device nodes. Engines' default sets
/// (podman's, containerd's) hold both.
pub const PLANT: [Capability; 2] = [Capability::Setfcap, Capability::Mknod];

/// A capability as `exec --cap` names it, runc's and libcontainer's form
/// (`CAP_MKNOD`, config.json's spelling); `None` for a name that is none.
/// `Capability`'s own `FromStr` takes only `MKNOD`, so parsing `--cap`
/// with it missed every capability asked for the usual way.
pub fn named(name: &str) -> Option<Capability> {
    serde_json::from_value(serde_json::Value::String(name.to_owned())).ok()
}

/// Whether `spec` is confined by a sandboy policy (its Landlock ruleset).
pub fn policy_confined(spec: &Spec) -> bool {
    spec.annotations()
        .as_ref()
        .is_some_and(|a| a.contains_key(sandboy_spec_gen::annotations::LANDLOCK))
}

/// Take [`PLANT`] out of every capability set of a policy-confined spec.
pub fn drop_plant(spec: &mut Spec) {
    if !policy_confined(spec) {
        return;
    }
    let Some(mut process) = spec.process().clone() else {
        return;
    };
    let Some(caps) = process.capabilities() else {
        return;
    };
    process.set_capabilities(Some(without_plant(caps).0));
    spec.set_process(Some(process));
}

/// `caps` without [`PLANT`] in any set, and whether any set held one.
pub fn without_plant(caps: &LinuxCapabilities) -> (LinuxCapabilities, bool) {
    let mut found = false;
    let mut strip = |set: &Option<Capabilities>| -> Option<Capabilities> {
        set.as_ref().map(|s| {
            found |= s.iter().any(|c| PLANT.contains(c));
            s.iter().filter(|c| !PLANT.contains(c)).copied().collect()
        })
    };
    let mut out = caps.clone();
    out.set_bounding(strip(caps.bounding()))
        .set_effective(strip(caps.effective()))
        .set_permitted(strip(caps.permitted()))
        .set_inheritable(strip(caps.inheritable()))
        .set_ambient(strip(caps.ambient()));
    (out, found)
}

/// Add `held` to the bounding, effective and permitted sets of the spec's
/// process (what libcontainer will leave the init with).
pub fn augment(spec: &mut Spec, held: &Held) {
    let Some(mut process) = spec.process().clone() else {
        return;
    };
    let Some(mut caps) = process.capabilities().clone() else {
        return;
    };
    let add = |set: &Option<Capabilities>, held: &[Capability]| -> Option<Capabilities> {
        let mut s = set.clone().unwrap_or_default();
        s.extend(held.iter().copied());
        Some(s)
    };
    caps.set_bounding(add(caps.bounding(), &held.bounding));
    caps.set_effective(add(caps.effective(), &held.effective));
    caps.set_permitted(add(caps.permitted(), &held.permitted));
    process.set_capabilities(Some(caps));
    spec.set_process(Some(process));
}

/// The spec's capability sets without `held` (inheritable and ambient were
/// never added to).
fn without(caps: &LinuxCapabilities, held: &Held) -> LinuxCapabilities {
    let strip = |set: &Option<Capabilities>, held: &[Capability]| -> Option<Capabilities> {
        set.as_ref().map(|s| {
            s.iter()
                .filter(|c| !held.contains(c))
                .copied()
                .collect::<HashSet<_>>()
        })
    };
    let mut out = caps.clone();
    out.set_bounding(strip(caps.bounding(), &held.bounding));
    out.set_effective(strip(caps.effective(), &held.effective));
    out.set_permitted(strip(caps.permitted(), &held.permitted));
    out
}

/// Drop `held` from the calling process: the sets become the running spec's
/// sets without them (bounding first, while CAP_SETPCAP is still held).
/// Called after the filters are installed, so the profile must allow
/// `capset` and `prctl`, as it must for runc.
pub fn release(spec: &Spec, held: &Held) -> Result<(), String> {
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

/// Read what a shadow bundle recorded as held (empty when none); a list
/// (written before sets were recorded) was added to all three sets.
pub fn read_held(shadow_dir: &std::path::Path) -> Held {
    let Ok(bytes) = std::fs::read(shadow_dir.join(HELD_FILE)) else {
        return Held::default();
    };
    serde_json::from_slice(&bytes)
        .or_else(|_| {
            serde_json::from_slice::<Vec<Capability>>(&bytes).map(|l| Held {
                bounding: l.clone(),
                effective: l.clone(),
                permitted: l,
            })
        })
        .unwrap_or_default()
}

/// Lower each of this process's resource limits to `limits`' of the same
/// type where it is looser (never raises one).
pub fn no_looser_than(limits: &[oci_spec::runtime::PosixRlimit]) -> nix::Result<()> {
    use nix::sys::resource::{getrlimit, setrlimit};
    for l in limits {
        let resource = resource_of(l.typ());
        let (soft, hard) = getrlimit(resource)?;
        let (want_soft, want_hard) = (soft.min(l.soft()), hard.min(l.hard()));
        if (want_soft, want_hard) != (soft, hard) {
            setrlimit(resource, want_soft.min(want_hard), want_hard)?;
        }
    }
    Ok(())
}

fn resource_of(t: oci_spec::runtime::PosixRlimitType) -> nix::sys::resource::Resource {
    use nix::sys::resource::Resource as R;
    use oci_spec::runtime::PosixRlimitType as T;
    match t {
        T::RlimitCpu => R::RLIMIT_CPU,
        T::RlimitFsize => R::RLIMIT_FSIZE,
        T::RlimitData => R::RLIMIT_DATA,
        T::RlimitStack => R::RLIMIT_STACK,
        T::RlimitCore => R::RLIMIT_CORE,
        T::RlimitRss => R::RLIMIT_RSS,
        T::RlimitNproc => R::RLIMIT_NPROC,
        T::RlimitNofile => R::RLIMIT_NOFILE,
        T::RlimitMemlock => R::RLIMIT_MEMLOCK,
        T::RlimitAs => R::RLIMIT_AS,
        T::RlimitLocks => R::RLIMIT_LOCKS,
        T::RlimitSigpending => R::RLIMIT_SIGPENDING,
        T::RlimitMsgqueue => R::RLIMIT_MSGQUEUE,
        T::RlimitNice => R::RLIMIT_NICE,
        T::RlimitRtprio => R::RLIMIT_RTPRIO,
        T::RlimitRttime => R::RLIMIT_RTTIME,
    }
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

    fn all(list: &[Capability]) -> Held {
        Held {
            bounding: list.to_vec(),
            effective: list.to_vec(),
            permitted: list.to_vec(),
        }
    }

    #[test]
    fn holds_only_what_confinement_needs() {
        let chown = [Capability::Chown];
        assert_eq!(
            to_hold(&spec(Some(false), &chown)),
            all(&[Capability::SysAdmin, Capability::Setpcap])
        );
        assert!(to_hold(&spec(Some(true), &chown)).is_empty());
        assert!(to_hold(&spec(None, &[Capability::SysAdmin, Capability::Setpcap])).is_empty());
        assert_eq!(
            to_hold(&spec(None, &[Capability::Setpcap])),
            all(&[Capability::SysAdmin])
        );
    }

    #[test]
    fn held_only_where_the_spec_lacks_it_and_for_inheritable_beyond_permitted() {
        let mut s = spec(Some(false), &[Capability::Chown]);
        let mut process = s.process().clone().unwrap();
        let mut caps = process.capabilities().clone().unwrap();
        caps.set_bounding(Some([Capability::Chown, Capability::SysAdmin].into()));
        caps.set_inheritable(Some([Capability::Kill, Capability::SysAdmin].into()));
        process.set_capabilities(Some(caps.clone()));
        s.set_process(Some(process));
        let held = to_hold(&s);
        // SYS_ADMIN already bounded: only SETPCAP is added there; KILL is
        // outside the bounding set, which the kernel refuses anyway.
        assert_eq!(held.bounding, vec![Capability::Setpcap]);
        assert_eq!(
            held.permitted,
            vec![Capability::SysAdmin, Capability::Setpcap]
        );
        let mut augmented = s.clone();
        augment(&mut augmented, &held);
        let got = augmented.process().as_ref().unwrap().capabilities().clone();
        assert_eq!(without(&got.unwrap(), &held), caps);
        let only_inheritable = spec(Some(true), &[]);
        let mut process = only_inheritable.process().clone().unwrap();
        let mut caps = process.capabilities().clone().unwrap();
        caps.set_bounding(Some([Capability::SysAdmin].into()));
        caps.set_inheritable(Some([Capability::SysAdmin].into()));
        process.set_capabilities(Some(caps));
        let mut s = only_inheritable;
        s.set_process(Some(process));
        let held = to_hold(&s);
        assert!(held.bounding.is_empty());
        assert_eq!(held.effective, vec![Capability::SysAdmin]);
        assert_eq!(
            held.clone().except(&[Capability::SysAdmin]),
            Held::default()
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
