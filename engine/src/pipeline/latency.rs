//! Per-stage latency histograms (HdrHistogram), allocated once, recorded without allocation.

use hdrhistogram::Histogram;

/// Highest latency recorded exactly (60 s); larger values saturate into the top bucket.
const HIGHEST_NS: u64 = 60_000_000_000;

/// Percentiles of one histogram, in nanoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Percentiles {
    /// Values recorded.
    pub count: u64,
    /// Median.
    pub p50: u64,
    /// 90th percentile.
    pub p90: u64,
    /// 99th percentile.
    pub p99: u64,
    /// 99.9th percentile.
    pub p999: u64,
    /// 99.99th percentile.
    pub p9999: u64,
    /// Largest value.
    pub max: u64,
}

impl Percentiles {
    /// Reads the percentiles off a histogram.
    pub fn of(h: &Histogram<u64>) -> Self {
        Percentiles {
            count: h.len(),
            p50: h.value_at_quantile(0.50),
            p90: h.value_at_quantile(0.90),
            p99: h.value_at_quantile(0.99),
            p999: h.value_at_quantile(0.999),
            p9999: h.value_at_quantile(0.9999),
            max: h.max(),
        }
    }

    /// One line: `p50 … p90 … p99 … p99.9 … p99.99 … max …` with units a person reads.
    pub fn to_line(&self) -> String {
        format!(
            "p50 {}  p90 {}  p99 {}  p99.9 {}  p99.99 {}  max {}  (n={})",
            human_ns(self.p50),
            human_ns(self.p90),
            human_ns(self.p99),
            human_ns(self.p999),
            human_ns(self.p9999),
            human_ns(self.max),
            self.count
        )
    }
}

/// `1234` as `1.23 µs`.
pub fn human_ns(ns: u64) -> String {
    match ns {
        0..=999 => format!("{ns} ns"),
        1_000..=999_999 => format!("{:.2} µs", ns as f64 / 1e3),
        1_000_000..=999_999_999 => format!("{:.2} ms", ns as f64 / 1e6),
        _ => format!("{:.2} s", ns as f64 / 1e9),
    }
}

/// A histogram with ticklane's bounds: 1 ns to 60 s at 3 significant digits.
///
/// # Panics
///
/// Never: the bounds are constants hdrhistogram accepts.
pub fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, HIGHEST_NS, 3).expect("invariant: constant bounds are valid")
}

/// The book thread's latency record: receive to applied, receive to published, and
/// intended send time to published (the coordinated-omission-free view).
pub struct StageLatency {
    /// Receive stamp to the book having applied the message.
    pub receive_to_applied: Histogram<u64>,
    /// Receive stamp to the snapshot slot published (messages that changed a book).
    pub receive_to_published: Histogram<u64>,
    /// Intended send time to the snapshot slot published, when the source knows it.
    pub intended_to_published: Histogram<u64>,
}

impl Default for StageLatency {
    fn default() -> Self {
        StageLatency {
            receive_to_applied: new_histogram(),
            receive_to_published: new_histogram(),
            intended_to_published: new_histogram(),
        }
    }
}

impl StageLatency {
    /// Records one message's stamps; `published_ns` is `None` if it changed no book.
    #[inline]
    pub fn record(
        &mut self,
        recv_ns: u64,
        intended_ns: u64,
        applied_ns: u64,
        published_ns: Option<u64>,
    ) {
        self.receive_to_applied
            .saturating_record(applied_ns.saturating_sub(recv_ns).max(1));
        if let Some(p) = published_ns {
            self.receive_to_published
                .saturating_record(p.saturating_sub(recv_ns).max(1));
            if intended_ns != 0 {
                self.intended_to_published
                    .saturating_record(p.saturating_sub(intended_ns).max(1));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_of_a_known_distribution() {
        let mut h = new_histogram();
        for v in 1..=10_000u64 {
            h.saturating_record(v * 1_000);
        }
        let p = Percentiles::of(&h);
        assert_eq!(p.count, 10_000);
        // 3 significant digits: within 0.1% of the exact order statistic.
        let close = |got: u64, exact: u64| got.abs_diff(exact) * 1000 <= exact;
        assert!(close(p.p50, 5_000_000), "{p:?}");
        assert!(close(p.p99, 9_900_000), "{p:?}");
        assert!(close(p.max, 10_000_000), "{p:?}");
    }

    #[test]
    fn human_units() {
        assert_eq!(human_ns(850), "850 ns");
        assert_eq!(human_ns(1_500), "1.50 µs");
        assert_eq!(human_ns(2_000_000), "2.00 ms");
    }
}
