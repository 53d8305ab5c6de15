//! The book thread's receive-to-applied latency as other threads see it while the line
//! runs: p50, p99, p99.9 and max, over the run so far, in a small block of atomics that the
//! book thread refreshes at most every [`PUBLISH_EVERY_NS`] (at a batch's end or when it
//! idles, never per message) and that the metrics endpoint reads.
//!
//! Over the run so far, not a recent window: the figures are the same histogram the line's
//! end-of-run report prints, so the last scrape and the report agree, and reading them off
//! costs no second histogram on the book thread. A recent window is what a dashboard gets
//! from two scrapes of a counter; a tail percentile cannot be windowed that way, which is the
//! price of this choice: a long run's p99 moves slowly.
//!
//! Each value is individually current; the four are not one atomic snapshot (a scrape may
//! see a p99 from one refresh and a max from the next, off by at most one refresh).
//! `LatencyGauges` is `Send` and `Sync`: share it in an `Arc`. [`LatencyPublisher`] is the
//! book thread's side.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use hdrhistogram::Histogram;

/// The least time between two refreshes: reading four quantiles off the histogram walks its
/// buckets, which the book thread can afford ten times a second, not per message.
pub const PUBLISH_EVERY_NS: u64 = 100_000_000;

/// The shared receive-to-applied latency of one line, in nanoseconds.
#[derive(Debug, Default)]
pub struct LatencyGauges {
    samples: AtomicU64,
    p50_ns: AtomicU64,
    p99_ns: AtomicU64,
    p999_ns: AtomicU64,
    max_ns: AtomicU64,
    refreshes: AtomicU64,
}

/// A copy of a line's latency gauges (what [`LatencyGauges::load`] returns).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LatencyNow {
    /// Messages the figures cover (0: nothing published yet; the figures mean nothing).
    pub samples: u64,
    /// Median, ns.
    pub p50_ns: u64,
    /// 99th percentile, ns.
    pub p99_ns: u64,
    /// 99.9th percentile, ns.
    pub p999_ns: u64,
    /// Largest, ns.
    pub max_ns: u64,
    /// Times the book thread refreshed the figures.
    pub refreshes: u64,
}

impl LatencyGauges {
    /// Nothing published yet.
    pub fn new() -> Self {
        LatencyGauges::default()
    }

    /// The figures now.
    pub fn load(&self) -> LatencyNow {
        LatencyNow {
            samples: self.samples.load(Ordering::Relaxed),
            p50_ns: self.p50_ns.load(Ordering::Relaxed),
            p99_ns: self.p99_ns.load(Ordering::Relaxed),
            p999_ns: self.p999_ns.load(Ordering::Relaxed),
            max_ns: self.max_ns.load(Ordering::Relaxed),
            refreshes: self.refreshes.load(Ordering::Relaxed),
        }
    }

    /// Reads the quantiles off `h` into the block; allocates nothing.
    fn store(&self, h: &Histogram<u64>) {
        self.p50_ns
            .store(h.value_at_quantile(0.50), Ordering::Relaxed);
        self.p99_ns
            .store(h.value_at_quantile(0.99), Ordering::Relaxed);
        self.p999_ns
            .store(h.value_at_quantile(0.999), Ordering::Relaxed);
        self.max_ns.store(h.max(), Ordering::Relaxed);
        // Last, so that a reader that sees the count sees figures at least this fresh.
        self.samples.store(h.len(), Ordering::Release);
        self.refreshes.fetch_add(1, Ordering::Relaxed);
    }
}

/// The book thread's side: refreshes the shared gauges from its histogram when one
/// [`PUBLISH_EVERY_NS`] has passed since the last refresh. `Send`, not shared.
#[derive(Debug, Default)]
pub struct LatencyPublisher {
    gauges: Option<Arc<LatencyGauges>>,
    /// When the last refresh happened (the book thread's clock); `None` before the first.
    last_ns: Option<u64>,
}

impl LatencyPublisher {
    /// Refreshes `gauges`; `None` publishes nothing (replay, tests, the bench harness).
    pub fn new(gauges: Option<Arc<LatencyGauges>>) -> Self {
        LatencyPublisher {
            gauges,
            last_ns: None,
        }
    }

    /// Refreshes from `h` if [`PUBLISH_EVERY_NS`] passed since the last refresh (the first
    /// one waits as long after `now_ns`'s first call, so that it covers a warm-up's worth of
    /// messages rather than the first one). Returns whether it refreshed.
    #[inline]
    pub fn maybe_publish(&mut self, now_ns: u64, h: &Histogram<u64>) -> bool {
        let Some(gauges) = &self.gauges else {
            return false;
        };
        let last = *self.last_ns.get_or_insert(now_ns);
        if now_ns.saturating_sub(last) < PUBLISH_EVERY_NS || h.is_empty() {
            return false;
        }
        gauges.store(h);
        self.last_ns = Some(now_ns);
        true
    }

    /// Refreshes from `h` at once, whatever the time: at the line's end, so that the last
    /// figures are the report's.
    pub fn publish_final(&mut self, h: &Histogram<u64>) {
        if let Some(gauges) = &self.gauges {
            if !h.is_empty() {
                gauges.store(h);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::new_histogram;

    /// 1 µs ..= 10 ms in 1 µs steps: exact order statistics known without the histogram.
    fn known() -> Histogram<u64> {
        let mut h = new_histogram();
        for v in 1..=10_000u64 {
            h.saturating_record(v * 1_000);
        }
        h
    }

    #[test]
    fn refreshes_at_most_once_per_interval_and_carries_the_quantiles() {
        let gauges = Arc::new(LatencyGauges::new());
        let mut p = LatencyPublisher::new(Some(Arc::clone(&gauges)));
        let h = known();
        // Injected times: the first call starts the interval; nothing until it has passed.
        assert!(!p.maybe_publish(1_000, &h));
        assert!(!p.maybe_publish(1_000 + PUBLISH_EVERY_NS - 1, &h));
        assert_eq!(gauges.load(), LatencyNow::default());
        assert!(p.maybe_publish(1_000 + PUBLISH_EVERY_NS, &h));
        assert!(!p.maybe_publish(1_000 + PUBLISH_EVERY_NS + 5, &h));
        let now = gauges.load();
        assert_eq!((now.samples, now.refreshes), (10_000, 1));
        // Within hdrhistogram's 3 significant digits of the exact 5,000th, 9,900th and
        // 9,990th values and the largest.
        let close = |got: u64, exact: u64| got.abs_diff(exact) * 1000 <= exact;
        assert!(close(now.p50_ns, 5_000_000), "{now:?}");
        assert!(close(now.p99_ns, 9_900_000), "{now:?}");
        assert!(close(now.p999_ns, 9_990_000), "{now:?}");
        assert!(close(now.max_ns, 10_000_000), "{now:?}");
        // Over a long run: one refresh per interval, however many calls.
        for i in 0..1_000u64 {
            p.maybe_publish(1_000 + PUBLISH_EVERY_NS + i * PUBLISH_EVERY_NS / 10, &h);
        }
        assert_eq!(gauges.load().refreshes, 1 + 99);
    }

    #[test]
    fn nothing_is_published_from_an_empty_histogram_or_without_gauges() {
        let gauges = Arc::new(LatencyGauges::new());
        let mut p = LatencyPublisher::new(Some(Arc::clone(&gauges)));
        let empty = new_histogram();
        p.maybe_publish(0, &empty);
        assert!(!p.maybe_publish(PUBLISH_EVERY_NS * 3, &empty));
        p.publish_final(&empty);
        assert_eq!(gauges.load(), LatencyNow::default());
        let mut none = LatencyPublisher::new(None);
        none.maybe_publish(0, &known());
        assert!(!none.maybe_publish(PUBLISH_EVERY_NS, &known()));
    }

    #[test]
    fn the_final_publication_is_the_histograms_own() {
        let gauges = Arc::new(LatencyGauges::new());
        let mut p = LatencyPublisher::new(Some(Arc::clone(&gauges)));
        let mut h = new_histogram();
        h.saturating_record(700);
        h.saturating_record(42_000);
        p.publish_final(&h);
        let now = gauges.load();
        assert_eq!((now.samples, now.refreshes), (2, 1));
        assert!(now.max_ns.abs_diff(42_000) <= 42, "{now:?}");
        assert!(now.p50_ns.abs_diff(700) <= 1, "{now:?}");
    }
}
