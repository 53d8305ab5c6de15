//! The `books` table of a snapshot read from Python: one row per book, its flags, its best
//! levels and its last trade (the columns are listed on `Snapshot.to_arrow`).
#![forbid(unsafe_code)]

use std::sync::Arc;

use arrow_array::builder::{
    BooleanBuilder, StringBuilder, UInt16Builder, UInt32Builder, UInt64Builder,
};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use ticklane_engine::snapshot::InstrumentState;

/// The `books` table's price columns (dollars with `price="float"`).
pub const BOOK_PRICES: &[&str] = &["bid_px", "ask_px", "last_trade_px"];

/// `states` as the `books` table, one row each, in their order.
pub fn snapshot_books(states: &[InstrumentState]) -> RecordBatch {
    use DataType::*;
    let n = states.len();
    let mut locate = UInt16Builder::with_capacity(n);
    let mut stock = StringBuilder::new();
    let mut trading_state = StringBuilder::new();
    let mut stale = BooleanBuilder::with_capacity(n);
    let mut maybe_bad = BooleanBuilder::with_capacity(n);
    let mut crossed = BooleanBuilder::with_capacity(n);
    let mut behind = BooleanBuilder::with_capacity(n);
    let u64s = || UInt64Builder::with_capacity(n);
    let u32s = || UInt32Builder::with_capacity(n);
    let (mut feed_seq, mut exchange_ts, mut updated) = (u64s(), u64s(), u64s());
    let (mut bid_px, mut bid_qty, mut bid_orders) = (u32s(), u64s(), u32s());
    let (mut ask_px, mut ask_qty, mut ask_orders) = (u32s(), u64s(), u32s());
    let (mut bid_levels, mut ask_levels) = (u32s(), u32s());
    let (mut last_px, mut last_shares, mut last_ns) = (u32s(), u32s(), u64s());
    let (mut trades, mut traded, mut publishes, mut sequence) = (u64s(), u64s(), u64s(), u64s());
    for s in states {
        locate.append_value(s.locate.0);
        stock.append_value(String::from_utf8_lossy(s.symbol()));
        match s.trading_state {
            Some(b) => trading_state.append_value(char::from(b).to_string()),
            None => trading_state.append_null(),
        }
        stale.append_value(s.flags.is_stale());
        maybe_bad.append_value(s.flags.is_maybe_bad());
        crossed.append_value(s.flags.is_crossed());
        behind.append_value(s.flags.is_behind());
        feed_seq.append_value(s.feed_seq);
        exchange_ts.append_value(s.exchange_ts.0);
        updated.append_value(s.updated_ns);
        let bid = s.best_bid().unwrap_or_default();
        let ask = s.best_ask().unwrap_or_default();
        bid_px.append_value(bid.price.0);
        bid_qty.append_value(bid.qty);
        bid_orders.append_value(bid.orders);
        ask_px.append_value(ask.price.0);
        ask_qty.append_value(ask.qty);
        ask_orders.append_value(ask.orders);
        bid_levels.append_value(u32::try_from(s.bids.len()).unwrap_or(u32::MAX));
        ask_levels.append_value(u32::try_from(s.asks.len()).unwrap_or(u32::MAX));
        last_px.append_option(s.last_trade.map(|t| t.price.0));
        last_shares.append_option(s.last_trade.map(|t| t.shares));
        last_ns.append_option(s.last_trade.map(|t| t.timestamp.0));
        trades.append_value(s.trades);
        traded.append_value(s.traded_shares);
        publishes.append_value(s.publishes);
        sequence.append_value(s.sequence);
    }
    let field = |name: &str, t: DataType| Field::new(name, t, false);
    let nullable = |name: &str, t: DataType| Field::new(name, t, true);
    let fields = vec![
        field("locate", UInt16),
        field("stock", Utf8),
        nullable("trading_state", Utf8),
        field("stale", Boolean),
        field("maybe_bad", Boolean),
        field("crossed", Boolean),
        field("behind", Boolean),
        field("feed_seq", UInt64),
        field("exchange_ts_ns", UInt64),
        field("updated_ns", UInt64),
        field("bid_px", UInt32),
        field("bid_qty", UInt64),
        field("bid_orders", UInt32),
        field("ask_px", UInt32),
        field("ask_qty", UInt64),
        field("ask_orders", UInt32),
        field("bid_levels", UInt32),
        field("ask_levels", UInt32),
        nullable("last_trade_px", UInt32),
        nullable("last_trade_shares", UInt32),
        nullable("last_trade_ns", UInt64),
        field("trades", UInt64),
        field("traded_shares", UInt64),
        field("publishes", UInt64),
        field("sequence", UInt64),
    ];
    let columns: Vec<ArrayRef> = vec![
        Arc::new(locate.finish()),
        Arc::new(stock.finish()),
        Arc::new(trading_state.finish()),
        Arc::new(stale.finish()),
        Arc::new(maybe_bad.finish()),
        Arc::new(crossed.finish()),
        Arc::new(behind.finish()),
        Arc::new(feed_seq.finish()),
        Arc::new(exchange_ts.finish()),
        Arc::new(updated.finish()),
        Arc::new(bid_px.finish()),
        Arc::new(bid_qty.finish()),
        Arc::new(bid_orders.finish()),
        Arc::new(ask_px.finish()),
        Arc::new(ask_qty.finish()),
        Arc::new(ask_orders.finish()),
        Arc::new(bid_levels.finish()),
        Arc::new(ask_levels.finish()),
        Arc::new(last_px.finish()),
        Arc::new(last_shares.finish()),
        Arc::new(last_ns.finish()),
        Arc::new(trades.finish()),
        Arc::new(traded.finish()),
        Arc::new(publishes.finish()),
        Arc::new(sequence.finish()),
    ];
    RecordBatch::try_new(Arc::new(Schema::new(fields)), columns)
        .expect("invariant: the columns are made to the schema's fields")
}
