//! The `--book-out` CSV, read back out of a snapshot file: every slot that reads
//! consistently, and the list of those that do not (a writer killed mid-write leaves one
//! slot's sequence odd; the other books are still good, and a reader says which one is not).

use std::fmt;
use std::io::Write;

use super::error::{ReadError, SnapshotError};
use super::reader::SnapshotReader;
use super::state::InstrumentState;
use crate::book::Side;
use crate::csv::{write_level_row, CsvBuffer, BOOK_HEADER};

/// A slot in use that could not be copied consistently within the reader's bound.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UnreadableSlot {
    /// The slot index.
    pub slot: usize,
    /// Why: stayed mid-write (odd sequence) or kept changing.
    pub error: ReadError,
}

impl fmt::Display for UnreadableSlot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "snapshot slot {}: {}", self.slot, self.error)
    }
}

impl UnreadableSlot {
    /// As the error [`write_snapshot_book_csv`] returns.
    pub fn into_error(self) -> SnapshotError {
        SnapshotError::Read {
            slot: self.slot,
            source: self.error,
        }
    }
}

/// Every slot in use: the states copied consistently, in slot order, and the slots that
/// could not be.
#[derive(Debug, Default)]
pub struct SnapshotSlots {
    /// The instruments read, in slot order.
    pub states: Vec<InstrumentState>,
    /// The slots that could not be read, in slot order.
    pub unreadable: Vec<UnreadableSlot>,
}

impl SnapshotSlots {
    /// The states, if every slot was read.
    ///
    /// # Errors
    ///
    /// [`SnapshotError::Read`] for the first unreadable slot.
    pub fn into_complete(self) -> Result<Vec<InstrumentState>, SnapshotError> {
        match self.unreadable.first() {
            Some(torn) => Err(torn.into_error()),
            None => Ok(self.states),
        }
    }
}

/// Copies every slot in use, each consistently on its own; a slot that cannot be copied is
/// listed, not a reason to give up on the others.
pub fn read_all(reader: &SnapshotReader) -> SnapshotSlots {
    let mut all = SnapshotSlots::default();
    for slot in reader.slots() {
        match reader.read(slot) {
            Ok(state) => all.states.push(state),
            Err(error) => all.unreadable.push(UnreadableSlot { slot, error }),
        }
    }
    all
}

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

/// The books of an export that carry `MAYBE_BAD` or `STALE`, by symbol (trailing spaces
/// removed; a book with no symbol yet is named by its locate), in locate order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FlaggedBooks {
    /// Books read (flagged or not).
    pub books: usize,
    /// Books flagged `MAYBE_BAD`: a loss was declared, any of them may be wrong.
    pub maybe_bad: Vec<String>,
    /// Books flagged `STALE`: their line is down, they are the last known state.
    pub stale: Vec<String>,
}

impl FlaggedBooks {
    /// The flagged books among `states`.
    fn of(states: &[InstrumentState]) -> Self {
        let name = |s: &InstrumentState| match s.symbol() {
            [] => format!("locate {}", s.locate.0),
            symbol => String::from_utf8_lossy(symbol).into_owned(),
        };
        let with = |flag: fn(&InstrumentState) -> bool| {
            states.iter().filter(|s| flag(s)).map(name).collect()
        };
        FlaggedBooks {
            books: states.len(),
            maybe_bad: with(|s| s.flags.is_maybe_bad()),
            stale: with(|s| s.flags.is_stale()),
        }
    }

    /// Whether no book is flagged.
    pub fn is_empty(&self) -> bool {
        self.maybe_bad.is_empty() && self.stale.is_empty()
    }
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
/// exactly the format of [`write_book_csv`](crate::csv::write_book_csv): sorted by locate,
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
