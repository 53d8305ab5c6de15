//! The `--book-out` CSV, read back out of a snapshot file.

use std::io::Write;

use super::error::SnapshotError;
use super::reader::SnapshotReader;
use super::state::InstrumentState;
use crate::book::Side;
use crate::csv::{write_level_row, CsvBuffer, BOOK_HEADER};

/// Writes up to `depth` levels per side of every instrument in the snapshot, in exactly the
/// format of [`write_book_csv`](crate::csv::write_book_csv): sorted by locate, then side
/// (`B` before `S`), then level (1 = best); sides with no orders write no rows. At most the
/// file's own depth is available.
///
/// Each slot is copied consistently on its own; slots are not copied at one instant, so a
/// snapshot being written gives each book as of its own last publication.
///
/// # Errors
///
/// [`SnapshotError::Read`] if a slot cannot be copied consistently within the reader's bound
/// (a writer killed mid-write); [`SnapshotError::Output`] if `sink` fails.
pub fn write_snapshot_book_csv<W: Write>(
    reader: &SnapshotReader,
    depth: usize,
    sink: W,
) -> Result<W, SnapshotError> {
    let mut states = read_all(reader)?;
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
    out.finish().map_err(SnapshotError::Output)
}

/// Every slot in use, each copied consistently.
///
/// # Errors
///
/// [`SnapshotError::Read`] for the first slot that cannot be copied.
pub fn read_all(reader: &SnapshotReader) -> Result<Vec<InstrumentState>, SnapshotError> {
    reader
        .slots()
        .map(|slot| {
            reader
                .read(slot)
                .map_err(|source| SnapshotError::Read { slot, source })
        })
        .collect()
}
