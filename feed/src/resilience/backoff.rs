//! Exponential backoff with full jitter, capped, honouring a delay the server asks for.

use std::time::Duration;

use crate::rng::SplitMix64;

/// Settings of a [`Backoff`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BackoffConfig {
    /// The ceiling of the first retry's delay; each retry after doubles it.
    pub base: Duration,
    /// The ceiling no delay exceeds, and the longest server-requested delay honoured.
    pub cap: Duration,
}

/// What to do before the next try.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BackoffDelay {
    /// Wait this long, then try again.
    Wait(Duration),
    /// The server asked for a delay longer than the cap: do not sleep on it; report it
    /// (the caller declares, fails over, or lets a person decide).
    TooLong {
        /// The delay the server asked for.
        requested: Duration,
        /// The cap it exceeds.
        cap: Duration,
    },
}

/// Exponential backoff with *full jitter* (AWS Architecture Blog, "Exponential Backoff and
/// Jitter", 2015): the delay before retry `n` (0 for the first retry) is uniform in
/// `[0, min(cap, base · 2^n)]`, so many clients that failed together do not retry together.
///
/// ```
/// use std::time::Duration;
/// use ticklane_feed::resilience::{Backoff, BackoffConfig, BackoffDelay};
/// use ticklane_feed::rng::SplitMix64;
///
/// let ms = Duration::from_millis;
/// let b = Backoff::new(BackoffConfig { base: ms(10), cap: ms(100) });
/// assert_eq!(b.ceiling(0), ms(10));
/// assert_eq!(b.ceiling(20), ms(100));
/// let mut rng = SplitMix64::new(1);
/// assert_eq!(b.next(0, Some(ms(40)), &mut rng), BackoffDelay::Wait(ms(40)));
/// assert_eq!(
///     b.next(0, Some(ms(400)), &mut rng),
///     BackoffDelay::TooLong { requested: ms(400), cap: ms(100) }
/// );
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Backoff {
    config: BackoffConfig,
}

impl Backoff {
    /// A backoff with these settings.
    pub fn new(config: BackoffConfig) -> Self {
        Backoff { config }
    }

    /// The settings.
    pub fn config(&self) -> BackoffConfig {
        self.config
    }

    /// `min(cap, base · 2^attempt)`, without overflow however large `attempt` is.
    pub fn ceiling(&self, attempt: u32) -> Duration {
        let factor = 1u32.checked_shl(attempt.min(31)).unwrap_or(u32::MAX);
        self.config
            .base
            .checked_mul(factor)
            .unwrap_or(Duration::MAX)
            .min(self.config.cap)
    }

    /// The delay before retry `attempt` (0 for the first retry): uniform in
    /// `[0, ceiling(attempt)]` to the nanosecond, drawn from `rng`.
    pub fn delay(&self, attempt: u32, rng: &mut SplitMix64) -> Duration {
        let ceiling = u64::try_from(self.ceiling(attempt).as_nanos()).unwrap_or(u64::MAX);
        Duration::from_nanos(rng.below(ceiling.saturating_add(1).max(1)))
    }

    /// The delay before retry `attempt`, honouring `server_delay` when the server asked for
    /// one: exactly that long (no jitter is drawn) if it is within the cap, and
    /// [`BackoffDelay::TooLong`] if not.
    pub fn next(
        &self,
        attempt: u32,
        server_delay: Option<Duration>,
        rng: &mut SplitMix64,
    ) -> BackoffDelay {
        match server_delay {
            Some(requested) if requested > self.config.cap => BackoffDelay::TooLong {
                requested,
                cap: self.config.cap,
            },
            Some(requested) => BackoffDelay::Wait(requested),
            None => BackoffDelay::Wait(self.delay(attempt, rng)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn ceilings_double_up_to_the_cap() {
        let b = Backoff::new(BackoffConfig {
            base: 10 * MS,
            cap: 300 * MS,
        });
        let ceilings: Vec<u64> = (0..7).map(|n| b.ceiling(n).as_millis() as u64).collect();
        assert_eq!(ceilings, [10, 20, 40, 80, 160, 300, 300]);
        assert_eq!(b.ceiling(u32::MAX), 300 * MS);
        let huge = Backoff::new(BackoffConfig {
            base: Duration::MAX,
            cap: Duration::MAX,
        });
        assert_eq!(huge.ceiling(40), Duration::MAX);
        let mut rng = SplitMix64::new(3);
        assert!(huge.delay(40, &mut rng) <= Duration::from_nanos(u64::MAX));
    }

    #[test]
    fn jitter_draws_match_an_independent_splitmix64() {
        // Expected delays from a separate Python SplitMix64 with Lemire's multiply-shift,
        // seed 42, ceilings 10, 20, 40, 80 ms (+1 ns: the range is inclusive).
        let b = Backoff::new(BackoffConfig {
            base: 10 * MS,
            cap: Duration::from_secs(1),
        });
        let mut rng = SplitMix64::new(42);
        let got: Vec<u64> = (0..4)
            .map(|n| b.delay(n, &mut rng).as_nanos() as u64)
            .collect();
        assert_eq!(got, JITTER_SEED_42);
    }

    /// See `jitter_draws_match_an_independent_splitmix64`.
    const JITTER_SEED_42: [u64; 4] = [7_415_649, 3_198_208, 11_144_045, 27_535_257];

    #[test]
    fn zero_base_never_waits_and_never_panics() {
        let b = Backoff::new(BackoffConfig {
            base: Duration::ZERO,
            cap: Duration::ZERO,
        });
        let mut rng = SplitMix64::new(9);
        assert_eq!(b.delay(5, &mut rng), Duration::ZERO);
        assert_eq!(
            b.next(5, Some(Duration::ZERO), &mut rng),
            BackoffDelay::Wait(Duration::ZERO)
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, rng_seed: proptest::test_runner::RngSeed::Fixed(11), ..ProptestConfig::default() })]

        #[test]
        fn delays_stay_within_the_ceiling(seed in any::<u64>(), base_us in 0u64..1_000_000, cap_us in 0u64..10_000_000, attempt in 0u32..80) {
            let b = Backoff::new(BackoffConfig {
                base: Duration::from_micros(base_us),
                cap: Duration::from_micros(cap_us),
            });
            let mut rng = SplitMix64::new(seed);
            let ceiling = b.ceiling(attempt);
            prop_assert!(ceiling <= Duration::from_micros(cap_us));
            prop_assert!(b.delay(attempt, &mut rng) <= ceiling);
        }
    }
}
