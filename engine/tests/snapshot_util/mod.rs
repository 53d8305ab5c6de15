//! Helpers shared by the snapshot tests: a generated day, replayed the way the engine does.

#![allow(dead_code)] // each test file uses its own subset

use std::path::Path;

use ticklane_engine::book::{BookConfig, Books};
use ticklane_engine::replay::{write_book_csv, BboCsvWriter, Replayer};
use ticklane_engine::snapshot::{trade_of, SnapshotWriter};
use ticklane_feed::itch;
use ticklane_feed::sim::{write_itch50, GenConfig};

/// Book capacities that fit every generated day here.
pub fn book_config() -> BookConfig {
    BookConfig {
        max_orders: 1 << 20,
        max_books: 256,
        levels_per_side: 1024,
    }
}

/// A generated ITCH 5.0 day, length-prefixed as Nasdaq's files are.
pub fn day(messages: u64, seed: u64, stocks: u16, crossing: bool) -> Vec<u8> {
    let mut bytes = Vec::new();
    write_itch50(
        GenConfig {
            messages,
            seed,
            stocks,
            hard_cases: true,
            crossing,
        },
        &mut bytes,
    )
    .expect("writing to memory");
    bytes
}

/// The messages of a length-prefixed day, without their prefixes.
pub fn messages(day: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut rest = day;
    while rest.len() >= 2 {
        let len = usize::from(u16::from_be_bytes([rest[0], rest[1]]));
        out.push(&rest[2..2 + len]);
        rest = &rest[2 + len..];
    }
    out
}

/// The final books of a day, through the replayer the CLI uses.
pub fn replay(day: &[u8]) -> Books {
    let mut replayer: Replayer<BboCsvWriter<std::io::Sink>> =
        Replayer::new(book_config(), None).expect("books");
    for (i, message) in messages(day).into_iter().enumerate() {
        replayer.step(i as u64 + 1, message).expect("valid day");
    }
    replayer.finish().expect("no output to flush")
}

/// `write_book_csv` of `books` at `depth`, as a string.
pub fn book_csv(books: &Books, depth: usize) -> String {
    String::from_utf8(write_book_csv(books, depth, Vec::new()).expect("to memory")).expect("ASCII")
}

/// Replays `day` as the book thread would: applies each message, records its trade, publishes
/// the changed instrument (and `R`/`H` targets) with the message index as feed sequence.
/// Returns the final books; the writer is left open.
pub fn publish_day(day: &[u8], writer: &mut SnapshotWriter) -> Books {
    let mut books = Books::new(book_config()).expect("books");
    for (i, bytes) in messages(day).into_iter().enumerate() {
        let message = itch::decode(bytes).expect("valid day");
        if let Some(trade) = trade_of(&books, &message) {
            writer.record_trade(&books, trade).expect("room");
        }
        let changed = books.apply(&message).or(match message {
            itch::Message::StockDirectory(_) | itch::Message::StockTradingAction(_) => {
                Some(message.locate())
            }
            _ => None,
        });
        if let Some(locate) = changed {
            writer
                .publish(&books, locate, i as u64 + 1, message.timestamp())
                .expect("room");
        }
    }
    books
}

/// Writes a snapshot of `books` at `path`: every book published once.
pub fn snapshot_of(books: &Books, path: &Path, depth: usize) -> SnapshotWriter {
    let mut writer = SnapshotWriter::create(path, 512, depth).expect("create");
    for locate in books.locates() {
        writer
            .publish(books, locate, 1, itch::Nanos(0))
            .expect("room");
    }
    writer
}
