//! The delay a rejected client is told to wait: a range, drawn per rejection.

use ticklane_feed::rng::SplitMix64;

/// The retry-after a rejection carries: uniform in `min_ms ..= max_ms`, drawn for every
/// rejection from a seeded [`SplitMix64`], so that clients turned away in the same second
/// come back spread over the range instead of together (a fixed value re-synchronises
/// them: they all return in the same second and are mostly turned away again).
///
/// `min_ms == max_ms` is a fixed delay: kept only so that the storm harness can show what
/// it costs; the server's defaults ([`RetryAfter::DEFAULT`]) are a range.
///
/// ```
/// use ticklane_serve::serve_guard::RetryAfter;
/// use ticklane_feed::rng::SplitMix64;
///
/// let range = RetryAfter::DEFAULT;
/// let mut rng = SplitMix64::new(7);
/// let ms = range.draw(&mut rng);
/// assert!((2_000..=5_000).contains(&ms));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetryAfter {
    /// Shortest delay told, in milliseconds.
    pub min_ms: u32,
    /// Longest delay told, in milliseconds; at least `min_ms` (a smaller one is read as
    /// `min_ms`).
    pub max_ms: u32,
}

impl RetryAfter {
    /// 2 to 5 seconds: long enough that a storm's first second has passed, spread over three
    /// seconds so the returning clients arrive at about a third of the rate they left at.
    pub const DEFAULT: RetryAfter = RetryAfter {
        min_ms: 2_000,
        max_ms: 5_000,
    };

    /// One fixed delay (the policy the harness compares the range against).
    pub const fn fixed(ms: u32) -> Self {
        RetryAfter {
            min_ms: ms,
            max_ms: ms,
        }
    }

    /// A delay in `min_ms ..= max_ms`, uniform to the millisecond.
    pub fn draw(&self, rng: &mut SplitMix64) -> u32 {
        let span = u64::from(self.max_ms.max(self.min_ms) - self.min_ms) + 1;
        // below(span) < span <= u32::MAX - min_ms + 1, so the sum fits a u32.
        self.min_ms + rng.below(span) as u32
    }
}

impl Default for RetryAfter {
    fn default() -> Self {
        Self::DEFAULT
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_draw_is_in_range_and_the_range_is_covered_evenly() {
        let range = RetryAfter {
            min_ms: 2_000,
            max_ms: 4_999,
        };
        let mut rng = SplitMix64::new(42);
        let mut per_second = [0u32; 3]; // 2 s, 3 s, 4 s
        for _ in 0..30_000 {
            let ms = range.draw(&mut rng);
            assert!((2_000..=4_999).contains(&ms), "{ms}");
            per_second[(ms / 1_000 - 2) as usize] += 1;
        }
        // Uniform: 10,000 expected per second; a binomial's sd here is about 82.
        for n in per_second {
            assert!((9_600..=10_400).contains(&n), "{per_second:?}");
        }
    }

    #[test]
    fn fixed_and_degenerate_ranges_do_not_panic() {
        let mut rng = SplitMix64::new(1);
        assert_eq!(RetryAfter::fixed(3_000).draw(&mut rng), 3_000);
        let upside_down = RetryAfter {
            min_ms: 5,
            max_ms: 1,
        };
        assert_eq!(upside_down.draw(&mut rng), 5);
        let widest = RetryAfter {
            min_ms: 0,
            max_ms: u32::MAX,
        };
        let _ = widest.draw(&mut rng);
    }
}
