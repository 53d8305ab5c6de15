//! The Arrow columns of each table a replay's batches give, gathered row by row as the
//! engine's chunks come; `finish` makes them a record batch and starts again. The bbo
//! table's columns are the Parquet writer's own ([`BboColumns`]); the others are these:
//!
//! | table | columns |
//! |---|---|
//! | `trades` | `msg_index`, `timestamp_ns`, `locate`, `stock`, `price`, `shares`, `side` (the aggressor as DBN's trades give it: `B`, `A`, `N` for a `P`), `match_number`, `order_ref` (the order executed), `type` (`E`, `C`, `P`), `flags` (DBN's) |
//! | `orders` | `timestamp_ns`, `locate`, `stock`, `action`, `side`, `price`, `size`, `order_id`, `flags`, `sequence`: each field of the DBN MBO record `--dbn-out --schema mbo` writes (`locate` its `instrument_id`, `price` in 1/10,000 dollars) |
//! | `status` | `msg_index`, `timestamp_ns`, `type` (`S`, `H`, `Y`, `h`, `W`, `I`), `locate`, `stock`, `state`, `reason`, and for `I` only (null otherwise) `paired_shares`, `imbalance_shares`, `far_price`, `near_price`, `reference_price` (0 prices null), `cross_type`, `price_variation` |
//! | `depth` | `locate`, `stock`, `side` (`B`, `S`), `level`, `price`, `qty`, `orders`: `--book-out`'s |
//!
//! Letters are one-character strings; stocks are trimmed.
#![forbid(unsafe_code)]

use std::sync::Arc;

use arrow_array::builder::{StringBuilder, UInt16Builder, UInt32Builder, UInt64Builder};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use ticklane_engine::book::{LevelView, Side};
use ticklane_engine::parquet_out::BboColumns;
use ticklane_engine::table_rows::{OrderRow, StatusRow, TradeRow};
use ticklane_feed::itch::Locate;

/// One table's columns being gathered.
pub trait Columns<R> {
    /// Appends one row.
    fn push(&mut self, row: &R);
    /// Rows gathered since the last batch.
    fn len(&self) -> usize;
    /// The rows gathered, as a record batch; the columns start again empty.
    fn finish(&mut self) -> RecordBatch;
}

impl Columns<ticklane_engine::book::BboRow> for BboColumns {
    fn push(&mut self, row: &ticklane_engine::book::BboRow) {
        BboColumns::push(self, row);
    }
    fn len(&self) -> usize {
        BboColumns::len(self)
    }
    fn finish(&mut self) -> RecordBatch {
        BboColumns::finish(self)
    }
}

/// `b` as a one-character string (`?` for a byte that is not ASCII).
fn letter(b: &u8) -> &str {
    std::str::from_utf8(std::slice::from_ref(b)).unwrap_or("?")
}

/// `bytes` with its trailing spaces cut, as a string (never a panic on a bad byte).
fn trimmed(bytes: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(bytes.trim_ascii_end())
}

fn field(name: &str, t: DataType) -> Field {
    Field::new(name, t, false)
}

fn nullable(name: &str, t: DataType) -> Field {
    Field::new(name, t, true)
}

/// A record batch of `columns` under `schema`; they were made to its fields.
fn batch(schema: &Arc<Schema>, columns: Vec<ArrayRef>) -> RecordBatch {
    RecordBatch::try_new(Arc::clone(schema), columns)
        .expect("invariant: the columns are made to the schema's fields")
}

/// The trades table.
pub struct TradeColumns {
    schema: Arc<Schema>,
    msg_index: UInt64Builder,
    timestamp_ns: UInt64Builder,
    locate: UInt16Builder,
    stock: StringBuilder,
    price: UInt32Builder,
    shares: UInt32Builder,
    side: StringBuilder,
    match_number: UInt64Builder,
    order_ref: UInt64Builder,
    kind: StringBuilder,
    flags: arrow_array::builder::UInt8Builder,
    len: usize,
}

impl TradeColumns {
    /// Empty columns.
    pub fn new() -> Self {
        use DataType::*;
        TradeColumns {
            schema: Arc::new(Schema::new(vec![
                field("msg_index", UInt64),
                field("timestamp_ns", UInt64),
                field("locate", UInt16),
                field("stock", Utf8),
                field("price", UInt32),
                field("shares", UInt32),
                field("side", Utf8),
                field("match_number", UInt64),
                field("order_ref", UInt64),
                field("type", Utf8),
                field("flags", UInt8),
            ])),
            msg_index: UInt64Builder::new(),
            timestamp_ns: UInt64Builder::new(),
            locate: UInt16Builder::new(),
            stock: StringBuilder::new(),
            price: UInt32Builder::new(),
            shares: UInt32Builder::new(),
            side: StringBuilder::new(),
            match_number: UInt64Builder::new(),
            order_ref: UInt64Builder::new(),
            kind: StringBuilder::new(),
            flags: arrow_array::builder::UInt8Builder::new(),
            len: 0,
        }
    }
}

impl Columns<TradeRow> for TradeColumns {
    fn push(&mut self, row: &TradeRow) {
        self.msg_index.append_value(row.msg_index);
        self.timestamp_ns.append_value(row.timestamp_ns);
        self.locate.append_value(row.locate);
        self.stock.append_value(trimmed(&row.stock));
        self.price.append_value(row.price);
        self.shares.append_value(row.shares);
        self.side.append_value(letter(&row.side));
        self.match_number.append_value(row.match_number);
        self.order_ref.append_value(row.order_ref);
        self.kind.append_value(letter(&row.kind));
        self.flags.append_value(row.flags);
        self.len += 1;
    }

    fn len(&self) -> usize {
        self.len
    }

    fn finish(&mut self) -> RecordBatch {
        self.len = 0;
        batch(
            &self.schema,
            vec![
                Arc::new(self.msg_index.finish()),
                Arc::new(self.timestamp_ns.finish()),
                Arc::new(self.locate.finish()),
                Arc::new(self.stock.finish()),
                Arc::new(self.price.finish()),
                Arc::new(self.shares.finish()),
                Arc::new(self.side.finish()),
                Arc::new(self.match_number.finish()),
                Arc::new(self.order_ref.finish()),
                Arc::new(self.kind.finish()),
                Arc::new(self.flags.finish()),
            ],
        )
    }
}

/// DBN prices are in 1e-9 dollars; the tables', ITCH's, in 1e-4.
const DBN_PER_ITCH_PRICE: i64 = 100_000;

/// The orders table.
pub struct OrderColumns {
    schema: Arc<Schema>,
    timestamp_ns: UInt64Builder,
    locate: UInt16Builder,
    stock: StringBuilder,
    action: StringBuilder,
    side: StringBuilder,
    price: UInt32Builder,
    size: UInt32Builder,
    order_id: UInt64Builder,
    flags: arrow_array::builder::UInt8Builder,
    sequence: UInt32Builder,
    len: usize,
}

impl OrderColumns {
    /// Empty columns.
    pub fn new() -> Self {
        use DataType::*;
        OrderColumns {
            schema: Arc::new(Schema::new(vec![
                field("timestamp_ns", UInt64),
                field("locate", UInt16),
                field("stock", Utf8),
                field("action", Utf8),
                field("side", Utf8),
                field("price", UInt32),
                field("size", UInt32),
                field("order_id", UInt64),
                field("flags", UInt8),
                field("sequence", UInt32),
            ])),
            timestamp_ns: UInt64Builder::new(),
            locate: UInt16Builder::new(),
            stock: StringBuilder::new(),
            action: StringBuilder::new(),
            side: StringBuilder::new(),
            price: UInt32Builder::new(),
            size: UInt32Builder::new(),
            order_id: UInt64Builder::new(),
            flags: arrow_array::builder::UInt8Builder::new(),
            sequence: UInt32Builder::new(),
            len: 0,
        }
    }
}

impl Columns<OrderRow> for OrderColumns {
    fn push(&mut self, row: &OrderRow) {
        let r = &row.record;
        self.timestamp_ns.append_value(row.timestamp_ns);
        // Records made from ITCH name a locate and an ITCH price.
        self.locate
            .append_value(u16::try_from(r.hd.instrument_id).unwrap_or(u16::MAX));
        self.stock.append_value(trimmed(&row.stock));
        self.action.append_value(letter(&(r.action as u8)));
        self.side.append_value(letter(&(r.side as u8)));
        let price = u32::try_from(r.price / DBN_PER_ITCH_PRICE).unwrap_or(0);
        self.price.append_value(price);
        self.size.append_value(r.size);
        self.order_id.append_value(r.order_id);
        self.flags.append_value(r.flags.raw());
        self.sequence.append_value(r.sequence);
        self.len += 1;
    }

    fn len(&self) -> usize {
        self.len
    }

    fn finish(&mut self) -> RecordBatch {
        self.len = 0;
        batch(
            &self.schema,
            vec![
                Arc::new(self.timestamp_ns.finish()),
                Arc::new(self.locate.finish()),
                Arc::new(self.stock.finish()),
                Arc::new(self.action.finish()),
                Arc::new(self.side.finish()),
                Arc::new(self.price.finish()),
                Arc::new(self.size.finish()),
                Arc::new(self.order_id.finish()),
                Arc::new(self.flags.finish()),
                Arc::new(self.sequence.finish()),
            ],
        )
    }
}

/// The status table.
pub struct StatusColumns {
    schema: Arc<Schema>,
    msg_index: UInt64Builder,
    timestamp_ns: UInt64Builder,
    kind: StringBuilder,
    locate: UInt16Builder,
    stock: StringBuilder,
    state: StringBuilder,
    reason: StringBuilder,
    paired_shares: UInt64Builder,
    imbalance_shares: UInt64Builder,
    far_price: UInt32Builder,
    near_price: UInt32Builder,
    reference_price: UInt32Builder,
    cross_type: StringBuilder,
    price_variation: StringBuilder,
    len: usize,
}

impl StatusColumns {
    /// Empty columns.
    pub fn new() -> Self {
        use DataType::*;
        StatusColumns {
            schema: Arc::new(Schema::new(vec![
                field("msg_index", UInt64),
                field("timestamp_ns", UInt64),
                field("type", Utf8),
                field("locate", UInt16),
                field("stock", Utf8),
                field("state", Utf8),
                field("reason", Utf8),
                nullable("paired_shares", UInt64),
                nullable("imbalance_shares", UInt64),
                nullable("far_price", UInt32),
                nullable("near_price", UInt32),
                nullable("reference_price", UInt32),
                nullable("cross_type", Utf8),
                nullable("price_variation", Utf8),
            ])),
            msg_index: UInt64Builder::new(),
            timestamp_ns: UInt64Builder::new(),
            kind: StringBuilder::new(),
            locate: UInt16Builder::new(),
            stock: StringBuilder::new(),
            state: StringBuilder::new(),
            reason: StringBuilder::new(),
            paired_shares: UInt64Builder::new(),
            imbalance_shares: UInt64Builder::new(),
            far_price: UInt32Builder::new(),
            near_price: UInt32Builder::new(),
            reference_price: UInt32Builder::new(),
            cross_type: StringBuilder::new(),
            price_variation: StringBuilder::new(),
            len: 0,
        }
    }
}

impl Columns<StatusRow> for StatusColumns {
    fn push(&mut self, row: &StatusRow) {
        self.msg_index.append_value(row.msg_index);
        self.timestamp_ns.append_value(row.timestamp_ns);
        self.kind.append_value(letter(&row.kind));
        self.locate.append_value(row.locate);
        self.stock.append_value(trimmed(&row.stock));
        self.state.append_value(letter(&row.state));
        self.reason.append_value(trimmed(&row.reason));
        let noii = row.kind == b'I';
        let price = |px: u32| (noii && px != 0).then_some(px);
        self.paired_shares
            .append_option(noii.then_some(row.paired_shares));
        self.imbalance_shares
            .append_option(noii.then_some(row.imbalance_shares));
        self.far_price.append_option(price(row.far_price));
        self.near_price.append_option(price(row.near_price));
        self.reference_price
            .append_option(price(row.reference_price));
        self.cross_type
            .append_option(noii.then(|| letter(&row.cross_type)));
        self.price_variation
            .append_option(noii.then(|| letter(&row.price_variation)));
        self.len += 1;
    }

    fn len(&self) -> usize {
        self.len
    }

    fn finish(&mut self) -> RecordBatch {
        self.len = 0;
        batch(
            &self.schema,
            vec![
                Arc::new(self.msg_index.finish()),
                Arc::new(self.timestamp_ns.finish()),
                Arc::new(self.kind.finish()),
                Arc::new(self.locate.finish()),
                Arc::new(self.stock.finish()),
                Arc::new(self.state.finish()),
                Arc::new(self.reason.finish()),
                Arc::new(self.paired_shares.finish()),
                Arc::new(self.imbalance_shares.finish()),
                Arc::new(self.far_price.finish()),
                Arc::new(self.near_price.finish()),
                Arc::new(self.reference_price.finish()),
                Arc::new(self.cross_type.finish()),
                Arc::new(self.price_variation.finish()),
            ],
        )
    }
}

/// One row of the final depth, as `--book-out` writes it.
pub struct DepthRow {
    locate: u16,
    stock: [u8; 8],
    side: u8,
    level: u32,
    price: u32,
    qty: u64,
    orders: u32,
}

impl DepthRow {
    /// Level number `level` (1 = best) of `side` of `locate`'s book.
    pub fn new(locate: Locate, symbol: &[u8], side: Side, level: usize, view: &LevelView) -> Self {
        let mut stock = [b' '; 8];
        let n = symbol.len().min(8);
        stock[..n].copy_from_slice(&symbol[..n]);
        DepthRow {
            locate: locate.0,
            stock,
            side: side.letter() as u8,
            level: u32::try_from(level).unwrap_or(u32::MAX),
            price: view.price.0,
            qty: view.qty,
            orders: view.orders,
        }
    }
}

/// The depth table.
pub struct DepthColumns {
    schema: Arc<Schema>,
    locate: UInt16Builder,
    stock: StringBuilder,
    side: StringBuilder,
    level: UInt32Builder,
    price: UInt32Builder,
    qty: UInt64Builder,
    orders: UInt32Builder,
    len: usize,
}

impl DepthColumns {
    /// Empty columns.
    pub fn new() -> Self {
        use DataType::*;
        DepthColumns {
            schema: Arc::new(Schema::new(vec![
                field("locate", UInt16),
                field("stock", Utf8),
                field("side", Utf8),
                field("level", UInt32),
                field("price", UInt32),
                field("qty", UInt64),
                field("orders", UInt32),
            ])),
            locate: UInt16Builder::new(),
            stock: StringBuilder::new(),
            side: StringBuilder::new(),
            level: UInt32Builder::new(),
            price: UInt32Builder::new(),
            qty: UInt64Builder::new(),
            orders: UInt32Builder::new(),
            len: 0,
        }
    }
}

impl Columns<DepthRow> for DepthColumns {
    fn push(&mut self, row: &DepthRow) {
        self.locate.append_value(row.locate);
        self.stock.append_value(trimmed(&row.stock));
        self.side.append_value(letter(&row.side));
        self.level.append_value(row.level);
        self.price.append_value(row.price);
        self.qty.append_value(row.qty);
        self.orders.append_value(row.orders);
        self.len += 1;
    }

    fn len(&self) -> usize {
        self.len
    }

    fn finish(&mut self) -> RecordBatch {
        self.len = 0;
        batch(
            &self.schema,
            vec![
                Arc::new(self.locate.finish()),
                Arc::new(self.stock.finish()),
                Arc::new(self.side.finish()),
                Arc::new(self.level.finish()),
                Arc::new(self.price.finish()),
                Arc::new(self.qty.finish()),
                Arc::new(self.orders.finish()),
            ],
        )
    }
}
