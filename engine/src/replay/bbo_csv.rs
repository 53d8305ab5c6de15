//! The top-of-book stream: one CSV row each time a stock's best bid or offer changes.

use std::io::{self, Write};

use ticklane_feed::itch::{Locate, Nanos};

use super::csv_buffer::CsvBuffer;
use crate::book::{Books, TopOfBook};

/// The header line of `--bbo-out`.
pub const BBO_HEADER: &str =
    "msg_index,timestamp_ns,locate,stock,bid_px,bid_qty,bid_orders,ask_px,ask_qty,ask_orders\n";

/// Writes a row for a stock whenever any of its six top-of-book values differs from the
/// last row written for it (before its first row a stock compares as all zero).
pub struct BboCsvWriter<W: Write> {
    out: CsvBuffer<W>,
    /// Last row written per locate.
    last: Vec<TopOfBook>,
    rows: u64,
}

impl<W: Write> BboCsvWriter<W> {
    /// A writer that has written the header.
    ///
    /// # Errors
    ///
    /// Whatever `sink` returns.
    pub fn new(sink: W) -> io::Result<Self> {
        let mut out = CsvBuffer::new(sink);
        out.bytes(BBO_HEADER.as_bytes())?;
        Ok(BboCsvWriter {
            out,
            last: vec![TopOfBook::default(); 1 << 16],
            rows: 0,
        })
    }

    /// Called after message `msg_index` changed `locate`'s book: writes a row if the top
    /// moved.
    ///
    /// # Errors
    ///
    /// Whatever the sink returns when the buffer is flushed.
    #[inline]
    pub fn on_change(
        &mut self,
        books: &Books,
        msg_index: u64,
        timestamp: Nanos,
        locate: Locate,
    ) -> io::Result<()> {
        let top = books.top_of_book(locate);
        let last = &mut self.last[usize::from(locate.0)];
        if top == *last {
            return Ok(());
        }
        *last = top;
        self.rows += 1;
        let o = &mut self.out;
        o.uint(msg_index);
        o.comma();
        o.uint(timestamp.0);
        o.comma();
        o.uint(u64::from(locate.0));
        o.comma();
        o.raw(books.symbol(locate));
        o.comma();
        o.uint(u64::from(top.bid.price.0));
        o.comma();
        o.uint(top.bid.qty);
        o.comma();
        o.uint(u64::from(top.bid.orders));
        o.comma();
        o.uint(u64::from(top.ask.price.0));
        o.comma();
        o.uint(top.ask.qty);
        o.comma();
        o.uint(u64::from(top.ask.orders));
        o.end_row()
    }

    /// Rows written so far.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// Flushes everything to the sink and returns it.
    ///
    /// # Errors
    ///
    /// Whatever the sink returns.
    pub fn finish(self) -> io::Result<W> {
        self.out.finish()
    }
}
