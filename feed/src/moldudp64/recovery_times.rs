//! Time to recover: from a gap's detection to the delivery of its last missing message, kept
//! in a fixed log-linear histogram (allocated once, inside the sequencer) so that recording
//! never allocates; the median is read to within 1/16 of its value, the maximum exactly.

use std::time::Duration;

/// Sub-buckets per power of two: the relative resolution is `1 / SUB`.
const SUB: u64 = 16;
/// `log2(SUB)`.
const SUB_BITS: u32 = 4;
/// Buckets: values below `SUB` µs one each, then `SUB` per power of two up to 2^64.
const BUCKETS: usize = (SUB as usize) * (64 - SUB_BITS as usize + 1);

/// Recovery times in microseconds.
#[derive(Clone, Debug)]
pub(crate) struct RecoveryTimes {
    counts: Box<[u64; BUCKETS]>,
    count: u64,
    max: Duration,
}

impl Default for RecoveryTimes {
    fn default() -> Self {
        RecoveryTimes {
            counts: Box::new([0; BUCKETS]),
            count: 0,
            max: Duration::ZERO,
        }
    }
}

/// The bucket of `us`.
fn bucket(us: u64) -> usize {
    if us < SUB {
        return us as usize;
    }
    let exp = 63 - us.leading_zeros(); // >= SUB_BITS
    let mantissa = (us >> (exp - SUB_BITS)) & (SUB - 1);
    ((exp - SUB_BITS + 1) as u64 * SUB + mantissa) as usize
}

/// The highest value that falls in bucket `b`.
fn bucket_high(b: usize) -> u64 {
    let b = b as u64;
    if b < SUB {
        return b;
    }
    let exp = (b / SUB) as u32 - 1 + SUB_BITS;
    let mantissa = b % SUB;
    let low = (1u64 << exp) | (mantissa << (exp - SUB_BITS));
    low.saturating_add((1u64 << (exp - SUB_BITS)) - 1)
}

impl RecoveryTimes {
    /// Records one gap that took `took` to fill.
    pub(crate) fn record(&mut self, took: Duration) {
        let us = u64::try_from(took.as_micros()).unwrap_or(u64::MAX);
        self.counts[bucket(us)] += 1;
        self.count += 1;
        self.max = self.max.max(took);
    }

    /// Gaps recorded.
    pub(crate) fn count(&self) -> u64 {
        self.count
    }

    /// The median: the highest value of the bucket holding the middle sample (never above
    /// the maximum); zero when nothing was recorded.
    pub(crate) fn p50(&self) -> Duration {
        if self.count == 0 {
            return Duration::ZERO;
        }
        let rank = self.count.div_ceil(2);
        let mut seen = 0;
        for (b, &n) in self.counts.iter().enumerate() {
            seen += n;
            if seen >= rank {
                return Duration::from_micros(bucket_high(b)).min(self.max);
            }
        }
        self.max
    }

    /// The longest.
    pub(crate) fn max(&self) -> Duration {
        self.max
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SplitMix64;

    #[test]
    fn buckets_are_contiguous_and_their_bounds_hold_their_values() {
        for us in (0..100_000u64).chain([u64::MAX / 3, u64::MAX]) {
            let b = bucket(us);
            assert!(us <= bucket_high(b), "{us} above bucket {b}");
            assert!(b == 0 || us > bucket_high(b - 1), "{us} below bucket {b}");
            assert!(b < BUCKETS);
        }
    }

    #[test]
    fn the_median_is_within_a_sixteenth_of_the_exact_one() {
        let mut rng = SplitMix64::new(3);
        for n in [1usize, 2, 7, 1_000] {
            let mut times = RecoveryTimes::default();
            let mut exact: Vec<u64> = (0..n)
                .map(|_| rng.next_u64() % 5_000_000)
                .inspect(|&us| times.record(Duration::from_micros(us)))
                .collect();
            exact.sort_unstable();
            let median = exact[(n - 1) / 2];
            let p50 = times.p50().as_micros() as u64;
            assert!(
                p50 >= median && p50 <= median + median / 16 + 1,
                "n {n}: p50 {p50}, exact {median}"
            );
            assert_eq!(times.max(), Duration::from_micros(exact[n - 1]));
            assert_eq!(times.count(), n as u64);
        }
        assert_eq!(RecoveryTimes::default().p50(), Duration::ZERO);
    }
}
