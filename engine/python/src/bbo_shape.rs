//! The two shapes of the bbo table the command's CSV has no room for: prices in dollars
//! (`price="float"`: `bid_px` and `ask_px` as float64, null for an empty side, where the
//! integer columns hold 0) and `ts_event`, the row's UTC time (nanoseconds, Arrow's
//! `timestamp[ns, tz=UTC]`), appended after the CSV's columns when the session date is
//! known: the date's New York midnight plus `timestamp_ns`.
#![forbid(unsafe_code)]

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::UInt32Type;
use arrow_array::types::UInt64Type;
use arrow_array::{Array, ArrayRef, Float64Array, RecordBatch, TimestampNanosecondArray};
use arrow_schema::{ArrowError, DataType, Field, Schema, TimeUnit};

/// ITCH prices are in 1/10,000 dollars.
const PRICE_SCALE: f64 = 10_000.0;

/// How the bbo batches are shaped beyond the CSV's columns.
#[derive(Clone, Copy, Debug, Default)]
pub struct BboShape {
    /// `bid_px` and `ask_px` in dollars.
    pub float_prices: bool,
    /// The session's New York midnight in ns since the Unix epoch, where known.
    pub midnight_utc_ns: Option<u64>,
}

impl BboShape {
    /// Whether the batches are the CSV's columns as they are.
    pub fn is_plain(self) -> bool {
        !self.float_prices && self.midnight_utc_ns.is_none()
    }

    /// `batch` (the CSV's columns) in this shape.
    pub fn apply(self, batch: RecordBatch) -> Result<RecordBatch, ArrowError> {
        if self.is_plain() {
            return Ok(batch);
        }
        let schema = batch.schema();
        let mut fields: Vec<Field> = schema.fields().iter().map(|f| f.as_ref().clone()).collect();
        let mut columns: Vec<ArrayRef> = batch.columns().to_vec();
        if self.float_prices {
            for name in ["bid_px", "ask_px"] {
                let at = schema.index_of(name)?;
                columns[at] = Arc::new(dollars(columns[at].as_primitive::<UInt32Type>()));
                fields[at] = Field::new(name, DataType::Float64, true);
            }
        }
        if let Some(midnight) = self.midnight_utc_ns {
            let stamps = columns[schema.index_of("timestamp_ns")?].as_primitive::<UInt64Type>();
            let utc: TimestampNanosecondArray = stamps
                .values()
                .iter()
                .map(|&ns| i64::try_from(midnight + ns).ok())
                .collect::<TimestampNanosecondArray>()
                .with_timezone("UTC");
            fields.push(Field::new(
                "ts_event",
                DataType::Timestamp(TimeUnit::Nanosecond, Some("UTC".into())),
                false,
            ));
            columns.push(Arc::new(utc));
        }
        RecordBatch::try_new(Arc::new(Schema::new(fields)), columns)
    }
}

/// Integer prices as dollars; 0 (an empty side) as null.
fn dollars(prices: &arrow_array::PrimitiveArray<UInt32Type>) -> Float64Array {
    debug_assert_eq!(prices.null_count(), 0);
    prices
        .values()
        .iter()
        .map(|&px| (px != 0).then(|| f64::from(px) / PRICE_SCALE))
        .collect()
}
