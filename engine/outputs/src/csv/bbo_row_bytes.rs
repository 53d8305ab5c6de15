//! Top-of-book rows formatted in memory and kept apart, for a caller that places them in
//! the stream itself: each book thread of `replay --threads` formats its own rows here, and
//! the merge thread splices them into `--bbo-out` in message order, a copy per row.

use std::io;

use super::bbo_csv::format_bbo_row;
use super::csv_bytes::CsvBytes;
use ticklane_book::{BboRow, BboSink};

/// The `--bbo-out` lines of a batch of rows (no header), and where each ends.
///
/// Reused from batch to batch ([`BboRowBytes::clear`]), it stops allocating once it has
/// held its largest batch.
#[derive(Debug, Default)]
pub struct BboRowBytes {
    text: CsvBytes,
    /// End of row `k` in `text`; row `k` starts where row `k - 1` ends (row 0 at 0).
    ends: Vec<u32>,
}

impl BboRowBytes {
    /// Rows held.
    #[inline(always)]
    pub fn rows(&self) -> usize {
        self.ends.len()
    }

    /// The line of row `k` (0-based, in the order written), `\n` included.
    ///
    /// # Panics
    ///
    /// If `k >= self.rows()`.
    #[inline(always)]
    pub fn row(&self, k: usize) -> &[u8] {
        let start = match k {
            0 => 0,
            _ => self.ends[k - 1] as usize,
        };
        &self.text.as_bytes()[start..self.ends[k] as usize]
    }

    /// All rows' lines, in the order written.
    pub fn text(&self) -> &[u8] {
        self.text.as_bytes()
    }

    /// Forgets the rows, keeping the storage.
    pub fn clear(&mut self) {
        self.text.clear();
        self.ends.clear();
    }
}

impl BboSink for BboRowBytes {
    /// # Errors
    ///
    /// With more than 4 GiB of text held: the caller empties it batch by batch.
    #[inline]
    fn write_row(&mut self, row: &BboRow) -> io::Result<()> {
        self.text.room();
        format_bbo_row(&mut self.text, row);
        let end = u32::try_from(self.text.len())
            .map_err(|_| io::Error::other("over 4 GiB of top-of-book rows in one batch"))?;
        self.ends.push(end);
        Ok(())
    }

    fn finish(self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::csv::BboCsvWriter;

    fn row(msg_index: u64, symbol: &[u8; 8], bid_px: u32, ask_qty: u64) -> BboRow {
        let mut row: BboRow = bytemuck::Zeroable::zeroed();
        row.msg_index = msg_index;
        row.timestamp_ns = 34_200_000_000_123;
        row.locate = 7;
        row.symbol = *symbol;
        row.bid_px = bid_px;
        row.bid_qty = 100;
        row.bid_orders = 1;
        row.ask_px = 1_000_100;
        row.ask_qty = ask_qty;
        row.ask_orders = 2;
        row
    }

    #[test]
    fn each_row_is_the_line_the_stream_writer_writes() {
        let rows = [
            row(1, b"AAPL    ", 999_900, 300),
            row(22, b"ZVZZT   ", 0, 0),
            row(u64::MAX, b"ABCDEFGH", u32::MAX, u64::MAX),
        ];
        let mut kept = BboRowBytes::default();
        for r in &rows {
            kept.write_row(r).expect("memory");
        }
        assert_eq!(kept.rows(), 3);
        // Hand-written lines, in the column order the module's contract gives.
        assert_eq!(
            kept.row(0),
            b"1,34200000000123,7,AAPL,999900,100,1,1000100,300,2\n"
        );
        assert_eq!(
            kept.row(1),
            b"22,34200000000123,7,ZVZZT,0,100,1,1000100,0,2\n"
        );
        // And the stream writer's bytes for the same rows, after its header.
        let mut out = Vec::new();
        let mut stream = BboCsvWriter::new(&mut out).expect("vec");
        for r in &rows {
            stream.write_row(r).expect("vec");
        }
        stream.finish().expect("vec");
        assert_eq!(&out[crate::csv::BBO_HEADER.len()..], kept.text());
        kept.clear();
        assert_eq!((kept.rows(), kept.text().len()), (0, 0));
    }
}
