//! The book thread's publisher into the memory-mapped snapshot file.

use ticklane_feed::itch::Message;

use super::book_stage::Publisher;
use super::frame::Frame;
use crate::book::Books;
use crate::replay::Applied;
use crate::snapshot::{trade_of, wall_clock_ns, SnapshotWriter, Trade};

/// Heartbeat period of the snapshot header: readers call a writer silent after 5 s.
const HEARTBEAT_NS: u64 = 250_000_000;

/// Publishes every changed instrument into its snapshot slot, records trades, and keeps
/// the header's heartbeat going while the feed is quiet.
pub struct SnapshotPublisher {
    writer: SnapshotWriter,
    /// The trade of the message being applied, seen before the book changed.
    pending_trade: Option<Trade>,
    last_heartbeat_ns: u64,
    /// Publications that failed because the snapshot was full (instrument capacity).
    pub full: u64,
}

impl SnapshotPublisher {
    /// Publishes into `writer`.
    pub fn new(writer: SnapshotWriter) -> Self {
        SnapshotPublisher {
            writer,
            pending_trade: None,
            last_heartbeat_ns: 0,
            full: 0,
        }
    }
}

impl Publisher for SnapshotPublisher {
    #[inline]
    fn before_apply(&mut self, books: &Books, message: &Message<'_>) {
        self.pending_trade = trade_of(books, message);
    }

    #[inline]
    fn publish(
        &mut self,
        books: &Books,
        applied: &Applied<'_>,
        frame: &Frame,
        _now_ns: u64,
    ) -> bool {
        let Some(message) = applied.message else {
            return false;
        };
        // The book changed, or its symbol or trading state did (R, H), or it traded.
        let locate = match (applied.changed, &message) {
            (Some(locate), _) => locate,
            (None, Message::StockDirectory(_) | Message::StockTradingAction(_)) => message.locate(),
            (None, _) if self.pending_trade.is_some() => message.locate(),
            (None, _) => return false,
        };
        let stamp = wall_clock_ns();
        if self
            .writer
            .publish_at(books, locate, frame.seq, message.timestamp(), stamp)
            .is_err()
        {
            self.full += 1;
            return false;
        }
        if let Some(trade) = self.pending_trade.take() {
            if self.writer.record_trade(books, trade).is_err() {
                self.full += 1;
            }
        }
        if stamp.saturating_sub(self.last_heartbeat_ns) > HEARTBEAT_NS {
            self.writer.heartbeat(stamp);
            self.last_heartbeat_ns = stamp;
        }
        true
    }

    fn idle(&mut self, _now_ns: u64) {
        let stamp = wall_clock_ns();
        if stamp.saturating_sub(self.last_heartbeat_ns) > HEARTBEAT_NS {
            self.writer.heartbeat(stamp);
            self.last_heartbeat_ns = stamp;
        }
    }

    fn finish(&mut self, _books: &Books) {
        self.writer.heartbeat(wall_clock_ns());
    }
}
