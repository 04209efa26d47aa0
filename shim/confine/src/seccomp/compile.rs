//! A normalised profile compiled to one classic-BPF program:
//!
//! 1. the architecture check (anything but the native audit arch is killed);
//! 2. a balanced binary search on the syscall number over the intervals of
//!    the u32 number space that share a verdict (consecutive syscalls with
//!    the same unconditional action are one interval; on x86_64 the x32
//!    numbers, `nr >= 0x40000000`, are one more);
//! 3. for syscalls with conditional rules, their argument checks, rules in
//!    order of precedence, the first whose conditions all hold deciding;
//! 4. numbers past the newest syscall in sandboy's tables fail with ENOSYS
//!    when the default would let them run (see [`Filter::unreviewed`]).
//!
//! 64-bit arguments are compared a 32-bit word at a time, high word first,
//! as libseccomp does on 64-bit architectures.

use std::collections::BTreeMap;

use seccompiler::BpfProgram;

use super::bpf::{Builder, Target, AND_K, JEQ_K, JGE_K, JGT_K, JSET_K, LD_W_ABS};

/// `seccomp_data` offsets (little-endian: an argument's low word first).
const NR_OFFSET: u32 = 0;
const ARCH_OFFSET: u32 = 4;
const ARGS_OFFSET: u32 = 16;

pub(crate) const X32_SYSCALL_BIT: u32 = 0x4000_0000;

/// How an argument is compared with a rule's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CmpOp {
    Ne,
    Lt,
    Le,
    Eq,
    Ge,
    Gt,
    /// `(arg & mask) == (value & mask)`: libseccomp masks the datum too.
    MaskedEq(u64),
}

/// One argument condition of a rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Cond {
    pub index: u8,
    pub op: CmpOp,
    pub value: u64,
}

/// One rule: its `SECCOMP_RET_*` value when every condition holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Rule {
    pub ret: u32,
    pub conds: Vec<Cond>,
}

/// A profile reduced to what the program decides.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Filter {
    pub audit_arch: u32,
    /// Whether the x32 guard applies (x86_64).
    pub x32_guard: bool,
    pub default: u32,
    pub syscalls: BTreeMap<u32, Vec<Rule>>,
    /// The first number past the newest syscall sandboy's tables know.
    /// A profile that allows by default lists what it refuses, written
    /// against the syscalls its authors knew: a syscall added to the kernel
    /// later (`open_tree_attr` gave a container a writable copy of a
    /// read-only bind; `file_setattr` set file flags by path) would run
    /// unreviewed. Those numbers get [`x32_verdict`]'s ENOSYS instead, which
    /// libc takes as "an older kernel" and falls back from. `None`: no cut.
    pub unreviewed: Option<u32>,
}

/// The kernel's order of actions (it compares `ret & SECCOMP_RET_ACTION_FULL`
/// as signed): lower is more restrictive. Rules of the same action are
/// ordered by their data (ERRNO 1 before ERRNO 38), so the verdict never
/// depends on the order of the profile.
pub(crate) fn precedence(ret: u32) -> i32 {
    ret as i32
}

/// Sorts a syscall's rules by precedence and drops those that can never
/// decide: everything after the first unconditional rule.
pub(crate) fn normalize(rules: &mut Vec<Rule>) {
    rules.sort_by_key(|r| precedence(r.ret));
    if let Some(first) = rules.iter().position(|r| r.conds.is_empty()) {
        rules.truncate(first + 1);
    }
}

/// The verdict for x32 syscall numbers: refused with ENOSYS, unless the
/// default action is at least as restrictive (what the x32 guard filter of
/// the old chain of filters gave).
pub(crate) fn x32_verdict(default: u32) -> u32 {
    let enosys = libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32;
    if precedence(default & libc::SECCOMP_RET_ACTION_FULL) <= precedence(libc::SECCOMP_RET_ERRNO) {
        default
    } else {
        enosys
    }
}

/// Compiles `filter` (whose rules are normalised) to one program.
pub(crate) fn compile(filter: &Filter) -> BpfProgram {
    let mut b = Builder::default();
    let mut intervals = Intervals::new(Target::Ret(filter.default));
    for (&nr, rules) in &filter.syscalls {
        let body = rules_code(&mut b, rules, Target::Ret(filter.default));
        intervals.set(nr, body);
    }
    let refused = Target::Ret(x32_verdict(filter.default));
    if let Some(first) = filter.unreviewed {
        intervals.set_from(first, refused);
    }
    if filter.x32_guard {
        intervals.set_from(X32_SYSCALL_BIT, refused);
    }
    if filter.x32_guard || filter.unreviewed.is_some() {
        // -1 is no syscall: a ptrace tracer sets it to skip one, and the
        // filter runs again; like libseccomp, let the default decide.
        intervals.set(u32::MAX, Target::Ret(filter.default));
    }
    let dispatch = tree(&mut b, &intervals.0);
    let dispatch = match intervals.0.len() {
        1 => dispatch, // one verdict for every number: no need to load it
        _ => b.stmt(LD_W_ABS, NR_OFFSET, dispatch),
    };
    let arch_ok = b.jump(
        JEQ_K,
        filter.audit_arch,
        dispatch,
        Target::Ret(libc::SECCOMP_RET_KILL_PROCESS),
    );
    let entry = b.stmt(LD_W_ABS, ARCH_OFFSET, arch_ok);
    b.finish(entry)
}

/// The u32 syscall-number space cut into intervals `[start, next start)`,
/// each with one target; neighbours never share a target.
struct Intervals(Vec<(u32, Target)>, Target);

impl Intervals {
    fn new(default: Target) -> Self {
        Intervals(vec![(0, default)], default)
    }

    fn push(&mut self, start: u32, t: Target) {
        match self.0.last_mut() {
            Some(last) if last.1 == t => {}
            Some(last) if last.0 == start => *last = (start, t),
            _ => self.0.push((start, t)),
        }
        // Replacing the last interval may make it equal to the one before.
        if let [.., a, b] = self.0.as_slice() {
            if a.1 == b.1 {
                self.0.pop();
            }
        }
    }

    /// Sets the target of number `nr` (called in increasing order of `nr`).
    fn set(&mut self, nr: u32, t: Target) {
        let default = self.1;
        self.push(nr, t);
        if let Some(next) = nr.checked_add(1) {
            self.push(next, default);
        }
    }

    /// Sets the target of every number from `start` on.
    fn set_from(&mut self, start: u32, t: Target) {
        self.push(start, t);
    }
}

/// A balanced binary search over `intervals` (A holds the syscall number).
fn tree(b: &mut Builder, intervals: &[(u32, Target)]) -> Target {
    if let [(_, t)] = intervals {
        return *t;
    }
    let mid = intervals.len() / 2;
    let upper = tree(b, &intervals[mid..]);
    let lower = tree(b, &intervals[..mid]);
    b.jump(JGE_K, intervals[mid].0, upper, lower)
}

/// A syscall's rules, in order: the first that matches returns its action.
fn rules_code(b: &mut Builder, rules: &[Rule], default: Target) -> Target {
    rules.iter().rev().fold(default, |miss, rule| {
        let hit = Target::Ret(rule.ret);
        rule.conds
            .iter()
            .rev()
            .fold(hit, |next, c| cond_code(b, c, next, miss))
    })
}

fn arg_offsets(index: u8) -> (u32, u32) {
    let lo = ARGS_OFFSET + 8 * u32::from(index);
    (lo + 4, lo)
}

fn hi(v: u64) -> u32 {
    (v >> 32) as u32
}

fn lo(v: u64) -> u32 {
    v as u32
}

/// Code that goes to `yes` if the condition holds, else to `no`.
fn cond_code(b: &mut Builder, c: &Cond, yes: Target, no: Target) -> Target {
    let offsets = arg_offsets(c.index);
    match c.op {
        CmpOp::Eq => eq64(b, offsets, u64::MAX, c.value, yes, no),
        CmpOp::Ne => eq64(b, offsets, u64::MAX, c.value, no, yes),
        CmpOp::MaskedEq(mask) => eq64(b, offsets, mask, c.value & mask, yes, no),
        CmpOp::Gt => greater(b, offsets, c.value, JGT_K, yes, no),
        CmpOp::Ge => greater(b, offsets, c.value, JGE_K, yes, no),
        // x < v is !(x >= v); x <= v is !(x > v).
        CmpOp::Lt => greater(b, offsets, c.value, JGE_K, no, yes),
        CmpOp::Le => greater(b, offsets, c.value, JGT_K, no, yes),
    }
}

/// `(arg & mask) == datum` (datum already masked), high word first.
fn eq64(
    b: &mut Builder,
    (hi_off, lo_off): (u32, u32),
    mask: u64,
    datum: u64,
    yes: Target,
    no: Target,
) -> Target {
    let lo_test = eq32(b, lo_off, lo(mask), lo(datum), yes, no);
    eq32(b, hi_off, hi(mask), hi(datum), lo_test, no)
}

fn eq32(b: &mut Builder, off: u32, mask: u32, datum: u32, yes: Target, no: Target) -> Target {
    let test = match (mask, datum) {
        (0, _) => return yes, // (x & 0) == 0 always
        // (x & m) == 0 is one JSET.
        (m, 0) => b.jump(JSET_K, m, no, yes),
        (u32::MAX, d) => b.jump(JEQ_K, d, yes, no),
        (m, d) => {
            let cmp = b.jump(JEQ_K, d, yes, no);
            b.stmt(AND_K, m, cmp)
        }
    };
    b.stmt(LD_W_ABS, off, test)
}

/// `arg > value` (`jmp` = JGT) or `arg >= value` (`jmp` = JGE): the high
/// words decide unless they are equal, then the low words do.
fn greater(
    b: &mut Builder,
    (hi_off, lo_off): (u32, u32),
    value: u64,
    jmp: u16,
    yes: Target,
    no: Target,
) -> Target {
    let lo_test = match (jmp, lo(value)) {
        (JGE_K, 0) => yes,
        (JGT_K, u32::MAX) => no,
        (_, v) => {
            let t = b.jump(jmp, v, yes, no);
            b.stmt(LD_W_ABS, lo_off, t)
        }
    };
    let hi_test = match hi(value) {
        // The high word can never be greater: only equality matters.
        u32::MAX => b.jump(JEQ_K, u32::MAX, lo_test, no),
        // Not greater than 0 means equal to 0.
        0 => b.jump(JGT_K, 0, yes, lo_test),
        h => {
            let eq = b.jump(JEQ_K, h, lo_test, no);
            b.jump(JGT_K, h, yes, eq)
        }
    };
    b.stmt(LD_W_ABS, hi_off, hi_test)
}
