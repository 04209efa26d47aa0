//! A classic-BPF interpreter for the seccomp subset, shared by the unit
//! tests and the differential test. Anything outside the subset panics:
//! a program that uses it is not one the tests understand.

/// `struct seccomp_data` as the 16 little-endian words a filter loads.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SeccompData {
    pub nr: u32,
    pub arch: u32,
    pub ip: u64,
    pub args: [u64; 6],
}

impl SeccompData {
    fn word(&self, off: u32) -> u32 {
        assert!(off & 3 == 0 && off < 64, "load of offset {off}");
        match off {
            0 => self.nr,
            4 => self.arch,
            8 => self.ip as u32,
            12 => (self.ip >> 32) as u32,
            _ => {
                let a = self.args[((off - 16) / 8) as usize];
                if off & 7 == 0 {
                    a as u32
                } else {
                    (a >> 32) as u32
                }
            }
        }
    }
}

/// One instruction (the kernel's `struct sock_filter` fields).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Insn {
    pub code: u16,
    pub jt: u8,
    pub jf: u8,
    pub k: u32,
}

/// A compiled program's instructions in the interpreter's form.
pub fn insns(prog: &[seccompiler::sock_filter]) -> Vec<Insn> {
    prog.iter()
        .map(|i| Insn {
            code: i.code,
            jt: i.jt,
            jf: i.jf,
            k: i.k,
        })
        .collect()
}

/// The return value and the number of instructions executed.
pub fn run(prog: &[Insn], data: &SeccompData) -> (u32, usize) {
    let (mut a, mut x, mut mem) = (0u32, 0u32, [0u32; 16]);
    let mut pc = 0usize;
    let mut steps = 0;
    loop {
        let i = prog
            .get(pc)
            .unwrap_or_else(|| panic!("pc {pc} past the end"));
        steps += 1;
        pc += 1;
        let skip = |cond: bool| usize::from(if cond { i.jt } else { i.jf });
        match i.code {
            0x20 => a = data.word(i.k),       // LD W ABS
            0x00 => a = i.k,                  // LD IMM
            0x01 => x = i.k,                  // LDX IMM
            0x60 => a = mem[i.k as usize],    // LD MEM
            0x61 => x = mem[i.k as usize],    // LDX MEM
            0x02 => mem[i.k as usize] = a,    // ST
            0x03 => mem[i.k as usize] = x,    // STX
            0x54 => a &= i.k,                 // ALU AND K
            0x44 => a |= i.k,                 // ALU OR K
            0x05 => pc += i.k as usize,       // JA
            0x15 => pc += skip(a == i.k),     // JEQ K
            0x25 => pc += skip(a > i.k),      // JGT K
            0x35 => pc += skip(a >= i.k),     // JGE K
            0x45 => pc += skip(a & i.k != 0), // JSET K
            0x06 => return (i.k, steps),      // RET K
            0x16 => return (a, steps),        // RET A
            code => panic!("instruction {}: unsupported opcode {code:#04x}", pc - 1),
        }
    }
}

/// The most instructions any path through `prog` executes (every jump is
/// forward, so one pass from the end).
pub fn longest_path(prog: &[Insn]) -> usize {
    let mut longest = vec![0usize; prog.len() + 1];
    for pc in (0..prog.len()).rev() {
        let i = prog[pc];
        let at = |off: usize| longest[(pc + 1 + off).min(prog.len())];
        longest[pc] = 1 + match i.code {
            0x06 | 0x16 => 0,
            0x05 => at(i.k as usize),
            0x15 | 0x25 | 0x35 | 0x45 => at(i.jt.into()).max(at(i.jf.into())),
            _ => at(0),
        };
    }
    longest[0]
}
