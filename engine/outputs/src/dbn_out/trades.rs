//! The trades and TBBO schemas: one record per trade (E, printable C, P, as
//! `book::trade_of` finds them), side = the aggressor (opposite the resting order; `N` for
//! P, whose indicator names the hidden order, not the aggressor), `depth` 0, `F_LAST` set.
//! TBBO adds the top of book just before the trade.

use std::ffi::c_char;

use dbn::{rtype, Mbp1Msg, RecordHeader, TradeMsg};

use super::record_sink::RecordSink;
use super::{aggressor_char, price_1e9, Before, DbnOutError, Stamp, NO_SIDE};
use ticklane_book::TopOfBook;

/// Writes trades (`with_top: false`) or TBBO (`with_top: true`) records.
pub struct TradeWriter {
    /// TBBO: each trade with the top of book before it.
    pub with_top: bool,
}

impl TradeWriter {
    /// Writes the record of one message's trade, if it printed one.
    pub(crate) fn write<S: RecordSink>(
        &mut self,
        spool: &mut S,
        stamp: Stamp,
        before: &Before,
    ) -> Result<(), DbnOutError> {
        let Some(trade) = before.trade else {
            return Ok(());
        };
        // An execution names its resting order; P names none (`before.order` is None).
        let side = before.order.map_or(NO_SIDE, |o| aggressor_char(o.side));
        let instrument = u32::from(trade.locate.0);
        let flags = stamp.flags(true);
        let action = b'T' as c_char;
        let price = price_1e9(trade.price);
        if self.with_top {
            spool.push(&Mbp1Msg {
                hd: RecordHeader::new::<Mbp1Msg>(
                    rtype::MBP_1,
                    stamp.publisher_id,
                    instrument,
                    stamp.ts_event,
                ),
                price,
                size: trade.shares,
                action,
                side,
                flags,
                depth: 0,
                ts_recv: stamp.ts_recv,
                ts_in_delta: 0,
                sequence: stamp.sequence,
                levels: [top_pair(&before.top)],
            })
        } else {
            spool.push(&TradeMsg {
                hd: RecordHeader::new::<TradeMsg>(
                    rtype::MBP_0,
                    stamp.publisher_id,
                    instrument,
                    stamp.ts_event,
                ),
                price,
                size: trade.shares,
                action,
                side,
                flags,
                depth: 0,
                ts_recv: stamp.ts_recv,
                ts_in_delta: 0,
                sequence: stamp.sequence,
            })
        }
    }
}

/// A top of book as DBN's level pair (empty sides as `UNDEF_PRICE`, 0, 0).
fn top_pair(top: &TopOfBook) -> dbn::BidAskPair {
    let mut pair = dbn::BidAskPair {
        bid_px: dbn::UNDEF_PRICE,
        ask_px: dbn::UNDEF_PRICE,
        bid_sz: 0,
        ask_sz: 0,
        bid_ct: 0,
        ask_ct: 0,
    };
    if top.bid_price().is_some() {
        pair.bid_px = price_1e9(top.bid.price);
        pair.bid_sz = u32::try_from(top.bid.qty).unwrap_or(u32::MAX);
        pair.bid_ct = top.bid.orders;
    }
    if top.ask_price().is_some() {
        pair.ask_px = price_1e9(top.ask.price);
        pair.ask_sz = u32::try_from(top.ask.qty).unwrap_or(u32::MAX);
        pair.ask_ct = top.ask.orders;
    }
    pair
}
