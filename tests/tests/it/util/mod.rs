//! Helpers shared by the end-to-end tests that need engine or feed types; the rest (skips,
//! the oracle, packet bytes, loopback addresses) come from this crate's library.

pub mod fault_suite;

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::Arc;

use std::sync::atomic::AtomicBool;

use ticklane_engine::book::{Applier, BookConfig, NoBbo};
use ticklane_engine::csv::{write_book_csv, write_snapshot_book_csv};
use ticklane_engine::live::{run_line, LineRun, LineSource};
use ticklane_engine::overload::OverloadConfig;
use ticklane_engine::pipeline::PipelineConfig;
use ticklane_engine::snapshot::{SnapshotReader, SnapshotWriter};
use ticklane_sim::{write_itch50, GenConfig, MessageLog};

pub use ticklane_testkit::{in_ci, oracle, repo_root, shared_data, skip};

/// Writes a generated ITCH50 file.
pub fn write_generated(path: &Path, config: GenConfig) {
    let mut out = BufWriter::new(File::create(path).expect("create generated file"));
    write_itch50(config, &mut out).expect("write generated file");
    out.flush().expect("flush generated file");
}

/// `ns` since midnight as `HH:MM:SS.nnnnnnnnn`, for `--between`.
pub fn time_of_day(ns: u64) -> String {
    let s = ns / 1_000_000_000;
    format!(
        "{:02}:{:02}:{:02}.{:09}",
        s / 3600,
        s / 60 % 60,
        s % 60,
        ns % 1_000_000_000
    )
}

/// Book capacities for the live lines' generated days.
pub fn books() -> BookConfig {
    BookConfig {
        max_orders: 1 << 18,
        max_books: 256,
        levels_per_side: 2048,
    }
}

/// A generated day of `messages` over 20 stocks, every hard case in it, no crossing flow.
pub fn log(messages: u64, seed: u64) -> Arc<MessageLog> {
    Arc::new(MessageLog::from_generator(GenConfig {
        messages,
        seed,
        stocks: 20,
        hard_cases: true,
        crossing: false,
    }))
}

/// The final books of `log` replayed through plain books of `books`, as `--book-out` CSV at
/// `depth`: what a line's snapshot must hold at the end of a clean session.
pub fn replayed_book(log: &MessageLog, books: BookConfig, depth: usize) -> String {
    let mut r: Applier<NoBbo> = Applier::new(books, None).expect("books");
    for seq in 1..=log.len() as u64 {
        r.step(seq, log.get(seq).expect("in the log"))
            .expect("valid message");
    }
    String::from_utf8(write_book_csv(r.books(), depth, Vec::new()).expect("csv")).expect("ascii")
}

/// Runs `source` with [`books`] into a fresh snapshot file keeping `depth` levels; returns
/// the file's books as `--book-out` CSV, read back as `ticklane book --csv` reads them, and
/// the run.
pub fn run_into_snapshot(source: LineSource, depth: usize) -> (String, LineRun) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("live.snap");
    let writer = SnapshotWriter::create(&path, 256, depth).expect("snapshot");
    let pipeline = PipelineConfig {
        books: books(),
        ..PipelineConfig::default()
    };
    let run = run_line(
        source,
        pipeline,
        Some(writer),
        OverloadConfig::default(),
        &AtomicBool::new(false),
    )
    .expect("pipeline");
    let reader = SnapshotReader::open(&path).expect("open snapshot");
    let csv = write_snapshot_book_csv(&reader, depth, Vec::new()).expect("csv");
    (String::from_utf8(csv).expect("ascii"), run)
}
