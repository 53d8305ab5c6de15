//! One instrument's state as a reader copies it out of its slot.

use ticklane_itch::{Alpha, Locate, Nanos, Price, Stock};

use super::layout::{
    LevelRecord, SlotPayload, SLOT_BEHIND, SLOT_CROSSED, SLOT_MAYBE_BAD, SLOT_STALE,
};
use ticklane_book::LevelView;

/// A slot's status flags.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SlotFlags(pub u32);

impl SlotFlags {
    /// The instrument's feed is down: its book is the last known state, not live.
    pub fn is_stale(self) -> bool {
        self.0 & SLOT_STALE != 0
    }

    /// The book is crossed: best bid at or above best ask (applied as the feed sent it).
    pub fn is_crossed(self) -> bool {
        self.0 & SLOT_CROSSED != 0
    }

    /// Publication of this instrument is behind the feed.
    pub fn is_behind(self) -> bool {
        self.0 & SLOT_BEHIND != 0
    }

    /// Messages were declared lost: this book may be wrong until rebuilt.
    pub fn is_maybe_bad(self) -> bool {
        self.0 & SLOT_MAYBE_BAD != 0
    }
}

/// The last trade printed for an instrument.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LastTrade {
    /// Price, 1/10,000 dollars.
    pub price: Price,
    /// Shares.
    pub shares: u32,
    /// ITCH timestamp, ns since midnight.
    pub timestamp: Nanos,
}

/// One instrument's state, copied consistently out of its slot.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InstrumentState {
    /// The slot's seqlock sequence when it was copied: it grows by 2 with every write, so two
    /// copies with the same sequence are the same state.
    pub sequence: u64,
    /// Symbol, space-padded as in the `R` message (all spaces before the first one).
    pub symbol: Stock,
    /// ITCH stock locate.
    pub locate: Locate,
    /// Latest `H` trading state (`T`, `H`, `P`, `Q`), if one was seen.
    pub trading_state: Option<u8>,
    /// Stale, crossed, behind, maybe bad.
    pub flags: SlotFlags,
    /// Feed sequence number of the last message applied.
    pub feed_seq: u64,
    /// ITCH timestamp of that message, ns since midnight.
    pub exchange_ts: Nanos,
    /// Local wall-clock time of the last publication, ns since the Unix epoch.
    pub updated_ns: u64,
    /// When publication fell behind (wall-clock ns since the Unix epoch), while it is behind.
    pub behind_since_ns: Option<u64>,
    /// Publications of this slot so far.
    pub publishes: u64,
    /// Bid levels, best first, at most the file's depth.
    pub bids: Vec<LevelView>,
    /// Ask levels, best first, at most the file's depth.
    pub asks: Vec<LevelView>,
    /// The last trade, if any was recorded.
    pub last_trade: Option<LastTrade>,
    /// Trades recorded so far.
    pub trades: u64,
    /// Shares traded so far.
    pub traded_shares: u64,
}

impl InstrumentState {
    /// Builds the state from a consistent copy of a slot's payload.
    pub(crate) fn from_payload(
        sequence: u64,
        payload: &SlotPayload,
        bids: &[LevelRecord],
        asks: &[LevelRecord],
    ) -> Self {
        // Clamped as well as trusted: a consistent copy holds what the writer wrote, but a
        // count past the depth must not make a reader index out of the ladder.
        let side = |records: &[LevelRecord], levels: u32| {
            records
                .iter()
                .take(levels as usize)
                .map(|r| LevelView {
                    price: Price(r.price),
                    qty: r.qty,
                    orders: r.orders,
                })
                .collect()
        };
        InstrumentState {
            sequence,
            symbol: Alpha(payload.symbol),
            locate: Locate(payload.locate),
            trading_state: (payload.trading_state != 0).then_some(payload.trading_state),
            flags: SlotFlags(payload.flags),
            feed_seq: payload.feed_seq,
            exchange_ts: Nanos(payload.exchange_ts_ns),
            updated_ns: payload.updated_ns,
            behind_since_ns: (payload.flags & SLOT_BEHIND != 0).then_some(payload.behind_since_ns),
            publishes: payload.publishes,
            bids: side(bids, payload.bid_levels),
            asks: side(asks, payload.ask_levels),
            last_trade: (payload.trades > 0).then_some(LastTrade {
                price: Price(payload.last_trade_px),
                shares: payload.last_trade_shares,
                timestamp: Nanos(payload.last_trade_ts_ns),
            }),
            trades: payload.trades,
            traded_shares: payload.traded_shares,
        }
    }

    /// The symbol with trailing spaces removed (empty if no `R` was seen), as the CSV
    /// outputs print it.
    pub fn symbol(&self) -> &[u8] {
        self.symbol.trimmed()
    }

    /// The best bid, if the bid has orders.
    pub fn best_bid(&self) -> Option<LevelView> {
        self.bids.first().copied()
    }

    /// The best ask, if the ask has orders.
    pub fn best_ask(&self) -> Option<LevelView> {
        self.asks.first().copied()
    }
}
