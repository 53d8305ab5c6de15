//! A small seeded random source whose output never changes between versions.
//!
//! Generated files must be byte-identical for a seed forever (tests and benchmarks name
//! seeds), so the generator does not depend on a crate whose algorithm may change. The
//! same source draws the jitter of `resilience`, so timing tests get exact expectations
//! from a seed. It sits on the crate's lowest floor: it imports nothing of the crate.

/// SplitMix64 (Steele, Lea, Flood 2014): tiny, fast, and good enough for synthetic flow.
#[derive(Clone, Debug)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    /// A source seeded with `seed`.
    pub fn new(seed: u64) -> Self {
        SplitMix64 { state: seed }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0 .. n` (`n` > 0), by Lemire's multiply-shift (bias below 2^-32 here).
    pub fn below(&mut self, n: u64) -> u64 {
        debug_assert!(n > 0);
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64) < p
    }

    /// Geometric count of failures before a success of probability `p`, capped at `cap`.
    pub fn geometric(&mut self, p: f64, cap: u32) -> u32 {
        let mut k = 0;
        while k < cap && !self.chance(p) {
            k += 1;
        }
        k
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_sequence_never_changes() {
        // Reference values of SplitMix64 from seed 1234567 (Vigna's splitmix64.c).
        let mut r = SplitMix64::new(1_234_567);
        assert_eq!(r.next_u64(), 6_457_827_717_110_365_317);
        assert_eq!(r.next_u64(), 3_203_168_211_198_807_973);
    }

    #[test]
    fn below_stays_in_range() {
        let mut r = SplitMix64::new(7);
        assert!((0..10_000).all(|_| r.below(3) < 3));
    }
}
