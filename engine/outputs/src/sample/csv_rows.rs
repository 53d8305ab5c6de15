//! The CSV of `--sample-out`: one row per stock per boundary, its `N` levels a side across
//! the row.

use std::io::Write;
use std::path::PathBuf;

use ticklane_itch::Nanos;

use super::{SampleError, StockDepth};
use crate::csv::CsvBuffer;
use ticklane_book::Side;

/// The header for `depth` levels: `timestamp_ns,locate,stock`, then for each level `i`
/// (1 = best) `bid_px_i,bid_qty_i,bid_orders_i`, then the same for the asks. Prices in
/// ITCH's 1/10,000 dollars; an empty level is `0,0,0`, as in `--bbo-out`.
pub fn header(depth: usize) -> String {
    let mut header = String::from("timestamp_ns,locate,stock");
    for side in ["bid", "ask"] {
        for level in 1..=depth {
            header.push_str(&format!(
                ",{side}_px_{level},{side}_qty_{level},{side}_orders_{level}"
            ));
        }
    }
    header.push('\n');
    header
}

/// Writes sampled rows as CSV to `W`.
pub struct CsvRows<W: Write> {
    out: CsvBuffer<W>,
    depth: usize,
    path: PathBuf,
}

impl<W: Write> CsvRows<W> {
    /// A writer that has written the header; `path` names the output in errors.
    ///
    /// # Errors
    ///
    /// Whatever `sink` returns.
    pub fn new(sink: W, depth: usize, path: PathBuf) -> Result<Self, SampleError> {
        let mut out = CsvBuffer::new(sink);
        let io = |source| SampleError::Io {
            path: path.clone(),
            source,
        };
        out.bytes(header(depth).as_bytes()).map_err(io)?;
        Ok(CsvRows { out, depth, path })
    }

    /// Writes `depth`'s row at `boundary`.
    ///
    /// # Errors
    ///
    /// Whatever the sink returns.
    pub fn row(&mut self, boundary: Nanos, depth: &StockDepth<'_>) -> Result<(), SampleError> {
        let o = &mut self.out;
        o.uint(boundary.0);
        o.comma();
        o.uint(u64::from(depth.locate.0));
        o.comma();
        o.raw(depth.symbol);
        // The buffer promises room for one short row; a deep one gives it the chance to
        // flush every few levels (at most 43 bytes each).
        let mut since_check = 0;
        for side in [Side::Bid, Side::Ask] {
            let levels = depth.side(side).iter().take(self.depth);
            // Exactly `depth` levels: the book's, then empty ones.
            let padded = levels.map(Some).chain(std::iter::repeat(None));
            for level in padded.take(self.depth) {
                match level {
                    Some(level) => {
                        o.comma();
                        o.uint(u64::from(level.price.0));
                        o.comma();
                        o.uint(level.qty);
                        o.comma();
                        o.uint(u64::from(level.orders));
                    }
                    None => o.raw(b",0,0,0"),
                }
                since_check += 1;
                if since_check == 8 {
                    since_check = 0;
                    o.bytes(b"").map_err(|source| SampleError::Io {
                        path: self.path.clone(),
                        source,
                    })?;
                }
            }
        }
        o.end_row().map_err(|source| SampleError::Io {
            path: self.path.clone(),
            source,
        })
    }

    /// Writes out what is buffered.
    ///
    /// # Errors
    ///
    /// Whatever the sink returns.
    pub fn finish(self) -> Result<W, SampleError> {
        let path = self.path;
        self.out
            .finish()
            .map_err(|source| SampleError::Io { path, source })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_header_names_each_level_of_each_side() {
        assert_eq!(
            header(2),
            "timestamp_ns,locate,stock,\
             bid_px_1,bid_qty_1,bid_orders_1,bid_px_2,bid_qty_2,bid_orders_2,\
             ask_px_1,ask_qty_1,ask_orders_1,ask_px_2,ask_qty_2,ask_orders_2\n"
        );
    }
}
