//! `[syscalls]`: the seccomp deny list.

use std::collections::{BTreeSet, HashSet};

use toml::Spanned;

use super::super::diags::Diags;
use super::super::reader::Table;
use super::super::{DEFAULT_DENY, NEVER_DENY};
use super::values::choice_key;
use crate::error::closest;
use crate::policy::SeccompAction;
use crate::{guards, syscalls};

pub(super) struct Syscalls {
    pub default_deny: bool,
    pub deny: Vec<String>,
    pub action: SeccompAction,
}

pub(super) fn check(mut t: Table, d: &mut Diags) -> Syscalls {
    let default_deny = t.bool(d, "default_deny").is_none_or(|b| *b.get_ref());
    let deny = t
        .strs(d, "deny")
        .map(Spanned::into_inner)
        .unwrap_or_default();
    let allow = t
        .strs(d, "allow")
        .map(Spanned::into_inner)
        .unwrap_or_default();
    let action = choice_key(
        &mut t,
        d,
        "action",
        "seccomp action",
        &[
            ("errno", SeccompAction::Errno),
            ("kill", SeccompAction::Kill),
            ("log", SeccompAction::Log),
        ],
        SeccompAction::Errno,
    );
    t.finish(d);
    let mut set: BTreeSet<String> = if default_deny {
        DEFAULT_DENY.iter().map(|s| s.to_string()).collect()
    } else {
        BTreeSet::new()
    };
    // Guards (named argument rules, see guards.rs): syscall guards come
    // with the built-in list, network guards always (they apply only when
    // the network is restricted).
    if default_deny {
        set.extend(guards::names(guards::Kind::Syscall).map(String::from));
    }
    set.extend(guards::names(guards::Kind::Net).map(String::from));
    let allowed: HashSet<&str> = allow.iter().map(|a| *a.get_ref()).collect();
    for name in &deny {
        if known(d, name, "syscalls.deny") && denied_ok(d, name, &allowed) {
            set.insert(name.get_ref().to_string());
        }
    }
    for name in &allow {
        if known(d, name, "syscalls.allow") && allowed_ok(d, name, default_deny) {
            set.remove(*name.get_ref());
        }
    }
    Syscalls {
        default_deny,
        deny: set.into_iter().collect(),
        action,
    }
}

fn known(d: &mut Diags, s: &Spanned<&str>, key: &str) -> bool {
    let name = *s.get_ref();
    if syscalls::is_known(name) || guards::find(name).is_some() {
        return true;
    }
    let all = syscalls::Arch::ALL
        .iter()
        .flat_map(|&a| syscalls::names(a))
        .chain(guards::GUARDS.iter().map(|g| g.name));
    d.suggest(
        s.span(),
        key,
        format!("unknown syscall \"{name}\""),
        closest(name, all),
        "use a Linux syscall name known on x86_64 or aarch64, as `man 2 syscalls` lists them",
    );
    false
}

fn denied_ok(d: &mut Diags, s: &Spanned<&str>, allowed: &HashSet<&str>) -> bool {
    let name = *s.get_ref();
    if NEVER_DENY.contains(&name) {
        d.error(
            s.span(),
            "syscalls.deny",
            format!("syscall \"{name}\" must stay allowed"),
            "remove it; sandboy needs landlock_*, seccomp, prctl and execve to confine and start the process",
        );
        return false;
    }
    if allowed.contains(name) {
        d.error(
            s.span(),
            "syscalls.deny",
            format!("syscall \"{name}\" is both denied and allowed"),
            "remove it from one of syscalls.deny and syscalls.allow",
        );
        return false;
    }
    true
}

/// `allow` only removes names from the built-in list; anything else would
/// silently do nothing, so it is most likely a mistake.
fn allowed_ok(d: &mut Diags, s: &Spanned<&str>, default_deny: bool) -> bool {
    let name = *s.get_ref();
    let removable = match guards::find(name) {
        Some(g) => default_deny || g.kind == guards::Kind::Net,
        None => default_deny && DEFAULT_DENY.contains(&name),
    };
    if removable {
        return true;
    }
    let why = if default_deny {
        format!("syscall \"{name}\" is not in sandboy's default deny list, so allowing it has no effect")
    } else {
        format!("syscall \"{name}\" is allowed but default_deny = false, so there is nothing to remove it from")
    };
    d.error(
        s.span(),
        "syscalls.allow",
        why,
        "remove it; syscalls.allow only removes names from the built-in list, which `sandboy-spec-gen explain` shows",
    );
    false
}
