//! Every slot of a snapshot file read at once: the states that read consistently, and the
//! list of those that do not (a writer killed mid-write leaves one slot's sequence odd; the
//! other books are still good, and a reader says which one is not).

use std::fmt;

use super::error::{ReadError, SnapshotError};
use super::reader::SnapshotReader;
use super::state::InstrumentState;

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
    /// As an error: the first slot a complete read could not copy.
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

/// The books read that carry `MAYBE_BAD` or `STALE`, by symbol (trailing spaces
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
    pub fn of(states: &[InstrumentState]) -> Self {
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
