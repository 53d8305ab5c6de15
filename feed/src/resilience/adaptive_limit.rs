//! An adaptive limit on requests in flight: a latency-gradient limiter.

use std::time::Duration;

/// Settings of an [`AdaptiveLimit`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AdaptiveLimitConfig {
    /// The limit before any reply was measured.
    pub initial: u32,
    /// The limit never goes below this (at least 1: a line must be able to ask).
    pub min: u32,
    /// Nor above this.
    pub max: u32,
    /// Headroom added to the gradient-scaled limit at each update: how fast the limit grows
    /// while latency stays at its long-term level.
    pub queue: u32,
    /// Latency tolerated before the limit shrinks, in percent of the long-term latency
    /// (150: a reply up to 1.5 times the long-term latency does not shrink the limit).
    pub tolerance_percent: u32,
    /// Weight of each update against the current limit, in percent (20: the limit moves a
    /// fifth of the way to the new estimate).
    pub smoothing_percent: u32,
    /// Samples the long-term latency averages over (an exponential average).
    pub long_window: u32,
    /// A timeout multiplies the limit by this percentage (90).
    pub timeout_percent: u32,
}

impl Default for AdaptiveLimitConfig {
    /// Gradient2's defaults, scaled down for retransmission requests: 8 in flight to start,
    /// between 1 and 64, headroom 2, tolerance 150 %, smoothing 20 %, a long window of 100
    /// samples, and 90 % after a timeout.
    fn default() -> Self {
        AdaptiveLimitConfig {
            initial: 8,
            min: 1,
            max: 64,
            queue: 2,
            tolerance_percent: 150,
            smoothing_percent: 20,
            long_window: 100,
            timeout_percent: 90,
        }
    }
}

/// Requests in flight bounded by a limit that grows while replies come back as fast as
/// usual and shrinks when their latency rises above it (in the spirit of Netflix
/// concurrency-limits' `Gradient2Limit`, itself after TCP Vegas): latency rising is the
/// first sign of a queue at the server, before anything is lost.
///
/// Each reply latency `R` updates a long-term average `L` (exponential, over
/// `long_window` samples; when `L` is more than twice `R` it decays by 5 % so a recovered
/// server is believed), then
///
/// ```text
/// gradient = clamp(tolerance · L / R, 0.5, 1)
/// limit    = (1 − smoothing) · limit + smoothing · (limit · gradient + queue)
/// ```
///
/// clamped to `[min, max]`. A timeout multiplies the limit by `timeout_percent`. The
/// observable limit is the integer part; [`AdaptiveLimit::changes`] counts its changes.
///
/// ```
/// use std::time::Duration;
/// use ticklane_feed::resilience::{AdaptiveLimit, AdaptiveLimitConfig};
///
/// let mut l = AdaptiveLimit::new(AdaptiveLimitConfig { initial: 2, ..AdaptiveLimitConfig::default() });
/// assert!(l.try_acquire() && l.try_acquire());
/// assert!(!l.try_acquire()); // two in flight: the limit
/// l.on_reply(Duration::from_millis(1)); // one came back, fast: the limit grows
/// assert_eq!(l.in_flight(), 1);
/// assert!(l.limit() >= 2);
/// ```
#[derive(Clone, Copy, Debug)]
pub struct AdaptiveLimit {
    config: AdaptiveLimitConfig,
    /// The estimate, in `[min, max]`.
    estimate: f64,
    /// Long-term latency in nanoseconds; 0 before any sample.
    long_ns: f64,
    in_flight: u32,
    changes: u64,
}

impl AdaptiveLimit {
    /// A limit at `config.initial`, nothing in flight. `min` is raised to 1 and `max` to
    /// `min`.
    pub fn new(config: AdaptiveLimitConfig) -> Self {
        let min = config.min.max(1);
        let config = AdaptiveLimitConfig {
            min,
            max: config.max.max(min),
            long_window: config.long_window.max(1),
            ..config
        };
        AdaptiveLimit {
            estimate: f64::from(config.initial.clamp(config.min, config.max)),
            long_ns: 0.0,
            in_flight: 0,
            changes: 0,
            config,
        }
    }

    /// The current limit.
    pub fn limit(&self) -> u32 {
        // In [min, max] by construction, so the cast cannot truncate.
        self.estimate as u32
    }

    /// Requests in flight.
    pub fn in_flight(&self) -> u32 {
        self.in_flight
    }

    /// Times the (integer) limit changed.
    pub fn changes(&self) -> u64 {
        self.changes
    }

    /// The long-term latency, once a reply was measured.
    pub fn long_latency(&self) -> Option<Duration> {
        (self.long_ns > 0.0).then(|| Duration::from_nanos(self.long_ns as u64))
    }

    /// Takes a place for one request if fewer than the limit are in flight.
    pub fn try_acquire(&mut self) -> bool {
        if self.in_flight >= self.limit() {
            return false;
        }
        self.in_flight += 1;
        true
    }

    /// A request left flight without a measurement (its work was done another way, or
    /// abandoned).
    pub fn release(&mut self) {
        self.in_flight = self.in_flight.saturating_sub(1);
    }

    /// A request's reply came `latency` after it: the request leaves flight and the limit
    /// learns from the latency.
    pub fn on_reply(&mut self, latency: Duration) {
        self.release();
        self.sample(latency);
    }

    /// A request went unanswered for its whole timeout: it leaves flight and the limit
    /// shrinks.
    pub fn on_timeout(&mut self) {
        self.release();
        let factor = f64::from(self.config.timeout_percent.min(100)) / 100.0;
        self.set(self.estimate * factor);
    }

    /// Learns from one latency without changing what is in flight.
    pub fn sample(&mut self, latency: Duration) {
        // At least 1 ns, so the ratio below is finite.
        let r = (latency.as_nanos() as f64).max(1.0);
        if self.long_ns == 0.0 {
            self.long_ns = r;
        } else {
            self.long_ns += (r - self.long_ns) / f64::from(self.config.long_window);
        }
        if self.long_ns > 2.0 * r {
            self.long_ns *= 0.95;
        }
        let tolerance = f64::from(self.config.tolerance_percent) / 100.0;
        let gradient = (tolerance * self.long_ns / r).clamp(0.5, 1.0);
        let smoothing = f64::from(self.config.smoothing_percent.min(100)) / 100.0;
        let target = self.estimate * gradient + f64::from(self.config.queue);
        self.set(self.estimate * (1.0 - smoothing) + target * smoothing);
    }

    fn set(&mut self, estimate: f64) {
        let before = self.limit();
        self.estimate = estimate.clamp(f64::from(self.config.min), f64::from(self.config.max));
        if self.limit() != before {
            self.changes += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn in_flight_is_bounded_by_the_limit() {
        let mut l = AdaptiveLimit::new(AdaptiveLimitConfig {
            initial: 3,
            ..AdaptiveLimitConfig::default()
        });
        assert_eq!((0..5).filter(|_| l.try_acquire()).count(), 3);
        l.release();
        assert!(l.try_acquire());
        assert!(!l.try_acquire());
        assert_eq!(l.in_flight(), 3);
    }

    #[test]
    fn first_updates_by_hand() {
        // initial 8, queue 2, smoothing 20 %: a steady latency has gradient 1, so each
        // sample adds 0.2 × 2 = 0.4: 8.4, 8.8, 9.2 (the integer limit changes at the 3rd).
        let mut l = AdaptiveLimit::new(AdaptiveLimitConfig::default());
        l.sample(10 * MS);
        l.sample(10 * MS);
        assert_eq!((l.limit(), l.changes()), (8, 0));
        l.sample(10 * MS);
        assert_eq!((l.limit(), l.changes()), (9, 1));
        // A reply 10 times slower: long = 10 + 90 / 100 = 10.9 ms, gradient
        // 1.5 × 10.9 / 100 = 0.1635 → 0.5; limit = 0.8 × 9.2 + 0.2 × (4.6 + 2) = 8.68.
        l.sample(100 * MS);
        assert_eq!((l.limit(), l.changes()), (8, 2));
        // A timeout: 8.68 × 0.9 = 7.812.
        l.on_timeout();
        assert_eq!((l.limit(), l.changes()), (7, 3));
    }

    #[test]
    fn shrinks_while_latency_rises_and_grows_back_when_it_falls() {
        let mut l = AdaptiveLimit::new(AdaptiveLimitConfig {
            initial: 20,
            ..AdaptiveLimitConfig::default()
        });
        for _ in 0..50 {
            l.sample(MS);
        }
        let fast = l.limit();
        assert!(fast > 20, "{fast}");
        let mut last = fast;
        for _ in 0..10 {
            l.sample(20 * MS);
            assert!(l.limit() <= last, "never grows while latency is high");
            last = l.limit();
        }
        assert!(last < fast / 2, "{last} vs {fast}");
        for _ in 0..50 {
            l.sample(MS);
        }
        assert!(l.limit() > last + 10, "{} vs {last}", l.limit());
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 128, rng_seed: proptest::test_runner::RngSeed::Fixed(12), ..ProptestConfig::default() })]

        #[test]
        fn limit_stays_in_bounds_and_counts_its_changes(events in proptest::collection::vec(proptest::option::of(0u64..10_000_000_000), 1..200), min in 0u32..5, max in 0u32..100) {
            let mut l = AdaptiveLimit::new(AdaptiveLimitConfig { min, max, ..AdaptiveLimitConfig::default() });
            let (lo, hi) = (min.max(1), max.max(min.max(1)));
            let mut changes = 0;
            let mut last = l.limit();
            for e in events {
                match e {
                    Some(ns) => l.on_reply(Duration::from_nanos(ns)),
                    None => l.on_timeout(),
                }
                prop_assert!(l.limit() >= lo && l.limit() <= hi);
                if l.limit() != last {
                    changes += 1;
                    last = l.limit();
                }
                prop_assert!(l.try_acquire() || l.in_flight() >= l.limit());
            }
            prop_assert_eq!(l.changes(), changes);
        }
    }
}
