//! The final L2 book as CSV: the `--book-out` format, also read back out of snapshots.

use std::io::{self, Write};

use super::csv_buffer::CsvBuffer;
use crate::book::{Books, Side};

/// The header line of `--book-out`.
pub const BOOK_HEADER: &str = "locate,stock,side,level,price,qty,orders\n";

/// Writes up to `depth` levels per side of every book, sorted by locate, then side (`B`
/// before `S`), then level (1 = best). Sides with no orders write no rows.
///
/// # Errors
///
/// Whatever `sink` returns.
pub fn write_book_csv<W: Write>(books: &Books, depth: usize, sink: W) -> io::Result<W> {
    let mut out = CsvBuffer::new(sink);
    out.bytes(BOOK_HEADER.as_bytes())?;
    for locate in books.locates() {
        for side in [Side::Bid, Side::Ask] {
            let Some(ladder) = books.side(locate, side) else {
                continue;
            };
            for (i, level) in ladder.best_first().take(depth).enumerate() {
                out.uint(u64::from(locate.0));
                out.comma();
                out.raw(books.symbol(locate));
                out.comma();
                out.byte(side.letter() as u8);
                out.comma();
                out.uint(i as u64 + 1);
                out.comma();
                out.uint(u64::from(level.price.0));
                out.comma();
                out.uint(level.qty);
                out.comma();
                out.uint(u64::from(level.orders));
                out.end_row()?;
            }
        }
    }
    out.finish()
}
