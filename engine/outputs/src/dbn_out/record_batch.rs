//! The records a book thread of `replay --threads` makes, kept in memory in the order made,
//! message by message, for the merge to place in the output in message order.
//!
//! A book thread runs the one-thread schema writers ([`super::DbnOut`]) over its own
//! stocks, with this as their sink, and closes each message with
//! [`RecordBatch::end_message`]. What the merge needs of one message
//! ([`RecordBatch::message`]) is what the sink was asked while it was applied: its records,
//! whether the stock directory named a ticker, and whether the metadata's room was asked for
//! (the first message that can make records). The records are kept as their encoded bytes
//! for a DBN file (`RecordBatch<u8>`), or as the records themselves for a writer that takes
//! them typed (`RecordBatch<Mbp10Msg>`, Parquet's MBP-10 view).

use std::any::Any;

use dbn::encode::DbnEncodable;
use dbn::{Mbp10Msg, Metadata};
use ticklane_itch::Locate;

use super::record_sink::RecordSink;
use super::DbnOutError;

/// How a [`RecordBatch`] keeps a record: as bytes, or as the record itself.
pub trait KeptRecord: Sized {
    /// Appends `record` to `kept`; the units appended (0 if it is not of this kind).
    fn keep<R: DbnEncodable + 'static>(kept: &mut Vec<Self>, record: &R) -> usize;
}

impl KeptRecord for u8 {
    #[inline]
    fn keep<R: DbnEncodable + 'static>(kept: &mut Vec<u8>, record: &R) -> usize {
        let bytes = record.as_ref();
        kept.extend_from_slice(bytes);
        bytes.len()
    }
}

impl KeptRecord for Mbp10Msg {
    #[inline]
    fn keep<R: DbnEncodable + 'static>(kept: &mut Vec<Mbp10Msg>, record: &R) -> usize {
        match (record as &dyn Any).downcast_ref::<Mbp10Msg>() {
            Some(r) => {
                kept.push(*r);
                1
            }
            None => 0,
        }
    }
}

/// What one message asked of the sink: bits 0..24 the units kept, bit 24 a ticker named,
/// bit 25 the metadata's room asked for.
#[derive(Clone, Copy, Debug, Default)]
struct Asked(u32);

const UNITS: u32 = (1 << 24) - 1;
const SYMBOL: u32 = 1 << 24;
const RESERVE: u32 = 1 << 25;

/// One message's part of a batch, as the merge places it.
#[derive(Debug)]
pub struct MessageRecords<'a, T> {
    /// The ticker the stock directory named, if it was one.
    pub symbol: Option<(Locate, &'a str)>,
    /// Whether the metadata's room was asked for here (before the records).
    pub reserve: bool,
    /// Its records, as kept.
    pub records: &'a [T],
}

impl<R: DbnEncodable + 'static> MessageRecords<'_, R> {
    /// Hands the message's ticker and records to `sink`, a writer that takes typed records
    /// (the metadata's room is a DBN file's concern: [`super::MergedDbnOut::place`]).
    ///
    /// # Errors
    ///
    /// Whatever `sink` returns.
    #[inline]
    pub fn push_into<S: RecordSink>(self, sink: &mut S) -> Result<(), DbnOutError> {
        if let Some((locate, ticker)) = self.symbol {
            sink.symbol(locate, ticker.as_bytes());
        }
        self.records.iter().try_for_each(|r| sink.push(r))
    }
}

/// Where the merge is in a [`RecordBatch`]: the next record unit and ticker.
#[derive(Clone, Copy, Debug, Default)]
pub struct BatchCursor {
    unit: usize,
    symbol: usize,
}

/// One batch's records, tickers and metadata requests, message by message; reused batch
/// after batch ([`RecordBatch::clear`]): after the first few batches it allocates nothing
/// but the tickers of stock directory messages.
#[derive(Debug)]
pub struct RecordBatch<T = u8> {
    kept: Vec<T>,
    records: u64,
    asked: Vec<Asked>,
    /// What the message being applied asked so far.
    open: Asked,
    symbols: Vec<(Locate, String)>,
    /// While set, records are dropped (`--symbols`/`--between`). The schema writers set it
    /// before every message when a filter is on, so it need not survive a swap of batches.
    muted: bool,
}

impl<T> Default for RecordBatch<T> {
    fn default() -> Self {
        RecordBatch {
            kept: Vec::new(),
            records: 0,
            asked: Vec::new(),
            open: Asked::default(),
            symbols: Vec::new(),
            muted: false,
        }
    }
}

impl<T> RecordBatch<T> {
    /// Empties the batch, keeping its storage.
    pub fn clear(&mut self) {
        self.kept.clear();
        self.records = 0;
        self.asked.clear();
        self.open = Asked::default();
        self.symbols.clear();
    }

    /// Closes the message being applied: every message of the batch gets one call, in
    /// order, whether it asked anything or not.
    #[inline]
    pub fn end_message(&mut self) {
        self.asked.push(self.open);
        self.open = Asked::default();
    }

    /// Message `k` of the batch (0-based, in the order applied), the cursor moved past it.
    /// The merge calls it for every message in order.
    ///
    /// # Panics
    ///
    /// If `k` is past the messages closed, or the cursor is not this batch's.
    #[inline]
    pub fn message(&self, k: usize, cursor: &mut BatchCursor) -> MessageRecords<'_, T> {
        let asked = self.asked[k].0;
        let symbol = (asked & SYMBOL != 0).then(|| {
            let (locate, ticker) = &self.symbols[cursor.symbol];
            cursor.symbol += 1;
            (*locate, ticker.as_str())
        });
        let units = (asked & UNITS) as usize;
        let records = &self.kept[cursor.unit..][..units];
        cursor.unit += units;
        MessageRecords {
            symbol,
            reserve: asked & RESERVE != 0,
            records,
        }
    }
}

impl<T: KeptRecord> RecordSink for RecordBatch<T> {
    #[inline]
    fn push<R: DbnEncodable + 'static>(&mut self, record: &R) -> Result<(), DbnOutError> {
        if !self.muted {
            let units = T::keep(&mut self.kept, record);
            if units > 0 {
                self.records += 1;
                self.open.0 += units as u32;
            }
        }
        Ok(())
    }

    fn set_muted(&mut self, muted: bool) {
        self.muted = muted;
    }

    fn count(&self) -> u64 {
        self.records
    }

    fn symbol(&mut self, locate: Locate, ticker: &[u8]) {
        self.symbols
            .push((locate, String::from_utf8_lossy(ticker).into_owned()));
        self.open.0 |= SYMBOL;
    }

    fn reserve_metadata(&mut self, _metadata: &Metadata) -> Result<(), DbnOutError> {
        self.open.0 |= RESERVE;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_message_gets_back_what_it_asked_in_order() {
        let mut batch = RecordBatch::<u8>::default();
        let mut record = dbn::TradeMsg::default();
        let len = std::mem::size_of::<dbn::TradeMsg>();
        // Message 0: a ticker. 1: the room, then two records. 2: nothing. 3: one record,
        // muted (dropped). 4: one record.
        batch.symbol(Locate(7), b"ABCD");
        batch.end_message();
        let date = super::super::SessionDate::parse("2019-01-30").expect("a date");
        let metadata = super::super::session_metadata(
            Default::default(),
            dbn::Schema::Trades,
            date,
            0,
            &Default::default(),
            &Default::default(),
        );
        batch.reserve_metadata(&metadata).expect("room");
        for price in [10, 11] {
            record.price = price;
            batch.push(&record).expect("push");
        }
        batch.end_message();
        batch.end_message();
        batch.set_muted(true);
        batch.push(&record).expect("push");
        batch.set_muted(false);
        batch.end_message();
        record.price = 12;
        batch.push(&record).expect("push");
        batch.end_message();
        assert_eq!(batch.count(), 3);

        let mut at = BatchCursor::default();
        let m = batch.message(0, &mut at);
        assert_eq!(
            (m.symbol, m.reserve, m.records.len()),
            (Some((Locate(7), "ABCD")), false, 0)
        );
        let m = batch.message(1, &mut at);
        assert_eq!(
            (m.symbol, m.reserve, m.records.len()),
            (None, true, 2 * len)
        );
        assert_eq!(&m.records[len..], record_bytes(11));
        for k in [2, 3] {
            let m = batch.message(k, &mut at);
            assert_eq!((m.symbol, m.reserve, m.records.len()), (None, false, 0));
        }
        assert_eq!(batch.message(4, &mut at).records, record_bytes(12));
    }

    fn record_bytes(price: i64) -> Vec<u8> {
        let record = dbn::TradeMsg {
            price,
            ..Default::default()
        };
        record.as_ref().to_vec()
    }

    #[test]
    fn a_typed_batch_keeps_only_its_records() {
        let mut batch = RecordBatch::<Mbp10Msg>::default();
        batch.push(&dbn::TradeMsg::default()).expect("push");
        let mbp = Mbp10Msg {
            sequence: 9,
            ..Default::default()
        };
        batch.push(&mbp).expect("push");
        batch.end_message();
        let m = batch.message(0, &mut BatchCursor::default());
        assert_eq!(m.records.len(), 1);
        assert_eq!(m.records[0].sequence, 9);
        assert_eq!(batch.count(), 1);
    }
}
