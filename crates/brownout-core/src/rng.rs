//! The deterministic random source: counter-based draws, not a shared stream.
//!
//! Every random decision is `draw(seed, fault id, session key, sequence number, salt)`, a
//! pure function. Concurrency cannot change a decision (nothing is consumed from a shared
//! generator) and adding or removing one fault cannot shift another fault's draws.
//!
//! Written by hand on purpose: the hash must be stable across Rust releases and platforms
//! (std's `DefaultHasher` is not), and it is ten lines of well-known mixing functions
//! (FNV-1a for strings, the SplitMix64 finalizer for mixing).

/// FNV-1a, 64 bit: a stable hash of a string key — brownout's one stable hash (draws, run
/// ids, lock file names, digests in the audit log).
pub fn hash_str(s: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in s.as_bytes() {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// The SplitMix64 finalizer: a bijective avalanche mix of one word.
pub fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Salts that separate the independent draws one fault makes on one call.
pub mod salt {
    pub const FIRE: u64 = 1;
    pub const MAGNITUDE: u64 = 2;
    pub const MAGNITUDE2: u64 = 3;
    pub const CHOICE: u64 = 4;
    pub const CORRELATION: u64 = 5;
    pub const MUTATION: u64 = 6;
}

/// A stream key: the (seed, fault, session) part of a draw, hashed once and reused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct StreamKey(u64);

impl StreamKey {
    pub fn new(seed: u64, fault_hash: u64, session_hash: u64) -> StreamKey {
        StreamKey(mix(mix(seed ^ mix(fault_hash)) ^ session_hash))
    }

    /// The raw 64-bit draw for sequence number `seq` and a salt.
    pub fn draw(self, seq: u64, salt: u64) -> u64 {
        mix(self.0 ^ mix(seq.wrapping_mul(0x2545_f491_4f6c_dd1d) ^ mix(salt)))
    }

    /// A uniform draw in `[0, 1)`.
    pub fn unit(self, seq: u64, salt: u64) -> f64 {
        to_unit(self.draw(seq, salt))
    }
}

/// Map 64 random bits to a uniform `f64` in `[0, 1)`.
pub fn to_unit(x: u64) -> f64 {
    // Below 2^53, so exact as a signed integer too: x86-64 converts a signed one in one
    // instruction, an unsigned one in several.
    ((x >> 11) as i64) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// A small deterministic generator for code that needs several draws in a row (mutation
/// choices inside one message). Seeded from one counter-based draw, so still replayable.
#[derive(Debug, Clone)]
pub struct SplitMix(u64);

impl SplitMix {
    pub fn new(seed: u64) -> SplitMix {
        SplitMix(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        mix(self.0)
    }

    pub fn unit(&mut self) -> f64 {
        to_unit(self.next_u64())
    }

    /// A uniform index in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            return 0;
        }
        (self.unit() * n as f64) as usize % n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_are_pure_and_spread() {
        let k = StreamKey::new(42, hash_str("f"), hash_str("s"));
        assert_eq!(k.draw(7, salt::FIRE), k.draw(7, salt::FIRE));
        assert_ne!(k.draw(7, salt::FIRE), k.draw(8, salt::FIRE));
        assert_ne!(k.draw(7, salt::FIRE), k.draw(7, salt::MAGNITUDE));
        let mean: f64 = (0..100_000).map(|i| k.unit(i, salt::FIRE)).sum::<f64>() / 100_000.0;
        assert!((mean - 0.5).abs() < 0.01, "mean {mean}");
    }

    #[test]
    fn different_seeds_differ() {
        let a = StreamKey::new(1, hash_str("f"), hash_str("s"));
        let b = StreamKey::new(2, hash_str("f"), hash_str("s"));
        assert_ne!(a.draw(0, 1), b.draw(0, 1));
    }

    #[test]
    fn to_unit_is_the_unsigned_conversion() {
        let mut g = SplitMix::new(5);
        for x in [0, 1, 2047, 2048, u64::MAX, u64::MAX - 2047, 1 << 63]
            .into_iter()
            .chain((0..10_000).map(|_| g.next_u64()))
        {
            let old = (x >> 11) as f64 * (1.0 / (1u64 << 53) as f64);
            assert_eq!(to_unit(x).to_bits(), old.to_bits(), "{x:#x}");
        }
    }

    #[test]
    fn fnv_is_stable() {
        // Known FNV-1a test vector: a stable hash is the point of writing it by hand.
        assert_eq!(hash_str("a"), 0xaf63_dc4c_8601_ec8c);
    }
}
