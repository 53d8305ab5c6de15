//! The top-of-book stream as CSV, formatted on the thread that calls it.

use std::io::{self, Write};

use super::csv_buffer::CsvBuffer;
use super::csv_bytes::CsvBytes;
use ticklane_book::{BboRow, BboSink};

/// The header line of `--bbo-out`.
pub const BBO_HEADER: &str =
    "msg_index,timestamp_ns,locate,stock,bid_px,bid_qty,bid_orders,ask_px,ask_qty,ask_orders\n";

/// Formats rows into one preallocated buffer and writes it to `W` in large pieces.
pub struct BboCsvWriter<W: Write> {
    out: CsvBuffer<W>,
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
        Ok(BboCsvWriter { out })
    }
}

impl<W: Write> BboSink for BboCsvWriter<W> {
    #[inline]
    fn write_row(&mut self, row: &BboRow) -> io::Result<()> {
        format_bbo_row(self.out.fields(), row);
        self.out.row_done()
    }

    fn finish(self) -> io::Result<()> {
        self.out.finish().map(drop)
    }
}

/// Formats `row` as one `--bbo-out` line, its `\n` included, at `o`'s cursor: the one
/// formatting of the top-of-book stream, whether on its writer thread or on the book
/// threads of `replay --threads`. `o` must have room for a row ([`CsvBytes::room`]).
#[inline(always)]
pub(super) fn format_bbo_row(o: &mut CsvBytes, row: &BboRow) {
    let mut o = o.row();
    o.uint(row.msg_index);
    o.comma();
    o.uint(row.timestamp_ns);
    o.comma();
    o.uint(u64::from(row.locate));
    o.comma();
    o.padded8(&row.symbol);
    o.comma();
    o.uint(u64::from(row.bid_px));
    o.comma();
    o.uint(row.bid_qty);
    o.comma();
    o.uint(u64::from(row.bid_orders));
    o.comma();
    o.uint(u64::from(row.ask_px));
    o.comma();
    o.uint(row.ask_qty);
    o.comma();
    o.uint(u64::from(row.ask_orders));
    o.byte(b'\n');
}
