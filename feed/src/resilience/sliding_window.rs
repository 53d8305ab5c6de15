//! Event counts over a sliding window of time, in a fixed ring of buckets.

use std::time::Duration;

/// Buckets a window is cut into: an event counts for between nine and ten tenths of the
/// window after it happened, and the whole window costs `BUCKETS × K` counters.
const BUCKETS: usize = 10;

#[derive(Clone, Copy, Debug)]
struct Bucket<const K: usize> {
    /// The bucket-width period this bucket holds (`now / width`); `u64::MAX` when unused.
    epoch: u64,
    counts: [u64; K],
}

/// `K` kinds of event counted over the last `window` of time (a retry budget's first
/// requests and retries; a breaker's calls, faults and slow calls).
///
/// The window is cut into ten buckets of `window / 10`: an event recorded at `t` counts
/// until the bucket after `t`'s tenth bucket begins, so for between `0.9 × window` and
/// `window`. Nothing allocates; time never goes backwards (an earlier `now` is treated as
/// the latest one seen).
///
/// ```
/// use std::time::Duration;
/// use ticklane_feed::resilience::SlidingCounts;
///
/// let mut w = SlidingCounts::<1>::new(Duration::from_secs(1));
/// w.add(Duration::from_millis(50), 0, 3);
/// assert_eq!(w.totals(Duration::from_millis(999)), [3]);
/// assert_eq!(w.totals(Duration::from_millis(1000)), [0]); // its bucket left the window
/// ```
#[derive(Clone, Debug)]
pub struct SlidingCounts<const K: usize> {
    /// Bucket width in nanoseconds, at least 1.
    width_ns: u64,
    /// The latest epoch seen: time is monotonic for the window.
    latest: u64,
    buckets: [Bucket<K>; BUCKETS],
}

impl<const K: usize> SlidingCounts<K> {
    /// An empty window of `window` (at least 10 ns: one per bucket).
    pub fn new(window: Duration) -> Self {
        let window_ns = u64::try_from(window.as_nanos()).unwrap_or(u64::MAX);
        SlidingCounts {
            width_ns: (window_ns / BUCKETS as u64).max(1),
            latest: 0,
            buckets: [Bucket {
                epoch: u64::MAX,
                counts: [0; K],
            }; BUCKETS],
        }
    }

    fn epoch(&mut self, now: Duration) -> u64 {
        let now_ns = u64::try_from(now.as_nanos()).unwrap_or(u64::MAX);
        // `u64::MAX` marks an unused bucket, so the last period is one short of it.
        self.latest = self.latest.max((now_ns / self.width_ns).min(u64::MAX - 1));
        self.latest
    }

    /// Adds `n` events of kind `kind` (`< K`; others are ignored) at `now`.
    pub fn add(&mut self, now: Duration, kind: usize, n: u64) {
        let epoch = self.epoch(now);
        let bucket = &mut self.buckets[(epoch % BUCKETS as u64) as usize];
        if bucket.epoch != epoch {
            *bucket = Bucket {
                epoch,
                counts: [0; K],
            };
        }
        if let Some(c) = bucket.counts.get_mut(kind) {
            *c = c.saturating_add(n);
        }
    }

    /// Each kind's count over the window ending at `now`.
    pub fn totals(&mut self, now: Duration) -> [u64; K] {
        let epoch = self.epoch(now);
        let mut out = [0u64; K];
        for b in &self.buckets {
            if b.epoch != u64::MAX && epoch - b.epoch < BUCKETS as u64 {
                for (o, c) in out.iter_mut().zip(b.counts) {
                    *o = o.saturating_add(c);
                }
            }
        }
        out
    }

    /// Forgets every event.
    pub fn clear(&mut self) {
        for b in &mut self.buckets {
            b.epoch = u64::MAX;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn events_leave_the_window_a_bucket_at_a_time() {
        let mut w = SlidingCounts::<2>::new(100 * MS);
        w.add(Duration::ZERO, 0, 1);
        w.add(15 * MS, 1, 2); // bucket 1 (10..20 ms)
        w.add(95 * MS, 0, 4); // bucket 9
        assert_eq!(w.totals(99 * MS), [5, 2]);
        // At 100 ms bucket 0's period is ten widths old: gone.
        assert_eq!(w.totals(100 * MS), [4, 2]);
        assert_eq!(w.totals(109 * MS), [4, 2]);
        assert_eq!(w.totals(110 * MS), [4, 0]);
        assert_eq!(w.totals(200 * MS), [0, 0]);
        // A bucket reused ten periods later starts from zero.
        w.add(205 * MS, 0, 1);
        assert_eq!(w.totals(205 * MS), [1, 0]);
        w.clear();
        assert_eq!(w.totals(205 * MS), [0, 0]);
    }

    #[test]
    fn an_earlier_now_and_a_bad_kind_do_not_panic() {
        let mut w = SlidingCounts::<1>::new(Duration::ZERO);
        w.add(Duration::from_secs(5), 0, 1);
        w.add(Duration::ZERO, 0, 1); // counted in the latest bucket
        w.add(Duration::ZERO, 7, 1);
        assert_eq!(w.totals(Duration::ZERO), [2]);
        w.add(Duration::MAX, 0, u64::MAX);
        assert_eq!(w.totals(Duration::MAX), [u64::MAX]);
    }
}
