//! A reply timeout derived from measured latency: RFC 6298's SRTT and RTTVAR.

use std::time::Duration;

/// Settings of a [`ReplyTimeout`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReplyTimeoutConfig {
    /// The timeout before any reply has been measured.
    pub initial: Duration,
    /// The shortest timeout, however fast replies come (RFC 6298 suggests a floor so that
    /// a burst of quick replies does not make the next slow one a spurious timeout).
    pub min: Duration,
    /// The longest timeout, after any number of backed-off timeouts.
    pub max: Duration,
}

/// How long to wait for a reply, learnt from replies (RFC 6298, "Computing TCP's
/// Retransmission Timer"): the smoothed latency `srtt` and its variation `rttvar` give
/// `timeout = srtt + 4 · rttvar`, clamped to `[min, max]`.
///
/// - The first sample `R` sets `srtt = R`, `rttvar = R / 2`.
/// - Each later one sets `rttvar = 3/4 · rttvar + 1/4 · |srtt − R|`, then
///   `srtt = 7/8 · srtt + 1/8 · R`.
/// - A timeout doubles the timeout (RFC 6298 5.5) until the next sample recomputes it, so
///   a server slower than the current timeout is still heard.
///
/// Take samples only from unambiguous replies (Karn's rule): a reply to a request that was
/// sent more than once may answer any of the copies.
///
/// ```
/// use std::time::Duration;
/// use ticklane_feed::resilience::{ReplyTimeout, ReplyTimeoutConfig};
///
/// let ms = Duration::from_millis;
/// let mut t = ReplyTimeout::new(ReplyTimeoutConfig { initial: ms(100), min: ms(1), max: ms(5000) });
/// assert_eq!(t.timeout(), ms(100));
/// t.on_sample(ms(40)); // srtt 40, rttvar 20: 40 + 4 × 20
/// assert_eq!(t.timeout(), ms(120));
/// ```
#[derive(Clone, Copy, Debug)]
pub struct ReplyTimeout {
    config: ReplyTimeoutConfig,
    /// Smoothed latency and its variation, in nanoseconds; `None` before any sample.
    srtt_rttvar: Option<(u64, u64)>,
    /// The current timeout in nanoseconds, within `[min, max]`.
    timeout_ns: u64,
    samples: u64,
    timeouts: u64,
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

impl ReplyTimeout {
    /// A timeout at `config.initial` (clamped), with nothing measured yet. A `max` below
    /// `min` is raised to it.
    pub fn new(config: ReplyTimeoutConfig) -> Self {
        let config = ReplyTimeoutConfig {
            max: config.max.max(config.min),
            ..config
        };
        let mut t = ReplyTimeout {
            config,
            srtt_rttvar: None,
            timeout_ns: 0,
            samples: 0,
            timeouts: 0,
        };
        t.timeout_ns = t.clamp(nanos(config.initial));
        t
    }

    fn clamp(&self, ns: u64) -> u64 {
        ns.clamp(nanos(self.config.min), nanos(self.config.max))
    }

    /// How long to wait for the next reply.
    pub fn timeout(&self) -> Duration {
        Duration::from_nanos(self.timeout_ns)
    }

    /// A reply came `latency` after its request.
    pub fn on_sample(&mut self, latency: Duration) {
        let r = u128::from(nanos(latency));
        let (srtt, rttvar) = match self.srtt_rttvar {
            None => (r, r / 2),
            Some((srtt, rttvar)) => {
                let (srtt, rttvar) = (u128::from(srtt), u128::from(rttvar));
                let rttvar = (3 * rttvar + srtt.abs_diff(r)) / 4;
                ((7 * srtt + r) / 8, rttvar)
            }
        };
        let srtt = u64::try_from(srtt).unwrap_or(u64::MAX);
        let rttvar = u64::try_from(rttvar).unwrap_or(u64::MAX);
        self.srtt_rttvar = Some((srtt, rttvar));
        self.timeout_ns = self.clamp(srtt.saturating_add(rttvar.saturating_mul(4)));
        self.samples += 1;
    }

    /// A request went unanswered for the whole timeout: back the timer off (double it, up
    /// to `max`).
    pub fn on_timeout(&mut self) {
        self.timeout_ns = self.clamp(self.timeout_ns.saturating_mul(2));
        self.timeouts += 1;
    }

    /// The smoothed latency, once a reply was measured.
    pub fn srtt(&self) -> Option<Duration> {
        self.srtt_rttvar.map(|(s, _)| Duration::from_nanos(s))
    }

    /// The latency's smoothed variation, once a reply was measured.
    pub fn rttvar(&self) -> Option<Duration> {
        self.srtt_rttvar.map(|(_, v)| Duration::from_nanos(v))
    }

    /// Samples taken.
    pub fn samples(&self) -> u64 {
        self.samples
    }

    /// Timeouts reported.
    pub fn timeouts(&self) -> u64 {
        self.timeouts
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const MS: Duration = Duration::from_millis(1);

    fn timer() -> ReplyTimeout {
        ReplyTimeout::new(ReplyTimeoutConfig {
            initial: 100 * MS,
            min: 10 * MS,
            max: 2000 * MS,
        })
    }

    #[test]
    fn follows_rfc_6298_by_hand() {
        let mut t = timer();
        assert_eq!((t.timeout(), t.srtt()), (100 * MS, None));
        // R = 80: srtt 80, rttvar 40, timeout 80 + 160 = 240.
        t.on_sample(80 * MS);
        assert_eq!(t.timeout(), 240 * MS);
        // R = 160: rttvar = (3 × 40 + |80 − 160|) / 4 = 50; srtt = (7 × 80 + 160) / 8 = 90;
        // timeout 90 + 200 = 290.
        t.on_sample(160 * MS);
        assert_eq!((t.srtt(), t.rttvar()), (Some(90 * MS), Some(50 * MS)));
        assert_eq!(t.timeout(), 290 * MS);
        // Two timeouts double it twice; the next sample recomputes it.
        t.on_timeout();
        t.on_timeout();
        assert_eq!(t.timeout(), 1160 * MS);
        t.on_timeout();
        assert_eq!(t.timeout(), 2000 * MS, "clamped at max");
        // R = 90: rttvar = (3 × 50 + 0) / 4 = 37.5; srtt 90; timeout 90 + 150 = 240.
        t.on_sample(90 * MS);
        assert_eq!(t.timeout(), 240 * MS);
        assert_eq!((t.samples(), t.timeouts()), (3, 3));
    }

    #[test]
    fn fast_steady_replies_settle_at_the_floor() {
        let mut t = timer();
        for _ in 0..200 {
            t.on_sample(MS);
        }
        assert_eq!(t.timeout(), 10 * MS);
        assert_eq!(t.srtt(), Some(MS));
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 128, rng_seed: proptest::test_runner::RngSeed::Fixed(8), ..ProptestConfig::default() })]

        /// Whatever happens, the timeout stays within its bounds, and after a sample it is
        /// at least the smoothed latency (or the max).
        #[test]
        fn timeout_stays_in_bounds(events in proptest::collection::vec(proptest::option::of(0u64..u64::MAX), 1..100)) {
            let mut t = timer();
            for e in events {
                match e {
                    Some(ns) => {
                        t.on_sample(Duration::from_nanos(ns));
                        let srtt = t.srtt().expect("sampled");
                        prop_assert!(t.timeout() >= srtt.min(2000 * MS));
                    }
                    None => t.on_timeout(),
                }
                prop_assert!(t.timeout() >= 10 * MS && t.timeout() <= 2000 * MS);
            }
        }
    }
}
