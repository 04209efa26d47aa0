//! An OCI `linux.seccomp` profile reduced to a [`Filter`], with runc's
//! reading of the profile:
//!
//! * rules for syscall names the architecture does not have are skipped
//!   (debug log);
//! * rules whose action equals `defaultAction` are skipped (libseccomp
//!   refuses them, runc drops them);
//! * a syscall entry with several conditions on the same argument becomes
//!   one rule per condition (OR), otherwise its conditions are ANDed;
//! * `errnoRet` defaults to EPERM for SCMP_ACT_ERRNO and to 0 for
//!   SCMP_ACT_TRACE (what sandboy always did; runc passes EPERM to the
//!   tracer there); SCMP_ACT_KILL is SCMP_ACT_KILL_THREAD.
//!
//! When several rules of a syscall match, the most restrictive action wins
//! (see [`super::compile::precedence`]), as it did with the chain of
//! filters sandboy installed before.

use std::collections::BTreeMap;

use oci_spec::runtime::{
    Arch as OciArch, LinuxSeccomp, LinuxSeccompAction, LinuxSeccompArg, LinuxSeccompOperator,
};
use sandboy_spec_gen::syscalls::{self, Arch};

use super::compile::{normalize, x32_verdict, CmpOp, Cond, Filter, Rule};
use crate::ConfineError;

const AUDIT_ARCH_X86_64: u32 = 0xc000_003e;
const AUDIT_ARCH_AARCH64: u32 = 0xc000_00b7;

fn audit_arch(arch: Arch) -> u32 {
    match arch {
        Arch::X86_64 => AUDIT_ARCH_X86_64,
        Arch::Aarch64 => AUDIT_ARCH_AARCH64,
    }
}

fn oci_arch(arch: Arch) -> OciArch {
    match arch {
        Arch::X86_64 => OciArch::ScmpArchX86_64,
        Arch::Aarch64 => OciArch::ScmpArchAarch64,
    }
}

/// The `SECCOMP_RET_*` value of an OCI action.
pub(crate) fn action(act: LinuxSeccompAction, errno_ret: Option<u32>) -> u32 {
    let data = |default: i32| errno_ret.unwrap_or(default as u32) & libc::SECCOMP_RET_DATA;
    match act {
        LinuxSeccompAction::ScmpActAllow => libc::SECCOMP_RET_ALLOW,
        LinuxSeccompAction::ScmpActErrno => libc::SECCOMP_RET_ERRNO | data(libc::EPERM),
        // libseccomp's SCMP_ACT_KILL is SCMP_ACT_KILL_THREAD.
        LinuxSeccompAction::ScmpActKill | LinuxSeccompAction::ScmpActKillThread => {
            libc::SECCOMP_RET_KILL_THREAD
        }
        LinuxSeccompAction::ScmpActKillProcess => libc::SECCOMP_RET_KILL_PROCESS,
        LinuxSeccompAction::ScmpActTrap => libc::SECCOMP_RET_TRAP,
        LinuxSeccompAction::ScmpActLog => libc::SECCOMP_RET_LOG,
        LinuxSeccompAction::ScmpActTrace => libc::SECCOMP_RET_TRACE | data(0),
        LinuxSeccompAction::ScmpActNotify => libc::SECCOMP_RET_USER_NOTIF,
    }
}

/// Whether the profile has SCMP_ACT_NOTIFY rules (which need an agent at
/// `listenerPath`).
pub fn notifies(seccomp: &LinuxSeccomp) -> bool {
    seccomp
        .syscalls()
        .iter()
        .flatten()
        .any(|sc| sc.action() == LinuxSeccompAction::ScmpActNotify)
}

fn condition(arg: &LinuxSeccompArg, location: &str) -> Result<Cond, ConfineError> {
    let index = u8::try_from(arg.index())
        .ok()
        .filter(|&i| i <= 5)
        .ok_or_else(|| {
            ConfineError::seccomp(
                location,
                format!("argument index {} out of range", arg.index()),
                "syscall arguments are numbered 0 to 5",
            )
        })?;
    let (op, value) = match arg.op() {
        LinuxSeccompOperator::ScmpCmpNe => (CmpOp::Ne, arg.value()),
        LinuxSeccompOperator::ScmpCmpLt => (CmpOp::Lt, arg.value()),
        LinuxSeccompOperator::ScmpCmpLe => (CmpOp::Le, arg.value()),
        LinuxSeccompOperator::ScmpCmpEq => (CmpOp::Eq, arg.value()),
        LinuxSeccompOperator::ScmpCmpGe => (CmpOp::Ge, arg.value()),
        LinuxSeccompOperator::ScmpCmpGt => (CmpOp::Gt, arg.value()),
        // libseccomp: (arg & value) == (valueTwo & value).
        LinuxSeccompOperator::ScmpCmpMaskedEq => {
            (CmpOp::MaskedEq(arg.value()), arg.value_two().unwrap_or(0))
        }
    };
    Ok(Cond { index, op, value })
}

/// A condition that holds for every argument value (a zero mask).
fn tautology(c: &Cond) -> bool {
    c.op == CmpOp::MaskedEq(0)
}

/// The rules (OR) of one syscall entry.
fn entry_rules(
    ret: u32,
    args: &[LinuxSeccompArg],
    location: &str,
) -> Result<Vec<Rule>, ConfineError> {
    let conds = args
        .iter()
        .enumerate()
        .map(|(j, a)| condition(a, &format!("{location}.args[{j}]")))
        .collect::<Result<Vec<_>, _>>()?;
    let mut per_index = [0usize; 6];
    for c in &conds {
        per_index[usize::from(c.index)] += 1;
    }
    let rule = |conds: Vec<Cond>| Rule {
        ret,
        conds: conds.into_iter().filter(|c| !tautology(c)).collect(),
    };
    Ok(if per_index.iter().any(|&n| n > 1) {
        // runc: several conditions on one argument -> one rule each (OR).
        conds.into_iter().map(|c| rule(vec![c])).collect()
    } else {
        vec![rule(conds)]
    })
}

fn check_arch(seccomp: &LinuxSeccomp, arch: Arch) -> Result<(), ConfineError> {
    let Some(archs) = seccomp.architectures() else {
        return Ok(());
    };
    let native = |a: &OciArch| *a == oci_arch(arch) || *a == OciArch::ScmpArchNative;
    if !archs.is_empty() && !archs.iter().any(native) {
        return Err(ConfineError::seccomp(
            ".architectures",
            format!(
                "the profile lists {archs:?} but not the native {}",
                arch.oci_name()
            ),
            format!("add {} to architectures", arch.oci_name()),
        ));
    }
    for a in archs.iter().filter(|a| !native(a)) {
        tracing::debug!(
            ?a,
            "seccomp: only the native architecture is filtered; syscalls of {a:?} are killed"
        );
    }
    Ok(())
}

fn check_notify(seccomp: &LinuxSeccomp) -> Result<(), ConfineError> {
    if seccomp.default_action() == LinuxSeccompAction::ScmpActNotify {
        return Err(ConfineError::seccomp(
            ".defaultAction",
            "SCMP_ACT_NOTIFY cannot be the default action (every syscall, the runtime's own included, would wait for the agent)",
            "list the syscalls to notify in syscalls[] instead",
        ));
    }
    if notifies(seccomp) && seccomp.listener_path().is_none() {
        return Err(ConfineError::seccomp(
            ".listenerPath",
            "SCMP_ACT_NOTIFY rules need a listenerPath to send the notification fd to",
            "set linux.seccomp.listenerPath to the agent's unix socket",
        ));
    }
    Ok(())
}

/// Reduces a profile to the filter for `arch`.
pub(crate) fn filter(seccomp: &LinuxSeccomp, arch: Arch) -> Result<Filter, ConfineError> {
    check_notify(seccomp)?;
    check_arch(seccomp, arch)?;
    let default = action(seccomp.default_action(), seccomp.default_errno_ret());
    let mut table: BTreeMap<u32, Vec<Rule>> = BTreeMap::new();
    for (i, sc) in seccomp.syscalls().iter().flatten().enumerate() {
        let location = format!(".syscalls[{i}]");
        let ret = action(sc.action(), sc.errno_ret());
        let rules = entry_rules(ret, sc.args().as_deref().unwrap_or_default(), &location)?;
        if ret == default {
            tracing::debug!(%location, "seccomp: rule action equals defaultAction; skipped");
            continue;
        }
        for name in sc.names() {
            match syscalls::number(arch, name).and_then(|nr| u32::try_from(nr).ok()) {
                Some(nr) => table.entry(nr).or_default().extend(rules.iter().cloned()),
                None => tracing::debug!(
                    %location,
                    syscall = %name,
                    %arch,
                    "seccomp: syscall unknown on this architecture; rule ignored (as runc does)"
                ),
            }
        }
    }
    for rules in table.values_mut() {
        normalize(rules);
    }
    let newest = syscalls::newest(arch).and_then(|nr| u32::try_from(nr).ok());
    Ok(Filter {
        audit_arch: audit_arch(arch),
        x32_guard: arch == Arch::X86_64,
        unreviewed: newest
            .map(|nr| nr + 1)
            .filter(|_| x32_verdict(default) != default),
        default,
        syscalls: table,
    })
}
