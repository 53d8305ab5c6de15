//! After warm-up, reading a file, decoding, applying to the books and tracking the top of
//! book allocate nothing: a counting global allocator watches a replay of well over a
//! million messages, so even one allocation per thousand messages would show.

use std::io;

use ticklane_engine::book::Applier;
use ticklane_engine::book::BookConfig;
use ticklane_engine::csv::BboCsvWriter;
use ticklane_feed::capture::{CaptureReader, ReadOptions};
use ticklane_sim::GenConfig;
use ticklane_testkit::counting_alloc::{start_counting, stop_counting};

use crate::util;

const WARM_UP: u64 = 50_000;
const MEASURED: u64 = 1_200_000;

#[test]
fn replay_allocates_nothing_per_message_after_warm_up() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("day.itch50");
    let config = GenConfig {
        messages: WARM_UP + MEASURED,
        seed: 9,
        stocks: 50,
        hard_cases: true,
        crossing: true,
    };
    util::write_generated(&file, config);

    let mut reader = CaptureReader::open(&file, ReadOptions::default()).expect("open");
    let bbo = BboCsvWriter::new(io::sink()).expect("sink");
    let mut applier = Applier::new(
        BookConfig {
            max_orders: 1 << 20,
            max_books: 256,
            levels_per_side: 4096,
        },
        Some(bbo),
    )
    .expect("books fit");
    let mut measured = 0u64;
    while let Some(raw) = reader.next_message().expect("valid file") {
        if raw.index == WARM_UP + 1 {
            start_counting();
        }
        if raw.index > WARM_UP {
            measured += 1;
        }
        applier.step(raw.index, raw.bytes).expect("valid message");
    }
    let allocations = stop_counting();
    assert_eq!(measured, MEASURED);
    assert!(
        applier.bbo_rows() > MEASURED / 10,
        "the top of book was tracked"
    );
    assert_eq!(
        allocations, 0,
        "allocations over {MEASURED} messages after warm-up"
    );
}
