//! The standing-queue detector: CoDel's rule applied to how long work waited.
//!
//! A queue *stands* when even its shortest wait over a whole interval stayed above the
//! target: a burst that clears within one interval leaves at least one short wait behind
//! and never trips it, while a queue that only grows does. Occupancy is never looked at: a
//! long queue that moves fast is no problem, a short one that stays is.
#![forbid(unsafe_code)]

/// Target and interval of one detector, in nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CodelConfig {
    /// A wait longer than this is too long (ns). CoDel's "target".
    pub target_ns: u64,
    /// How long every wait must stay above the target before the queue is declared
    /// standing, and how long every wait must stay below it before a standing queue that
    /// never emptied is declared gone (ns). CoDel's "interval".
    pub interval_ns: u64,
}

impl Default for CodelConfig {
    /// 50 µs target over a 500 µs interval: chosen from measurements of the book stage on
    /// the development machine (see the `overload` module's docs, "Defaults"): a full 256-frame
    /// batch of applies and snapshot publications is served in about 40 µs, so a sojourn
    /// above 50 µs means work waited longer than one batch; and half a millisecond is long
    /// enough for a market-open burst to clear, short enough to keep the p99 staleness
    /// under 1 ms at twice the engine's capacity.
    fn default() -> Self {
        CodelConfig {
            target_ns: 50_000,
            interval_ns: 500_000,
        }
    }
}

/// What one observation changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transition {
    /// Nothing changed.
    None,
    /// The queue has just been declared standing: switch to overload service.
    Entered,
    /// The queue is no longer standing: back to normal service.
    Left,
}

/// A CoDel-style sojourn-time detector for one queue.
///
/// Feed it every item's sojourn with [`SojournDetector::observe`] and tell it when the
/// queue is found empty with [`SojournDetector::drained`]. It allocates nothing and costs a
/// few compares per item.
///
/// # Examples
///
/// ```
/// use ticklane_pipeline::overload::{CodelConfig, SojournDetector, Transition};
///
/// let mut codel = SojournDetector::new(CodelConfig { target_ns: 10, interval_ns: 100 });
/// assert_eq!(codel.observe(50, 1_000), Transition::None); // above target: the clock starts
/// assert_eq!(codel.observe(60, 1_050), Transition::None);
/// assert_eq!(codel.observe(70, 1_100), Transition::Entered); // a whole interval above
/// assert!(codel.is_standing());
/// assert_eq!(codel.drained(1_200), Transition::Left);
/// assert_eq!(codel.overload_ns(1_200), 100);
/// ```
#[derive(Clone, Debug)]
pub struct SojournDetector {
    config: CodelConfig,
    /// While normal: when the current run of above-target waits started (`None` if the last
    /// wait was below target). While standing: when the current run of below-target waits
    /// started.
    run_started_ns: Option<u64>,
    /// `Some(since)` while the queue stands.
    standing_since_ns: Option<u64>,
    /// Time spent standing in episodes that have ended (ns).
    overload_ns: u64,
    /// Episodes of standing queue entered.
    episodes: u64,
    /// Longest sojourn seen (ns).
    max_sojourn_ns: u64,
}

impl SojournDetector {
    /// A detector with `config`, in normal state.
    pub fn new(config: CodelConfig) -> Self {
        SojournDetector {
            config,
            run_started_ns: None,
            standing_since_ns: None,
            overload_ns: 0,
            episodes: 0,
            max_sojourn_ns: 0,
        }
    }

    /// The configuration.
    pub fn config(&self) -> CodelConfig {
        self.config
    }

    /// One item left the queue after waiting `sojourn_ns`; `now_ns` is the time it left.
    #[inline]
    pub fn observe(&mut self, sojourn_ns: u64, now_ns: u64) -> Transition {
        self.max_sojourn_ns = self.max_sojourn_ns.max(sojourn_ns);
        let above = sojourn_ns > self.config.target_ns;
        match self.standing_since_ns {
            None if above => {
                let started = *self.run_started_ns.get_or_insert(now_ns);
                if now_ns.saturating_sub(started) >= self.config.interval_ns {
                    self.enter(now_ns);
                    return Transition::Entered;
                }
            }
            None => self.run_started_ns = None,
            // A standing queue that never empties still ends once every wait over a whole
            // interval was short: the mirror image of how it began.
            Some(_) if !above => {
                let started = *self.run_started_ns.get_or_insert(now_ns);
                if now_ns.saturating_sub(started) >= self.config.interval_ns {
                    self.leave(now_ns);
                    return Transition::Left;
                }
            }
            Some(_) => self.run_started_ns = None,
        }
        Transition::None
    }

    /// The queue was found empty at `now_ns`: whatever stood has drained.
    #[inline]
    pub fn drained(&mut self, now_ns: u64) -> Transition {
        if self.standing_since_ns.is_some() {
            self.leave(now_ns);
            Transition::Left
        } else {
            self.run_started_ns = None;
            Transition::None
        }
    }

    /// Whether the queue stands now.
    #[inline(always)]
    pub fn is_standing(&self) -> bool {
        self.standing_since_ns.is_some()
    }

    /// Since when the queue stands, if it does.
    pub fn standing_since_ns(&self) -> Option<u64> {
        self.standing_since_ns
    }

    /// Total time spent standing up to `now_ns`, the current episode included (ns).
    pub fn overload_ns(&self, now_ns: u64) -> u64 {
        self.overload_ns
            + self
                .standing_since_ns
                .map_or(0, |s| now_ns.saturating_sub(s))
    }

    /// Standing episodes entered so far.
    pub fn episodes(&self) -> u64 {
        self.episodes
    }

    /// Longest sojourn observed (ns).
    pub fn max_sojourn_ns(&self) -> u64 {
        self.max_sojourn_ns
    }

    #[cold]
    fn enter(&mut self, now_ns: u64) {
        self.standing_since_ns = Some(now_ns);
        self.run_started_ns = None;
        self.episodes += 1;
    }

    #[cold]
    fn leave(&mut self, now_ns: u64) {
        if let Some(since) = self.standing_since_ns.take() {
            self.overload_ns += now_ns.saturating_sub(since);
        }
        self.run_started_ns = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CONFIG: CodelConfig = CodelConfig {
        target_ns: 1_000,
        interval_ns: 10_000,
    };

    #[test]
    fn a_burst_shorter_than_the_interval_never_trips_it() {
        let mut codel = SojournDetector::new(CONFIG);
        // A burst: waits far above target for 9 µs, then one short wait, many times over.
        for round in 0..100u64 {
            let base = round * 20_000;
            for t in (0..9_000).step_by(100) {
                assert_eq!(codel.observe(50_000, base + t), Transition::None);
            }
            assert_eq!(codel.observe(10, base + 9_500), Transition::None);
        }
        assert!(!codel.is_standing());
        assert_eq!(codel.episodes(), 0);
        assert_eq!(codel.max_sojourn_ns(), 50_000);
    }

    #[test]
    fn a_whole_interval_above_target_trips_it_and_a_drain_clears_it() {
        let mut codel = SojournDetector::new(CONFIG);
        assert_eq!(codel.observe(2_000, 100), Transition::None);
        assert_eq!(codel.observe(2_000, 10_099), Transition::None);
        assert_eq!(codel.observe(2_000, 10_100), Transition::Entered);
        assert_eq!(codel.observe(2_000, 10_200), Transition::None);
        assert_eq!(codel.standing_since_ns(), Some(10_100));
        assert_eq!(codel.drained(30_100), Transition::Left);
        assert_eq!(codel.overload_ns(99_999), 20_000);
        assert_eq!(codel.drained(40_000), Transition::None);
    }

    #[test]
    fn a_standing_queue_that_keeps_short_waits_for_an_interval_ends() {
        let mut codel = SojournDetector::new(CONFIG);
        codel.observe(5_000, 0);
        assert_eq!(codel.observe(5_000, 10_000), Transition::Entered);
        // One long wait in between restarts the count.
        codel.observe(10, 11_000);
        codel.observe(5_000, 15_000);
        codel.observe(10, 16_000);
        assert_eq!(codel.observe(10, 25_999), Transition::None);
        assert_eq!(codel.observe(10, 26_000), Transition::Left);
        assert_eq!(codel.overload_ns(26_000), 16_000);
        assert_eq!(codel.episodes(), 1);
    }

    #[test]
    fn the_current_episode_counts_toward_overload_time() {
        let mut codel = SojournDetector::new(CONFIG);
        codel.observe(5_000, 0);
        codel.observe(5_000, 10_000);
        assert_eq!(codel.overload_ns(15_000), 5_000);
    }
}
