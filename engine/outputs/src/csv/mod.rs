//! The CSV outputs of DESIGN.md's contracts: the top-of-book stream (`--bbo-out`, written
//! on the caller's thread or on a thread of its own) and the final depth (`--book-out`).
//! They see books and top-of-book rows, never a pipeline.

mod bbo_csv;
mod bbo_row_bytes;
mod bbo_thread;
mod book_csv;
mod csv_buffer;
mod csv_bytes;
mod snapshot_book;

pub use bbo_csv::{BboCsvWriter, BBO_HEADER};
pub use bbo_row_bytes::BboRowBytes;
pub use bbo_thread::{FilteredBboCsv, ThreadedBboSink, BBO_RING_SLOTS};
pub use book_csv::{
    write_book_csv, write_book_csv_filtered, write_level_row, write_partitioned_book_csv,
    BOOK_HEADER,
};
pub use csv_buffer::CsvBuffer;
pub use csv_bytes::{CsvBytes, ROW_ROOM};
pub use snapshot_book::{export_snapshot_book_csv, write_snapshot_book_csv, BookCsvExport};
