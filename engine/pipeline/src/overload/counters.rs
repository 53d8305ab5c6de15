//! What overload control did, counted: for the run summary, and as shared cells a metrics
//! endpoint can read from another thread while the engine runs.
#![forbid(unsafe_code)]

use std::sync::atomic::{AtomicU64, Ordering};

/// Counters in [`OverloadCounts::fields`].
const FIELDS: usize = 12;

/// Overload counters of one publisher (the book thread's publication and its consumers).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OverloadCounts {
    /// Instrument states published into the snapshot.
    pub published: u64,
    /// Publications not made at their message's turn (deferred to the dirty set): overload
    /// service, or an update past its deadline.
    pub shed: u64,
    /// Changes folded into an instrument's pending publication (one publication serves them).
    pub conflated: u64,
    /// Pending updates older than the deadline when their turn came: dropped, replaced by
    /// the latest state.
    pub expired: u64,
    /// Times the input queue was declared standing.
    pub overload_episodes: u64,
    /// Time spent with a standing input queue (ns).
    pub overload_ns: u64,
    /// Longest time a frame waited in the input queue (ns).
    pub max_sojourn_ns: u64,
    /// Events delivered to consumer queues.
    pub events_delivered: u64,
    /// State events folded into a consumer's pending refresh.
    pub events_conflated: u64,
    /// State events a consumer found past the deadline: dropped and replaced by a refresh.
    pub events_expired: u64,
    /// Consumers cut loose because an event that cannot be conflated could not be delivered.
    pub consumers_cut: u64,
    /// Publications (and trades) lost because the snapshot was full: an instrument beyond
    /// its slot capacity. Also in the snapshot header's `full_publications`.
    pub snapshot_full: u64,
}

impl OverloadCounts {
    /// `(name, value)` of every counter, in a fixed order (names as the metrics use them).
    pub fn fields(&self) -> [(&'static str, u64); FIELDS] {
        [
            ("published", self.published),
            ("shed", self.shed),
            ("conflated", self.conflated),
            ("expired", self.expired),
            ("overload_episodes", self.overload_episodes),
            ("overload_ns", self.overload_ns),
            ("max_sojourn_ns", self.max_sojourn_ns),
            ("events_delivered", self.events_delivered),
            ("events_conflated", self.events_conflated),
            ("events_expired", self.events_expired),
            ("consumers_cut", self.consumers_cut),
            ("snapshot_full", self.snapshot_full),
        ]
    }
}

/// The counters as atomics, written by the book thread (once per batch, Relaxed) and read
/// by anyone (a metrics endpoint). `Send` and `Sync`; share it in an `Arc`.
#[derive(Debug, Default)]
pub struct OverloadCounters {
    cells: [AtomicU64; FIELDS],
}

impl OverloadCounters {
    /// Stores every counter. Each value is individually current; the set is not one atomic
    /// snapshot, which metrics do not need.
    pub fn store(&self, counters: &OverloadCounts) {
        for (cell, (_, value)) in self.cells.iter().zip(counters.fields()) {
            cell.store(value, Ordering::Relaxed);
        }
    }

    /// Reads every counter.
    pub fn load(&self) -> OverloadCounts {
        let v = |i: usize| self.cells[i].load(Ordering::Relaxed);
        OverloadCounts {
            published: v(0),
            shed: v(1),
            conflated: v(2),
            expired: v(3),
            overload_episodes: v(4),
            overload_ns: v(5),
            max_sojourn_ns: v(6),
            events_delivered: v(7),
            events_conflated: v(8),
            events_expired: v(9),
            consumers_cut: v(10),
            snapshot_full: v(11),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_cells_round_trip_every_counter() {
        let mut c = OverloadCounts::default();
        for (i, field) in [
            &mut c.published,
            &mut c.shed,
            &mut c.conflated,
            &mut c.expired,
            &mut c.overload_episodes,
            &mut c.overload_ns,
            &mut c.max_sojourn_ns,
            &mut c.events_delivered,
            &mut c.events_conflated,
            &mut c.events_expired,
            &mut c.consumers_cut,
            &mut c.snapshot_full,
        ]
        .into_iter()
        .enumerate()
        {
            *field = i as u64 + 1;
        }
        let shared = OverloadCounters::default();
        shared.store(&c);
        assert_eq!(shared.load(), c);
        assert_eq!(c.fields()[0], ("published", 1));
        assert_eq!(c.fields()[FIELDS - 1], ("snapshot_full", 12));
    }
}
