//! Device rules → a `BPF_PROG_TYPE_CGROUP_DEVICE` program.
//!
//! Semantics, per access bit (mknod, read, write): the last rule that matches
//! the device and names that bit decides; a bit no rule names is denied. A
//! request is allowed only if every bit it asks for is. Deciding per bit is
//! what the v1 devices controller does with its exception list (an allow `r`
//! and a later allow `w` make `rw` allowed; a later deny `w` takes only `w`
//! away), which a whole-request "last match wins" gets wrong both ways.
//!
//! The program has no loops, maps or helpers: one block per access bit, each
//! a chain of compare-and-branch rule tests, all jumps forward. No dead code
//! is emitted (the verifier refuses unreachable instructions): a rule that
//! matches everything ends its block.

/// `BPF_DEVCG_DEV_*`: device type in the low 16 bits of `access_type`.
pub const DEV_BLOCK: u32 = 1;
pub const DEV_CHAR: u32 = 2;
/// `BPF_DEVCG_ACC_*`: requested access in the high 16 bits.
pub const ACC_MKNOD: u8 = 1;
pub const ACC_READ: u8 = 2;
pub const ACC_WRITE: u8 = 4;

/// One device rule, already validated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rule {
    pub allow: bool,
    /// `DEV_BLOCK`, `DEV_CHAR`, or `None` for every type.
    pub typ: Option<u32>,
    /// `None`: any major (minor).
    pub major: Option<u32>,
    pub minor: Option<u32>,
    /// `ACC_*` bits.
    pub access: u8,
}

/// `struct bpf_insn`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Insn {
    pub code: u8,
    /// dst in the low nibble, src in the high one.
    pub regs: u8,
    pub off: i16,
    pub imm: i32,
}

// Opcodes used (class | op | source).
const LDX_MEM_W: u8 = 0x61;
const ALU32_AND_K: u8 = 0x54;
const ALU32_RSH_K: u8 = 0x74;
const ALU32_MOV_K: u8 = 0xb4;
const ALU32_MOV_X: u8 = 0xbc;
const JMP_JA: u8 = 0x05;
const JMP_JEQ_K: u8 = 0x15;
const JMP_JNE_K: u8 = 0x55;
const JMP_EXIT: u8 = 0x95;

// Registers: r1 holds the context on entry; the prologue unpacks it.
const R0: u8 = 0;
const R1: u8 = 1;
const R_TYPE: u8 = 2;
const R_ACCESS: u8 = 3;
const R_MAJOR: u8 = 4;
const R_MINOR: u8 = 5;

fn insn(code: u8, dst: u8, src: u8, off: i16, imm: i32) -> Insn {
    Insn {
        code,
        regs: dst | (src << 4),
        off,
        imm,
    }
}

/// The program for `rules` (in spec order; later rules take precedence).
pub fn generate(rules: &[Rule]) -> Vec<Insn> {
    let mut p = vec![
        // struct bpf_cgroup_dev_ctx { u32 access_type, major, minor; }
        insn(LDX_MEM_W, R_TYPE, R1, 0, 0),
        insn(ALU32_AND_K, R_TYPE, 0, 0, 0xffff),
        insn(LDX_MEM_W, R_ACCESS, R1, 0, 0),
        insn(ALU32_RSH_K, R_ACCESS, 0, 0, 16),
        insn(LDX_MEM_W, R_MAJOR, R1, 4, 0),
        insn(LDX_MEM_W, R_MINOR, R1, 8, 0),
    ];
    for bit in [ACC_MKNOD, ACC_READ, ACC_WRITE] {
        bit_block(&mut p, rules, bit);
    }
    p.push(insn(ALU32_MOV_K, R0, 0, 0, 1));
    p.push(insn(JMP_EXIT, 0, 0, 0, 0));
    p
}

/// Decide one access bit; falls through to the next block when the bit is
/// not requested or is allowed, returns 0 when it is denied.
fn bit_block(p: &mut Vec<Insn>, rules: &[Rule], bit: u8) {
    let start = p.len();
    // Jumps to the end of this block, patched once its length is known.
    let mut to_end = Vec::new();
    p.push(insn(ALU32_MOV_X, R0, R_ACCESS, 0, 0));
    p.push(insn(ALU32_AND_K, R0, 0, 0, i32::from(bit)));
    to_end.push(p.len());
    p.push(insn(JMP_JEQ_K, R0, 0, 0, 0));

    let mut decided = false;
    for rule in rules.iter().rev().filter(|r| r.access & bit != 0) {
        let conds: Vec<(u8, u32)> = [
            rule.typ.map(|t| (R_TYPE, t)),
            rule.major.map(|m| (R_MAJOR, m)),
            rule.minor.map(|m| (R_MINOR, m)),
        ]
        .into_iter()
        .flatten()
        .collect();
        let action_len = if rule.allow { 1 } else { 2 };
        for (i, (reg, value)) in conds.iter().enumerate() {
            // Past the remaining tests and the action: the next rule.
            let skip = conds.len() - i - 1 + action_len;
            // `value` fits an i32 (see MAX_NUMBER).
            p.push(insn(JMP_JNE_K, *reg, 0, skip as i16, *value as i32));
        }
        if rule.allow {
            to_end.push(p.len());
            p.push(insn(JMP_JA, 0, 0, 0, 0));
        } else {
            p.push(insn(ALU32_MOV_K, R0, 0, 0, 0));
            p.push(insn(JMP_EXIT, 0, 0, 0, 0));
        }
        if conds.is_empty() {
            decided = true;
            break;
        }
    }
    if !decided {
        p.push(insn(ALU32_MOV_K, R0, 0, 0, 0));
        p.push(insn(JMP_EXIT, 0, 0, 0, 0));
    }
    let end = p.len();
    for at in to_end {
        p[at].off = (end - at - 1) as i16;
    }
    debug_assert!(end > start);
}

/// Largest major/minor a rule may name: the program compares 32-bit
/// registers with sign-extended 32-bit immediates, so values must stay
/// below 2^31 to mean the same on both sides (Linux majors are 12 bits and
/// minors 20 bits anyway).
pub const MAX_NUMBER: u32 = i32::MAX as u32;

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs our instruction subset the way the kernel would.
    fn eval(prog: &[Insn], typ: u32, access: u8, major: u32, minor: u32) -> bool {
        let ctx = [typ | (u32::from(access) << 16), major, minor];
        let mut r = [0u64; 11];
        let mut pc = 0usize;
        loop {
            let i = prog[pc];
            let (dst, src) = ((i.regs & 0xf) as usize, (i.regs >> 4) as usize);
            pc += 1;
            match i.code {
                LDX_MEM_W => r[dst] = u64::from(ctx[(i.off / 4) as usize]),
                ALU32_AND_K => r[dst] = u64::from(r[dst] as u32 & i.imm as u32),
                ALU32_RSH_K => r[dst] = u64::from((r[dst] as u32) >> i.imm),
                ALU32_MOV_K => r[dst] = u64::from(i.imm as u32),
                ALU32_MOV_X => r[dst] = u64::from(r[src] as u32),
                JMP_JA => pc += i.off as usize,
                JMP_JEQ_K if r[dst] == i.imm as i64 as u64 => pc += i.off as usize,
                JMP_JNE_K if r[dst] != i.imm as i64 as u64 => pc += i.off as usize,
                JMP_JEQ_K | JMP_JNE_K => {}
                JMP_EXIT => return r[0] == 1,
                c => panic!("opcode {c:#x}"),
            }
        }
    }

    /// Every instruction reachable, every jump forward and in bounds: what
    /// the verifier insists on for a loop-free program.
    fn assert_well_formed(prog: &[Insn]) {
        let mut seen = vec![false; prog.len()];
        let mut todo = vec![0usize];
        while let Some(pc) = todo.pop() {
            if pc >= prog.len() {
                panic!("falls off the end at {pc}");
            }
            if std::mem::replace(&mut seen[pc], true) {
                continue;
            }
            let i = prog[pc];
            assert!(i.off >= 0, "backward jump at {pc}");
            let target = pc + 1 + i.off as usize;
            match i.code {
                JMP_EXIT => {}
                JMP_JA => todo.push(target),
                JMP_JEQ_K | JMP_JNE_K => todo.extend([pc + 1, target]),
                _ => todo.push(pc + 1),
            }
        }
        let dead: Vec<usize> = (0..prog.len()).filter(|&i| !seen[i]).collect();
        assert!(dead.is_empty(), "unreachable instructions {dead:?}");
    }

    fn rule(
        allow: bool,
        typ: Option<u32>,
        major: Option<u32>,
        minor: Option<u32>,
        access: u8,
    ) -> Rule {
        Rule {
            allow,
            typ,
            major,
            minor,
            access,
        }
    }

    const RWM: u8 = ACC_MKNOD | ACC_READ | ACC_WRITE;

    #[test]
    fn deny_all_then_allow_one_device() {
        let rules = [
            rule(false, None, None, None, RWM),
            rule(true, Some(DEV_CHAR), Some(1), Some(3), RWM),
            rule(true, Some(DEV_BLOCK), None, None, ACC_MKNOD),
        ];
        let p = generate(&rules);
        assert_well_formed(&p);
        assert!(eval(&p, DEV_CHAR, ACC_READ | ACC_WRITE, 1, 3));
        assert!(!eval(&p, DEV_CHAR, ACC_READ, 1, 5));
        assert!(eval(&p, DEV_BLOCK, ACC_MKNOD, 254, 0));
        assert!(!eval(&p, DEV_BLOCK, ACC_READ, 254, 0));
        assert!(!eval(&p, DEV_BLOCK, ACC_MKNOD | ACC_READ, 254, 0));
    }

    #[test]
    fn access_bits_are_decided_one_by_one() {
        // allow r and, separately, allow w: rw is allowed; m, never named, is not.
        let rules = [
            rule(true, Some(DEV_CHAR), Some(1), Some(3), ACC_READ),
            rule(true, Some(DEV_CHAR), Some(1), Some(3), ACC_WRITE),
        ];
        let p = generate(&rules);
        assert_well_formed(&p);
        assert!(eval(&p, DEV_CHAR, ACC_READ | ACC_WRITE, 1, 3));
        assert!(!eval(&p, DEV_CHAR, ACC_MKNOD, 1, 3));
        // allow rw, then deny w: r stays, rw and w go.
        let rules = [
            rule(true, Some(DEV_CHAR), Some(1), None, ACC_READ | ACC_WRITE),
            rule(false, Some(DEV_CHAR), Some(1), Some(3), ACC_WRITE),
        ];
        let p = generate(&rules);
        assert_well_formed(&p);
        assert!(eval(&p, DEV_CHAR, ACC_READ, 1, 3));
        assert!(!eval(&p, DEV_CHAR, ACC_READ | ACC_WRITE, 1, 3));
        assert!(!eval(&p, DEV_CHAR, ACC_WRITE, 1, 3));
        assert!(eval(&p, DEV_CHAR, ACC_READ | ACC_WRITE, 1, 5));
    }

    #[test]
    fn later_rules_win_and_catch_alls_end_a_block() {
        let rules = [
            rule(true, Some(DEV_CHAR), Some(1), Some(3), RWM),
            rule(false, None, None, None, RWM),
        ];
        let p = generate(&rules);
        assert_well_formed(&p);
        assert!(!eval(&p, DEV_CHAR, ACC_READ, 1, 3));
        let rules = [
            rule(false, None, None, None, RWM),
            rule(true, None, None, None, RWM),
            rule(false, Some(DEV_BLOCK), Some(8), None, ACC_WRITE),
        ];
        let p = generate(&rules);
        assert_well_formed(&p);
        assert!(eval(&p, DEV_BLOCK, ACC_READ, 8, 0));
        assert!(!eval(&p, DEV_BLOCK, ACC_WRITE, 8, 0));
        assert!(eval(&p, DEV_CHAR, ACC_WRITE | ACC_MKNOD, 4, 1));
    }

    #[test]
    fn no_rules_deny_everything() {
        let p = generate(&[]);
        assert_well_formed(&p);
        for acc in [ACC_MKNOD, ACC_READ, ACC_WRITE] {
            assert!(!eval(&p, DEV_CHAR, acc, 1, 3));
        }
    }
}
