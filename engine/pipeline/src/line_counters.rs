//! A feed line's counters as other threads see them while it runs: a small block of atomics
//! that the reader stage copies its own stats into at most about once a millisecond (never
//! per message), and that the metrics endpoint reads.
//!
//! The reader keeps the authoritative counts in its own structs (`RecoveryCounts`, the
//! SoupBinTCP report); this block is a copy, each value individually current, the set not one
//! atomic snapshot (metrics do not need one). `LineCounters` is `Send` and `Sync`: share it in
//! an `Arc`. [`LineCountersWriter`] is the reader's side: `Send` but not `Sync`, it stays on
//! the reader thread.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use ticklane_feed::moldudp64::RecoveryCounts;

use super::soup_source::SoupSourceReport;

/// The least time between two copies: a scrape every second or so never sees values older
/// than this, and the reader pays for a copy at most a thousand times a second.
pub const COPY_EVERY_NS: u64 = 1_000_000;

/// The shared counters of one feed line. Counts are totals since the line started.
#[derive(Debug, Default)]
pub struct LineCounters {
    messages: AtomicU64,
    packets: AtomicU64,
    gaps_detected: AtomicU64,
    messages_recovered: AtomicU64,
    gaps_lost: AtomicU64,
    messages_lost: AtomicU64,
    duplicates: AtomicU64,
    requests_sent: AtomicU64,
    first_requests: AtomicU64,
    retries: AtomicU64,
    continuations: AtomicU64,
    retries_refused: AtomicU64,
    budget_left: AtomicU64,
    request_timeouts: AtomicU64,
    adaptive_limit: AtomicU64,
    limit_changes: AtomicU64,
    reply_timeout_ns: AtomicU64,
    store_packets: AtomicU64,
    store_capacity: AtomicU64,
    packets_deferred: AtomicU64,
    reconnects: AtomicU64,
}

/// A copy of a line's counters at one moment (what [`LineCounters::load`] returns).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LineCounts {
    /// Messages pushed into the ring.
    pub messages: u64,
    /// Packets received (MoldUDP64; heartbeats included). 0 for SoupBinTCP.
    pub packets: u64,
    /// Gaps detected.
    pub gaps_detected: u64,
    /// Messages that had been missing and were recovered.
    pub messages_recovered: u64,
    /// Ranges declared lost.
    pub gaps_lost: u64,
    /// Messages declared lost.
    pub messages_lost: u64,
    /// Messages received more than once.
    pub duplicates: u64,
    /// Retransmission request datagrams sent (first tries and retries).
    pub requests_sent: u64,
    /// First requests: one per gap asked for.
    pub first_requests: u64,
    /// Retries of requests.
    pub retries: u64,
    /// Requests for the rest of a gap whose last try was answered in part.
    pub continuations: u64,
    /// Retries the retry budget refused.
    pub retries_refused: u64,
    /// Retries the budget still allows.
    pub budget_left: u64,
    /// Requests that went unanswered for their timeout.
    pub request_timeouts: u64,
    /// The adaptive limit on retransmission requests in flight.
    pub adaptive_limit: u64,
    /// Times that limit changed.
    pub limit_changes: u64,
    /// The reply timeout the next retransmission request gets (ns).
    pub reply_timeout_ns: u64,
    /// Packets waiting in the reorder store behind a gap now.
    pub store_packets: u64,
    /// Packets the reorder store can hold.
    pub store_capacity: u64,
    /// Packets the full reorder store let go, to be asked for again.
    pub packets_deferred: u64,
    /// Reconnects (SoupBinTCP: connections after the first).
    pub reconnects: u64,
}

impl LineCounters {
    /// A block with everything at 0.
    pub fn new() -> Self {
        Self::default()
    }

    /// Copies a MoldUDP64 reader's stats in.
    pub fn store_mold(&self, stats: &RecoveryCounts, messages: u64) {
        let set = |cell: &AtomicU64, v: u64| cell.store(v, Ordering::Relaxed);
        set(&self.messages, messages);
        set(&self.packets, stats.packets);
        set(&self.gaps_detected, stats.gaps);
        set(&self.messages_recovered, stats.recovered);
        set(&self.gaps_lost, stats.gaps_lost);
        set(&self.messages_lost, stats.messages_lost);
        set(&self.duplicates, stats.duplicates);
        set(&self.requests_sent, stats.requests_sent);
        set(&self.first_requests, stats.first_requests);
        set(&self.retries, stats.retries);
        set(&self.continuations, stats.continuations);
        set(&self.retries_refused, stats.retries_refused);
        set(&self.budget_left, stats.budget_left);
        set(&self.request_timeouts, stats.timeouts);
        set(&self.adaptive_limit, u64::from(stats.limit));
        set(&self.limit_changes, stats.limit_changes);
        set(
            &self.reply_timeout_ns,
            u64::try_from(stats.reply_timeout.as_nanos()).unwrap_or(u64::MAX),
        );
        set(&self.store_packets, stats.store_packets as u64);
        set(&self.store_capacity, stats.store_capacity as u64);
        set(&self.packets_deferred, stats.packets_deferred);
    }

    /// Copies a SoupBinTCP reader's report in (TCP has no gaps: sequence numbers are
    /// resumed on reconnect).
    pub fn store_soup(&self, report: &SoupSourceReport) {
        self.messages.store(report.messages, Ordering::Relaxed);
        self.reconnects.store(
            u64::from(report.connections.saturating_sub(1)),
            Ordering::Relaxed,
        );
    }

    /// Reads every counter.
    pub fn load(&self) -> LineCounts {
        let get = |cell: &AtomicU64| cell.load(Ordering::Relaxed);
        LineCounts {
            messages: get(&self.messages),
            packets: get(&self.packets),
            gaps_detected: get(&self.gaps_detected),
            messages_recovered: get(&self.messages_recovered),
            gaps_lost: get(&self.gaps_lost),
            messages_lost: get(&self.messages_lost),
            duplicates: get(&self.duplicates),
            requests_sent: get(&self.requests_sent),
            first_requests: get(&self.first_requests),
            retries: get(&self.retries),
            continuations: get(&self.continuations),
            retries_refused: get(&self.retries_refused),
            budget_left: get(&self.budget_left),
            request_timeouts: get(&self.request_timeouts),
            adaptive_limit: get(&self.adaptive_limit),
            limit_changes: get(&self.limit_changes),
            reply_timeout_ns: get(&self.reply_timeout_ns),
            store_packets: get(&self.store_packets),
            store_capacity: get(&self.store_capacity),
            packets_deferred: get(&self.packets_deferred),
            reconnects: get(&self.reconnects),
        }
    }
}

/// The reader's side: the shared block and when the next copy is due. Owned by the reader
/// thread (`Send`, not `Sync`).
#[derive(Debug)]
pub struct LineCountersWriter {
    shared: Arc<LineCounters>,
    /// When the next copy is due (ns of the caller's clock). A `Cell`, so that a reader
    /// holding its source by shared reference can still keep the schedule.
    next_ns: Cell<u64>,
}

impl LineCountersWriter {
    /// A writer into `shared`; the first call to [`LineCountersWriter::due`] is due.
    pub fn new(shared: Arc<LineCounters>) -> Self {
        LineCountersWriter {
            shared,
            next_ns: Cell::new(0),
        }
    }

    /// Whether a copy is due at `now_ns` (any monotonic clock in ns); when it is, the next
    /// one is due [`COPY_EVERY_NS`] later. The reader calls this once per poll-loop turn
    /// and copies only when it says so.
    #[inline]
    pub fn due(&self, now_ns: u64) -> bool {
        if now_ns < self.next_ns.get() {
            return false;
        }
        self.next_ns.set(now_ns.saturating_add(COPY_EVERY_NS));
        true
    }

    /// The shared block, to store into.
    pub fn shared(&self) -> &LineCounters {
        &self.shared
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn copies_are_due_at_most_once_a_millisecond() {
        let w = LineCountersWriter::new(Arc::new(LineCounters::new()));
        // Times in ns, laid by hand: due at 5, not again until 5 + 1 ms.
        assert!(w.due(5));
        assert!(!w.due(6));
        assert!(!w.due(1_000_004));
        assert!(w.due(1_000_005));
        assert!(!w.due(1_500_000));
        assert!(w.due(2_000_005));
    }

    #[test]
    fn a_mold_copy_carries_each_stat_to_its_own_counter() {
        let c = LineCounters::new();
        // Distinct values per field, so a field copied into the wrong cell shows.
        let stats = RecoveryCounts {
            packets: 11,
            gaps: 12,
            recovered: 13,
            gaps_lost: 14,
            messages_lost: 15,
            duplicates: 16,
            requests_sent: 17,
            first_requests: 18,
            retries: 19,
            retries_refused: 20,
            budget_left: 21,
            timeouts: 22,
            limit: 23,
            limit_changes: 24,
            reply_timeout: Duration::from_millis(25),
            continuations: 26,
            store_packets: 27,
            store_capacity: 28,
            packets_deferred: 29,
            ..RecoveryCounts::default()
        };
        c.store_mold(&stats, 10);
        assert_eq!(
            c.load(),
            LineCounts {
                messages: 10,
                packets: 11,
                gaps_detected: 12,
                messages_recovered: 13,
                gaps_lost: 14,
                messages_lost: 15,
                duplicates: 16,
                requests_sent: 17,
                first_requests: 18,
                retries: 19,
                retries_refused: 20,
                budget_left: 21,
                request_timeouts: 22,
                adaptive_limit: 23,
                limit_changes: 24,
                reply_timeout_ns: 25_000_000,
                continuations: 26,
                store_packets: 27,
                store_capacity: 28,
                packets_deferred: 29,
                reconnects: 0,
            }
        );
    }

    #[test]
    fn a_soup_copy_counts_connections_after_the_first_as_reconnects() {
        let c = LineCounters::new();
        let report = SoupSourceReport {
            messages: 7,
            connections: 3,
            ..SoupSourceReport::default()
        };
        c.store_soup(&report);
        let now = c.load();
        assert_eq!((now.messages, now.reconnects), (7, 2));
        c.store_soup(&SoupSourceReport::default());
        assert_eq!(c.load().reconnects, 0, "no connection yet is no reconnect");
    }
}
