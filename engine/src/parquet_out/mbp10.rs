//! MBP-10 as Parquet: one row per DBN MBP-10 record, exactly the records `--dbn-out
//! --schema mbp-10` writes (`dbn_out::mbp`), read back from the replay's spool.
//!
//! Columns: `ts_event` u64 (UTC ns, as DBN), `sequence` u32 (the ITCH message index),
//! `instrument_id` u32 (the locate), `symbol` utf8 (its ticker from the last `R`), `action`
//! and `side` utf8 (one letter, Databento's), `depth` u8, `price` i64 (1e-9 dollars), `size`
//! u32, `flags` u8, then per level `NN` in `00`..`09`: `bid_px_NN`, `ask_px_NN` i64 (1e-9
//! dollars; null for an empty level, where DBN writes `UNDEF_PRICE`), `bid_sz_NN`,
//! `ask_sz_NN`, `bid_ct_NN`, `ask_ct_NN` u32, as Databento's `to_df` names them.

use std::fs;
use std::io::BufReader;
use std::path::Path;
use std::sync::Arc;

use arrow_array::builder::{
    Int64Builder, StringBuilder, UInt32Builder, UInt64Builder, UInt8Builder,
};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use dbn::decode::{DbnRecordDecoder, DecodeRecord};
use dbn::{Mbp10Msg, UNDEF_PRICE};

use super::bbo::BATCH_ROWS;
use super::writer::ParquetFile;
use super::ParquetOutError;
use crate::dbn_out::{DbnOutError, SpooledRecords};

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

/// The columns being filled.
struct Columns {
    ts_event: UInt64Builder,
    sequence: UInt32Builder,
    instrument_id: UInt32Builder,
    symbol: StringBuilder,
    action: StringBuilder,
    side: StringBuilder,
    depth: UInt8Builder,
    price: Int64Builder,
    size: UInt32Builder,
    flags: UInt8Builder,
    /// Per level: bid_px, ask_px.
    px: Vec<[Int64Builder; 2]>,
    /// Per level: bid_sz, ask_sz, bid_ct, ask_ct.
    counts: Vec<[UInt32Builder; 4]>,
    len: usize,
}

fn price(builder: &mut Int64Builder, px: i64) {
    if px == UNDEF_PRICE {
        builder.append_null();
    } else {
        builder.append_value(px);
    }
}

fn letter(c: std::ffi::c_char) -> String {
    char::from(c as u8).to_string()
}

impl Columns {
    fn new() -> Self {
        let n = BATCH_ROWS;
        Columns {
            ts_event: UInt64Builder::with_capacity(n),
            sequence: UInt32Builder::with_capacity(n),
            instrument_id: UInt32Builder::with_capacity(n),
            symbol: StringBuilder::with_capacity(n, n * 4),
            action: StringBuilder::with_capacity(n, n),
            side: StringBuilder::with_capacity(n, n),
            depth: UInt8Builder::with_capacity(n),
            price: Int64Builder::with_capacity(n),
            size: UInt32Builder::with_capacity(n),
            flags: UInt8Builder::with_capacity(n),
            px: (0..LEVELS)
                .map(|_| std::array::from_fn(|_| Int64Builder::with_capacity(n)))
                .collect(),
            counts: (0..LEVELS)
                .map(|_| std::array::from_fn(|_| UInt32Builder::with_capacity(n)))
                .collect(),
            len: 0,
        }
    }

    fn push(&mut self, r: &Mbp10Msg, symbol: &str) {
        self.ts_event.append_value(r.hd.ts_event);
        self.sequence.append_value(r.sequence);
        self.instrument_id.append_value(r.hd.instrument_id);
        self.symbol.append_value(symbol);
        self.action.append_value(letter(r.action));
        self.side.append_value(letter(r.side));
        self.depth.append_value(r.depth);
        price(&mut self.price, r.price);
        self.size.append_value(r.size);
        self.flags.append_value(r.flags.raw());
        for ((px, counts), level) in self.px.iter_mut().zip(&mut self.counts).zip(&r.levels) {
            price(&mut px[0], level.bid_px);
            price(&mut px[1], level.ask_px);
            counts[0].append_value(level.bid_sz);
            counts[1].append_value(level.ask_sz);
            counts[2].append_value(level.bid_ct);
            counts[3].append_value(level.ask_ct);
        }
        self.len += 1;
    }

    fn finish(&mut self) -> Vec<ArrayRef> {
        self.len = 0;
        let mut columns: Vec<ArrayRef> = vec![
            Arc::new(self.ts_event.finish()),
            Arc::new(self.sequence.finish()),
            Arc::new(self.instrument_id.finish()),
            Arc::new(self.symbol.finish()),
            Arc::new(self.action.finish()),
            Arc::new(self.side.finish()),
            Arc::new(self.depth.finish()),
            Arc::new(self.price.finish()),
            Arc::new(self.size.finish()),
            Arc::new(self.flags.finish()),
        ];
        for (px, counts) in self.px.iter_mut().zip(&mut self.counts) {
            for b in px.iter_mut() {
                columns.push(Arc::new(b.finish()));
            }
            for b in counts.iter_mut() {
                columns.push(Arc::new(b.finish()));
            }
        }
        columns
    }
}

/// Writes the spooled MBP-10 `records` to `path` as Parquet, with `metadata` in the footer,
/// and removes the spool. Returns the rows written.
///
/// # Errors
///
/// If the spool cannot be read or the output written.
pub fn write_mbp10(
    records: SpooledRecords,
    path: &Path,
    metadata: Vec<(String, String)>,
) -> Result<u64, ParquetOutError> {
    let SpooledRecords {
        symbols,
        temp,
        file,
    } = records;
    let schema = schema();
    // Sorted by ts_event, then sequence: input order.
    let mut out = ParquetFile::create(path, schema.clone(), &[0, 1])?;
    let mut columns = Columns::new();
    let mut decoder = DbnRecordDecoder::new(BufReader::with_capacity(1 << 16, file));
    let no_symbol = String::new();
    let mut rows = 0u64;
    let dbn_error = |source| {
        ParquetOutError::Dbn(DbnOutError::Dbn {
            path: temp.clone(),
            source,
        })
    };
    while let Some(record) = decoder.decode_record::<Mbp10Msg>().map_err(dbn_error)? {
        let symbol = u16::try_from(record.hd.instrument_id)
            .ok()
            .and_then(|l| symbols.get(&l))
            .unwrap_or(&no_symbol);
        columns.push(record, symbol);
        rows += 1;
        if columns.len == BATCH_ROWS {
            write(&mut out, &schema, &mut columns)?;
        }
    }
    if columns.len > 0 {
        write(&mut out, &schema, &mut columns)?;
    }
    out.close(metadata)?;
    fs::remove_file(&temp).map_err(|source| ParquetOutError::Io { path: temp, source })?;
    Ok(rows)
}

fn write(
    out: &mut ParquetFile,
    schema: &Arc<Schema>,
    columns: &mut Columns,
) -> Result<(), ParquetOutError> {
    let batch = RecordBatch::try_new(schema.clone(), columns.finish()).map_err(|e| {
        ParquetOutError::Parquet {
            path: out.path().to_path_buf(),
            message: e.to_string(),
        }
    })?;
    out.write(&batch)
}
