//! The CSV outputs: the top-of-book stream (`--bbo-out`, written on the caller's thread or
//! on a thread of its own) and the final depth (`--book-out`). They see books and
//! top-of-book rows, never a pipeline.
//!
//! # The contracts
//!
//! These files are what the oracle tests compare row for row with an independent
//! implementation, so their shape is fixed here and nowhere else:
//!
//! - Every field is a plain decimal integer except `stock` and `side`; each file starts with
//!   its header line; lines end in `\n`. Prices are ITCH integers (1/10,000 dollars) and
//!   quantities are sums in 64 bits, never floats.
//! - `stock` is the symbol of the latest `R` (stock directory) message for the locate, with
//!   its trailing spaces removed, or empty if none was seen. A symbol byte no output could
//!   carry as it is (a control or non-ASCII byte, a comma, a double quote: never in a real
//!   directory) is kept as `?`, in the books and so in every output, and counted
//!   (`symbols_replaced` in the summary).
//! - The books follow the rules in [`ticklane_book`] ("The book rules"); both files show the
//!   same books.
//!
//! # `--bbo-out PATH`: the top-of-book stream
//!
//! ```text
//! msg_index,timestamp_ns,locate,stock,bid_px,bid_qty,bid_orders,ask_px,ask_qty,ask_orders
//! ```
//!
//! At most one row per message, for the stock whose book the message changed (for E, C, X,
//! D and U, the stock of the order it names), written when any of the six values differs
//! from the last row written for that stock; before its first row a stock compares as
//! `0,0,0,0,0,0`. An empty side is `0,0,0`. `msg_index` is the message's 1-based position
//! among the ITCH messages of the input, in input order (in a capture, a duplicate the
//! MoldUDP64 sequencer skips takes no index); `timestamp_ns` is its ITCH timestamp
//! (nanoseconds since midnight).
//!
//! # `--book-out PATH --depth N`: the final depth
//!
//! ```text
//! locate,stock,side,level,price,qty,orders
//! ```
//!
//! Up to N levels a side, sorted by locate, then side (`B` before `S`), then level (1 is the
//! best). Stocks and sides with no orders write no rows. `ticklane book --snapshot PATH
//! --csv` prints the same format from a live snapshot file.

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
    each_final_level, write_book_csv, write_book_csv_filtered, write_level_row,
    write_partitioned_book_csv, BOOK_HEADER,
};
pub use csv_buffer::CsvBuffer;
pub use csv_bytes::{CsvBytes, RowCursor, ROW_ROOM};
pub use snapshot_book::{export_snapshot_book_csv, write_snapshot_book_csv, BookCsvExport};
