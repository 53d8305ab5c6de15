//! The two shapes of a table that the command's files have no room for: prices in dollars
//! (`price="float"`: each price column as float64, null where the integer column holds 0,
//! an empty side or no price) and `ts_event`, the row's UTC time (nanoseconds, Arrow's
//! `timestamp[ns, tz=UTC]`), appended after the table's columns when the session date is
//! known: the date's New York midnight plus `timestamp_ns` (the depth, the books as they
//! ended, has no time).
#![forbid(unsafe_code)]

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{UInt32Type, UInt64Type};
use arrow_array::{ArrayRef, Float64Array, RecordBatch, TimestampNanosecondArray};
use arrow_schema::{ArrowError, DataType, Field, Schema, TimeUnit};

/// ITCH prices are in 1/10,000 dollars.
const PRICE_SCALE: f64 = 10_000.0;

/// How the tables are shaped beyond their integer columns.
#[derive(Clone, Copy, Debug, Default)]
pub struct TableShape {
    /// Prices in dollars.
    pub float_prices: bool,
    /// The session's New York midnight in ns since the Unix epoch, where known.
    pub midnight_utc_ns: Option<u64>,
}

impl TableShape {
    /// `batch`, whose price columns are `prices`, in this shape.
    pub fn apply(self, batch: RecordBatch, prices: &[&str]) -> Result<RecordBatch, ArrowError> {
        let schema = batch.schema();
        let stamps = schema.index_of("timestamp_ns").ok();
        let dated = self.midnight_utc_ns.filter(|_| stamps.is_some());
        if !self.float_prices && dated.is_none() {
            return Ok(batch);
        }
        let mut fields: Vec<Field> = schema.fields().iter().map(|f| f.as_ref().clone()).collect();
        let mut columns: Vec<ArrayRef> = batch.columns().to_vec();
        if self.float_prices {
            for &name in prices {
                let at = schema.index_of(name)?;
                columns[at] = Arc::new(dollars(columns[at].as_primitive::<UInt32Type>()));
                fields[at] = Field::new(name, DataType::Float64, true);
            }
        }
        if let (Some(midnight), Some(at)) = (dated, stamps) {
            let utc: TimestampNanosecondArray = columns[at]
                .as_primitive::<UInt64Type>()
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

/// Integer prices as dollars; 0 (an empty side, no price) and null as null.
fn dollars(prices: &arrow_array::PrimitiveArray<UInt32Type>) -> Float64Array {
    prices
        .iter()
        .map(|px| {
            px.filter(|&px| px != 0)
                .map(|px| f64::from(px) / PRICE_SCALE)
        })
        .collect()
}
