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
        self.record_n(recv_ns, intended_ns, applied_ns, published_ns, 1);
    }

    /// Records the stamps of `n` messages that share them (one histogram update for all).
    #[inline]
    pub fn record_n(
        &mut self,
        recv_ns: u64,
        intended_ns: u64,
        applied_ns: u64,
        published_ns: Option<u64>,
        n: u64,
    ) {
        self.receive_to_applied
            .saturating_record_n(applied_ns.saturating_sub(recv_ns).max(1), n);
        if let Some(p) = published_ns {
            self.receive_to_published
                .saturating_record_n(p.saturating_sub(recv_ns).max(1), n);
            if intended_ns != 0 {
                self.intended_to_published
                    .saturating_record_n(p.saturating_sub(intended_ns).max(1), n);
            }
        }
    }
}

/// Messages whose applied stamp is one clock reading: the book thread reads the clock once
/// per this many applied messages (and at the end of each batch it takes off the ring), not
/// once per message.
pub const LATENCY_GROUP: usize = 16;

/// Stamps of applied messages waiting for the clock reading that closes their group.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct PendingStamp {
    recv_ns: u64,
    intended_ns: u64,
    published: bool,
}

/// The book thread's messages since its last clock reading (at most [`LATENCY_GROUP`]), whose
/// latency is recorded when that group closes: every message of a group gets the group's
/// closing reading as its applied (and, if it changed a book, published) stamp. That stamp is
/// never earlier than the message was applied, and later by at most the time the rest of the
/// group took (15 messages, about a microsecond), so the figures err on the long side by at
/// most that; when the ring is nearly empty, as at 1 M msg/s, groups hold a message or two
/// and the stamps are what one reading per message gave.
///
/// Messages in a row with the same stamps (read in one batch, as every message is at
/// `--pace max`) wait as one entry with a count and are recorded with one histogram update:
/// the histograms are those of one update per message (the recording cost 27% of the book
/// thread's instructions at `--pace max` before).
#[derive(Debug, Default)]
pub struct LatencyGroup {
    /// Distinct stamps in arrival order, each with the messages in a row that share it.
    pending: [(PendingStamp, u32); LATENCY_GROUP],
    /// Entries in `pending`.
    len: usize,
    /// Messages in the group.
    messages: usize,
}

impl LatencyGroup {
    /// Adds an applied message's stamps; returns `true` when the group is full and must be
    /// closed with [`LatencyGroup::close`] before the next push.
    #[inline(always)]
    pub fn push(&mut self, recv_ns: u64, intended_ns: u64, published: bool) -> bool {
        debug_assert!(self.messages < LATENCY_GROUP, "a full group was not closed");
        let stamp = PendingStamp {
            recv_ns,
            intended_ns,
            published,
        };
        match self
            .len
            .checked_sub(1)
            .and_then(|i| self.pending.get_mut(i))
        {
            Some((last, n)) if *last == stamp => *n += 1,
            _ => {
                if let Some(slot) = self.pending.get_mut(self.len) {
                    *slot = (stamp, 1);
                    self.len += 1;
                }
            }
        }
        self.messages += 1;
        self.messages == LATENCY_GROUP
    }

    /// Whether no message waits for a reading.
    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.messages == 0
    }

    /// Records every waiting message into `latency` with `done_ns` as its applied (and
    /// published) stamp, and empties the group.
    #[inline]
    pub fn close(&mut self, latency: &mut StageLatency, done_ns: u64) {
        for (p, n) in &self.pending[..self.len] {
            latency.record_n(
                p.recv_ns,
                p.intended_ns,
                done_ns,
                p.published.then_some(done_ns),
                u64::from(*n),
            );
        }
        self.len = 0;
        self.messages = 0;
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
    fn a_group_records_each_message_against_its_closing_reading() {
        let mut latency = StageLatency::default();
        let mut group = LatencyGroup::default();
        assert!(group.is_empty());
        // (recv, intended, published): latencies by hand against a closing reading of 1_000.
        assert!(!group.push(900, 0, true)); // 100 applied, 100 published
        assert!(!group.push(700, 400, true)); // 300, 300, intended 600
        assert!(!group.push(990, 0, false)); // 10, not published
        group.close(&mut latency, 1_000);
        assert!(group.is_empty());
        let values = |h: &Histogram<u64>| {
            h.iter_recorded()
                .map(|v| (v.value_iterated_to(), v.count_at_value()))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            values(&latency.receive_to_applied),
            [(10, 1), (100, 1), (300, 1)]
        );
        assert_eq!(values(&latency.receive_to_published), [(100, 1), (300, 1)]);
        assert_eq!(values(&latency.intended_to_published), [(600, 1)]);
        // Full after LATENCY_GROUP pushes; closing again records only the new ones.
        let full = (0..LATENCY_GROUP)
            .map(|_| group.push(1, 0, false))
            .collect::<Vec<_>>();
        assert_eq!(full.iter().filter(|f| **f).count(), 1);
        assert!(full[LATENCY_GROUP - 1]);
        group.close(&mut latency, 5);
        assert_eq!(latency.receive_to_applied.len(), 3 + LATENCY_GROUP as u64);
        assert_eq!(latency.receive_to_applied.count_at(4), LATENCY_GROUP as u64);
    }

    #[test]
    fn runs_of_equal_stamps_record_what_one_update_per_message_records() {
        // Stamps in runs, broken by a change of receive stamp, of publication or of the
        // intended time, across several groups; the reference records message by message.
        let stamps: Vec<(u64, u64, bool)> = (0..200u64)
            .map(|i| {
                (
                    100 + i / 7 * 3,
                    if i % 50 < 25 { 0 } else { 40 },
                    i % 11 != 3,
                )
            })
            .collect();
        let mut grouped = StageLatency::default();
        let mut group = LatencyGroup::default();
        let mut reference = StageLatency::default();
        let mut pending = Vec::new();
        for (k, &(recv, intended, published)) in stamps.iter().enumerate() {
            pending.push((recv, intended, published));
            let done = 1_000 + k as u64;
            if group.push(recv, intended, published) {
                group.close(&mut grouped, done);
                for (r, i, p) in pending.drain(..) {
                    reference.record(r, i, done, p.then_some(done));
                }
            }
        }
        group.close(&mut grouped, 5_000);
        for (r, i, p) in pending.drain(..) {
            reference.record(r, i, 5_000, p.then_some(5_000));
        }
        assert_eq!(grouped.receive_to_applied, reference.receive_to_applied);
        assert_eq!(grouped.receive_to_published, reference.receive_to_published);
        assert_eq!(
            grouped.intended_to_published,
            reference.intended_to_published
        );
        assert_eq!(grouped.receive_to_applied.len(), 200);
    }

    #[test]
    fn human_units() {
        assert_eq!(human_ns(850), "850 ns");
        assert_eq!(human_ns(1_500), "1.50 µs");
        assert_eq!(human_ns(2_000_000), "2.00 ms");
    }
}
