//! MBP-10 as Parquet: one row per DBN MBP-10 record, exactly the records `--dbn-out
//! --schema mbp-10` writes (`dbn_out::mbp`), taken as they are made.
//!
//! The book thread's half ([`Mbp10Parquet`]) is the `dbn_out` writer's [`RecordSink`]: it
//! copies each record's fields and its stock's symbol into a plain row and hands the rows
//! to a writer thread in batches (`writer_thread`); that thread fills the Arrow columns and
//! writes row groups. No temporary file, no second pass.
//!
//! Columns: `ts_event` u64 (UTC ns, as DBN), `sequence` u32 (as DBN's: the MoldUDP64 sequence
//! number in a capture that carries them, else the ITCH message index),
//! `instrument_id` u32 (the locate), `symbol` utf8 (its ticker from the latest `R` before
//! the record), `action` and `side` utf8 (one letter, Databento's), `depth` u8, `price` i64
//! (1e-9 dollars), `size` u32, `flags` u8, then per level `NN` in `00`..`09`: `bid_px_NN`,
//! `ask_px_NN` i64 (1e-9 dollars; null for an empty level, where DBN writes
//! `UNDEF_PRICE`), `bid_sz_NN`, `ask_sz_NN`, `bid_ct_NN`, `ask_ct_NN` u32, as Databento's
//! `to_df` names them.

use std::any::Any;
use std::path::Path;
use std::sync::Arc;

use arrow_array::builder::StringBuilder;
use arrow_array::types::{ArrowPrimitiveType, UInt32Type, UInt64Type, UInt8Type};
use arrow_array::{ArrayRef, Int64Array, PrimitiveArray};
use arrow_buffer::{BooleanBuffer, NullBuffer};
use arrow_schema::{DataType, Field, Schema};
use dbn::encode::DbnEncodable;
use dbn::{Mbp10Msg, UNDEF_PRICE};
use ticklane_itch::Locate;

use super::bbo::BATCH_ROWS;
use super::column_encoders::ColumnSource;
use super::writer::{ColumnChoices, ParquetFile};
use super::ParquetOutError;
use crate::dbn_out::{DbnOutError, RecordSink};
use crate::writer_thread::{RowWriter, WriterThread};

/// Ring slots (368 bytes each: about 6 MiB).
const RING_SLOTS: usize = 1 << 14;

const LEVELS: usize = 10;

fn schema() -> Arc<Schema> {
    let mut fields = vec![
        Field::new("ts_event", DataType::UInt64, false),
        Field::new("sequence", DataType::UInt32, false),
        Field::new("instrument_id", DataType::UInt32, false),
        Field::new("symbol", DataType::Utf8, false),
        Field::new("action", DataType::Utf8, false),
        Field::new("side", DataType::Utf8, false),
        Field::new("depth", DataType::UInt8, false),
        Field::new("price", DataType::Int64, true),
        Field::new("size", DataType::UInt32, false),
        Field::new("flags", DataType::UInt8, false),
    ];
    for i in 0..LEVELS {
        fields.push(Field::new(format!("bid_px_{i:02}"), DataType::Int64, true));
        fields.push(Field::new(format!("ask_px_{i:02}"), DataType::Int64, true));
        for name in ["bid_sz", "ask_sz", "bid_ct", "ask_ct"] {
            fields.push(Field::new(
                format!("{name}_{i:02}"),
                DataType::UInt32,
                false,
            ));
        }
    }
    Arc::new(Schema::new(fields))
}

/// How the columns are written. Measured with callgrind, all threads, 60k-message day
/// (64,896 rows), pages already bounded by size: 848.1 M instructions and 3,122,345 bytes
/// with only the id and one-letter columns in dictionaries; the level prices in
/// dictionaries too, 775.0 M and 2,924,750 bytes; then delta-encoded `ts_event`/`sequence`
/// and no statistics on the 40 size and count columns, 732.3 M and 2,753,122 bytes.
///
/// - Dictionaries: the id, symbol and one-letter columns, and the level prices (a book's
///   prices repeat from row to row: the interner costs less than the zstd work it saves).
///   Sizes and counts stay plain: in dictionaries they cost more than they saved.
/// - `DELTA_BINARY_PACKED`: `ts_event` and `sequence`, which only grow.
/// - Statistics: none on `bid_sz_NN`/`ask_sz_NN`/`bid_ct_NN`/`ask_ct_NN`; the rest keep
///   page statistics (`ts_event` and `sequence` are the sort order a reader skips by).
fn column_choices() -> ColumnChoices {
    let per_level = |prefixes: &[&str]| -> Vec<String> {
        (0..LEVELS)
            .flat_map(|i| prefixes.iter().map(move |p| format!("{p}_{i:02}")))
            .collect()
    };
    let mut dictionary: Vec<String> = [
        "instrument_id",
        "symbol",
        "action",
        "side",
        "flags",
        "depth",
    ]
    .iter()
    .map(|&n| n.to_owned())
    .collect();
    dictionary.extend(per_level(&["bid_px", "ask_px"]));
    ColumnChoices {
        dictionary,
        delta: vec!["ts_event".to_owned(), "sequence".to_owned()],
        no_statistics: per_level(&["bid_sz", "ask_sz", "bid_ct", "ask_ct"]),
    }
}

/// A batch of rows as the writer thread received them; each encoder thread gathers its own
/// columns from it ([`ColumnSource`]), so the 70 columns are built on as many threads as
/// encode them. A column is a plain vector handed to Arrow without a copy
/// ([`PrimitiveArray::new`] takes it); a price column's null bitmap is built 64 rows at a
/// time, and only when the column has an empty level in it.
struct Mbp10Rows(Vec<Mbp10Row>);

/// The columns before the levels, in the schema's order.
const HEAD_COLUMNS: usize = 10;
/// Columns per level: bid_px, ask_px, bid_sz, ask_sz, bid_ct, ask_ct.
const LEVEL_COLUMNS: usize = 6;

impl Mbp10Rows {
    fn gather<T: Copy>(&self, field: impl Fn(&Mbp10Row) -> T) -> Vec<T> {
        self.0.iter().map(field).collect()
    }

    fn level<T: Copy>(&self, level: usize, field: impl Fn(&Level) -> T) -> Vec<T> {
        self.0.iter().map(|r| field(&r.levels[level])).collect()
    }

    fn text<'a>(&'a self, field: impl Fn(&'a Mbp10Row) -> &'a [u8]) -> ArrayRef {
        let mut builder = StringBuilder::with_capacity(self.0.len(), self.0.len() * 4);
        for r in &self.0 {
            append_text(&mut builder, field(r));
        }
        Arc::new(builder.finish())
    }
}

impl ColumnSource for Mbp10Rows {
    fn num_rows(&self) -> usize {
        self.0.len()
    }

    fn column(&self, i: usize) -> ArrayRef {
        match i {
            0 => plain::<UInt64Type>(self.gather(|r| r.ts_event)),
            1 => plain::<UInt32Type>(self.gather(|r| r.sequence)),
            2 => plain::<UInt32Type>(self.gather(|r| r.instrument_id)),
            3 => self.text(Mbp10Row::symbol_trimmed),
            4 => self.text(|r| std::slice::from_ref(&r.action)),
            5 => self.text(|r| std::slice::from_ref(&r.side)),
            6 => plain::<UInt8Type>(self.gather(|r| r.depth)),
            7 => prices(self.gather(|r| r.price)),
            8 => plain::<UInt32Type>(self.gather(|r| r.size)),
            9 => plain::<UInt8Type>(self.gather(|r| r.flags)),
            _ => {
                let level = (i - HEAD_COLUMNS) / LEVEL_COLUMNS;
                match (i - HEAD_COLUMNS) % LEVEL_COLUMNS {
                    0 => prices(self.level(level, |l| l.bid_px)),
                    1 => prices(self.level(level, |l| l.ask_px)),
                    2 => plain::<UInt32Type>(self.level(level, |l| l.bid_sz)),
                    3 => plain::<UInt32Type>(self.level(level, |l| l.ask_sz)),
                    4 => plain::<UInt32Type>(self.level(level, |l| l.bid_ct)),
                    _ => plain::<UInt32Type>(self.level(level, |l| l.ask_ct)),
                }
            }
        }
    }
}

/// A price column as Arrow: null where DBN has [`UNDEF_PRICE`].
fn prices(values: Vec<i64>) -> ArrayRef {
    let nulls = values.contains(&UNDEF_PRICE).then(|| {
        NullBuffer::new(BooleanBuffer::collect_bool(values.len(), |i| {
            values[i] != UNDEF_PRICE
        }))
    });
    Arc::new(Int64Array::new(values.into(), nulls))
}

fn plain<T: ArrowPrimitiveType>(values: Vec<T::Native>) -> ArrayRef {
    Arc::new(PrimitiveArray::<T>::new(values.into(), None))
}

/// ITCH symbols and Databento's letters are printable ASCII; anything else is replaced,
/// never a panic.
fn append_text(builder: &mut StringBuilder, bytes: &[u8]) {
    match std::str::from_utf8(bytes) {
        Ok(s) => builder.append_value(s),
        Err(_) => builder.append_value(String::from_utf8_lossy(bytes)),
    }
}

/// One price level as the row carries it (DBN's `BidAskPair`, which is not `Copy`).
#[derive(Clone, Copy, Debug, Default)]
struct Level {
    bid_px: i64,
    ask_px: i64,
    bid_sz: u32,
    ask_sz: u32,
    bid_ct: u32,
    ask_ct: u32,
}

/// One MBP-10 record and its stock's symbol, as it crosses the ring: plain data.
#[derive(Clone, Copy, Debug)]
struct Mbp10Row {
    ts_event: u64,
    price: i64,
    sequence: u32,
    instrument_id: u32,
    size: u32,
    action: u8,
    side: u8,
    depth: u8,
    flags: u8,
    /// Space padded, as ITCH sends it (spaces before the stock's first `R`).
    symbol: [u8; 8],
    levels: [Level; LEVELS],
}

impl Mbp10Row {
    fn new(r: &Mbp10Msg, symbol: [u8; 8]) -> Self {
        let mut levels = [Level::default(); LEVELS];
        for (out, l) in levels.iter_mut().zip(&r.levels) {
            *out = Level {
                bid_px: l.bid_px,
                ask_px: l.ask_px,
                bid_sz: l.bid_sz,
                ask_sz: l.ask_sz,
                bid_ct: l.bid_ct,
                ask_ct: l.ask_ct,
            };
        }
        Mbp10Row {
            ts_event: r.hd.ts_event,
            price: r.price,
            sequence: r.sequence,
            instrument_id: r.hd.instrument_id,
            size: r.size,
            action: r.action as u8,
            side: r.side as u8,
            depth: r.depth,
            flags: r.flags.raw(),
            symbol,
            levels,
        }
    }

    fn symbol_trimmed(&self) -> &[u8] {
        self.symbol.trim_ascii_end()
    }
}

/// The writer thread's half: gathers rows, hands a batch to the encoders every
/// [`BATCH_ROWS`].
struct Mbp10Columns {
    out: ParquetFile,
    batch: Vec<Mbp10Row>,
    rows: u64,
}

impl Mbp10Columns {
    fn new(out: ParquetFile) -> Self {
        Mbp10Columns {
            out,
            batch: Vec::with_capacity(BATCH_ROWS),
            rows: 0,
        }
    }

    fn write(&mut self) -> Result<(), ParquetOutError> {
        let rows = std::mem::replace(&mut self.batch, Vec::with_capacity(BATCH_ROWS));
        self.out.write_rows(Arc::new(Mbp10Rows(rows)))
    }
}

impl RowWriter<Mbp10Row> for Mbp10Columns {
    /// The file, every row written, its footer waiting for the replay's summary; and the
    /// rows written.
    type Output = (ParquetFile, u64);
    type Error = ParquetOutError;

    #[inline]
    fn write_row(&mut self, row: &Mbp10Row) -> Result<(), ParquetOutError> {
        self.batch.push(*row);
        self.rows += 1;
        if self.batch.len() == BATCH_ROWS {
            self.write()?;
        }
        Ok(())
    }

    fn finish(mut self) -> Result<(ParquetFile, u64), ParquetOutError> {
        if !self.batch.is_empty() {
            self.write()?;
        }
        Ok((self.out, self.rows))
    }
}

/// The `--parquet-schema mbp-10` writer: the `dbn_out` MBP-10 writer's record sink.
pub struct Mbp10Parquet {
    thread: WriterThread<Mbp10Row, Mbp10Columns>,
    /// Locate → symbol (space padded), from the stock directory as it arrives.
    symbols: Vec<[u8; 8]>,
    muted: bool,
    count: u64,
}

impl Mbp10Parquet {
    /// Creates `path` and starts its writer thread.
    ///
    /// # Errors
    ///
    /// If the file cannot be created or the thread started.
    pub fn create(path: &Path) -> Result<Self, ParquetOutError> {
        // Sorted by ts_event, then sequence: input order.
        let out = ParquetFile::create(path, schema(), &[0, 1], &column_choices())?;
        let columns = Mbp10Columns::new(out);
        let thread =
            WriterThread::spawn("mbp10-parquet", RING_SLOTS, columns).map_err(|source| {
                ParquetOutError::Io {
                    path: path.to_path_buf(),
                    source,
                }
            })?;
        Ok(Mbp10Parquet {
            thread,
            symbols: Vec::new(),
            muted: false,
            count: 0,
        })
    }

    /// Waits for every row to be written, then writes the footer with `metadata` in its
    /// key-value metadata. Returns the rows written.
    ///
    /// # Errors
    ///
    /// The first error the writer met, or one from writing the footer.
    pub fn close(self, metadata: Vec<(String, String)>) -> Result<u64, ParquetOutError> {
        let (out, rows) = self.thread.finish()?;
        out.close(metadata)?;
        Ok(rows)
    }
}

impl RecordSink for Mbp10Parquet {
    #[inline]
    fn push<R: DbnEncodable + 'static>(&mut self, record: &R) -> Result<(), DbnOutError> {
        if self.muted {
            return Ok(());
        }
        // Only the MBP-10 schema writer feeds this sink (`run` builds it so), and it makes
        // nothing but MBP-10 records; the check is on types, resolved when it is compiled.
        let Some(r) = (record as &dyn Any).downcast_ref::<Mbp10Msg>() else {
            return Ok(());
        };
        let symbol = usize::try_from(r.hd.instrument_id)
            .ok()
            .and_then(|i| self.symbols.get(i))
            .copied()
            .unwrap_or([b' '; 8]);
        self.count += 1;
        self.thread.push(Mbp10Row::new(r, symbol))?;
        Ok(())
    }

    fn set_muted(&mut self, muted: bool) {
        self.muted = muted;
    }

    fn count(&self) -> u64 {
        self.count
    }

    fn symbol(&mut self, locate: Locate, ticker: &[u8]) {
        let i = usize::from(locate.0);
        if self.symbols.len() <= i {
            self.symbols.resize(i + 1, [b' '; 8]);
        }
        let mut padded = [b' '; 8];
        let n = ticker.len().min(8);
        padded[..n].copy_from_slice(&ticker[..n]);
        self.symbols[i] = padded;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::Array;
    use parquet::basic::Encoding;
    use parquet::file::reader::{FileReader, SerializedFileReader};

    #[test]
    fn a_price_column_is_null_exactly_where_dbn_has_undef_price() {
        let array = prices(vec![10, UNDEF_PRICE, 30, UNDEF_PRICE]);
        let nulls: Vec<bool> = (0..array.len()).map(|i| array.is_null(i)).collect();
        assert_eq!(nulls, [false, true, false, true]);
        let full = prices(vec![1, 2]);
        assert_eq!(full.null_count(), 0);
        assert!(full.nulls().is_none(), "no bitmap when no level is empty");
    }

    /// The writer silently ignores settings for a column it does not have, so a misspelt
    /// name would quietly undo a choice: every name must be a column.
    #[test]
    fn every_column_choice_names_a_column() {
        let schema = schema();
        let choices = column_choices();
        let names = choices
            .dictionary
            .iter()
            .chain(&choices.delta)
            .chain(&choices.no_statistics);
        for name in names {
            assert!(
                schema.field_with_name(name).is_ok(),
                "{name} is not a column"
            );
        }
        // 20 level prices plus 6 id and letter columns; 40 sizes and counts.
        assert_eq!(choices.dictionary.len(), 26);
        assert_eq!(choices.no_statistics.len(), 40);
    }

    fn row(i: u32) -> Mbp10Row {
        let mut levels = [Level::default(); LEVELS];
        for (k, l) in levels.iter_mut().enumerate() {
            let k = u32::try_from(k).expect("ten levels");
            *l = Level {
                bid_px: if k < 3 {
                    100_000_000_000 - i64::from(k)
                } else {
                    UNDEF_PRICE
                },
                ask_px: if k < 3 {
                    100_010_000_000 + i64::from(k)
                } else {
                    UNDEF_PRICE
                },
                bid_sz: 100 + i + k,
                ask_sz: 200 + i + k,
                bid_ct: 1 + k,
                ask_ct: 2 + k,
            };
        }
        Mbp10Row {
            ts_event: 1_548_856_800_000_000_000 + u64::from(i) * 1_000,
            price: 100_000_000_000,
            sequence: i,
            instrument_id: 7,
            size: 100,
            action: b'A',
            side: b'B',
            depth: 0,
            flags: 0x80,
            symbol: *b"AAPL    ",
            levels,
        }
    }

    /// The file's column chunks say what `column_choices` asked for (read back with the
    /// `parquet` crate's own reader, from the footer).
    #[test]
    fn the_file_is_encoded_as_chosen() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("t.parquet");
        let out =
            ParquetFile::create(&path, schema(), &[0, 1], &column_choices()).expect("created");
        let mut columns = Mbp10Columns::new(out);
        for i in 0..1_000 {
            columns.write_row(&row(i)).expect("row");
        }
        let (out, rows) = columns.finish().expect("finished");
        assert_eq!(rows, 1_000);
        out.close(Vec::new()).expect("closed");

        let file = std::fs::File::open(&path).expect("open");
        let reader = SerializedFileReader::new(file).expect("parquet");
        let group = reader.metadata().row_group(0);
        assert_eq!(group.num_rows(), 1_000);
        let chunk = |name: &str| {
            group
                .columns()
                .iter()
                .find(|c| c.column_path().string() == name)
                .unwrap_or_else(|| panic!("{name} in the file"))
        };
        let has = |name: &str, e: Encoding| chunk(name).encodings().any(|x| x == e);
        for name in ["ts_event", "sequence"] {
            assert!(has(name, Encoding::DELTA_BINARY_PACKED), "{name} delta");
            assert!(
                chunk(name).statistics().is_some(),
                "{name} keeps statistics"
            );
        }
        for name in ["bid_px_00", "ask_px_09", "symbol"] {
            assert!(
                chunk(name).dictionary_page_offset().is_some(),
                "{name} dictionary"
            );
        }
        for name in ["bid_sz_00", "ask_ct_09"] {
            assert!(
                chunk(name).statistics().is_none(),
                "{name} has no statistics"
            );
            assert!(
                chunk(name).dictionary_page_offset().is_none(),
                "{name} plain"
            );
        }
        assert!(has("size", Encoding::PLAIN) && chunk("size").statistics().is_some());
    }
}
