//! Classic BPF as seccomp runs it: the instructions sandboy emits, and a
//! builder that lays a program out back to front. cBPF only jumps forward,
//! so building from the last instruction up means every jump target is
//! already placed (its offset known) when the jump is written.

use std::collections::HashMap;

use seccompiler::{sock_filter, BpfProgram};

pub(crate) const LD_W_ABS: u16 = (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16;
pub(crate) const JEQ_K: u16 = (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16;
pub(crate) const JGT_K: u16 = (libc::BPF_JMP | libc::BPF_JGT | libc::BPF_K) as u16;
pub(crate) const JGE_K: u16 = (libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K) as u16;
pub(crate) const JSET_K: u16 = (libc::BPF_JMP | libc::BPF_JSET | libc::BPF_K) as u16;
pub(crate) const JA: u16 = (libc::BPF_JMP | libc::BPF_JA) as u16;
pub(crate) const AND_K: u16 = (libc::BPF_ALU | libc::BPF_AND | libc::BPF_K) as u16;
pub(crate) const RET_K: u16 = (libc::BPF_RET | libc::BPF_K) as u16;

/// Every opcode sandboy's compiler emits (a loaded program is checked
/// against this set).
pub(crate) const OPCODES: [u16; 8] = [LD_W_ABS, JEQ_K, JGT_K, JGE_K, JSET_K, JA, AND_K, RET_K];

/// The kernel's limit on a filter's length (BPF_MAXINSNS).
pub(crate) const MAX_INSNS: usize = 4096;

/// Conditional jump offsets are a u8.
const MAX_SHORT_JUMP: usize = u8::MAX as usize;

/// An instruction already placed, counted from the end of the program (the
/// builder only appends before what is placed, so the count is stable).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Label(usize);

/// Where control goes next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Target {
    /// `RET K` with this value (placed on demand, shared when close enough).
    Ret(u32),
    /// An instruction already placed.
    At(Label),
}

/// Builds a program from its last instruction to its first.
#[derive(Default)]
pub(crate) struct Builder {
    /// The program reversed: `rev[0]` is the last instruction.
    rev: Vec<sock_filter>,
    /// The most recent `RET K` of each value.
    rets: HashMap<u32, usize>,
}

impl Builder {
    fn push(&mut self, code: u16, jt: u8, jf: u8, k: u32) -> Label {
        self.rev.push(sock_filter { code, jt, jf, k });
        Label(self.rev.len() - 1)
    }

    /// The jump offset from the next instruction placed to `to`.
    fn offset(&self, to: Label) -> usize {
        self.rev.len() - 1 - to.0
    }

    /// The label of `t`, placing a `RET` if none of its value is in reach.
    fn resolve(&mut self, t: Target) -> Label {
        match t {
            Target::At(l) => l,
            Target::Ret(v) => match self.rets.get(&v) {
                Some(&i) if self.offset(Label(i)) <= MAX_SHORT_JUMP => Label(i),
                _ => {
                    let l = self.push(RET_K, 0, 0, v);
                    self.rets.insert(v, l.0);
                    l
                }
            },
        }
    }

    /// Makes `t` the instruction right after the next one placed (the
    /// fall-through of a load or ALU instruction): places a `RET` or a `JA`
    /// unless `t` is already the latest instruction.
    fn fall_into(&mut self, t: Target) {
        let latest = self.rev.len().checked_sub(1).map(Label);
        match t {
            Target::At(l) if Some(l) == latest => {}
            Target::At(l) => {
                let k = self.offset(l) as u32;
                self.push(JA, 0, 0, k);
            }
            Target::Ret(v) if latest.is_some_and(|l| self.rev[l.0] == ret(v)) => {}
            Target::Ret(v) => {
                let l = self.push(RET_K, 0, 0, v);
                self.rets.insert(v, l.0);
            }
        }
    }

    /// A non-jump instruction followed by `next`.
    pub(crate) fn stmt(&mut self, code: u16, k: u32, next: Target) -> Target {
        self.fall_into(next);
        Target::At(self.push(code, 0, 0, k))
    }

    /// A conditional jump. Targets out of reach of a u8 offset go through a
    /// long `JA` placed right after the jump.
    pub(crate) fn jump(&mut self, code: u16, k: u32, mut jt: Target, mut jf: Target) -> Target {
        if jt == jf {
            return jt;
        }
        loop {
            let (lt, lf) = (self.resolve(jt), self.resolve(jf));
            let (ot, of) = (self.offset(lt), self.offset(lf));
            if ot <= MAX_SHORT_JUMP && of <= MAX_SHORT_JUMP {
                return Target::At(self.push(code, ot as u8, of as u8, k));
            }
            // Placing a long jump moves the other target one further away:
            // loop until both are in reach (at most a few rounds).
            if ot > MAX_SHORT_JUMP {
                jt = Target::At(self.push(JA, 0, 0, ot as u32));
            } else {
                jf = Target::At(self.push(JA, 0, 0, of as u32));
            }
        }
    }

    /// The program, starting at `entry` (which must be the latest placed).
    pub(crate) fn finish(mut self, entry: Target) -> BpfProgram {
        self.fall_into(entry);
        self.rev.reverse();
        self.rev
    }
}

/// `RET K`.
pub(crate) fn ret(k: u32) -> sock_filter {
    sock_filter {
        code: RET_K,
        jt: 0,
        jf: 0,
        k,
    }
}

/// The targets of every jump and the fall-through of every other
/// instruction lie inside the program, every opcode is one sandboy emits,
/// and every path ends in a `RET`. Used on programs read back from a cache.
pub(crate) fn well_formed(prog: &[sock_filter]) -> Result<(), String> {
    if prog.is_empty() || prog.len() > MAX_INSNS {
        return Err(format!("{} instructions", prog.len()));
    }
    for (i, insn) in prog.iter().enumerate() {
        if !OPCODES.contains(&insn.code) {
            return Err(format!("instruction {i}: opcode {:#x}", insn.code));
        }
        let next = |off: usize| i + 1 + off;
        let targets: &[usize] = match insn.code {
            RET_K => &[],
            JA => &[next(insn.k as usize)],
            LD_W_ABS | AND_K => &[next(0)],
            _ => &[next(insn.jt.into()), next(insn.jf.into())],
        };
        if let Some(t) = targets.iter().find(|&&t| t >= prog.len()) {
            return Err(format!("instruction {i}: jumps to {t}, past the end"));
        }
        if insn.code == LD_W_ABS && (insn.k % 4 != 0 || insn.k >= 64) {
            return Err(format!("instruction {i}: loads offset {}", insn.k));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn far_targets_take_long_jumps() {
        let mut b = Builder::default();
        let far = b.stmt(LD_W_ABS, 0, Target::Ret(7));
        let mut t = far;
        for i in 0..300 {
            t = b.jump(JEQ_K, i, Target::Ret(i), t);
        }
        let j = b.jump(JEQ_K, 1000, far, t);
        let prog = b.finish(j);
        well_formed(&prog).unwrap();
        assert!(prog.iter().any(|i| i.code == JA), "no long jump");
        assert_eq!(prog[0].code, JEQ_K);
    }

    #[test]
    fn well_formed_rejects_bad_programs() {
        let ok = [ret(0)];
        well_formed(&ok).unwrap();
        let past = [
            sock_filter {
                code: JEQ_K,
                jt: 1,
                jf: 0,
                k: 0,
            },
            ret(0),
        ];
        assert!(well_formed(&past).is_err());
        let alien = [sock_filter {
            code: (libc::BPF_LDX | libc::BPF_MEM) as u16,
            jt: 0,
            jf: 0,
            k: 0,
        }];
        assert!(well_formed(&alien).is_err());
        assert!(well_formed(&[]).is_err());
        let fallthrough_off_end = [sock_filter {
            code: LD_W_ABS,
            jt: 0,
            jf: 0,
            k: 0,
        }];
        assert!(well_formed(&fallthrough_off_end).is_err());
    }
}
