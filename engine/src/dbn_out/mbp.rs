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

use std::collections::HashMap;
use std::ffi::c_char;

use dbn::{rtype, BidAskPair, Mbp10Msg, Mbp1Msg, RecordHeader, UNDEF_PRICE};
use ticklane_feed::itch::{Locate, Message, Price};

use super::spool::Spool;
use super::{
    aggressor_char, price_1e9, side_char, Before, DbnOutError, Stamp, NO_SIDE, PUBLISHER_ID,
};
use crate::book::{Books, LevelView, Side};

/// Writes MBP-`N` records (`N` is 1 or 10).
pub struct MbpWriter<const N: usize> {
    /// The levels of each stock's last record.
    last: HashMap<u16, [BidAskPair; N]>,
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
        MbpWriter {
            last: HashMap::new(),
        }
    }

    /// Writes the records of one message.
    pub(crate) fn write(
        &mut self,
        spool: &mut Spool,
        stamp: Stamp,
        message: &Message<'_>,
        before: &Before,
        changed: Option<Locate>,
        books: &Books,
    ) -> Result<(), DbnOutError> {
        let update = changed.and_then(|locate| {
            let levels = levels::<N>(books, locate);
            let last = self.last.get(&locate.0).copied().unwrap_or([EMPTY; N]);
            (levels != last).then_some((locate, levels, last))
        });
        let update = update.map(|(locate, levels, last)| {
            self.last.insert(locate.0, levels);
            (
                locate,
                levels,
                last,
                book_event(message, before, books, locate),
            )
        });
        let book_record = update.is_some_and(|(.., event)| event.is_some());
        if let Some(trade) = before.trade {
            let side = match (message, before.order) {
                (Message::Trade(_), _) | (_, None) => NO_SIDE,
                (_, Some(order)) => aggressor_char(order.side),
            };
            // The levels as they stood before the message: the last record's.
            let levels = match update {
                Some((locate, _, last, _)) if locate == trade.locate => last,
                _ => self
                    .last
                    .get(&trade.locate.0)
                    .copied()
                    .unwrap_or([EMPTY; N]),
            };
            let event = Event {
                action: b'T',
                side,
                price: trade.price,
                size: trade.shares,
                depth: 0,
            };
            self.push(spool, stamp, trade.locate, event, levels, !book_record)?;
        }
        if let Some((locate, levels, _, Some(event))) = update {
            self.push(spool, stamp, locate, event, levels, true)?;
        }
        Ok(())
    }

    fn push(
        &mut self,
        spool: &mut Spool,
        stamp: Stamp,
        locate: Locate,
        event: Event,
        levels: [BidAskPair; N],
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
}

/// The top `N` levels of `locate`'s book.
pub(crate) fn levels<const N: usize>(books: &Books, locate: Locate) -> [BidAskPair; N] {
    let mut out = [EMPTY; N];
    let mut fill = |side: Side, set: &mut dyn FnMut(&mut BidAskPair, LevelView)| {
        if let Some(view) = books.side(locate, side) {
            for (pair, level) in out.iter_mut().zip(view.best_first()) {
                set(pair, level);
            }
        }
    };
    fill(Side::Bid, &mut |p, l| {
        p.bid_px = price_1e9(l.price);
        p.bid_sz = u32::try_from(l.qty).unwrap_or(u32::MAX);
        p.bid_ct = l.orders;
    });
    fill(Side::Ask, &mut |p, l| {
        p.ask_px = price_1e9(l.price);
        p.ask_sz = u32::try_from(l.qty).unwrap_or(u32::MAX);
        p.ask_ct = l.orders;
    });
    out
}

/// The book update a message made, as one event.
fn book_event(
    message: &Message<'_>,
    before: &Before,
    books: &Books,
    locate: Locate,
) -> Option<Event> {
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
    let better = books.side(locate, side).map_or(0, |view| {
        view.best_first()
            .take_while(|l| match side {
                Side::Bid => l.price > price,
                Side::Ask => l.price < price,
            })
            .count()
    });
    Some(Event {
        action,
        side: side_char(side),
        price,
        size,
        depth: u8::try_from(better).unwrap_or(u8::MAX),
    })
}
