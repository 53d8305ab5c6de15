//! The off-heap snapshot: every instrument's current book in a memory-mapped file that the
//! book thread writes and other processes read without locks.
//!
//! The file is a header and one fixed-size slot per instrument, each slot under its own
//! seqlock (the [`layout`] module documents every byte). [`SnapshotWriter`] creates the file
//! and publishes into it; [`SnapshotReader`] opens it from any process, validates it and
//! copies slots out, never torn and never waiting unboundedly. A writer killed with `kill -9`
//! leaves a file that still reads consistently: a slot caught mid-write keeps an odd sequence
//! and is reported as such, and the heartbeat stops.
//!
//! # Examples
//!
//! ```
//! use ticklane_book::{BookConfig, Books};
//! use ticklane_snapshot::{read_all, SnapshotReader, SnapshotWriter};
//! use ticklane_itch::{Locate, Nanos};
//!
//! let dir = tempfile::tempdir()?;
//! let path = dir.path().join("books.snap");
//! let books = Books::new(BookConfig { max_orders: 64, max_books: 8, levels_per_side: 16 })?;
//!
//! // The book thread: publish each instrument whose book a message changed.
//! let mut writer = SnapshotWriter::create(&path, 8, 10)?;
//! writer.publish(&books, Locate(1), 1, Nanos(34_200_000_000_000))?;
//!
//! // Any other process: open, validate, read.
//! let reader = SnapshotReader::open(&path)?;
//! let state = reader.read(0)?;
//! assert_eq!(state.locate, Locate(1));
//! let all = read_all(&reader).into_complete()?;
//! assert_eq!(all.len(), 1);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(unsafe_code)]

mod clock;
mod error;
pub mod layout;
mod mapping;
mod reader;
mod slots;
mod state;
mod writer;

pub use clock::wall_clock_ns;
pub use error::{PublishError, ReadError, SnapshotError};
pub use layout::{Geometry, LevelRecord, LineState, SlotPayload, SnapshotHeader, DEFAULT_DEPTH};
pub use reader::{SnapshotReader, DEFAULT_READ_ATTEMPTS};
pub use slots::{read_all, FlaggedBooks, SnapshotSlots, UnreadableSlot};
pub use state::{InstrumentState, LastTrade, SlotFlags};
pub use writer::{marked_closed_in_this_process, remove_snapshot_files, SnapshotWriter};
