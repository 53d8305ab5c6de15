//! The MBP-1 and MBP-10 schemas: the top `N` price levels of a stock's book, written after
//! each message that changed them, and each trade.
//!
//! One ITCH message gives at most two records, both with its `sequence`, `F_LAST` on the
//! second (or only) one:
//! - a trade (E, printable C, P) first: action `T`, side = aggressor (`N` for P), the trade's
//!   price and shares, `depth` 0, and the levels as they stood before the message;
//! - then, when the top `N` levels differ from the last record's, the book update: action
//!   `A` (add), `C` (cancel, delete or execution) or `M` (replace), the order's side, its
//!   price and the shares added or removed (for `M`, the new price and shares), `depth` =
//!   how many levels on that side are better than the price, and the levels after.
//!
//! Empty levels are written as Databento writes them: price `UNDEF_PRICE`, size and count 0;
//! `bid_ct`/`ask_ct` are the orders at the level.

use std::ffi::c_char;

use dbn::{rtype, BidAskPair, Mbp10Msg, Mbp1Msg, RecordHeader, UNDEF_PRICE};
use ticklane_feed::itch::{Locate, Message, Price};

use super::record_sink::RecordSink;
use super::{
    aggressor_char, price_1e9, side_char, Before, DbnOutError, Stamp, NO_SIDE, PUBLISHER_ID,
};
use crate::book::{Books, Side};

/// Writes MBP-`N` records (`N` is 1 or 10).
pub struct MbpWriter<const N: usize> {
    /// The levels of each stock's last record, indexed by locate (grown on a locate's first
    /// change; at most 65,536 entries). A `Vec`, not a map: this is read on every message.
    last: Vec<[BidAskPair; N]>,
}

/// What a record says happened.
#[derive(Clone, Copy)]
struct Event {
    action: u8,
    side: c_char,
    price: Price,
    size: u32,
    depth: u8,
}

const EMPTY: BidAskPair = BidAskPair {
    bid_px: UNDEF_PRICE,
    ask_px: UNDEF_PRICE,
    bid_sz: 0,
    ask_sz: 0,
    bid_ct: 0,
    ask_ct: 0,
};

impl<const N: usize> Default for MbpWriter<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> MbpWriter<N> {
    /// No records yet.
    pub fn new() -> Self {
        MbpWriter { last: Vec::new() }
    }

    /// The levels of `locate`'s last record (all empty before its first).
    fn last_of(&self, locate: Locate) -> [BidAskPair; N] {
        self.last
            .get(usize::from(locate.0))
            .copied()
            .unwrap_or([EMPTY; N])
    }

    /// Writes the records of one message.
    pub(crate) fn write<S: RecordSink>(
        &mut self,
        spool: &mut S,
        stamp: Stamp,
        message: &Message<'_>,
        before: &Before,
        changed: Option<Locate>,
        books: &Books,
    ) -> Result<(), DbnOutError> {
        // The levels as they stood before the message: the last record's (copied only for
        // a trade, before the update below overwrites them).
        let trade = before.trade.map(|t| (t, self.last_of(t.locate)));
        let mut update = None;
        if let Some(locate) = changed {
            let idx = usize::from(locate.0);
            if self.last.len() <= idx {
                self.last.resize(idx + 1, [EMPTY; N]);
            }
            let change = book_change(message, before);
            // Every book change of one ITCH message is on one side of one stock (a replace
            // keeps its side), so only that side is re-read; both when no side is known;
            // none when every price it touched is worse than a full side's `N`th level.
            let levels = &mut self.last[idx];
            let moved = match change {
                Some(c) if c.prices().all(|p| below_top(levels, c.side, p)) => false,
                Some(c) => refresh_side(levels, books, locate, c.side),
                None => {
                    let bid = refresh_side(levels, books, locate, Side::Bid);
                    refresh_side(levels, books, locate, Side::Ask) | bid
                }
            };
            if moved {
                update = change.map(|c| (locate, c.event(books, locate)));
            }
        }
        if let Some((trade, levels)) = trade {
            let side = match (message, before.order) {
                (Message::Trade(_), _) | (_, None) => NO_SIDE,
                (_, Some(order)) => aggressor_char(order.side),
            };
            let event = Event {
                action: b'T',
                side,
                price: trade.price,
                size: trade.shares,
                depth: 0,
            };
            push(spool, stamp, trade.locate, event, &levels, update.is_none())?;
        }
        if let Some((locate, event)) = update {
            let levels = &self.last[usize::from(locate.0)];
            push(spool, stamp, locate, event, levels, true)?;
        }
        Ok(())
    }
}

/// True if `price` is strictly worse than the `N`th level of a full `side` in `levels`: a
/// change there leaves the top `N` as they are. (At the `N`th price itself, or on a side
/// with fewer than `N` levels, a change may show.)
fn below_top<const N: usize>(levels: &[BidAskPair; N], side: Side, price: Price) -> bool {
    let Some(nth) = levels.last() else {
        return false;
    };
    let price = price_1e9(price);
    match side {
        Side::Bid => nth.bid_px != UNDEF_PRICE && price < nth.bid_px,
        Side::Ask => nth.ask_px != UNDEF_PRICE && price > nth.ask_px,
    }
}

/// The top `N` levels of both sides of `locate`'s book, as DBN writes them (an empty level
/// is `UNDEF_PRICE`, 0, 0): what a sampled MBP row holds.
pub(crate) fn levels<const N: usize>(books: &Books, locate: Locate) -> [BidAskPair; N] {
    let mut out = [EMPTY; N];
    refresh_side(&mut out, books, locate, Side::Bid);
    refresh_side(&mut out, books, locate, Side::Ask);
    out
}

/// Re-reads the top `N` levels of one side of `locate`'s book into `levels`; true if any
/// changed.
fn refresh_side<const N: usize>(
    levels: &mut [BidAskPair; N],
    books: &Books,
    locate: Locate,
    side: Side,
) -> bool {
    let view = books.side(locate, side);
    // An iterator over an `Option` costs a branch per level; the `Option` is dropped once
    // the side runs out.
    let mut book = view.as_ref().map(|v| v.best_first());
    let mut moved = false;
    for pair in levels.iter_mut() {
        let (px, sz, ct) = match book.as_mut().and_then(Iterator::next) {
            Some(l) => (
                price_1e9(l.price),
                u32::try_from(l.qty).unwrap_or(u32::MAX),
                l.orders,
            ),
            None => {
                book = None;
                (UNDEF_PRICE, 0, 0)
            }
        };
        let (p, s, c) = match side {
            Side::Bid => (&mut pair.bid_px, &mut pair.bid_sz, &mut pair.bid_ct),
            Side::Ask => (&mut pair.ask_px, &mut pair.ask_sz, &mut pair.ask_ct),
        };
        moved |= (*p, *s, *c) != (px, sz, ct);
        (*p, *s, *c) = (px, sz, ct);
    }
    moved
}

/// Pushes one MBP-`N` record.
fn push<S: RecordSink, const N: usize>(
    spool: &mut S,
    stamp: Stamp,
    locate: Locate,
    event: Event,
    levels: &[BidAskPair; N],
    last: bool,
) -> Result<(), DbnOutError> {
    let flags = stamp.flags(last);
    let price = price_1e9(event.price);
    let instrument = u32::from(locate.0);
    let action = event.action as c_char;
    // One record type per N; the two share every field but the levels.
    if let Ok(levels) = <[BidAskPair; 1]>::try_from(&levels[..]) {
        spool.push(&Mbp1Msg {
            hd: RecordHeader::new::<Mbp1Msg>(
                rtype::MBP_1,
                PUBLISHER_ID,
                instrument,
                stamp.ts_event,
            ),
            price,
            size: event.size,
            action,
            side: event.side,
            flags,
            depth: event.depth,
            ts_recv: stamp.ts_event,
            ts_in_delta: 0,
            sequence: stamp.sequence,
            levels,
        })
    } else if let Ok(levels) = <[BidAskPair; 10]>::try_from(&levels[..]) {
        spool.push(&Mbp10Msg {
            hd: RecordHeader::new::<Mbp10Msg>(
                rtype::MBP_10,
                PUBLISHER_ID,
                instrument,
                stamp.ts_event,
            ),
            price,
            size: event.size,
            action,
            side: event.side,
            flags,
            depth: event.depth,
            ts_recv: stamp.ts_event,
            ts_in_delta: 0,
            sequence: stamp.sequence,
            levels,
        })
    } else {
        unreachable!("invariant: MbpWriter is built for N = 1 or 10 only")
    }
}

/// The book change a message made, before its `depth` is known.
#[derive(Clone, Copy)]
struct BookChange {
    action: u8,
    side: Side,
    price: Price,
    size: u32,
    /// A replace's original price (the level it left), if it differs from `price`.
    from: Option<Price>,
}

impl BookChange {
    /// Every price level the change touched.
    fn prices(self) -> impl Iterator<Item = Price> {
        std::iter::once(self.price).chain(self.from)
    }

    /// The record's event: `depth` = the levels on its side better than its price (at
    /// most 255, DBN's `u8`), counted in the book after the message.
    fn event(self, books: &Books, locate: Locate) -> Event {
        let better = books.side(locate, self.side).map_or(0, |view| {
            view.best_first()
                .take(usize::from(u8::MAX))
                .take_while(|l| match self.side {
                    Side::Bid => l.price > self.price,
                    Side::Ask => l.price < self.price,
                })
                .count()
        });
        Event {
            action: self.action,
            side: side_char(self.side),
            price: self.price,
            size: self.size,
            depth: u8::try_from(better).unwrap_or(u8::MAX),
        }
    }
}

/// The book update a message made, if it names a side and (for E, C, X, D, U) a known order.
fn book_change(message: &Message<'_>, before: &Before) -> Option<BookChange> {
    let from = match (message, before.order) {
        (Message::OrderReplace(_), Some(o)) => Some(o.price),
        _ => None,
    };
    let (action, side, price, size) = match (message, before.order) {
        (Message::AddOrder(m), _) => (b'A', Side::from_wire(m.side())?, m.price(), m.shares()),
        (Message::AddOrderMpid(m), _) => (b'A', Side::from_wire(m.side())?, m.price(), m.shares()),
        (Message::OrderExecuted(m), Some(o)) => {
            (b'C', o.side, o.price, m.executed_shares().min(o.shares))
        }
        (Message::OrderExecutedWithPrice(m), Some(o)) => {
            (b'C', o.side, o.price, m.executed_shares().min(o.shares))
        }
        (Message::OrderCancel(m), Some(o)) => {
            (b'C', o.side, o.price, m.cancelled_shares().min(o.shares))
        }
        (Message::OrderDelete(_), Some(o)) => (b'C', o.side, o.price, o.shares),
        (Message::OrderReplace(m), Some(o)) => (b'M', o.side, m.price(), m.shares()),
        _ => return None,
    };
    Some(BookChange {
        action,
        side,
        price,
        size,
        from,
    })
}
