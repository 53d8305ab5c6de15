//! A retry budget: retries at most a fraction of first requests over a sliding window.

use std::time::Duration;

use super::sliding_window::SlidingCounts;

const FIRST: usize = 0;
const RETRY: usize = 1;

/// Settings of a [`RetryBudget`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetryBudgetConfig {
    /// The sliding window over which first requests and retries are counted.
    pub window: Duration,
    /// Retries allowed per 100 first requests in the window.
    pub ratio_percent: u32,
    /// Retries allowed in any window on top of the ratio, so a quiet line whose one request
    /// went unanswered can still ask again.
    pub min_per_window: u32,
}

/// A retry was refused: the window's retries already reached its allowance. The caller
/// waits (and asks later) or declares the work lost; it never retries anyway.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("retry budget exhausted: {retries} retries in the window, {allowed} allowed")]
pub struct BudgetExhausted {
    /// Retries already made in the window.
    pub retries: u64,
    /// Retries the window allows: `min_per_window + first requests × ratio / 100`.
    pub allowed: u64,
}

/// Bounds retries to a fraction of real demand (the retry budgets of Finagle and gRPC), so
/// a struggling server sees at most `1 + ratio` times its normal load, never a storm.
///
/// Count each first request with [`RetryBudget::on_first_request`]; ask
/// [`RetryBudget::try_retry`] before each retry, which records the retry when allowed.
#[derive(Clone, Debug)]
pub struct RetryBudget {
    config: RetryBudgetConfig,
    counts: SlidingCounts<2>,
    refused: u64,
}

impl RetryBudget {
    /// An empty budget.
    pub fn new(config: RetryBudgetConfig) -> Self {
        RetryBudget {
            config,
            counts: SlidingCounts::new(config.window),
            refused: 0,
        }
    }

    /// The settings.
    pub fn config(&self) -> RetryBudgetConfig {
        self.config
    }

    /// A first request (not a retry) was made at `now`: it earns retry allowance.
    pub fn on_first_request(&mut self, now: Duration) {
        self.counts.add(now, FIRST, 1);
    }

    fn allowed(&self, firsts: u64) -> u64 {
        u64::from(self.config.min_per_window)
            .saturating_add(firsts.saturating_mul(u64::from(self.config.ratio_percent)) / 100)
    }

    /// Asks to retry at `now`, and records the retry if it is allowed.
    ///
    /// # Errors
    ///
    /// [`BudgetExhausted`] when the window's retries already reached the allowance; the
    /// refusal is counted ([`RetryBudget::refused`]).
    pub fn try_retry(&mut self, now: Duration) -> Result<(), BudgetExhausted> {
        let [firsts, retries] = self.counts.totals(now);
        let allowed = self.allowed(firsts);
        if retries >= allowed {
            self.refused += 1;
            return Err(BudgetExhausted { retries, allowed });
        }
        self.counts.add(now, RETRY, 1);
        Ok(())
    }

    /// Retries the window ending at `now` still allows.
    pub fn left(&mut self, now: Duration) -> u64 {
        let [firsts, retries] = self.counts.totals(now);
        self.allowed(firsts).saturating_sub(retries)
    }

    /// Retries refused since the budget was made.
    pub fn refused(&self) -> u64 {
        self.refused
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn retries_are_a_fraction_of_first_requests_plus_a_minimum() {
        let mut b = RetryBudget::new(RetryBudgetConfig {
            window: 1000 * MS,
            ratio_percent: 25,
            min_per_window: 1,
        });
        let t = Duration::ZERO;
        // A quiet line: no first request yet, the minimum still allows one retry.
        assert_eq!(b.left(t), 1);
        assert_eq!(b.try_retry(t), Ok(()));
        assert_eq!(
            b.try_retry(t),
            Err(BudgetExhausted {
                retries: 1,
                allowed: 1
            })
        );
        for _ in 0..8 {
            b.on_first_request(t + MS);
        }
        // 1 + 8 × 25 % = 3 allowed, 1 used.
        assert_eq!(b.left(t + MS), 2);
        assert!(b.try_retry(t + 2 * MS).is_ok());
        assert!(b.try_retry(t + 2 * MS).is_ok());
        assert!(b.try_retry(t + 2 * MS).is_err());
        assert_eq!(b.refused(), 2);
        // A window later everything has slid out: the minimum again.
        assert_eq!(b.left(t + 1100 * MS), 1);
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, rng_seed: proptest::test_runner::RngSeed::Fixed(5), ..ProptestConfig::default() })]

        /// Whenever a retry is granted, the retries of the last 0.9 window (all of which the
        /// budget certainly still counts) are within the minimum plus the ratio of the first
        /// requests of the last whole window (all the budget could count): a naive count
        /// over a log of events is the model.
        #[test]
        fn granted_retries_never_exceed_the_allowance(ops in proptest::collection::vec((0u64..30, any::<bool>()), 1..300), ratio in 0u32..100, min in 0u32..4) {
            let window = 100 * MS;
            let mut b = RetryBudget::new(RetryBudgetConfig { window, ratio_percent: ratio, min_per_window: min });
            let mut now = Duration::ZERO;
            let mut log: Vec<(Duration, bool)> = Vec::new(); // (time, is_retry)
            for (step, first) in ops {
                now += MS * (step as u32) / 3;
                if first {
                    b.on_first_request(now);
                    log.push((now, false));
                    continue;
                }
                let left = b.left(now);
                let granted = b.try_retry(now).is_ok();
                prop_assert_eq!(granted, left > 0);
                if !granted {
                    continue;
                }
                log.push((now, true));
                let age = |t: Duration| now - t;
                let retries = log.iter().filter(|(t, r)| *r && age(*t) < window * 9 / 10).count() as u64;
                let firsts = log.iter().filter(|(t, r)| !r && age(*t) < window).count() as u64;
                prop_assert!(retries <= u64::from(min) + firsts * u64::from(ratio) / 100);
            }
        }
    }
}
