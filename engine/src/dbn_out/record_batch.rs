//! The records a book thread of `replay --threads` makes, kept in memory in the order made,
//! for the merge thread to place in the file in message order ([`super::MergedDbnOut`]).
//!
//! A book thread runs the one-thread schema writers ([`super::DbnOut`]) over its own
//! stocks, with this as their sink. What the merge thread needs of one message is what the
//! sink was asked while it was applied: how many records (their bytes follow one another,
//! every record of a schema the same size), whether the stock directory named a ticker, and
//! whether the metadata's room was asked for (the first message that can make records).
//! The book thread reads those from the counters below, before and after each message.

use dbn::encode::DbnEncodable;
use dbn::Metadata;
use ticklane_feed::itch::Locate;

use super::record_sink::RecordSink;
use super::DbnOutError;

/// One batch's records, tickers and metadata requests, reused batch after batch
/// ([`RecordBatch::clear`]): after the first few batches it allocates nothing but the
/// tickers of stock directory messages.
#[derive(Debug, Default)]
pub struct RecordBatch {
    bytes: Vec<u8>,
    records: u64,
    symbols: Vec<(Locate, String)>,
    reserves: u32,
    /// While set, records are dropped (`--symbols`/`--between`). The schema writers set it
    /// before every message when a filter is on, so it need not survive a swap of batches.
    muted: bool,
}

impl RecordBatch {
    /// Empties the batch, keeping its storage.
    pub fn clear(&mut self) {
        self.bytes.clear();
        self.records = 0;
        self.symbols.clear();
        self.reserves = 0;
    }

    /// The records kept, encoded, in the order made.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The tickers the stock directory named, in order.
    pub fn symbols(&self) -> &[(Locate, String)] {
        &self.symbols
    }

    /// How often the metadata's room was asked for in this batch (0 or 1: once a replay).
    pub fn reserves(&self) -> u32 {
        self.reserves
    }
}

impl RecordSink for RecordBatch {
    #[inline]
    fn push<R: DbnEncodable + 'static>(&mut self, record: &R) -> Result<(), DbnOutError> {
        if !self.muted {
            self.records += 1;
            self.bytes.extend_from_slice(record.as_ref());
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
    }

    fn reserve_metadata(&mut self, _metadata: &Metadata) -> Result<(), DbnOutError> {
        self.reserves += 1;
        Ok(())
    }
}
