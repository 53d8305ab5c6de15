//! Replay of captured input through the books, and the outputs the contracts name:
//! the top-of-book stream, the final depth and the summary.

mod bbo_csv;
mod bbo_row;
mod bbo_thread;
mod book_csv;
mod csv_buffer;
mod paced;
mod replayer;
mod run;
mod summary;

pub use bbo_csv::{BboCsvWriter, BBO_HEADER};
pub use bbo_row::{BboRow, BboSink};
pub use bbo_thread::ThreadedBboSink;
pub use book_csv::{write_book_csv, write_level_row, BOOK_HEADER};
pub use csv_buffer::CsvBuffer;
pub use paced::{replay_paced, PacedOutcome, SnapshotTarget};
pub use replayer::{Applied, NoBbo, Replayer, StepError, TypeCounts};
pub use run::{replay_file, ReplayError, ReplayOptions, ReplayOutcome};
pub use summary::{group, PacketCounts, ReplaySummary};
