//! A circuit breaker for one dependency (a feed line, a retransmission server).

use std::time::Duration;

use super::sliding_window::SlidingCounts;

const CALLS: usize = 0;
const FAULTS: usize = 1;
const SLOW: usize = 2;

/// How one call to the dependency ended. Only infrastructure faults count against it: an
/// answer the dependency gave on purpose (a rejection, an empty reply) is a success.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CallOutcome {
    /// Answered in time.
    Success,
    /// Answered, but later than the slow threshold.
    SlowSuccess,
    /// No answer: a timeout, a reset, silence.
    Fault,
}

impl CallOutcome {
    /// The outcome of a call answered after `latency` (`None`: not answered at all), with
    /// the breaker's slow threshold.
    pub fn of_reply(latency: Option<Duration>, slow_threshold: Duration) -> Self {
        match latency {
            None => CallOutcome::Fault,
            Some(l) if l > slow_threshold => CallOutcome::SlowSuccess,
            Some(_) => CallOutcome::Success,
        }
    }
}

/// Where a [`Breaker`] stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BreakerState {
    /// Calls go through, and their outcomes are counted.
    Closed,
    /// Calls are refused until the open interval has passed.
    Open,
    /// A set number of probe calls go through; their outcomes decide.
    HalfOpen,
    /// Refused by hand until closed by hand.
    Isolated,
}

/// Settings of a [`Breaker`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BreakerConfig {
    /// The sliding window outcomes are counted over.
    pub window: Duration,
    /// Calls the window must hold before any decision.
    pub min_calls: u32,
    /// Open when faults reach this percentage of the window's calls.
    pub failure_percent: u32,
    /// Open when slow successes reach this percentage of the window's calls.
    pub slow_percent: u32,
    /// A reply later than this is a slow success ([`CallOutcome::of_reply`]); it must be
    /// below the caller's timeout ([`BreakerConfig::check`]), or no call is ever slow.
    pub slow_threshold: Duration,
    /// How long the breaker stays open before it lets probes through.
    pub open_interval: Duration,
    /// Probe calls let through half-open (at least 1).
    pub probes: u32,
}

/// A [`BreakerConfig`] that cannot work.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BreakerConfigError {
    /// The slow threshold must be below the timeout, or a slow call is a timeout first.
    #[error(
        "breaker slow threshold {slow_threshold:?} is not below the timeout {timeout:?}: lower it"
    )]
    SlowThresholdNotBelowTimeout {
        /// The threshold configured.
        slow_threshold: Duration,
        /// The caller's timeout.
        timeout: Duration,
    },
}

impl BreakerConfig {
    /// Checks the settings against the timeout of the calls they guard.
    ///
    /// # Errors
    ///
    /// [`BreakerConfigError::SlowThresholdNotBelowTimeout`] when `slow_threshold >= timeout`.
    pub fn check(&self, timeout: Duration) -> Result<(), BreakerConfigError> {
        if self.slow_threshold >= timeout {
            return Err(BreakerConfigError::SlowThresholdNotBelowTimeout {
                slow_threshold: self.slow_threshold,
                timeout,
            });
        }
        Ok(())
    }
}

/// A call was refused by the breaker.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("circuit {state:?}: call refused")]
pub struct CallRejected {
    /// Why: open, half-open with every probe taken, or isolated.
    pub state: BreakerState,
    /// When an open breaker lets probes through; `None` if isolated or probing.
    pub retry_at: Option<Duration>,
}

/// A circuit breaker for one dependency, after resilience4j's time-based breaker: outcomes
/// over a sliding time window; once it holds `min_calls`, a fault ratio or slow ratio at
/// or above its threshold opens the circuit; after `open_interval` it is half-open and lets
/// `probes` calls through, which close it again if their ratios are below the thresholds
/// and reopen it if not. [`Breaker::isolate`] and [`Breaker::close`] are the manual
/// controls (an operator's admin call).
///
/// ```
/// use std::time::Duration;
/// use ticklane_feed::resilience::{Breaker, BreakerConfig, BreakerState, CallOutcome};
///
/// let s = Duration::from_secs;
/// let mut b = Breaker::new(BreakerConfig {
///     window: s(10), min_calls: 2, failure_percent: 50, slow_percent: 100,
///     slow_threshold: Duration::from_millis(500), open_interval: s(5), probes: 1,
/// });
/// for _ in 0..2 {
///     b.try_call(s(1)).unwrap();
///     b.record(s(1), CallOutcome::Fault);
/// }
/// assert_eq!(b.state(s(1)), BreakerState::Open);
/// assert!(b.try_call(s(2)).is_err());
/// assert!(b.try_call(s(6)).is_ok()); // half-open: one probe
/// b.record(s(6), CallOutcome::Success);
/// assert_eq!(b.state(s(6)), BreakerState::Closed);
/// ```
#[derive(Clone, Debug)]
pub struct Breaker {
    config: BreakerConfig,
    state: BreakerState,
    /// When the breaker last opened (meaningful while `Open`).
    opened_at: Duration,
    window: SlidingCounts<3>,
    /// Probes let through and their outcomes, while half-open.
    probes_started: u32,
    probe_counts: [u32; 3],
    transitions: u64,
}

impl Breaker {
    /// A closed breaker. `probes` is raised to 1.
    pub fn new(config: BreakerConfig) -> Self {
        let config = BreakerConfig {
            probes: config.probes.max(1),
            ..config
        };
        Breaker {
            window: SlidingCounts::new(config.window),
            config,
            state: BreakerState::Closed,
            opened_at: Duration::ZERO,
            probes_started: 0,
            probe_counts: [0; 3],
            transitions: 0,
        }
    }

    /// The state at `now`: an open breaker whose interval has passed reads half-open.
    pub fn state(&self, now: Duration) -> BreakerState {
        match self.state {
            BreakerState::Open if self.open_elapsed(now) => BreakerState::HalfOpen,
            s => s,
        }
    }

    /// State changes since the breaker was made.
    pub fn transitions(&self) -> u64 {
        self.transitions
    }

    fn open_elapsed(&self, now: Duration) -> bool {
        now.saturating_sub(self.opened_at) >= self.config.open_interval
    }

    fn go(&mut self, state: BreakerState, now: Duration) {
        if self.state != state {
            self.transitions += 1;
        }
        self.state = state;
        match state {
            BreakerState::Open => self.opened_at = now,
            BreakerState::HalfOpen => {
                self.probes_started = 0;
                self.probe_counts = [0; 3];
            }
            BreakerState::Closed => self.window.clear(),
            BreakerState::Isolated => {}
        }
    }

    /// Asks to make a call at `now`.
    ///
    /// # Errors
    ///
    /// [`CallRejected`] while open, isolated, or half-open with every probe already let
    /// through.
    pub fn try_call(&mut self, now: Duration) -> Result<(), CallRejected> {
        if self.state == BreakerState::Open && self.open_elapsed(now) {
            self.go(BreakerState::HalfOpen, now);
        }
        match self.state {
            BreakerState::Closed => Ok(()),
            BreakerState::HalfOpen if self.probes_started < self.config.probes => {
                self.probes_started += 1;
                Ok(())
            }
            BreakerState::Open => Err(CallRejected {
                state: BreakerState::Open,
                retry_at: Some(self.opened_at.saturating_add(self.config.open_interval)),
            }),
            state => Err(CallRejected {
                state,
                retry_at: None,
            }),
        }
    }

    /// Whether [`Breaker::try_call`] at `now` would let a call through, without taking a
    /// probe: for a caller that parks work while refused and wants to know when to retry
    /// it, rather than asking (and counting a refusal) on every loop.
    pub fn admits(&self, now: Duration) -> bool {
        match self.state {
            BreakerState::Closed => true,
            BreakerState::Open => self.open_elapsed(now),
            BreakerState::HalfOpen => self.probes_started < self.config.probes,
            BreakerState::Isolated => false,
        }
    }

    /// When an open breaker turns half-open; `None` in any other state.
    pub fn half_open_at(&self) -> Option<Duration> {
        (self.state == BreakerState::Open)
            .then(|| self.opened_at.saturating_add(self.config.open_interval))
    }

    /// Its settings (probes raised to at least 1).
    pub fn config(&self) -> &BreakerConfig {
        &self.config
    }

    fn trips(&self, calls: u64, faults: u64, slow: u64) -> bool {
        let over = |n: u64, percent: u32| {
            n.saturating_mul(100) >= calls.saturating_mul(u64::from(percent))
        };
        over(faults, self.config.failure_percent) || over(slow, self.config.slow_percent)
    }

    /// The call let through at or before `now` ended with `outcome`. Outcomes that arrive
    /// while open or isolated (calls made before) are ignored.
    pub fn record(&mut self, now: Duration, outcome: CallOutcome) {
        let kind = match outcome {
            CallOutcome::Success => None,
            CallOutcome::SlowSuccess => Some(SLOW),
            CallOutcome::Fault => Some(FAULTS),
        };
        match self.state {
            BreakerState::Closed => {
                self.window.add(now, CALLS, 1);
                if let Some(k) = kind {
                    self.window.add(now, k, 1);
                }
                let [calls, faults, slow] = self.window.totals(now);
                if calls >= u64::from(self.config.min_calls.max(1))
                    && self.trips(calls, faults, slow)
                {
                    self.go(BreakerState::Open, now);
                }
            }
            BreakerState::HalfOpen => {
                self.probe_counts[CALLS] += 1;
                if let Some(k) = kind {
                    self.probe_counts[k] += 1;
                }
                if self.probe_counts[CALLS] >= self.config.probes {
                    let [calls, faults, slow] = self.probe_counts.map(u64::from);
                    let next = if self.trips(calls, faults, slow) {
                        BreakerState::Open
                    } else {
                        BreakerState::Closed
                    };
                    self.go(next, now);
                }
            }
            BreakerState::Open | BreakerState::Isolated => {}
        }
    }

    /// Manual isolation: every call is refused until [`Breaker::close`].
    pub fn isolate(&mut self, now: Duration) {
        self.go(BreakerState::Isolated, now);
    }

    /// Manual close: calls go through again, with an empty window.
    pub fn close(&mut self, now: Duration) {
        self.go(BreakerState::Closed, now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const MS: Duration = Duration::from_millis(1);

    fn config() -> BreakerConfig {
        BreakerConfig {
            window: 1000 * MS,
            min_calls: 4,
            failure_percent: 50,
            slow_percent: 75,
            slow_threshold: 80 * MS,
            open_interval: 500 * MS,
            probes: 2,
        }
    }

    fn call(b: &mut Breaker, now: Duration, outcome: CallOutcome) -> Result<(), CallRejected> {
        b.try_call(now)?;
        b.record(now, outcome);
        Ok(())
    }

    #[test]
    fn no_decision_before_min_calls_then_the_failure_ratio_opens() {
        let mut b = Breaker::new(config());
        let t = Duration::ZERO;
        for _ in 0..3 {
            call(&mut b, t, CallOutcome::Fault).expect("closed");
        }
        assert_eq!(b.state(t), BreakerState::Closed, "3 calls < min_calls 4");
        // 4th call: 3 faults of 4 = 75 % ≥ 50 %.
        call(&mut b, t, CallOutcome::Success).expect("closed");
        assert_eq!(b.state(t), BreakerState::Open);
        assert_eq!(
            b.try_call(t + 100 * MS),
            Err(CallRejected {
                state: BreakerState::Open,
                retry_at: Some(500 * MS)
            })
        );
    }

    #[test]
    fn faults_that_slid_out_of_the_window_do_not_count() {
        let mut b = Breaker::new(config());
        for _ in 0..3 {
            call(&mut b, Duration::ZERO, CallOutcome::Fault).expect("closed");
        }
        for i in 0..4 {
            call(&mut b, 1500 * MS + MS * i, CallOutcome::Success).expect("closed");
        }
        assert_eq!(b.state(1600 * MS), BreakerState::Closed);
    }

    #[test]
    fn slow_ratio_opens_and_probes_decide() {
        let mut b = Breaker::new(config());
        let t = Duration::ZERO;
        let slow = CallOutcome::of_reply(Some(90 * MS), config().slow_threshold);
        let quick = CallOutcome::of_reply(Some(80 * MS), config().slow_threshold);
        assert_eq!(
            (slow, quick),
            (CallOutcome::SlowSuccess, CallOutcome::Success)
        );
        assert_eq!(CallOutcome::of_reply(None, MS), CallOutcome::Fault);
        for o in [quick, slow, slow] {
            call(&mut b, t, o).expect("closed");
        }
        call(&mut b, t, slow).expect("closed"); // 3 slow of 4 = 75 %
        assert_eq!(b.state(t), BreakerState::Open);
        // Half-open after the interval: two probes, a third refused.
        assert_eq!(b.state(500 * MS), BreakerState::HalfOpen);
        assert!(b.try_call(500 * MS).is_ok());
        assert!(b.try_call(500 * MS).is_ok());
        assert_eq!(
            b.try_call(500 * MS).map_err(|e| e.state),
            Err(BreakerState::HalfOpen)
        );
        // One probe faults: 1 of 2 = 50 % ≥ 50 %: open again, from now.
        b.record(510 * MS, CallOutcome::Success);
        b.record(520 * MS, CallOutcome::Fault);
        assert_eq!(b.state(1019 * MS), BreakerState::Open);
        assert!(b.try_call(1020 * MS).is_ok());
        assert!(b.try_call(1020 * MS).is_ok());
        b.record(1030 * MS, CallOutcome::Success);
        b.record(1030 * MS, CallOutcome::Success);
        assert_eq!(b.state(1030 * MS), BreakerState::Closed);
        // Closed -> Open -> HalfOpen -> Open -> HalfOpen -> Closed.
        assert_eq!(b.transitions(), 5);
    }

    #[test]
    fn manual_isolate_and_close() {
        let mut b = Breaker::new(config());
        let t = Duration::ZERO;
        b.isolate(t);
        assert_eq!(
            b.try_call(t + Duration::from_secs(3600)),
            Err(CallRejected {
                state: BreakerState::Isolated,
                retry_at: None
            })
        );
        b.record(t, CallOutcome::Fault); // a late outcome changes nothing
        assert_eq!(b.state(t), BreakerState::Isolated);
        b.close(t);
        assert!(call(&mut b, t, CallOutcome::Success).is_ok());
        assert_eq!(b.state(t), BreakerState::Closed);
    }

    #[test]
    fn admits_agrees_with_try_call_without_taking_a_probe() {
        let mut b = Breaker::new(config());
        let t = Duration::ZERO;
        assert!(b.admits(t));
        for _ in 0..4 {
            call(&mut b, t, CallOutcome::Fault).expect("closed");
        }
        assert_eq!(b.half_open_at(), Some(500 * MS));
        assert!(!b.admits(499 * MS));
        assert!(b.try_call(499 * MS).is_err());
        // Half-open: asking does not use up either of the two probes.
        assert!(b.admits(500 * MS) && b.admits(500 * MS));
        assert!(b.try_call(500 * MS).is_ok());
        assert!(b.admits(500 * MS));
        assert!(b.try_call(500 * MS).is_ok());
        assert!(!b.admits(500 * MS));
        b.isolate(t);
        assert!(!b.admits(t + Duration::from_secs(3600)));
        assert_eq!(b.half_open_at(), None);
    }

    #[test]
    fn slow_threshold_must_be_below_the_timeout() {
        assert!(config().check(100 * MS).is_ok());
        assert_eq!(
            config().check(80 * MS),
            Err(BreakerConfigError::SlowThresholdNotBelowTimeout {
                slow_threshold: 80 * MS,
                timeout: 80 * MS
            })
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 128, rng_seed: proptest::test_runner::RngSeed::Fixed(4), ..ProptestConfig::default() })]

        /// Against a naive model: a success with no fault or slow call in the last window
        /// never opens a closed breaker, and an open one refuses every call until its
        /// interval has passed.
        #[test]
        fn open_refuses_until_the_interval_and_successes_never_open(ops in proptest::collection::vec((0u64..200, 0u8..3), 1..300)) {
            let mut b = Breaker::new(config());
            let mut now = Duration::ZERO;
            let mut opened_at: Option<Duration> = None;
            let mut last_bad: Option<Duration> = None;
            for (step, kind) in ops {
                now += MS * (step as u32);
                let outcome = [CallOutcome::Success, CallOutcome::SlowSuccess, CallOutcome::Fault][usize::from(kind)];
                let before = b.state(now);
                let allowed = b.try_call(now).is_ok();
                if let Some(at) = opened_at {
                    if now < at + config().open_interval {
                        prop_assert!(!allowed);
                    }
                }
                if allowed {
                    b.record(now, outcome);
                    let clean = last_bad.is_none_or(|t| now - t >= config().window);
                    if before == BreakerState::Closed && outcome == CallOutcome::Success && clean {
                        prop_assert_eq!(b.state(now), BreakerState::Closed);
                    }
                    if outcome != CallOutcome::Success {
                        last_bad = Some(now);
                    }
                }
                opened_at = match (b.state(now), before) {
                    (BreakerState::Open, BreakerState::Open) => opened_at,
                    (BreakerState::Open, _) => Some(now),
                    _ => None,
                };
            }
        }
    }
}
