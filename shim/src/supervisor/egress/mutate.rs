//! Seeded byte mutations of a valid message, for the parsers of what a
//! step sends the gateway and of what the gateway's process sends the
//! supervisor (tests only): every mutant must be answered or refused,
//! never panic or loop.

/// `rounds` mutants of `seed` (flipped, dropped, inserted and truncated
/// bytes), deterministic for a given `salt`.
pub fn mutants(seed: &[u8], rounds: usize, salt: u64) -> impl Iterator<Item = Vec<u8>> + '_ {
    let mut state = 0x9e37_79b9_7f4a_7c15_u64 ^ salt;
    let mut next = move || {
        // xorshift64*: enough spread for mutation choices.
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        state.wrapping_mul(0x2545_f491_4f6c_dd1d)
    };
    (0..rounds).map(move |_| {
        let mut m = seed.to_vec();
        for _ in 0..=(next() % 4) {
            let at = (next() as usize) % (m.len() + 1);
            match next() % 4 {
                0 if at < m.len() => m[at] ^= 1 << (next() % 8),
                1 if at < m.len() => drop(m.remove(at)),
                2 => m.insert(at, next() as u8),
                _ => m.truncate(at),
            }
        }
        m
    })
}
