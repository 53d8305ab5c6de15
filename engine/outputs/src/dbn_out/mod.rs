//! DBN output: a replay written as Databento's `XNAS.ITCH` dataset would carry it, in one of
//! five schemas (MBO, MBP-1, MBP-10, TBBO, trades), with Databento's own encoder (`dbn`).
//!
//! The replay calls [`DbnOut::before`] with the books just before each message is applied
//! (an execution or cancel needs the order as it was) and [`DbnOut::after`] with the books
//! after; nothing here runs unless `--dbn-out` is given. [`DbnOut::finish`] writes the file:
//! metadata first (with the locate → ticker mappings the stock directory gave), then records.
//!
//! Conventions (as Databento documents them for XNAS.ITCH, XBOS.ITCH and XPSX.ITCH): the
//! dataset and `publisher_id` are the venue's ([`ItchDataset`]: `--dataset`, else the
//! input's file name, else Nasdaq), `ts_event` is the session's New York midnight plus the
//! ITCH timestamp, prices are in 1e-9 (ITCH's 1e-4 × 100,000), `instrument_id` is the
//! stock locate, and `F_LAST` marks the last record one ITCH message produced. What the
//! input carries besides the messages decides two fields ([`FeedStamp`]):
//!
//! | input | `ts_recv` | `sequence` |
//! |---|---|---|
//! | ITCH50 file (BinaryFILE) | `ts_event` (a file has no receive time) | the ITCH message index (1-based) |
//! | pcap, pcapng with MoldUDP64 sequences | the packet's capture time | the message's MoldUDP64 sequence number |
//! | sanitized capture (sequences zeroed) | the packet's capture time | the ITCH message index |
//! | pcapng simple packet block (no time) | `ts_event` | as above |
//!
//! `ts_in_delta` is 0: ITCH carries no sending time apart from the event's. The
//! per-schema mapping is in [`mbo`], [`mbp`] and [`trades`].
//!
//! # `replay --dbn-out PATH --schema mbo|mbp-1|mbp-10|tbbo|trades`
//!
//! DBN version 3, schema `mbo` by default, zstd-compressed when `PATH` ends in `.zst`:
//!
//! ```text
//! ticklane gen 01302019.NASDAQ_ITCH50 --messages 100000
//! ticklane replay 01302019.NASDAQ_ITCH50 --dbn-out day.mbo.dbn.zst --schema mbo -q
//! ticklane replay 01302019.NASDAQ_ITCH50 --dbn-out day.tbbo.dbn --schema tbbo --date 2019-01-30 -q
//! ```
//!
//! - The session date ([`SessionDate`]) is `--date YYYY-MM-DD`, else the first eight digits
//!   of the input's file name that make a date (`01302019.NASDAQ_ITCH50` is MMDDYYYY,
//!   `20190130` YYYYMMDD); without either the replay refuses, naming `--date` (exit 2).
//!   `ts_event` is that day's New York midnight (UTC−5, or UTC−4 in daylight time by the US
//!   rule) plus the ITCH timestamp.
//! - `channel_id` is 0. `flags`: `F_LAST` (128) on the last record of each ITCH message;
//!   `F_MAYBE_BAD_BOOK` (4) on every record after a capture's MoldUDP64 sequencer declared
//!   messages lost (nothing recovers them in a file, so it stays set).
//! - DBN sizes are 32-bit: a level holding more than 4,294,967,295 shares (the CSV's sums
//!   are 64-bit) is written as 4,294,967,295, and a change at such a level still writes its
//!   record. MBP-1's book updates are exactly the `--bbo-out` rows.
//! - The metadata names the dataset, the schema, `stype_in` `raw_symbol` and `stype_out`
//!   `instrument_id`, and maps each ticker of the stock directory to its locate for the
//!   session date. It describes what the file holds: under `--symbols` only those tickers;
//!   `start` is the `--between` window's start (else the session's midnight) and `end` the
//!   window's end or just after the last message, whichever comes first.
//! - How the file is written (records once, metadata in front, `PATH.partial` renamed to
//!   `PATH` when finished, symbolic links followed) is in `spool` and `target`. DBN's
//!   metadata has nowhere to say a file stops short, so after an input error (exit 1) the
//!   file is finished with the records made before it but keeps the name `PATH.partial`;
//!   `PATH` is neither created nor replaced (a pipe has only the exit status to say it).
//! - Not with `--pace`. With `replay --threads N` the file is byte for byte one thread's:
//!   the book threads make the records and the merge places them in message order.
//!   A DBN input cannot be written back out (its records are not ITCH messages).
//!
//! Read back with Databento's `databento-dbn` (Python), as the tests do:
//!
//! ```text
//! python -c "import databento_dbn as d; x=d.DBNDecoder(compression=d.Compression.ZSTD); x.write(open('day.mbo.dbn.zst','rb').read()); print(x.decode()[:3])"
//! ```

mod dataset;
pub mod mbo;
pub mod mbp;
mod merged;
mod record_batch;
mod record_sink;
mod session_date;
mod spool;
mod target;
pub mod trades;

use std::collections::BTreeMap;
use std::ffi::c_char;
use std::num::NonZeroU64;
use std::path::PathBuf;
use std::str::FromStr;

use dbn::{MappingInterval, Mbp10Msg, Mbp1Msg, Metadata, SType, Schema, SymbolMapping};
use ticklane_itch::{Locate, Message, Nanos, Price};

pub use dataset::{ItchDataset, DATASET_NAMES};
pub use session_date::{SessionDate, SessionDateError};

use crate::output_filter::OutputFilter;
use mbo::MboWriter;
use mbp::MbpWriter;
pub use merged::MergedDbnOut;
pub use record_batch::{BatchCursor, MessageRecords, RecordBatch};
pub use record_sink::RecordSink;
pub use spool::{InputEnd, Spool};
/// For the Parquet writer, which writes its files beside themselves as this module does,
/// and the replay's check of its output paths.
pub use target::link_end;
use ticklane_book::{Books, Order, Side, TopOfBook, Trade};
// The Parquet writer's, which resolves its path the same way.
#[cfg(feature = "parquet")]
pub(crate) use target::{beside, OutputTarget};
use trades::TradeWriter;

/// Databento's publisher id of XNAS.ITCH, which the sampled depth is written as.
pub const PUBLISHER_ID: u16 = dbn::Publisher::XnasItchXnas as u16;

/// The schemas `--schema` accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DbnSchema {
    /// Every order event (`mbo`).
    Mbo,
    /// The top level after each change to it, and each trade (`mbp-1`).
    Mbp1,
    /// The top ten levels after each change to them, and each trade (`mbp-10`).
    Mbp10,
    /// Each trade with the top of book just before it (`tbbo`).
    Tbbo,
    /// Each trade (`trades`).
    Trades,
}

impl DbnSchema {
    fn dbn(self) -> Schema {
        match self {
            DbnSchema::Mbo => Schema::Mbo,
            DbnSchema::Mbp1 => Schema::Mbp1,
            DbnSchema::Mbp10 => Schema::Mbp10,
            DbnSchema::Tbbo => Schema::Tbbo,
            DbnSchema::Trades => Schema::Trades,
        }
    }

    /// The bytes of one record of the schema (every record of a schema is the same size).
    pub fn record_len(self) -> usize {
        match self {
            DbnSchema::Mbo => std::mem::size_of::<dbn::MboMsg>(),
            DbnSchema::Mbp1 => std::mem::size_of::<Mbp1Msg>(),
            DbnSchema::Mbp10 => std::mem::size_of::<Mbp10Msg>(),
            DbnSchema::Tbbo => std::mem::size_of::<dbn::TbboMsg>(),
            DbnSchema::Trades => std::mem::size_of::<dbn::TradeMsg>(),
        }
    }
}

/// The schema names `--schema` accepts, for messages.
pub const SCHEMA_NAMES: &str = "mbo, mbp-1, mbp-10, tbbo, trades";

impl FromStr for DbnSchema {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(match s {
            "mbo" => DbnSchema::Mbo,
            "mbp-1" => DbnSchema::Mbp1,
            "mbp-10" => DbnSchema::Mbp10,
            "tbbo" => DbnSchema::Tbbo,
            "trades" => DbnSchema::Trades,
            other => return Err(format!("unknown schema {other:?}: one of {SCHEMA_NAMES}")),
        })
    }
}

/// What `--dbn-out` was asked for.
#[derive(Clone, Debug)]
pub struct DbnOutOptions {
    /// The output; zstd-compressed when it ends in `.zst`.
    pub path: PathBuf,
    /// The schema.
    pub schema: DbnSchema,
    /// The session date (`--date`, else from the input's file name).
    pub date: SessionDate,
    /// The venue's dataset (`--dataset`, else from the input's file name, else XNAS.ITCH).
    pub dataset: ItchDataset,
}

/// What the input says of one message besides its bytes, where it says it: a capture's
/// MoldUDP64 sequence number and the capture time of the packet that carried it (the
/// capture reader's `RawMessage::seq` and `capture_ns`). `ts_recv` and `sequence` are
/// taken from them when present (the table in this module's documentation).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FeedStamp {
    /// The MoldUDP64 sequence number; `None` in an ITCH50 file or a sanitized capture.
    pub seq: Option<u64>,
    /// The capture time, ns since the Unix epoch; `None` in an ITCH50 file.
    pub capture_ns: Option<u64>,
}

/// Why the DBN output could not be written.
#[derive(Debug, thiserror::Error)]
pub enum DbnOutError {
    /// A file could not be written or read.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        source: std::io::Error,
    },
    /// The DBN encoder refused.
    #[error("{}: {source}", path.display())]
    Dbn {
        /// The file.
        path: PathBuf,
        /// What the encoder said.
        source: dbn::Error,
    },
    /// The writer thread of a format that takes the records as they are made stopped (its
    /// own error comes when it is finished).
    #[error(transparent)]
    WriterStopped(#[from] crate::writer_thread::WriterStopped),
    /// DBN's `sequence` is 32 bits; this message's sequence number (its MoldUDP64 one, else
    /// its index) does not fit.
    #[error("message {index}: its sequence number is past DBN's 32-bit sequence field")]
    SequenceOverflow {
        /// The ITCH message index.
        index: u64,
    },
}

/// The ITCH messages that can make records (orders and trades); the system events, the
/// stock directory and the other administrative messages that open a day make none.
const MAKES_RECORDS: &[u8] = b"AFECXDUPQB";

/// Databento's side letters: `B` bid, `A` ask, `N` none.
#[inline]
pub(crate) fn side_char(side: Side) -> c_char {
    match side {
        Side::Bid => b'B' as c_char,
        Side::Ask => b'A' as c_char,
    }
}

/// The aggressor of a trade against a resting order: the other side.
#[inline]
pub(crate) fn aggressor_char(resting: Side) -> c_char {
    match resting {
        Side::Bid => b'A' as c_char,
        Side::Ask => b'B' as c_char,
    }
}

/// No side (`N`).
pub(crate) const NO_SIDE: c_char = b'N' as c_char;

/// ITCH price (1e-4 dollars) in DBN units (1e-9 dollars).
#[inline]
pub(crate) fn price_1e9(price: Price) -> i64 {
    i64::from(price.0) * 100_000
}

/// What one ITCH message means before it is applied: the order it acts on and the trade it
/// prints, looked up in the books as they were.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Before {
    /// For E, C, X, D and U: the order named, as it stood (absent if unknown).
    pub order: Option<Order>,
    /// The trade the message prints (E, printable C, P), as `book::trade_of` finds it.
    pub trade: Option<Trade>,
    /// The traded stock's top of book before the message.
    pub top: TopOfBook,
}

impl Before {
    /// What `message` acts on in `books` as they are before it is applied (the top of
    /// book left empty).
    #[inline]
    pub(crate) fn of(books: &Books, message: &Message<'_>) -> Self {
        let order = match message {
            Message::OrderExecuted(m) => books.order(m.order_ref()),
            Message::OrderExecutedWithPrice(m) => books.order(m.order_ref()),
            Message::OrderCancel(m) => books.order(m.order_ref()),
            Message::OrderDelete(m) => books.order(m.order_ref()),
            Message::OrderReplace(m) => books.order(m.original_order_ref()),
            _ => None,
        };
        Before {
            order,
            trade: ticklane_book::trade_of(books, message),
            top: TopOfBook::default(),
        }
    }
}

/// Stamps shared by every record of one ITCH message.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Stamp {
    pub ts_event: u64,
    /// The capture time, else `ts_event`.
    pub ts_recv: u64,
    /// The MoldUDP64 sequence number, else the ITCH message index.
    pub sequence: u32,
    pub publisher_id: u16,
    /// `F_MAYBE_BAD_BOOK` once a loss was declared, else nothing; `F_LAST` is added per record.
    pub flags: u8,
}

impl Stamp {
    /// The flags of a record, `last` if it is the last one of its message.
    #[inline]
    pub fn flags(self, last: bool) -> dbn::FlagSet {
        let mut flags = dbn::FlagSet::new(self.flags);
        if last {
            flags.set_last();
        }
        flags
    }
}

/// The DBN writer of one replay: the records go to `S`, a [`Spool`] for a DBN file.
pub struct DbnOut<S: RecordSink = Spool> {
    opts: DbnOutOptions,
    midnight_ns: u64,
    spool: S,
    /// Locate → ticker, from the stock directory (the last `R` for a locate wins).
    symbols: BTreeMap<u16, String>,
    before: Before,
    last_ts_event: u64,
    /// The message index that `last_ts_event` is the stamp of.
    last_index: u64,
    /// Set once the input declared messages lost: the books may be wrong from then on.
    maybe_bad_book: bool,
    /// Whether the sink was told the metadata's size (before the first record).
    metadata_reserved: bool,
    schema: SchemaWriter,
    /// `--symbols`/`--between`: the records of other messages are dropped.
    filter: OutputFilter,
}

enum SchemaWriter {
    Mbo(MboWriter),
    Mbp1(MbpWriter<Mbp1Msg>),
    Mbp10(MbpWriter<Mbp10Msg>),
    Trades(TradeWriter),
}

impl DbnOut {
    /// A writer for `opts`; the output is created by [`DbnOut::finish`].
    ///
    /// # Errors
    ///
    /// If the temporary beside the output cannot be created.
    pub fn create(opts: DbnOutOptions) -> Result<Self, DbnOutError> {
        let spool = Spool::create(&opts.path)?;
        Ok(DbnOut::with_sink(opts, spool))
    }

    /// Writes the file: metadata, then the records, under the name `input` says
    /// ([`InputEnd`]). Returns the records written.
    ///
    /// # Errors
    ///
    /// If the output cannot be written.
    pub fn finish(self, input: InputEnd) -> Result<u64, DbnOutError> {
        let metadata = session_metadata(
            self.opts.dataset,
            self.opts.schema.dbn(),
            self.opts.date,
            self.last_ts_event,
            &self.symbols,
            &self.filter,
        );
        self.spool.finish(&metadata, input)
    }
}

impl<S: RecordSink> DbnOut<S> {
    /// A writer for `opts` whose records go to `spool` as they are made (`opts.path` is
    /// then only named in errors).
    pub fn with_sink(opts: DbnOutOptions, spool: S) -> Self {
        let schema = match opts.schema {
            DbnSchema::Mbo => SchemaWriter::Mbo(MboWriter),
            DbnSchema::Mbp1 => SchemaWriter::Mbp1(MbpWriter::new()),
            DbnSchema::Mbp10 => SchemaWriter::Mbp10(MbpWriter::new()),
            DbnSchema::Tbbo => SchemaWriter::Trades(TradeWriter { with_top: true }),
            DbnSchema::Trades => SchemaWriter::Trades(TradeWriter { with_top: false }),
        };
        DbnOut {
            midnight_ns: opts.date.midnight_utc_ns(),
            opts,
            spool,
            symbols: BTreeMap::new(),
            before: Before::default(),
            last_ts_event: 0,
            last_index: 0,
            maybe_bad_book: false,
            metadata_reserved: false,
            schema,
            filter: OutputFilter::default(),
        }
    }

    /// Writes only the records of messages whose stock and time `filter` keeps; the
    /// schema writers still see every message, so an MBP record after a gap in the output
    /// says the levels as they are, not as they were at the last record written.
    pub fn with_filter(mut self, filter: OutputFilter) -> Self {
        self.filter = filter;
        self
    }

    /// Marks every later record `F_MAYBE_BAD_BOOK`: the input declared messages lost (a
    /// MoldUDP64 gap in a capture), so the books may be wrong from here to the end.
    pub fn mark_maybe_bad_book(&mut self) {
        self.maybe_bad_book = true;
    }

    /// Notes what `message` acts on, from `books` as they are before it is applied.
    #[inline]
    pub fn before(&mut self, books: &Books, message: &Message<'_>) {
        let mut before = Before::of(books, message);
        // Only TBBO writes the top of book before a trade; the others skip the look-up.
        if let (Some(t), DbnSchema::Tbbo) = (before.trade, self.opts.schema) {
            before.top = books.top_of_book(t.locate);
        }
        self.before = before;
    }

    /// Writes the records of message number `index`, now applied to `books`; `changed` is
    /// the locate whose book it changed, `feed` what the input said of it besides.
    ///
    /// # Errors
    ///
    /// If the records cannot be written, or the sequence (`feed`'s, else `index`) does not
    /// fit DBN's.
    #[inline]
    pub fn after(
        &mut self,
        index: u64,
        message: &Message<'_>,
        changed: Option<Locate>,
        books: &Books,
        feed: FeedStamp,
    ) -> Result<(), DbnOutError> {
        if let Message::StockDirectory(m) = message {
            // As the books keep it: printable ASCII (DBN's symbols are), `?` for the rest.
            let symbol = books.symbol(m.locate());
            let ticker = String::from_utf8_lossy(symbol).into_owned();
            self.spool.symbol(m.locate(), symbol);
            self.symbols.insert(m.locate().0, ticker);
            return Ok(());
        }
        if !self.metadata_reserved && MAKES_RECORDS.contains(&message.tag()) {
            self.reserve_metadata()?;
        }
        let sequence = u32::try_from(feed.seq.unwrap_or(index))
            .map_err(|_| DbnOutError::SequenceOverflow { index })?;
        let Nanos(ns) = message.timestamp();
        let ts_event = self.midnight_ns + ns;
        let stamp = Stamp {
            ts_event,
            ts_recv: feed.capture_ns.unwrap_or(ts_event),
            sequence,
            publisher_id: self.opts.dataset.publisher_id(),
            flags: if self.maybe_bad_book {
                dbn::flags::MAYBE_BAD_BOOK
            } else {
                0
            },
        };
        self.last_ts_event = stamp.ts_event;
        self.last_index = index;
        if !self.filter.keeps_all() {
            let keep = self.filter.keeps(books.symbol(message.locate()), Nanos(ns));
            self.spool.set_muted(!keep);
        }
        let before = std::mem::take(&mut self.before);
        match &mut self.schema {
            SchemaWriter::Mbo(w) => w.write(&mut self.spool, stamp, message, &before),
            SchemaWriter::Mbp1(w) => {
                w.write(&mut self.spool, stamp, message, &before, changed, books)
            }
            SchemaWriter::Mbp10(w) => {
                w.write(&mut self.spool, stamp, message, &before, changed, books)
            }
            SchemaWriter::Trades(w) => w.write(&mut self.spool, stamp, &before),
        }
    }

    /// Tells the sink the metadata as it stands: the stock directory is sent before the
    /// day's orders, so by the first order or trade the mappings are nearly always complete,
    /// and a DBN file can leave exactly the metadata's room.
    #[cold]
    fn reserve_metadata(&mut self) -> Result<(), DbnOutError> {
        self.metadata_reserved = true;
        let metadata = session_metadata(
            self.opts.dataset,
            self.opts.schema.dbn(),
            self.opts.date,
            0,
            &self.symbols,
            &self.filter,
        );
        self.spool.reserve_metadata(&metadata)
    }

    /// The last message the schema writers saw (the stock directory aside): its index and
    /// `ts_event`, where the metadata's time range ends; `(0, 0)` before any.
    pub fn last_event(&self) -> (u64, u64) {
        (self.last_index, self.last_ts_event)
    }

    /// The sink, to swap a filled batch of records for an empty one.
    pub fn sink_mut(&mut self) -> &mut S {
        &mut self.spool
    }

    /// Records written so far.
    pub fn records(&self) -> u64 {
        self.spool.count()
    }

    /// The sink, with every record of the replay pushed.
    pub fn into_sink(self) -> S {
        self.spool
    }
}

/// The metadata of a file of one session's records, as far as `filter` kept them:
/// `dataset`, `schema`, and what the file holds, not the whole day: each ticker `filter`
/// keeps mapped to its locate (the records' `instrument_id`) for the session date, from
/// the start of `filter`'s window (else the session's midnight) to just after
/// `last_ts_event` or the window's end, whichever comes first.
pub(crate) fn session_metadata(
    dataset: ItchDataset,
    schema: dbn::Schema,
    session: SessionDate,
    last_ts_event: u64,
    symbols: &BTreeMap<u16, String>,
    filter: &OutputFilter,
) -> Metadata {
    let date = session.date();
    let next_day = date.next_day().unwrap_or(date);
    let midnight_ns = session.midnight_utc_ns();
    let after_last = last_ts_event.max(midnight_ns) + 1;
    let (start, end) = match filter.between() {
        Some(w) => {
            let start = midnight_ns + w.start.0;
            (start, after_last.min(midnight_ns + w.end.0).max(start))
        }
        None => (midnight_ns, after_last),
    };
    let kept: BTreeMap<&u16, &String> = symbols
        .iter()
        .filter(|(_, ticker)| filter.keeps_symbol(ticker.as_bytes()))
        .collect();
    let mappings = kept
        .iter()
        .map(|(&locate, &ticker)| SymbolMapping {
            raw_symbol: ticker.clone(),
            intervals: vec![MappingInterval {
                start_date: date,
                end_date: next_day,
                symbol: locate.to_string(),
            }],
        })
        .collect();
    Metadata::builder()
        .dataset(dataset.name())
        .schema(Some(schema))
        .start(start)
        .end(NonZeroU64::new(end))
        .stype_in(Some(SType::RawSymbol))
        .stype_out(SType::InstrumentId)
        .symbols(kept.values().map(|&t| t.clone()).collect())
        .mappings(mappings)
        .build()
}
