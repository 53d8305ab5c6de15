//! Sampled depth as Parquet (`--sample-out PATH.parquet`): the rows of the CSV sample
//! (`sample::csv_rows`), typed, one column per CSV field and none null: `timestamp_ns`
//! u64 (the boundary, ITCH ns since midnight), `locate` u16, `stock` utf8, then for each
//! side (`bid`, then `ask`) and level `i` = 1 (best) ..= N: `{side}_px_i` u32 (1/10,000
//! dollars), `{side}_qty_i` u64, `{side}_orders_i` u32; an empty level is 0, 0, 0, as in
//! the CSV.
//!
//! Rows come at boundaries (a cold path): they are built on the book thread, in batches.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::builder::{StringBuilder, UInt16Builder, UInt32Builder, UInt64Builder};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use ticklane_itch::Nanos;

use super::writer::{ColumnChoices, ParquetFile};
use super::ParquetOutError;
use crate::sample::{SampleError, SampleOptions, SampleRows, StockDepth};
use ticklane_book::Side;

/// Rows per Arrow batch handed to the writer.
const BATCH_ROWS: usize = 1 << 14;

/// One side's columns at one level: price, shares, orders.
struct LevelColumns {
    px: UInt32Builder,
    qty: UInt64Builder,
    orders: UInt32Builder,
}

/// The `--sample-out PATH.parquet` writer.
pub struct SampledParquet {
    file: ParquetFile,
    schema: Arc<Schema>,
    timestamp_ns: UInt64Builder,
    locate: UInt16Builder,
    stock: StringBuilder,
    /// Bid levels 1..=N, then ask levels 1..=N.
    levels: Vec<LevelColumns>,
    depth: usize,
    len: usize,
}

fn schema(depth: usize) -> Arc<Schema> {
    let mut fields = vec![
        Field::new("timestamp_ns", DataType::UInt64, false),
        Field::new("locate", DataType::UInt16, false),
        Field::new("stock", DataType::Utf8, false),
    ];
    for side in ["bid", "ask"] {
        for level in 1..=depth {
            fields.push(Field::new(
                format!("{side}_px_{level}"),
                DataType::UInt32,
                false,
            ));
            fields.push(Field::new(
                format!("{side}_qty_{level}"),
                DataType::UInt64,
                false,
            ));
            fields.push(Field::new(
                format!("{side}_orders_{level}"),
                DataType::UInt32,
                false,
            ));
        }
    }
    Arc::new(Schema::new(fields))
}

fn sample_error(path: &Path) -> impl Fn(ParquetOutError) -> SampleError + '_ {
    move |e| SampleError::Parquet {
        path: path.to_path_buf(),
        message: e.to_string(),
    }
}

impl SampledParquet {
    /// Creates `opts.path` for rows of `opts.depth` levels a side.
    ///
    /// # Errors
    ///
    /// If the file cannot be created.
    pub fn create(opts: &SampleOptions) -> Result<Self, SampleError> {
        let schema = schema(opts.depth);
        // Sorted by the boundary, then the locate: the order the sampler writes them.
        let file = ParquetFile::create(
            &opts.path,
            schema.clone(),
            &[0, 1],
            &ColumnChoices::dictionary(&["locate", "stock"]),
        )
        .map_err(sample_error(&opts.path))?;
        let n = BATCH_ROWS;
        Ok(SampledParquet {
            file,
            schema,
            timestamp_ns: UInt64Builder::with_capacity(n),
            locate: UInt16Builder::with_capacity(n),
            stock: StringBuilder::with_capacity(n, n * 4),
            levels: (0..2 * opts.depth)
                .map(|_| LevelColumns {
                    px: UInt32Builder::with_capacity(n),
                    qty: UInt64Builder::with_capacity(n),
                    orders: UInt32Builder::with_capacity(n),
                })
                .collect(),
            depth: opts.depth,
            len: 0,
        })
    }

    fn path(&self) -> PathBuf {
        self.file.path().to_path_buf()
    }

    fn write_batch(&mut self) -> Result<(), SampleError> {
        if self.len == 0 {
            return Ok(());
        }
        let mut columns: Vec<ArrayRef> = vec![
            Arc::new(self.timestamp_ns.finish()),
            Arc::new(self.locate.finish()),
            Arc::new(self.stock.finish()),
        ];
        for level in &mut self.levels {
            columns.push(Arc::new(level.px.finish()));
            columns.push(Arc::new(level.qty.finish()));
            columns.push(Arc::new(level.orders.finish()));
        }
        self.len = 0;
        let batch = RecordBatch::try_new(self.schema.clone(), columns).map_err(|e| {
            SampleError::Parquet {
                path: self.path(),
                message: e.to_string(),
            }
        })?;
        let path = self.path();
        self.file.write(&batch).map_err(sample_error(&path))
    }
}

impl SampleRows for SampledParquet {
    fn row(
        &mut self,
        boundary: Nanos,
        _applied: u64,
        depth: &StockDepth<'_>,
    ) -> Result<(), SampleError> {
        self.timestamp_ns.append_value(boundary.0);
        self.locate.append_value(depth.locate.0);
        let symbol = depth.symbol;
        match std::str::from_utf8(symbol) {
            Ok(s) => self.stock.append_value(s),
            Err(_) => self.stock.append_value(String::from_utf8_lossy(symbol)),
        }
        let levels = self.depth;
        for (side, columns) in [Side::Bid, Side::Ask]
            .into_iter()
            .zip(self.levels.chunks_mut(levels.max(1)))
        {
            let mut book = depth.side(side).iter().take(levels);
            for level in columns.iter_mut() {
                let (px, qty, orders) = book
                    .next()
                    .map_or((0, 0, 0), |l| (l.price.0, l.qty, l.orders));
                level.px.append_value(px);
                level.qty.append_value(qty);
                level.orders.append_value(orders);
            }
        }
        self.len += 1;
        if self.len == BATCH_ROWS {
            self.write_batch()?;
        }
        Ok(())
    }

    fn finish(mut self: Box<Self>, metadata: Vec<(String, String)>) -> Result<(), SampleError> {
        self.write_batch()?;
        let path = self.path();
        self.file.close(metadata).map_err(sample_error(&path))
    }
}
