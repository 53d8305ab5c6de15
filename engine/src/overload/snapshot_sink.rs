//! The snapshot file as a [`StateSink`]: publications, trades, and the behind marks.
#![forbid(unsafe_code)]

use ticklane_feed::itch::Locate;

use super::shedding_publisher::{Change, StateSink};
use crate::book::Books;
use crate::book::Trade;
use crate::snapshot::{wall_clock_ns, SnapshotWriter};

/// Heartbeat period of the snapshot header: readers call a writer silent after 5 s.
const HEARTBEAT_NS: u64 = 250_000_000;

/// Publishes instrument state into a [`SnapshotWriter`], keeps the heartbeat going, and
/// turns "behind by" ages into the wall-clock "since" the snapshot layout stores.
#[derive(Debug)]
pub struct SnapshotSink {
    writer: SnapshotWriter,
    last_heartbeat_ns: u64,
    /// Publications that failed because the snapshot was full (instrument capacity).
    pub full: u64,
}

impl SnapshotSink {
    /// Publishes into `writer`.
    pub fn new(writer: SnapshotWriter) -> Self {
        SnapshotSink {
            writer,
            last_heartbeat_ns: 0,
            full: 0,
        }
    }

    /// The writer (to close it after the run).
    pub fn into_writer(self) -> SnapshotWriter {
        self.writer
    }

    #[inline]
    fn heartbeat_if_due(&mut self, stamp: u64) {
        if stamp.saturating_sub(self.last_heartbeat_ns) > HEARTBEAT_NS {
            self.writer.heartbeat(stamp);
            self.last_heartbeat_ns = stamp;
        }
    }
}

impl StateSink for SnapshotSink {
    #[inline]
    fn publish_state(&mut self, books: &Books, change: &Change) -> bool {
        let stamp = wall_clock_ns();
        let ok = self
            .writer
            .publish_at(
                books,
                change.locate,
                change.feed_seq,
                change.exchange_ts,
                stamp,
            )
            .is_ok();
        if !ok {
            self.full += 1;
        }
        self.heartbeat_if_due(stamp);
        ok
    }

    #[inline]
    fn record_trade(&mut self, books: &Books, trade: Trade) {
        if self.writer.record_trade(books, trade).is_err() {
            self.full += 1;
        }
    }

    fn set_instrument_behind(&mut self, locate: Locate, age_ns: Option<u64>) {
        let since = age_ns.map(|age| wall_clock_ns().saturating_sub(age));
        self.writer.set_instrument_behind(locate, since);
    }

    fn set_engine_behind(&mut self, behind_ns: u64) {
        self.writer.set_behind(behind_ns);
    }

    fn idle(&mut self) {
        self.heartbeat_if_due(wall_clock_ns());
    }

    fn finish(&mut self, _books: &Books) {
        self.writer.heartbeat(wall_clock_ns());
    }
}
