//! A deterministic byte mutator: bit flips, byte and block edits, splices
//! with another corpus entry, and insertions of dictionary tokens (the
//! syntax of the format under test, so mutants stay near-valid).

/// xorshift64*: small, seeded, reproducible.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed | 1)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Uniform in `0..n` (`n` > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }
}

/// Interesting integers, as text and as bytes.
const NUMBERS: &[&str] = &[
    "0",
    "-1",
    "1",
    "65535",
    "65536",
    "4294967295",
    "4294967296",
    "9223372036854775807",
    "-9223372036854775808",
    "18446744073709551615",
    "1e308",
    "nan",
    "inf",
    "0x7fffffff",
];

/// One mutant of `base` (with `other` for splices).
pub fn mutate(rng: &mut Rng, base: &[u8], other: &[u8], dict: &[&str]) -> Vec<u8> {
    let mut out = base.to_vec();
    for _ in 0..1 + rng.below(4) {
        edit(rng, &mut out, other, dict);
    }
    out.truncate(1 << 20);
    out
}

fn edit(rng: &mut Rng, out: &mut Vec<u8>, other: &[u8], dict: &[&str]) {
    let at = |rng: &mut Rng, v: &Vec<u8>| rng.below(v.len() + 1);
    match rng.below(8) {
        0 if !out.is_empty() => {
            let i = rng.below(out.len());
            out[i] ^= 1 << rng.below(8);
        }
        1 if !out.is_empty() => {
            let i = rng.below(out.len());
            out[i] = rng.next_u64() as u8;
        }
        2 if !out.is_empty() => {
            let i = rng.below(out.len());
            let n = 1 + rng.below(16.min(out.len() - i));
            out.drain(i..i + n);
        }
        3 if !out.is_empty() => {
            // Duplicate a block: deep nesting, repeated keys.
            let i = rng.below(out.len());
            let n = 1 + rng.below(64.min(out.len() - i));
            let block = out[i..i + n].to_vec();
            let j = at(rng, out);
            for _ in 0..1 + rng.below(8) {
                out.splice(j..j, block.iter().copied());
            }
        }
        4 if !other.is_empty() => {
            let i = rng.below(other.len());
            let n = 1 + rng.below(other.len() - i);
            let j = at(rng, out);
            out.splice(j..j, other[i..i + n].iter().copied());
        }
        5 => {
            let n = NUMBERS[rng.below(NUMBERS.len())];
            let j = at(rng, out);
            out.splice(j..j, n.bytes());
        }
        _ if !dict.is_empty() => {
            let t = dict[rng.below(dict.len())];
            let j = at(rng, out);
            out.splice(j..j, t.bytes());
        }
        _ => out.push(rng.next_u64() as u8),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_mutants() {
        let (mut a, mut b) = (Rng::new(7), Rng::new(7));
        for _ in 0..100 {
            assert_eq!(
                mutate(&mut a, b"version = 1", b"[fs]", &["read"]),
                mutate(&mut b, b"version = 1", b"[fs]", &["read"])
            );
        }
    }
}
