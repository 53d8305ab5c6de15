//! The final L2 book as CSV: the `--book-out` format, also read back out of snapshots.

use std::io::{self, Write};

use ticklane_itch::Locate;

use super::csv_buffer::CsvBuffer;
use crate::output_filter::OutputFilter;
use ticklane_book::{Books, LevelView, Side};

/// The header line of `--book-out`.
pub const BOOK_HEADER: &str = "locate,stock,side,level,price,qty,orders\n";

/// One row of the `--book-out` format: `locate,stock,side,level,price,qty,orders`.
///
/// # Errors
///
/// Whatever the buffer's sink returns when it flushes.
#[inline]
pub fn write_level_row<W: Write>(
    out: &mut CsvBuffer<W>,
    locate: Locate,
    symbol: &[u8],
    side: Side,
    level_number: usize,
    level: &LevelView,
) -> io::Result<()> {
    out.uint(u64::from(locate.0));
    out.comma();
    out.raw(symbol);
    out.comma();
    out.byte(side.letter() as u8);
    out.comma();
    out.uint(level_number as u64);
    out.comma();
    out.uint(u64::from(level.price.0));
    out.comma();
    out.uint(level.qty);
    out.comma();
    out.uint(u64::from(level.orders));
    out.end_row()
}

/// Writes up to `depth` levels per side of every book, sorted by locate, then side (`B`
/// before `S`), then level (1 = best). Sides with no orders write no rows.
///
/// # Errors
///
/// Whatever `sink` returns.
pub fn write_book_csv<W: Write>(books: &Books, depth: usize, sink: W) -> io::Result<W> {
    write_books(
        std::slice::from_ref(books),
        depth,
        &OutputFilter::default(),
        sink,
    )
}

/// [`write_book_csv`] of the stocks `filter` keeps (`--symbols`; its time window does not
/// apply: the final depth is the books as they ended).
///
/// # Errors
///
/// Whatever `sink` returns.
pub fn write_book_csv_filtered<W: Write>(
    books: &Books,
    depth: usize,
    filter: &OutputFilter,
    sink: W,
) -> io::Result<W> {
    write_books(std::slice::from_ref(books), depth, filter, sink)
}

/// [`write_book_csv_filtered`] for books split over several tables, each locate's book in
/// exactly one of them (`replay --threads N`): the same rows in the same order as one table
/// holding every book.
///
/// # Errors
///
/// Whatever `sink` returns.
pub fn write_partitioned_book_csv<W: Write>(
    parts: &[Books],
    depth: usize,
    filter: &OutputFilter,
    sink: W,
) -> io::Result<W> {
    write_books(parts, depth, filter, sink)
}

fn write_books<W: Write>(
    parts: &[Books],
    depth: usize,
    filter: &OutputFilter,
    sink: W,
) -> io::Result<W> {
    let mut out = CsvBuffer::new(sink);
    out.bytes(BOOK_HEADER.as_bytes())?;
    each_final_level(
        parts,
        depth,
        filter,
        |locate, symbol, side, number, level| {
            write_level_row(&mut out, locate, symbol, side, number, level)
        },
    )?;
    out.finish()
}

/// Calls `level` with each row of the final depth, in the `--book-out` order: up to
/// `depth` levels per side of every book `filter` keeps, by locate, then side (`B` before
/// `S`), then level (1 = best), with the stock's symbol (trimmed). Books split over
/// several tables, each locate's book in exactly one (`replay --threads N`), give the
/// rows one table holding every book gives.
///
/// # Errors
///
/// The first error `level` returns.
pub fn each_final_level<E>(
    parts: &[Books],
    depth: usize,
    filter: &OutputFilter,
    mut level: impl FnMut(Locate, &[u8], Side, usize, &LevelView) -> Result<(), E>,
) -> Result<(), E> {
    let mut owned: Vec<(Locate, &Books)> = parts
        .iter()
        .flat_map(|books| books.locates().into_iter().map(move |l| (l, books)))
        .collect();
    owned.sort_unstable_by_key(|&(locate, _)| locate);
    for (locate, books) in owned {
        let symbol = books.symbol(locate);
        if !filter.keeps_symbol(symbol) {
            continue;
        }
        for side in [Side::Bid, Side::Ask] {
            let Some(ladder) = books.side(locate, side) else {
                continue;
            };
            for (i, view) in ladder.best_first().take(depth).enumerate() {
                level(locate, symbol, side, i + 1, &view)?;
            }
        }
    }
    Ok(())
}
