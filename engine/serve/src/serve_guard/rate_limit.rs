//! A token bucket in integer nanoseconds: so many admissions per second, with a burst.

/// Nanoseconds in one second.
const NS_PER_S: u64 = 1_000_000_000;

/// A token bucket of `per_second` tokens a second holding at most `burst`, kept as the
/// generic cell rate algorithm (GCRA, ITU-T I.371): one *theoretical arrival time* instead of
/// a token count, so it needs no refill step, no floats and no timer.
///
/// An admission costs one emission interval `T = 1 s / per_second` (rounded down to the
/// nanosecond, so the rate is at least the one asked for); it is allowed when the theoretical
/// arrival time is at most `(burst − 1) · T` ahead of now. Time is whatever nanosecond clock
/// the caller reads (never read here), so tests drive it exactly; an earlier `now` than one
/// seen before is treated as no time passing, never as a panic.
///
/// ```
/// use ticklane_serve::serve_guard::RateLimit;
///
/// let mut bucket = RateLimit::new(2, 3); // 2 a second, bursts of 3
/// assert!((0..3).all(|_| bucket.try_take(0)));
/// assert!(!bucket.try_take(0)); // the burst is spent
/// assert!(bucket.try_take(500_000_000)); // half a second later: one token back
/// assert!(!bucket.try_take(500_000_000));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RateLimit {
    /// Emission interval in ns: the time one token takes to come back; at least 1.
    interval_ns: u64,
    /// How far the theoretical arrival time may run ahead of now: `(burst − 1) · interval`.
    tolerance_ns: u64,
    /// Theoretical arrival time of the next admission, in the caller's ns; 0 at start.
    tat_ns: u64,
}

impl RateLimit {
    /// A bucket of `per_second` tokens a second (0 counts as 1, the slowest rate it keeps)
    /// holding at most `burst` (0 counts as 1), full at time 0.
    pub fn new(per_second: u32, burst: u32) -> Self {
        let interval_ns = (NS_PER_S / u64::from(per_second.max(1))).max(1);
        RateLimit {
            interval_ns,
            tolerance_ns: interval_ns.saturating_mul(u64::from(burst.max(1)) - 1),
            tat_ns: 0,
        }
    }

    /// Takes one token at `now_ns` if there is one; a refusal costs nothing.
    pub fn try_take(&mut self, now_ns: u64) -> bool {
        if !self.would_admit(now_ns) {
            return false;
        }
        self.tat_ns = self.tat_ns.max(now_ns).saturating_add(self.interval_ns);
        true
    }

    /// Whether [`try_take`](Self::try_take) at `now_ns` would succeed, without taking.
    pub fn would_admit(&self, now_ns: u64) -> bool {
        self.tat_ns <= now_ns.saturating_add(self.tolerance_ns)
    }

    /// The earliest time at or after `now_ns` at which a token will be there.
    pub fn next_token_ns(&self, now_ns: u64) -> u64 {
        self.tat_ns.saturating_sub(self.tolerance_ns).max(now_ns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Admissions over `[0, horizon)` when asking every `step` ns, counted by hand: a full
    /// bucket of `burst` at 0, then one per interval.
    fn admitted(bucket: &mut RateLimit, step: u64, horizon: u64) -> u64 {
        (0..horizon / step)
            .filter(|i| bucket.try_take(i * step))
            .count() as u64
    }

    #[test]
    fn a_hammering_caller_gets_the_burst_then_the_rate() {
        // 100 a second, burst 10, asked every 1 ms for 2 s: 10 at once, then one per 10 ms
        // from 10 ms on (the 10 ms mark to 1990 ms inclusive: 199), 209 in all.
        let mut b = RateLimit::new(100, 10);
        assert_eq!(admitted(&mut b, 1_000_000, 2 * NS_PER_S), 10 + 199);
    }

    #[test]
    fn an_idle_bucket_refills_only_to_its_burst() {
        let mut b = RateLimit::new(1_000, 5);
        assert!((0..5).all(|_| b.try_take(0)));
        assert!(!b.try_take(0));
        // An hour idle gives back 5 tokens, not 3.6 million.
        let hour = 3_600 * NS_PER_S;
        assert_eq!((0..100).filter(|_| b.try_take(hour)).count(), 5);
        assert_eq!(b.next_token_ns(hour), hour + 1_000_000);
    }

    #[test]
    fn refusals_cost_nothing_and_time_going_back_does_not_panic() {
        let mut b = RateLimit::new(1, 1);
        assert!(b.try_take(10 * NS_PER_S));
        for _ in 0..1_000 {
            assert!(!b.try_take(10 * NS_PER_S + 1));
        }
        assert!(!b.try_take(0));
        assert!(b.try_take(11 * NS_PER_S));
        let mut extreme = RateLimit::new(u32::MAX, u32::MAX);
        assert!(extreme.try_take(u64::MAX));
        let mut zero = RateLimit::new(0, 0);
        assert!(zero.try_take(0));
        assert!(!zero.try_take(NS_PER_S - 1));
        assert!(zero.try_take(NS_PER_S));
    }
}
