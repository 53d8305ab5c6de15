//! The snapshot file as a [`StateSink`]: publications (each with the trades of its message),
//! the behind marks, the line's state (`STALE` with since-when) and declared losses
//! (`MAYBE_BAD`).
#![forbid(unsafe_code)]

use ticklane_feed::itch::Locate;

use super::shedding_publisher::{Change, StateSink};
use ticklane_book::publish::{DeclaredLoss, FeedState, LateJoin};
use ticklane_book::Books;
use ticklane_book::Trade;
use ticklane_snapshot::{wall_clock_ns, LineState, SnapshotWriter};

/// Heartbeat period of the snapshot header: readers call a writer silent after 5 s.
const HEARTBEAT_NS: u64 = 250_000_000;

/// Publishes instrument state into a [`SnapshotWriter`], keeps the heartbeat going, and
/// turns "behind by" ages into the wall-clock "since" the snapshot layout stores.
///
/// A publication is stamped with the book stage's own clock reading ([`Change::now_ns`]),
/// turned into wall-clock time by an offset measured at each heartbeat: the wall clock is
/// read about every 250 ms, not once per publication.
#[derive(Debug)]
pub struct SnapshotSink {
    writer: SnapshotWriter,
    /// Wall-clock ns of the latest heartbeat.
    last_heartbeat_ns: u64,
    /// Wall-clock ns minus pipeline-clock ns (wrapping), and the wall-clock ns when it was
    /// measured; `None` before the first publication.
    wall_offset: Option<(u64, u64)>,
    /// Publications (and trades) that failed because the snapshot was full (instrument
    /// capacity): in the overload counters as `snapshot_full` and in the header.
    pub full: u64,
}

impl SnapshotSink {
    /// Publishes into `writer`.
    pub fn new(writer: SnapshotWriter) -> Self {
        SnapshotSink {
            writer,
            last_heartbeat_ns: 0,
            wall_offset: None,
            full: 0,
        }
    }

    /// The writer (to close it after the run).
    pub fn into_writer(self) -> SnapshotWriter {
        self.writer
    }

    /// The wall-clock time of pipeline-clock time `pipeline_ns`. Once the offset is a
    /// heartbeat period old, reads the wall clock instead, measures the offset again (the two
    /// clocks drift apart, and the wall clock may be set) and stores a heartbeat.
    #[inline]
    fn wall_ns(&mut self, pipeline_ns: u64) -> u64 {
        if let Some((offset, measured_ns)) = self.wall_offset {
            let stamp = offset.wrapping_add(pipeline_ns);
            if stamp.saturating_sub(measured_ns) <= HEARTBEAT_NS {
                return stamp;
            }
        }
        self.measure_offset(pipeline_ns)
    }

    #[cold]
    fn measure_offset(&mut self, pipeline_ns: u64) -> u64 {
        let now = wall_clock_ns();
        self.wall_offset = Some((now.wrapping_sub(pipeline_ns), now));
        self.writer.heartbeat(now);
        self.last_heartbeat_ns = now;
        now
    }
}

impl StateSink for SnapshotSink {
    #[inline]
    fn publish_state(&mut self, books: &Books, change: &Change) -> bool {
        let stamp = self.wall_ns(change.now_ns);
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
        ok
    }

    /// Holds the trade for the publication of its message's book, which follows (at once, or
    /// conflated later while publication is shed): the two reach the slot in one write.
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
        let now = wall_clock_ns();
        if now.saturating_sub(self.last_heartbeat_ns) > HEARTBEAT_NS {
            self.writer.heartbeat(now);
            self.last_heartbeat_ns = now;
        }
    }

    fn line_state(&mut self, state: FeedState, since_ns: u64) {
        self.writer.set_line_state(line_state(state), since_ns);
    }

    fn declared_loss(&mut self, loss: DeclaredLoss) {
        self.writer.declare_loss(loss.count, loss.at_ns);
    }

    fn late_join(&mut self, join: LateJoin) {
        self.writer.flag_maybe_bad(join.at_ns);
    }

    fn refused(&self) -> u64 {
        self.full
    }

    fn finish(&mut self, _books: &Books) {
        self.writer.heartbeat(wall_clock_ns());
    }
}

/// The snapshot header's code for the pipeline's feed state.
fn line_state(state: FeedState) -> LineState {
    match state {
        FeedState::Live => LineState::Live,
        FeedState::Silent => LineState::Silent,
        FeedState::Disconnected => LineState::Disconnected,
        FeedState::Reconnecting => LineState::Reconnecting,
        FeedState::EndedSilent => LineState::EndedSilent,
        FeedState::EndedError => LineState::EndedError,
        FeedState::Isolated => LineState::Isolated,
        FeedState::Snapshot => LineState::Snapshot,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ticklane_book::BookConfig;
    use ticklane_feed::itch::Nanos;
    use ticklane_snapshot::SnapshotReader;

    fn change(now_ns: u64) -> Change {
        Change {
            locate: Locate(1),
            feed_seq: now_ns,
            exchange_ts: Nanos(now_ns),
            first_ns: now_ns,
            last_ns: now_ns,
            changes: 1,
            now_ns,
        }
    }

    #[test]
    fn publications_are_stamped_from_the_stage_clock_not_a_new_wall_clock_reading() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("s.snap");
        let books = Books::new(BookConfig {
            max_orders: 4,
            max_books: 2,
            levels_per_side: 2,
        })
        .expect("books");
        let mut sink = SnapshotSink::new(SnapshotWriter::create(&path, 2, 1).expect("create"));
        let reader = SnapshotReader::open(&path).expect("open");
        let before = wall_clock_ns();
        assert!(sink.publish_state(&books, &change(1_000)));
        let after = wall_clock_ns();
        let first = reader.read(0).expect("consistent").updated_ns;
        assert!(
            (before..=after).contains(&first),
            "the first one measures the offset"
        );
        // 1 µs later by the stage's clock: 1 µs later in the slot, exactly.
        assert!(sink.publish_state(&books, &change(2_000)));
        assert_eq!(
            reader.read(0).expect("consistent").updated_ns,
            first + 1_000
        );
        // A heartbeat period later by the stage's clock, the wall clock is read again (and a
        // heartbeat stored): the stamp is no longer derived.
        assert!(sink.publish_state(&books, &change(2_000 + HEARTBEAT_NS + 1)));
        let third = reader.read(0).expect("consistent").updated_ns;
        assert_eq!(reader.header().heartbeat_ns, third);
        assert!(third >= after);
    }
}
