//! OCI `linux.seccomp` compiled to classic BPF with `seccompiler`, and
//! installed right before execve. libcontainer is built without its
//! `libseccomp` feature, so this is the only seccomp path: anything that
//! cannot be expressed is an error, never a silent drop.
//!
//! One seccompiler filter can return one action on match, so a profile
//! becomes a chain of filters, which the kernel runs all of, taking the most
//! restrictive result (KILL_PROCESS > KILL_THREAD > TRAP > ERRNO > TRACE >
//! LOG > ALLOW) — the same precedence libseccomp gives rules within one
//! filter:
//!
//! * the *default* filter returns ALLOW for every syscall (with its argument
//!   conditions) that some rule matches, and `defaultAction` otherwise;
//! * one filter per other action returns that action for its rules, ALLOW
//!   otherwise;
//! * on x86_64 a guard returns ENOSYS for x32-ABI syscall numbers
//!   (`nr >= 0x40000000`), which share the x86_64 audit arch and would
//!   otherwise slip past a deny-list profile.
//!
//! Only the native architecture is filtered; seccompiler's arch check kills
//! the process for a syscall from any other architecture (e.g. i386
//! `int 0x80`), even if the profile lists it.
//!
//! Matching runc: rules for syscall names the architecture does not have are
//! skipped (debug log); rules whose action equals `defaultAction` are
//! skipped; a syscall entry with several conditions on the same argument
//! becomes one rule per condition (OR), otherwise its conditions are ANDed.

use std::collections::BTreeMap;
use std::io;
use std::os::fd::{FromRawFd, OwnedFd, RawFd};

use oci_spec::runtime::{
    Arch as OciArch, LinuxSeccomp, LinuxSeccompAction, LinuxSeccompFilterFlag, LinuxSeccompOperator,
};
use sandboy_spec_gen::syscalls::{self, Arch};
use seccompiler::{
    sock_filter, BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition,
    SeccompFilter, SeccompRule, TargetArch,
};

use crate::ConfineError;

const X32_SYSCALL_BIT: u32 = 0x4000_0000;
const AUDIT_ARCH_X86_64: u32 = 0xc000_003e;
const AUDIT_ARCH_AARCH64: u32 = 0xc000_00b7;

/// A compiled profile: the filters to install, in order, and the
/// `seccomp(2)` flags to install them with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompiledSeccomp {
    filters: Vec<BpfProgram>,
    flags: libc::c_ulong,
    /// The filter holding SCMP_ACT_NOTIFY verdicts: installed with a new
    /// listener, whose fd goes to the spec's `listenerPath`.
    notify_filter: Option<usize>,
}

impl CompiledSeccomp {
    /// The BPF programs, in installation order.
    pub fn filters(&self) -> &[BpfProgram] {
        &self.filters
    }

    /// `SECCOMP_FILTER_FLAG_*` bits used for every filter.
    pub fn flags(&self) -> libc::c_ulong {
        self.flags
    }

    /// Whether the profile has SCMP_ACT_NOTIFY rules (so `install` returns
    /// a listener).
    pub fn has_notify(&self) -> bool {
        self.notify_filter.is_some()
    }

    /// Installs every filter on the calling thread (all threads with TSYNC).
    /// Needs `no_new_privs` or `CAP_SYS_ADMIN`; does not set `no_new_privs`
    /// itself (that is the spec's `process.noNewPrivileges`). Returns the
    /// user-notification listener when the profile has SCMP_ACT_NOTIFY rules.
    pub fn install(&self) -> Result<Option<OwnedFd>, ConfineError> {
        let mut listener = None;
        for (i, prog) in self.filters.iter().enumerate() {
            let mut flags = self.flags;
            if self.notify_filter == Some(i) {
                flags |= SECCOMP_FILTER_FLAG_NEW_LISTENER;
                if flags & libc::SECCOMP_FILTER_FLAG_TSYNC != 0 {
                    flags |= SECCOMP_FILTER_FLAG_TSYNC_ESRCH;
                }
            }
            let fprog = libc::sock_fprog {
                len: prog.len() as libc::c_ushort,
                // seccompiler's sock_filter is a repr(C) copy of the kernel's
                // struct sock_filter, identical to libc's.
                filter: prog.as_ptr() as *mut libc::sock_filter,
            };
            // SAFETY: fprog points to `len` valid BPF instructions that stay
            // alive for the call; the kernel copies them and writes nothing.
            let rc = unsafe {
                libc::syscall(
                    libc::SYS_seccomp,
                    libc::SECCOMP_SET_MODE_FILTER,
                    flags,
                    &fprog as *const libc::sock_fprog,
                )
            };
            if rc < 0 {
                let err = io::Error::last_os_error();
                if err.raw_os_error() == Some(libc::EACCES) {
                    return Err(ConfineError::Privilege { what: "seccomp" });
                }
                return Err(ConfineError::kernel(
                    format!("seccomp(SET_MODE_FILTER) of filter {i}"),
                    err,
                ));
            }
            if self.notify_filter == Some(i) {
                // SAFETY: with NEW_LISTENER a successful call returns a new
                // fd that nothing else owns.
                listener = Some(unsafe { OwnedFd::from_raw_fd(rc as RawFd) });
            } else if rc > 0 {
                return Err(ConfineError::kernel(
                    format!("seccomp TSYNC: thread {rc} could not be synchronised"),
                    io::Error::from_raw_os_error(libc::ESRCH),
                ));
            }
        }
        Ok(listener)
    }
}

fn target_arch(arch: Arch) -> TargetArch {
    match arch {
        Arch::X86_64 => TargetArch::x86_64,
        Arch::Aarch64 => TargetArch::aarch64,
    }
}

fn oci_arch(arch: Arch) -> OciArch {
    match arch {
        Arch::X86_64 => OciArch::ScmpArchX86_64,
        Arch::Aarch64 => OciArch::ScmpArchAarch64,
    }
}

fn action(
    act: LinuxSeccompAction,
    errno_ret: Option<u32>,
    location: &str,
) -> Result<SeccompAction, ConfineError> {
    Ok(match act {
        LinuxSeccompAction::ScmpActAllow => SeccompAction::Allow,
        LinuxSeccompAction::ScmpActErrno => {
            SeccompAction::Errno(errno_ret.unwrap_or(libc::EPERM as u32))
        }
        // libseccomp's SCMP_ACT_KILL is SCMP_ACT_KILL_THREAD.
        LinuxSeccompAction::ScmpActKill | LinuxSeccompAction::ScmpActKillThread => {
            SeccompAction::KillThread
        }
        LinuxSeccompAction::ScmpActKillProcess => SeccompAction::KillProcess,
        LinuxSeccompAction::ScmpActTrap => SeccompAction::Trap,
        LinuxSeccompAction::ScmpActLog => SeccompAction::Log,
        LinuxSeccompAction::ScmpActTrace if errno_ret == Some(NOTIFY_MARK) => {
            return Err(ConfineError::seccomp(
                location,
                format!("SCMP_ACT_TRACE with errnoRet {NOTIFY_MARK} is reserved by sandboy"),
                "use another errnoRet",
            ))
        }
        LinuxSeccompAction::ScmpActTrace => SeccompAction::Trace(errno_ret.unwrap_or(0)),
        // seccompiler has no user-notification action: a marked TRACE stands
        // in for it and is rewritten to SECCOMP_RET_USER_NOTIF after codegen.
        LinuxSeccompAction::ScmpActNotify => SeccompAction::Trace(NOTIFY_MARK),
    })
}

/// The TRACE data that marks a user-notification verdict in generated BPF.
const NOTIFY_MARK: u32 = 0xfff7;
const SECCOMP_RET_TRACE: u32 = 0x7ff0_0000;
const SECCOMP_RET_USER_NOTIF: u32 = 0x7fc0_0000;
const SECCOMP_FILTER_FLAG_NEW_LISTENER: libc::c_ulong = 1 << 3;
const SECCOMP_FILTER_FLAG_TSYNC_ESRCH: libc::c_ulong = 1 << 4;
const BPF_RET_K: u16 = 0x06;

/// Rewrite the marked TRACE returns of `prog` into USER_NOTIF; true if any.
fn mark_notify(prog: &mut BpfProgram) -> bool {
    let mut any = false;
    for insn in prog.iter_mut() {
        if insn.code == BPF_RET_K && insn.k == SECCOMP_RET_TRACE | NOTIFY_MARK {
            insn.k = SECCOMP_RET_USER_NOTIF;
            any = true;
        }
    }
    any
}

fn flags(seccomp: &LinuxSeccomp) -> Result<libc::c_ulong, ConfineError> {
    let mut bits = 0;
    for flag in seccomp.flags().iter().flatten() {
        bits |= match flag {
            LinuxSeccompFilterFlag::SeccompFilterFlagTsync => libc::SECCOMP_FILTER_FLAG_TSYNC,
            LinuxSeccompFilterFlag::SeccompFilterFlagLog => libc::SECCOMP_FILTER_FLAG_LOG,
            LinuxSeccompFilterFlag::SeccompFilterFlagSpecAllow => {
                libc::SECCOMP_FILTER_FLAG_SPEC_ALLOW
            }
            other => {
                return Err(ConfineError::seccomp(
                    ".flags",
                    format!("filter flag {other} is not supported by sandboy"),
                    "remove it (supported: SECCOMP_FILTER_FLAG_TSYNC, SECCOMP_FILTER_FLAG_LOG, SECCOMP_FILTER_FLAG_SPEC_ALLOW)",
                ))
            }
        };
    }
    Ok(bits)
}

fn condition(
    arg: &oci_spec::runtime::LinuxSeccompArg,
    location: &str,
) -> Result<SeccompCondition, ConfineError> {
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
        LinuxSeccompOperator::ScmpCmpNe => (SeccompCmpOp::Ne, arg.value()),
        LinuxSeccompOperator::ScmpCmpLt => (SeccompCmpOp::Lt, arg.value()),
        LinuxSeccompOperator::ScmpCmpLe => (SeccompCmpOp::Le, arg.value()),
        LinuxSeccompOperator::ScmpCmpEq => (SeccompCmpOp::Eq, arg.value()),
        LinuxSeccompOperator::ScmpCmpGe => (SeccompCmpOp::Ge, arg.value()),
        LinuxSeccompOperator::ScmpCmpGt => (SeccompCmpOp::Gt, arg.value()),
        // libseccomp: (arg & value) == valueTwo.
        LinuxSeccompOperator::ScmpCmpMaskedEq => (
            SeccompCmpOp::MaskedEq(arg.value()),
            arg.value_two().unwrap_or(0),
        ),
    };
    SeccompCondition::new(index, SeccompCmpArgLen::Qword, op, value)
        .map_err(|e| ConfineError::seccomp(location, e.to_string(), "fix the argument condition"))
}

/// Rules of one action: syscall number -> `None` (unconditional) or the
/// alternative rules (OR) that must match.
type Group = BTreeMap<i64, Option<Vec<SeccompRule>>>;

fn add_to_group(group: &mut Group, nr: i64, rules: Option<Vec<SeccompRule>>) {
    let entry = group.entry(nr).or_insert_with(|| Some(Vec::new()));
    match (entry.as_mut(), rules) {
        (_, None) => *entry = None,
        (Some(existing), Some(mut more)) => existing.append(&mut more),
        (None, Some(_)) => {} // already unconditional
    }
}

fn into_rules(group: Group) -> BTreeMap<i64, Vec<SeccompRule>> {
    group
        .into_iter()
        .map(|(nr, rules)| (nr, rules.unwrap_or_default()))
        .collect()
}

fn bpf(
    filter: Result<SeccompFilter, seccompiler::BackendError>,
) -> Result<BpfProgram, ConfineError> {
    filter.and_then(BpfProgram::try_from).map_err(|e| {
        ConfineError::seccomp(
            "",
            format!("cannot compile the profile to BPF: {e}"),
            "simplify the profile (fewer rules or conditions)",
        )
    })
}

/// Compiles a profile for the native architecture.
pub fn compile(seccomp: &LinuxSeccomp) -> Result<CompiledSeccomp, ConfineError> {
    let arch = Arch::native().ok_or_else(|| {
        ConfineError::seccomp(
            "",
            format!(
                "sandboy has no syscall table for {}",
                std::env::consts::ARCH
            ),
            "run on x86_64 or aarch64, or remove linux.seccomp",
        )
    })?;
    compile_for(seccomp, arch)
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

/// Compiles a profile for `arch` (tests compile for the non-native one too).
pub fn compile_for(seccomp: &LinuxSeccomp, arch: Arch) -> Result<CompiledSeccomp, ConfineError> {
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
    if let Some(archs) = seccomp.architectures() {
        if !archs.is_empty()
            && !archs
                .iter()
                .any(|a| *a == oci_arch(arch) || *a == OciArch::ScmpArchNative)
        {
            return Err(ConfineError::seccomp(
                ".architectures",
                format!(
                    "the profile lists {archs:?} but not the native {}",
                    arch.oci_name()
                ),
                format!("add {} to architectures", arch.oci_name()),
            ));
        }
        for a in archs {
            if *a != oci_arch(arch) && *a != OciArch::ScmpArchNative {
                tracing::debug!(
                    ?a,
                    "seccomp: only the native architecture is filtered; syscalls of {a:?} are killed"
                );
            }
        }
    }
    let flags = flags(seccomp)?;
    let default = action(
        seccomp.default_action(),
        seccomp.default_errno_ret(),
        ".defaultAction",
    )?;

    // Group the rules by action.
    let mut groups: Vec<(SeccompAction, Group)> = Vec::new();
    for (i, sc) in seccomp.syscalls().iter().flatten().enumerate() {
        let location = format!(".syscalls[{i}]");
        let act = action(sc.action(), sc.errno_ret(), &location)?;
        let args = sc.args().as_deref().unwrap_or_default();
        let conds = args
            .iter()
            .enumerate()
            .map(|(j, a)| condition(a, &format!("{location}.args[{j}]")))
            .collect::<Result<Vec<_>, _>>()?;
        if act == default {
            tracing::debug!(%location, "seccomp: rule action equals defaultAction; skipped");
            continue;
        }
        let mut per_index = [0usize; 6];
        for a in args {
            per_index[a.index()] += 1;
        }
        let rules = if conds.is_empty() {
            None
        } else if per_index.iter().any(|&n| n > 1) {
            // runc: several conditions on one argument -> one rule each (OR).
            Some(
                conds
                    .into_iter()
                    .map(|c| SeccompRule::new(vec![c]))
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|e| {
                        ConfineError::seccomp(location.as_str(), e.to_string(), "fix the rule")
                    })?,
            )
        } else {
            Some(vec![SeccompRule::new(conds).map_err(|e| {
                ConfineError::seccomp(location.as_str(), e.to_string(), "fix the rule")
            })?])
        };
        let group = match groups.iter().position(|(a, _)| *a == act) {
            Some(p) => &mut groups[p].1,
            None => {
                groups.push((act, Group::new()));
                &mut groups.last_mut().expect("just pushed").1
            }
        };
        for name in sc.names() {
            match syscalls::number(arch, name) {
                Some(nr) => add_to_group(group, nr, rules.clone()),
                None => tracing::debug!(
                    %location,
                    syscall = %name,
                    %arch,
                    "seccomp: syscall unknown on this architecture; rule ignored (as runc does)"
                ),
            }
        }
    }
    groups.retain(|(_, g)| !g.is_empty());

    let target = target_arch(arch);
    let seccomp_nr = syscalls::number(arch, "seccomp").expect("every table has seccomp");
    // The verdict for `seccomp` itself is computed by the last filter alone
    // (see `seccomp_last`), so that the filters installed before it cannot
    // refuse the installation of the next one.
    let last = seccomp_last(&groups, &default, seccomp_nr, target)?;

    let mut filters = Vec::new();
    if arch == Arch::X86_64 {
        filters.push(x32_guard());
    }
    if default != SeccompAction::Allow {
        // Everything some rule matches is decided by the action filters.
        let mut matched = Group::new();
        for (_, g) in &groups {
            for (nr, rules) in g {
                add_to_group(&mut matched, *nr, rules.clone());
            }
        }
        filters.push(bpf(SeccompFilter::new(
            into_rules(matched),
            default.clone(),
            SeccompAction::Allow,
            target,
        ))?);
    }
    for (act, group) in groups {
        if act == SeccompAction::Allow {
            continue; // covered by the default filter
        }
        filters.push(bpf(SeccompFilter::new(
            into_rules(group),
            SeccompAction::Allow,
            act,
            target,
        ))?);
    }
    if filters.is_empty() {
        // An allow-all profile still gets the architecture check.
        filters.push(bpf(SeccompFilter::new(
            BTreeMap::new(),
            SeccompAction::Allow,
            SeccompAction::KillProcess,
            target,
        ))?);
    }
    if let Some(last) = last {
        let audit = audit_arch(arch);
        for f in &mut filters {
            let mut prog = seccomp_prefix(audit, seccomp_nr, false);
            prog.append(f);
            *f = prog;
        }
        filters.push(last);
    }
    let mut marked = filters
        .iter_mut()
        .enumerate()
        .filter_map(|(i, f)| mark_notify(f).then_some(i));
    let notify_filter = marked.next();
    if marked.next().is_some() {
        // Only one filter per process may have a listener.
        return Err(ConfineError::seccomp(
            ".syscalls",
            "SCMP_ACT_NOTIFY on `seccomp` itself is not supported by sandboy",
            "notify other syscalls",
        ));
    }
    Ok(CompiledSeccomp {
        filters,
        flags,
        notify_filter,
    })
}

fn audit_arch(arch: Arch) -> u32 {
    match arch {
        Arch::X86_64 => AUDIT_ARCH_X86_64,
        Arch::Aarch64 => AUDIT_ARCH_AARCH64,
    }
}

/// The filter installed last, when the profile may refuse `seccomp(2)`
/// itself: it returns ALLOW for every other syscall and, for `seccomp`, what
/// the whole profile would (its one rule group's action if the rules match,
/// else the default action). Every other filter gets a prefix that returns
/// ALLOW for `seccomp`. `None` when nothing refuses `seccomp`.
fn seccomp_last(
    groups: &[(SeccompAction, Group)],
    default: &SeccompAction,
    nr: i64,
    target: TargetArch,
) -> Result<Option<BpfProgram>, ConfineError> {
    let with_nr: Vec<_> = groups
        .iter()
        .filter_map(|(act, g)| g.get(&nr).map(|rules| (act, rules)))
        .collect();
    let (rules, mismatch, matched) = match with_nr.as_slice() {
        [] if *default == SeccompAction::Allow => return Ok(None),
        [] => (None, SeccompAction::Allow, default.clone()),
        [(act, rules)] => ((*rules).clone(), default.clone(), (*act).clone()),
        _ => {
            return Err(ConfineError::seccomp(
                ".syscalls",
                "syscall \"seccomp\" has rules with several different actions",
                "give all rules for \"seccomp\" one action",
            ))
        }
    };
    let mut map = BTreeMap::new();
    map.insert(nr, rules.unwrap_or_default());
    let sub = bpf(SeccompFilter::new(map, mismatch, matched, target))?;
    let audit = match target {
        TargetArch::aarch64 => AUDIT_ARCH_AARCH64,
        _ => AUDIT_ARCH_X86_64,
    };
    let mut prog = seccomp_prefix(audit, nr, true);
    prog.extend(sub);
    Ok(Some(prog))
}

/// Five instructions run before a filter body, on the native arch only:
/// `only_seccomp == false`: `seccomp` -> ALLOW, anything else -> the body;
/// `only_seccomp == true`: `seccomp` -> the body, anything else -> ALLOW.
/// A foreign arch goes to the body, whose arch check kills.
fn seccomp_prefix(audit_arch: u32, nr: i64, only_seccomp: bool) -> BpfProgram {
    const LD_W_ABS: u16 = (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16;
    const JEQ_K: u16 = (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16;
    const RET_K: u16 = (libc::BPF_RET | libc::BPF_K) as u16;
    let ins = |code, jt, jf, k| sock_filter { code, jt, jf, k };
    let (jt, jf) = if only_seccomp { (1, 0) } else { (0, 1) };
    vec![
        ins(LD_W_ABS, 0, 0, 4), // seccomp_data.arch
        ins(JEQ_K, 0, 3, audit_arch),
        ins(LD_W_ABS, 0, 0, 0), // seccomp_data.nr
        ins(JEQ_K, jt, jf, nr as u32),
        ins(RET_K, 0, 0, libc::SECCOMP_RET_ALLOW),
    ]
}

/// x86_64 only: ENOSYS for x32-ABI syscall numbers, ALLOW for the rest.
fn x32_guard() -> BpfProgram {
    const LD_W_ABS: u16 = (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16;
    const JEQ_K: u16 = (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16;
    const JGE_K: u16 = (libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K) as u16;
    const RET_K: u16 = (libc::BPF_RET | libc::BPF_K) as u16;
    let ins = |code, jt, jf, k| sock_filter { code, jt, jf, k };
    vec![
        ins(LD_W_ABS, 0, 0, 4), // seccomp_data.arch
        ins(JEQ_K, 0, 3, AUDIT_ARCH_X86_64),
        ins(LD_W_ABS, 0, 0, 0), // seccomp_data.nr
        ins(JGE_K, 0, 1, X32_SYSCALL_BIT),
        ins(RET_K, 0, 0, libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32),
        ins(RET_K, 0, 0, libc::SECCOMP_RET_ALLOW),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profile(json: &str) -> LinuxSeccomp {
        serde_json::from_str(json).expect("profile JSON")
    }

    #[test]
    fn deny_list_profile() {
        let p = profile(
            r#"{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[
                {"names":["ptrace","mount"],"action":"SCMP_ACT_ERRNO","errnoRet":1},
                {"names":["kexec_load"],"action":"SCMP_ACT_KILL_PROCESS"}]}"#,
        );
        let c = compile_for(&p, Arch::X86_64).unwrap();
        // x32 guard + errno filter + kill filter; no default filter.
        assert_eq!(c.filters().len(), 3);
        assert_eq!(c.flags(), 0);
        let c = compile_for(&p, Arch::Aarch64).unwrap();
        assert_eq!(c.filters().len(), 2);
    }

    #[test]
    fn allow_list_profile_with_conditions() {
        let p = profile(
            r#"{"defaultAction":"SCMP_ACT_ERRNO","defaultErrnoRet":38,
                "architectures":["SCMP_ARCH_X86_64","SCMP_ARCH_X86","SCMP_ARCH_X32","SCMP_ARCH_AARCH64"],
                "flags":["SECCOMP_FILTER_FLAG_LOG"],
                "syscalls":[
                {"names":["read","write","exit_group","no_such_syscall"],"action":"SCMP_ACT_ALLOW"},
                {"names":["personality"],"action":"SCMP_ACT_ALLOW","args":[
                    {"index":0,"value":0,"op":"SCMP_CMP_EQ"},
                    {"index":0,"value":8,"op":"SCMP_CMP_EQ"}]},
                {"names":["clone"],"action":"SCMP_ACT_ALLOW","args":[
                    {"index":0,"value":2114060288,"valueTwo":0,"op":"SCMP_CMP_MASKED_EQ"},
                    {"index":1,"value":5,"op":"SCMP_CMP_LE"}]},
                {"names":["ptrace"],"action":"SCMP_ACT_ERRNO","errnoRet":38},
                {"names":["uname"],"action":"SCMP_ACT_LOG"},
                {"names":["getpid"],"action":"SCMP_ACT_TRACE","errnoRet":7},
                {"names":["kill"],"action":"SCMP_ACT_TRAP"}]}"#,
        );
        for arch in Arch::ALL {
            let c = compile_for(&p, arch).unwrap();
            // [x32 guard] + default + LOG + TRACE + TRAP (ptrace rule =
            // default, skipped) + the last one deciding `seccomp` itself.
            let guard = usize::from(arch == Arch::X86_64);
            assert_eq!(c.filters().len(), guard + 5, "{arch}");
            assert_eq!(c.flags(), libc::SECCOMP_FILTER_FLAG_LOG);
        }
    }

    #[test]
    fn notify_rules_become_user_notif_in_one_filter() {
        let c = compile_for(
            &profile(
                r#"{"defaultAction":"SCMP_ACT_ALLOW","listenerPath":"/run/a.sock","syscalls":[{"names":["getcwd"],"action":"SCMP_ACT_NOTIFY"}]}"#,
            ),
            Arch::X86_64,
        )
        .unwrap();
        assert!(c.has_notify());
        let rets = |k: u32| {
            c.filters()
                .iter()
                .flatten()
                .filter(|i| i.code == BPF_RET_K && i.k == k)
                .count()
        };
        assert!(rets(SECCOMP_RET_USER_NOTIF) >= 1);
        assert_eq!(rets(SECCOMP_RET_TRACE | NOTIFY_MARK), 0);
    }

    #[test]
    fn unsupported_things_are_errors() {
        let cases = [
            (
                r#"{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"names":["ptrace"],"action":"SCMP_ACT_NOTIFY"}]}"#,
                ".listenerPath",
            ),
            (
                r#"{"defaultAction":"SCMP_ACT_NOTIFY","listenerPath":"/run/a.sock"}"#,
                ".defaultAction",
            ),
            (
                r#"{"defaultAction":"SCMP_ACT_ALLOW","flags":["SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV"]}"#,
                ".flags",
            ),
            (
                r#"{"defaultAction":"SCMP_ACT_ALLOW","architectures":["SCMP_ARCH_ARM"]}"#,
                ".architectures",
            ),
            (
                r#"{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"names":["read"],"action":"SCMP_ACT_ERRNO","args":[{"index":6,"value":1,"op":"SCMP_CMP_EQ"}]}]}"#,
                ".syscalls[0].args[0]",
            ),
        ];
        for (json, location) in cases {
            let err = compile_for(&profile(json), Arch::X86_64).unwrap_err();
            assert!(err.is_config(), "{err}");
            let msg = err.to_string();
            assert!(msg.contains(location), "{json}: {msg}");
        }
    }

    #[test]
    fn allow_all_still_checks_arch() {
        let p = profile(r#"{"defaultAction":"SCMP_ACT_ALLOW"}"#);
        let c = compile_for(&p, Arch::Aarch64).unwrap();
        assert_eq!(c.filters().len(), 1);
        // arch load, jeq, kill, ret allow
        assert_eq!(c.filters()[0].len(), 4);
    }

    #[test]
    fn group_merging() {
        let mut g = Group::new();
        let rule = SeccompRule::new(vec![SeccompCondition::new(
            0,
            SeccompCmpArgLen::Qword,
            SeccompCmpOp::Eq,
            1,
        )
        .unwrap()])
        .unwrap();
        add_to_group(&mut g, 1, Some(vec![rule.clone()]));
        add_to_group(&mut g, 1, Some(vec![rule.clone()]));
        assert_eq!(g[&1].as_ref().unwrap().len(), 2);
        add_to_group(&mut g, 1, None);
        assert!(g[&1].is_none());
        add_to_group(&mut g, 1, Some(vec![rule]));
        assert!(g[&1].is_none());
    }
}
