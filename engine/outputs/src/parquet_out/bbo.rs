//! The top-of-book stream as Parquet: the rows of `--bbo-out`, typed. Columns (all
//! non-null): `msg_index` u64, `timestamp_ns` u64 (ITCH, since midnight), `locate` u16,
//! `stock` utf8, `bid_px` u32 (1/10,000 dollars, 0 when empty), `bid_qty` u64, `bid_orders`
//! u32, `ask_px` u32, `ask_qty` u64, `ask_orders` u32.
//!
//! Rows are gathered in Arrow builders and handed to the writer every [`BATCH_ROWS`]; the
//! writer encodes a row group each [`super::ROW_GROUP_ROWS`]. This runs on the thread that
//! makes the rows.

use std::path::Path;
use std::sync::Arc;

use arrow_array::builder::{StringBuilder, UInt16Builder, UInt32Builder, UInt64Builder};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema};

use super::writer::{ColumnChoices, ParquetFile};
use super::ParquetOutError;
use ticklane_book::BboRow;

/// Rows per Arrow batch handed to the writer.
pub const BATCH_ROWS: usize = 1 << 16;

/// The `--parquet-schema bbo` writer.
pub struct BboParquet {
    file: ParquetFile,
    columns: BboColumns,
}

/// The top-of-book rows as Arrow columns, gathered row by row; [`BboColumns::finish`]
/// makes them a record batch (of [`bbo_schema`]) and starts again. The Parquet writer and
/// the Python package's batches are both made here.
pub struct BboColumns {
    schema: Arc<Schema>,
    msg_index: UInt64Builder,
    timestamp_ns: UInt64Builder,
    locate: UInt16Builder,
    stock: StringBuilder,
    bid_px: UInt32Builder,
    bid_qty: UInt64Builder,
    bid_orders: UInt32Builder,
    ask_px: UInt32Builder,
    ask_qty: UInt64Builder,
    ask_orders: UInt32Builder,
    len: usize,
}

/// The columns of the top-of-book rows: the CSV header's names, typed (see the module).
pub fn bbo_schema() -> Arc<Schema> {
    let u = |name: &str, t: DataType| Field::new(name, t, false);
    Arc::new(Schema::new(vec![
        u("msg_index", DataType::UInt64),
        u("timestamp_ns", DataType::UInt64),
        u("locate", DataType::UInt16),
        u("stock", DataType::Utf8),
        u("bid_px", DataType::UInt32),
        u("bid_qty", DataType::UInt64),
        u("bid_orders", DataType::UInt32),
        u("ask_px", DataType::UInt32),
        u("ask_qty", DataType::UInt64),
        u("ask_orders", DataType::UInt32),
    ]))
}

impl BboColumns {
    /// Empty columns with room for `rows` rows.
    pub fn with_capacity(rows: usize) -> Self {
        let n = rows;
        BboColumns {
            schema: bbo_schema(),
            msg_index: UInt64Builder::with_capacity(n),
            timestamp_ns: UInt64Builder::with_capacity(n),
            locate: UInt16Builder::with_capacity(n),
            stock: StringBuilder::with_capacity(n, n * 4),
            bid_px: UInt32Builder::with_capacity(n),
            bid_qty: UInt64Builder::with_capacity(n),
            bid_orders: UInt32Builder::with_capacity(n),
            ask_px: UInt32Builder::with_capacity(n),
            ask_qty: UInt64Builder::with_capacity(n),
            ask_orders: UInt32Builder::with_capacity(n),
            len: 0,
        }
    }

    /// Rows gathered since the last batch.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no row is gathered.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Appends one row.
    #[inline]
    pub fn push(&mut self, row: &BboRow) {
        self.msg_index.append_value(row.msg_index);
        self.timestamp_ns.append_value(row.timestamp_ns);
        self.locate.append_value(row.locate);
        // ITCH symbols are printable ASCII; anything else is replaced, never a panic.
        match std::str::from_utf8(row.symbol_trimmed()) {
            Ok(s) => self.stock.append_value(s),
            Err(_) => self
                .stock
                .append_value(String::from_utf8_lossy(row.symbol_trimmed())),
        }
        self.bid_px.append_value(row.bid_px);
        self.bid_qty.append_value(row.bid_qty);
        self.bid_orders.append_value(row.bid_orders);
        self.ask_px.append_value(row.ask_px);
        self.ask_qty.append_value(row.ask_qty);
        self.ask_orders.append_value(row.ask_orders);
        self.len += 1;
    }

    /// The rows gathered, as one batch; the columns start empty again.
    pub fn finish(&mut self) -> RecordBatch {
        let columns: Vec<ArrayRef> = vec![
            Arc::new(self.msg_index.finish()),
            Arc::new(self.timestamp_ns.finish()),
            Arc::new(self.locate.finish()),
            Arc::new(self.stock.finish()),
            Arc::new(self.bid_px.finish()),
            Arc::new(self.bid_qty.finish()),
            Arc::new(self.bid_orders.finish()),
            Arc::new(self.ask_px.finish()),
            Arc::new(self.ask_qty.finish()),
            Arc::new(self.ask_orders.finish()),
        ];
        self.len = 0;
        RecordBatch::try_new(self.schema.clone(), columns)
            .expect("invariant: every column has one value per row, of the schema's type")
    }
}

impl BboParquet {
    /// Creates `path`.
    ///
    /// # Errors
    ///
    /// If the file cannot be created.
    pub fn create(path: &Path) -> Result<Self, ParquetOutError> {
        // Sorted by timestamp, then message index: input order.
        let file = ParquetFile::create(
            path,
            bbo_schema(),
            &[1, 0],
            &ColumnChoices::dictionary(&["locate", "stock"]),
        )?;
        Ok(BboParquet {
            file,
            columns: BboColumns::with_capacity(BATCH_ROWS),
        })
    }

    /// Appends one row.
    ///
    /// # Errors
    ///
    /// If a full batch cannot be written.
    #[inline]
    pub fn push(&mut self, row: &BboRow) -> Result<(), ParquetOutError> {
        self.columns.push(row);
        if self.columns.len() == BATCH_ROWS {
            self.write_batch()?;
        }
        Ok(())
    }

    fn write_batch(&mut self) -> Result<(), ParquetOutError> {
        if self.columns.is_empty() {
            return Ok(());
        }
        let batch = self.columns.finish();
        self.file.write(&batch)
    }

    /// Writes the rest and the footer, with `metadata` in its key-value metadata.
    ///
    /// # Errors
    ///
    /// If the file cannot be written.
    pub fn close(mut self, metadata: Vec<(String, String)>) -> Result<(), ParquetOutError> {
        self.write_batch()?;
        self.file.close(metadata)
    }
}
