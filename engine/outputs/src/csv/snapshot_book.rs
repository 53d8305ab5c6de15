//! The `--book-out` CSV, read back out of a snapshot file: every slot that reads
//! consistently, in the format of [`write_book_csv`](super::write_book_csv), and the list of
//! those that do not.

use std::io::Write;

use ticklane_book::Side;
use ticklane_snapshot::{
    read_all, FlaggedBooks, SnapshotError, SnapshotReader, SnapshotSlots, UnreadableSlot,
};

use super::{write_level_row, CsvBuffer, BOOK_HEADER};

/// A book CSV written out of a snapshot: the sink, the slots whose books are missing from
/// it because they could not be read, and the books written that carry a warning flag.
#[derive(Debug)]
pub struct BookCsvExport<W> {
    /// The sink, every row written to it.
    pub sink: W,
    /// The slots left out, in slot order. Not empty means the CSV is incomplete: a caller
    /// reports each one and fails.
    pub unreadable: Vec<UnreadableSlot>,
    /// The books written whose slots say they may be wrong or out of date. The CSV has no
    /// column for flags, so a caller says these beside it.
    pub flagged: FlaggedBooks,
}

impl<W> BookCsvExport<W> {
    /// The sink, if no slot was left out.
    ///
    /// # Errors
    ///
    /// [`SnapshotError::Read`] for the first slot left out.
    pub fn into_complete(self) -> Result<W, SnapshotError> {
        match self.unreadable.first() {
            Some(torn) => Err(torn.into_error()),
            None => Ok(self.sink),
        }
    }
}

/// Writes up to `depth` levels per side of every instrument that reads consistently, in
/// exactly the format of [`write_book_csv`](super::write_book_csv): sorted by locate,
/// then side (`B` before `S`), then level (1 = best); sides with no orders write no rows. At
/// most the file's own depth is available. Slots that cannot be read are left out and
/// listed in the result.
///
/// Each slot is copied consistently on its own; slots are not copied at one instant, so a
/// snapshot being written gives each book as of its own last publication.
///
/// # Errors
///
/// [`SnapshotError::Output`] if `sink` fails.
pub fn export_snapshot_book_csv<W: Write>(
    reader: &SnapshotReader,
    depth: usize,
    sink: W,
) -> Result<BookCsvExport<W>, SnapshotError> {
    let SnapshotSlots {
        mut states,
        unreadable,
    } = read_all(reader);
    states.sort_by_key(|s| s.locate);
    let mut out = CsvBuffer::new(sink);
    out.bytes(BOOK_HEADER.as_bytes())
        .map_err(SnapshotError::Output)?;
    for state in &states {
        for (side, levels) in [(Side::Bid, &state.bids), (Side::Ask, &state.asks)] {
            for (i, level) in levels.iter().take(depth).enumerate() {
                write_level_row(&mut out, state.locate, state.symbol(), side, i + 1, level)
                    .map_err(SnapshotError::Output)?;
            }
        }
    }
    let sink = out.finish().map_err(SnapshotError::Output)?;
    Ok(BookCsvExport {
        sink,
        unreadable,
        flagged: FlaggedBooks::of(&states),
    })
}

/// [`export_snapshot_book_csv`], failing when a slot was left out: the rows of every
/// readable slot are written to `sink` first either way.
///
/// # Errors
///
/// [`SnapshotError::Read`] for the first slot that cannot be copied consistently within the
/// reader's bound (a writer killed mid-write); [`SnapshotError::Output`] if `sink` fails.
pub fn write_snapshot_book_csv<W: Write>(
    reader: &SnapshotReader,
    depth: usize,
    sink: W,
) -> Result<W, SnapshotError> {
    export_snapshot_book_csv(reader, depth, sink)?.into_complete()
}
