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

use dbn::encode::DbnEncodable;
use dbn::{rtype, BidAskPair, Mbp10Msg, Mbp1Msg, RecordHeader, UNDEF_PRICE};
use ticklane_itch::{Locate, Message, Price};

use super::record_sink::RecordSink;
use super::{aggressor_char, price_1e9, side_char, Before, DbnOutError, Stamp, NO_SIDE};
use ticklane_book::{Books, LadderView, Side};

/// The two MBP record types (`Mbp1Msg`, `Mbp10Msg`): they share every field but the levels.
pub(crate) trait MbpRecord: DbnEncodable + Copy {
    /// A record with every level empty.
    fn blank() -> Self;
    /// The levels, to be refreshed in place.
    fn levels_mut(&mut self) -> &mut [BidAskPair];
    /// Sets every field but the levels: what happened, to which stock, when.
    fn stamp(&mut self, stamp: Stamp, locate: Locate, event: Event, last: bool);
}

macro_rules! mbp_record {
    ($record:ty, $rtype:expr) => {
        impl MbpRecord for $record {
            fn blank() -> Self {
                let mut record = <$record>::default();
                record.levels.fill(EMPTY);
                record
            }
            #[inline]
            fn levels_mut(&mut self) -> &mut [BidAskPair] {
                &mut self.levels
            }
            #[inline]
            fn stamp(&mut self, stamp: Stamp, locate: Locate, event: Event, last: bool) {
                self.hd = RecordHeader::new::<$record>(
                    $rtype,
                    stamp.publisher_id,
                    u32::from(locate.0),
                    stamp.ts_event,
                );
                self.price = price_1e9(event.price);
                self.size = event.size;
                self.action = event.action as c_char;
                self.side = event.side;
                self.flags = stamp.flags(last);
                self.depth = event.depth;
                self.ts_recv = stamp.ts_recv;
                self.ts_in_delta = 0;
                self.sequence = stamp.sequence;
            }
        }
    };
}

mbp_record!(Mbp1Msg, rtype::MBP_1);
mbp_record!(Mbp10Msg, rtype::MBP_10);

/// Writes MBP records (`R` is `Mbp1Msg` or `Mbp10Msg`).
pub(crate) struct MbpWriter<R> {
    /// Each stock's last record, indexed by locate (grown on a locate's first change; at most
    /// 65,536 entries). A `Vec`, not a map: this is read on every message. The levels are
    /// refreshed in place and the record stamped in place, so a book update costs one copy
    /// of the record, into the spool's batch.
    last: Vec<R>,
}

/// What a record says happened.
#[derive(Clone, Copy)]
pub(crate) struct Event {
    action: u8,
    side: c_char,
    price: Price,
    size: u32,
    depth: u8,
}

/// An empty level, as Databento writes it.
pub(crate) const EMPTY: BidAskPair = BidAskPair {
    bid_px: UNDEF_PRICE,
    ask_px: UNDEF_PRICE,
    bid_sz: 0,
    ask_sz: 0,
    bid_ct: 0,
    ask_ct: 0,
};

impl<R: MbpRecord> MbpWriter<R> {
    /// No records yet.
    pub fn new() -> Self {
        MbpWriter { last: Vec::new() }
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
        let trade = before.trade.map(|t| {
            let record = self.last.get(usize::from(t.locate.0)).copied();
            (t, record.unwrap_or_else(R::blank))
        });
        let mut update = None;
        if let Some(locate) = changed {
            let idx = usize::from(locate.0);
            if self.last.len() <= idx {
                self.last.resize(idx + 1, R::blank());
            }
            let change = book_change(message, before);
            // Every book change of one ITCH message is on one side of one stock (a replace
            // keeps its side), so only that side is re-read; both when no side is known;
            // none when every price it touched is worse than a full side's `N`th level.
            let levels = self.last[idx].levels_mut();
            let moved = match change {
                Some(c) if c.prices().all(|p| below_top(levels, c.side, p)) => false,
                Some(c) => {
                    let view = books.side(locate, c.side);
                    match update_levels(levels, view, c) {
                        Some(moved) => moved,
                        None => refresh_side(levels, view, c.side),
                    }
                }
                None => {
                    let bid = refresh_side(levels, books.side(locate, Side::Bid), Side::Bid);
                    refresh_side(levels, books.side(locate, Side::Ask), Side::Ask) | bid
                }
            };
            if moved {
                update = change.map(|c| (idx, locate, c.event(levels, books, locate)));
            }
        }
        if let Some((trade, mut record)) = trade {
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
            record.stamp(stamp, trade.locate, event, update.is_none());
            spool.push(&record)?;
        }
        if let Some((idx, locate, event)) = update {
            let record = &mut self.last[idx];
            record.stamp(stamp, locate, event, true);
            spool.push(record)?;
        }
        Ok(())
    }
}

/// True if `price` is strictly worse than the last level of a full `side` in `levels`: a
/// change there leaves the top `N` as they are. (At the `N`th price itself, or on a side
/// with fewer than `N` levels, a change may show.)
fn below_top(levels: &[BidAskPair], side: Side, price: Price) -> bool {
    let Some(nth) = levels.last() else {
        return false;
    };
    let price = price_1e9(price);
    match side {
        Side::Bid => nth.bid_px != UNDEF_PRICE && price < nth.bid_px,
        Side::Ask => nth.ask_px != UNDEF_PRICE && price > nth.ask_px,
    }
}

/// Updates in place the levels at the prices `change` touched, when each was among the top
/// `N` before the message and is still live after it (or is worse than a full side's `N`th
/// level): a change that neither made nor emptied a level moves no other level, so the rest
/// of the side stands. `None` when a level was made or emptied within the top `N`: the side
/// must be read again. Else whether any level changed.
fn update_levels(
    levels: &mut [BidAskPair],
    view: Option<LadderView<'_>>,
    change: BookChange,
) -> Option<bool> {
    let view = view?;
    // Every price is checked before any level is touched: a side read again starts from
    // the levels as the last record had them.
    let mut found = [None; 2];
    for (slot, price) in found.iter_mut().zip(change.prices()) {
        if below_top(levels, change.side, price) {
            continue;
        }
        let px = price_1e9(price);
        let i = match change.side {
            Side::Bid => levels.iter().position(|l| l.bid_px == px)?,
            Side::Ask => levels.iter().position(|l| l.ask_px == px)?,
        };
        let level = view.level(price)?;
        *slot = Some((
            i,
            u32::try_from(level.qty).unwrap_or(u32::MAX),
            level.orders,
        ));
    }
    let mut moved = false;
    for (i, size, orders) in found.into_iter().flatten() {
        let pair = &mut levels[i];
        let (sz, ct) = match change.side {
            Side::Bid => (&mut pair.bid_sz, &mut pair.bid_ct),
            Side::Ask => (&mut pair.ask_sz, &mut pair.ask_ct),
        };
        // A DBN size is a `u32`: a level past 4,294,967,295 shares is written as that. The
        // change landed on this level, so its true size moved even when the written one
        // cannot show it: the record is still due (the top-of-book stream has its row).
        moved |= (*sz, *ct) != (size, orders) || size == u32::MAX;
        (*sz, *ct) = (size, orders);
    }
    Some(moved)
}

/// One side's fields of a level pair: price, size, count.
type SideFields<'a> = (&'a mut i64, &'a mut u32, &'a mut u32);

fn bid_fields(pair: &mut BidAskPair) -> SideFields<'_> {
    (&mut pair.bid_px, &mut pair.bid_sz, &mut pair.bid_ct)
}

fn ask_fields(pair: &mut BidAskPair) -> SideFields<'_> {
    (&mut pair.ask_px, &mut pair.ask_sz, &mut pair.ask_ct)
}

/// Re-reads the top levels of one side (`view`, absent for an empty side) into `levels`;
/// true if any changed.
fn refresh_side(levels: &mut [BidAskPair], view: Option<LadderView<'_>>, side: Side) -> bool {
    // One loop per side, so the side is not matched per level.
    match side {
        Side::Bid => refresh_fields(levels, view, bid_fields),
        Side::Ask => refresh_fields(levels, view, ask_fields),
    }
}

#[inline(always)]
fn refresh_fields(
    levels: &mut [BidAskPair],
    view: Option<LadderView<'_>>,
    fields: fn(&mut BidAskPair) -> SideFields<'_>,
) -> bool {
    let mut moved = false;
    let mut set = |pair: &mut BidAskPair, new: (i64, u32, u32)| {
        let (p, s, c) = fields(pair);
        moved |= (*p, *s, *c) != new;
        (*p, *s, *c) = new;
    };
    let mut filled = 0;
    if let Some(view) = view {
        for (pair, l) in levels.iter_mut().zip(view.best_first()) {
            let size = u32::try_from(l.qty).unwrap_or(u32::MAX);
            set(pair, (price_1e9(l.price), size, l.orders));
            filled += 1;
        }
    }
    for pair in &mut levels[filled..] {
        set(pair, (UNDEF_PRICE, 0, 0));
    }
    moved
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
    /// most 255, DBN's `u8`), counted in the book after the message: in `levels` (that side
    /// just refreshed) when the price is within them, else in the book.
    fn event(self, levels: &[BidAskPair], books: &Books, locate: Locate) -> Event {
        let price = price_1e9(self.price);
        let in_top = levels
            .iter()
            .take_while(|l| match self.side {
                Side::Bid => l.bid_px != UNDEF_PRICE && l.bid_px > price,
                Side::Ask => l.ask_px < price,
            })
            .count();
        let better = if in_top < levels.len() {
            in_top
        } else {
            books.side(locate, self.side).map_or(0, |view| {
                view.best_first()
                    .take(usize::from(u8::MAX))
                    .take_while(|l| match self.side {
                        Side::Bid => l.price > self.price,
                        Side::Ask => l.price < self.price,
                    })
                    .count()
            })
        };
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
