//! The trades, order events and status messages of a replay, taken on the book thread as
//! each message is applied and handed to a consumer in this process in chunks
//! ([`crate::row_chunks`]): the rows of [`crate::table_rows`]. The order events are the
//! MBO schema writer's own records ([`crate::dbn_out`]), so they are the records
//! `--dbn-out --schema mbo` writes; the trades are `book::trade_of`'s, which the trades
//! schema prints. `--symbols`/`--between` keep rows as they keep every output's: a status
//! message of the whole market (`S`, `W`) by its time alone.

use std::collections::BTreeMap;
use std::io;
use std::path::PathBuf;

use dbn::encode::DbnEncodable;
use dbn::MboMsg;
use ticklane_book::{Books, Order, Side, Trade};
use ticklane_itch::{Locate, Message, Nanos};

use crate::dbn_out::{
    Before, DbnOut, DbnOutError, DbnOutOptions, DbnSchema, FeedStamp, ItchDataset, RecordSink,
    SessionDate,
};
use crate::output_filter::OutputFilter;
use crate::row_chunks::{Chunk, ChunkSink, RowChunks};
use crate::table_rows::{OrderRow, StatusRow, TradeRow};

/// The tables one replay's book thread makes, as asked.
pub struct TableTap {
    trades: Option<ChunkSink<TradeRow>>,
    orders: Option<DbnOut<OrderSink>>,
    status: Option<ChunkSink<StatusRow>>,
    filter: OutputFilter,
    /// The trade the message being applied prints and the order it executes, looked up
    /// before it was applied.
    trade: Option<(Trade, Option<Order>)>,
    maybe_bad_book: bool,
}

impl TableTap {
    /// The tables `chunks` asks for; `date` stamps the order events' `ts_event` (any date
    /// where the session's is not known: the rows carry ITCH time besides).
    pub fn new(
        chunks: &RowChunks,
        date: SessionDate,
        dataset: ItchDataset,
        filter: OutputFilter,
    ) -> Self {
        let tables = chunks.tables;
        let orders = tables.orders.then(|| {
            let opts = DbnOutOptions {
                path: PathBuf::from("orders"),
                schema: DbnSchema::Mbo,
                date,
                dataset,
            };
            let sink = OrderSink {
                rows: ChunkSink::new(chunks, Chunk::Orders),
                midnight_ns: date.midnight_utc_ns(),
                stocks: BTreeMap::new(),
                muted: false,
                count: 0,
            };
            DbnOut::with_sink(opts, sink).with_filter(filter.clone())
        });
        TableTap {
            trades: tables.trades.then(|| ChunkSink::new(chunks, Chunk::Trades)),
            orders,
            status: tables.status.then(|| ChunkSink::new(chunks, Chunk::Status)),
            filter,
            trade: None,
            maybe_bad_book: false,
        }
    }

    /// Flags every later trade and order event `F_MAYBE_BAD_BOOK`: the input declared
    /// messages lost, so the books they are read from may be wrong.
    pub fn mark_maybe_bad_book(&mut self) {
        self.maybe_bad_book = true;
        if let Some(orders) = &mut self.orders {
            orders.mark_maybe_bad_book();
        }
    }

    /// Notes what `message` acts on, from `books` as they are before it is applied.
    #[inline]
    pub fn before(&mut self, books: &Books, message: &Message<'_>) {
        if let Some(orders) = &mut self.orders {
            orders.before(books, message);
        }
        if self.trades.is_some() {
            // The DBN writers' own look-up: the order a trade executes (none for `P`).
            let before = Before::of(books, message);
            self.trade = before.trade.map(|trade| (trade, before.order));
        }
    }

    /// Takes the rows of message number `index`, now applied to `books`.
    ///
    /// # Errors
    ///
    /// If the consumer has gone.
    #[inline]
    pub fn after(
        &mut self,
        index: u64,
        message: &Message<'_>,
        changed: Option<Locate>,
        books: &Books,
        feed: FeedStamp,
    ) -> io::Result<()> {
        if let Some(orders) = &mut self.orders {
            orders
                .after(index, message, changed, books, feed)
                .map_err(consumer_error)?;
        }
        if let (Some(trades), Some((trade, order))) = (&mut self.trades, self.trade.take()) {
            let symbol = books.symbol_raw(trade.locate);
            if self.filter.keeps(symbol.trimmed(), trade.timestamp) {
                trades.push(trade_row(
                    index,
                    message,
                    trade,
                    order,
                    symbol.0,
                    self.maybe_bad_book,
                ))?;
            }
        }
        if let Some(status) = &mut self.status {
            if let Some(row) = status_row(index, message) {
                let market_wide =
                    matches!(message, Message::SystemEvent(_) | Message::MwcbStatus(_));
                let kept = match market_wide {
                    true => self.filter.keeps_time(message.timestamp()),
                    false => self
                        .filter
                        .keeps(row.stock.trim_ascii_end(), message.timestamp()),
                };
                if kept {
                    status.push(row)?;
                }
            }
        }
        Ok(())
    }

    /// Sends every table's last chunk.
    ///
    /// # Errors
    ///
    /// If the consumer has gone.
    pub fn finish(self) -> io::Result<()> {
        if let Some(trades) = self.trades {
            trades.finish()?;
        }
        if let Some(orders) = self.orders {
            orders.into_sink().rows.finish()?;
        }
        if let Some(status) = self.status {
            status.finish()?;
        }
        Ok(())
    }
}

/// The row of `trade`, which message number `index` printed executing `order`.
fn trade_row(
    index: u64,
    message: &Message<'_>,
    trade: Trade,
    order: Option<Order>,
    stock: [u8; 8],
    maybe_bad_book: bool,
) -> TradeRow {
    let (match_number, order_ref) = match message {
        Message::OrderExecuted(m) => (m.match_number().0, m.order_ref().0),
        Message::OrderExecutedWithPrice(m) => (m.match_number().0, m.order_ref().0),
        Message::Trade(m) => (m.match_number().0, m.order_ref().0),
        _ => (0, 0),
    };
    // As the DBN trades schema: the aggressor is opposite the resting order; `P` names
    // the side of a hidden order, not the aggressor.
    let side = match order.map(|o| o.side) {
        Some(Side::Bid) => b'A',
        Some(Side::Ask) => b'B',
        None => b'N',
    };
    let mut flags = dbn::flags::LAST;
    if maybe_bad_book {
        flags |= dbn::flags::MAYBE_BAD_BOOK;
    }
    TradeRow {
        msg_index: index,
        timestamp_ns: trade.timestamp.0,
        match_number,
        order_ref,
        price: trade.price.0,
        shares: trade.shares,
        locate: trade.locate.0,
        stock,
        side,
        kind: message.tag(),
        flags,
    }
}

/// The row of message number `index`, if it is a status message.
fn status_row(index: u64, message: &Message<'_>) -> Option<StatusRow> {
    let Nanos(timestamp_ns) = message.timestamp();
    let mut row = StatusRow {
        msg_index: index,
        timestamp_ns,
        locate: message.locate().0,
        kind: message.tag(),
        stock: [b' '; 8],
        reason: [b' '; 4],
        ..StatusRow::default()
    };
    match message {
        Message::SystemEvent(m) => row.state = m.event_code(),
        Message::MwcbStatus(m) => row.state = m.breached_level(),
        Message::StockTradingAction(m) => {
            row.stock = m.stock().0;
            row.state = m.trading_state();
            row.reason = m.reason().0;
        }
        Message::RegShoRestriction(m) => {
            row.stock = m.stock().0;
            row.state = m.reg_sho_action();
        }
        Message::OperationalHalt(m) => {
            row.stock = m.stock().0;
            row.state = m.halt_action();
            row.reason[0] = m.market_code();
        }
        Message::Noii(m) => {
            row.stock = m.stock().0;
            row.state = m.imbalance_direction();
            row.paired_shares = m.paired_shares();
            row.imbalance_shares = m.imbalance_shares();
            row.far_price = m.far_price().0;
            row.near_price = m.near_price().0;
            row.reference_price = m.current_reference_price().0;
            row.cross_type = m.cross_type();
            row.price_variation = m.price_variation_indicator();
        }
        _ => return None,
    }
    Some(row)
}

/// A failed hand-off of the order events, as the consumer's error it is.
fn consumer_error(e: DbnOutError) -> io::Error {
    match e {
        DbnOutError::Io { source, .. } => source,
        other => io::Error::other(other),
    }
}

/// The MBO writer's records, as order-event rows.
struct OrderSink {
    rows: ChunkSink<OrderRow>,
    midnight_ns: u64,
    /// Locate → stock, from the stock directory.
    stocks: BTreeMap<u16, [u8; 8]>,
    muted: bool,
    count: u64,
}

impl RecordSink for OrderSink {
    fn push<R: DbnEncodable + 'static>(&mut self, record: &R) -> Result<(), DbnOutError> {
        let Some(&record) = (record as &dyn std::any::Any).downcast_ref::<MboMsg>() else {
            return Ok(());
        };
        if self.muted {
            return Ok(());
        }
        self.count += 1;
        let locate = u16::try_from(record.hd.instrument_id).unwrap_or(0);
        let row = OrderRow {
            record,
            timestamp_ns: record.hd.ts_event - self.midnight_ns,
            stock: self.stocks.get(&locate).copied().unwrap_or([b' '; 8]),
        };
        self.rows.push(row).map_err(|source| DbnOutError::Io {
            path: PathBuf::from("orders"),
            source,
        })
    }

    fn set_muted(&mut self, muted: bool) {
        self.muted = muted;
    }

    fn count(&self) -> u64 {
        self.count
    }

    fn symbol(&mut self, locate: Locate, ticker: &[u8]) {
        let mut stock = [b' '; 8];
        let n = ticker.len().min(8);
        stock[..n].copy_from_slice(&ticker[..n]);
        self.stocks.insert(locate.0, stock);
    }
}
