//! Bad input never panics: random bytes behind each format's magic number, and valid files
//! cut or corrupted at random places, go through `ticklane replay`'s code path and end in a
//! summary (with an error naming the file, byte offset and message index) or an error,
//! never a panic. Everything before the damage is applied: the books and top-of-book rows
//! kept equal those of a replay of the file cut at the last whole message before the damage.

use std::path::Path;

use proptest::prelude::*;
use ticklane_engine::book::BookConfig;
use ticklane_engine::csv::write_book_csv;
use ticklane_engine::replay::{replay_file, ReplayOptions, ReplaySummary};
use ticklane_sim::GenConfig;

use crate::util;

fn replay(path: &Path, recover_lengths: bool) -> Option<ReplaySummary> {
    let opts = ReplayOptions {
        input: path.to_path_buf(),
        recover_lengths,
        books: BookConfig {
            max_orders: 4096,
            max_books: 64,
            levels_per_side: 64,
        },
        ..ReplayOptions::default()
    };
    replay_file(&opts).ok().map(|o| o.summary)
}

/// The first bytes of each format the reader detects, and none.
fn magic() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        Just(vec![]),
        Just(vec![0x1f, 0x8b, 8, 0]),
        Just(vec![0xd4, 0xc3, 0xb2, 0xa1]),
        Just(vec![0x4d, 0x3c, 0xb2, 0xa1]),
        Just(vec![0x0a, 0x0d, 0x0d, 0x0a]),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn random_bytes_in_any_format_never_panic(
        head in magic(),
        body in prop::collection::vec(any::<u8>(), 0..4096),
        recover in any::<bool>(),
    ) {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("garbage.bin");
        let mut bytes = head;
        bytes.extend(body);
        std::fs::write(&path, &bytes).expect("write");
        if let Some(summary) = replay(&path, recover) {
            if let Some(error) = summary.error.map(|e| e.to_string()) {
                prop_assert!(error.contains("garbage.bin"), "the error names the file: {}", error);
            }
        }
    }
}

/// A replay with its top-of-book stream and full final depth, as text.
struct Kept {
    summary: ReplaySummary,
    bbo: String,
    depth: String,
}

fn replay_kept(path: &Path) -> Kept {
    let bbo_path = path.with_extension("bbo.csv");
    let outcome = replay_file(&ReplayOptions {
        input: path.to_path_buf(),
        bbo_out: Some(bbo_path.clone()),
        books: BookConfig {
            max_orders: 4096,
            max_books: 64,
            levels_per_side: 64,
        },
        ..ReplayOptions::default()
    })
    .expect("a readable file");
    let depth = write_book_csv(&outcome.books, 64, Vec::new()).expect("to memory");
    Kept {
        summary: outcome.summary,
        bbo: std::fs::read_to_string(&bbo_path).expect("bbo written"),
        depth: String::from_utf8(depth).expect("ASCII"),
    }
}

/// The top-of-book rows for messages before `index` (1-based), header included.
fn rows_before(bbo: &str, index: u64) -> Vec<&str> {
    bbo.lines()
        .take_while(|line| {
            let row_index = line.split(',').next().and_then(|i| i.parse::<u64>().ok());
            !matches!(row_index, Some(i) if i >= index)
        })
        .collect()
}

/// `(start, end)` byte ranges of each length-prefixed message of a valid day, prefix included.
fn frames(bytes: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let len = usize::from(u16::from_be_bytes([bytes[at], bytes[at + 1]]));
        out.push((at, at + 2 + len));
        at += 2 + len;
    }
    out
}

#[test]
fn a_day_cut_or_corrupted_anywhere_reports_where_and_keeps_what_came_before() {
    let dir = tempfile::tempdir().expect("tempdir");
    let day = dir.path().join("day.itch50");
    util::write_generated(
        &day,
        GenConfig {
            messages: 3_000,
            seed: 21,
            ..GenConfig::default()
        },
    );
    let bytes = std::fs::read(&day).expect("read");
    let whole = replay(&day, false).expect("valid day");
    assert_eq!(
        (whole.messages, whole.error.map(|e| e.to_string())),
        (3_000, None)
    );
    let frames = frames(&bytes);
    assert_eq!(frames.len(), 3_000);
    let mut rng = ticklane_sim::SplitMix64::new(5);
    let (mut books_compared, mut stopped_at_damage) = (0, 0);
    for case in 0..200 {
        let path = dir.path().join(format!("damaged-{case}.itch50"));
        let mut damaged = bytes.clone();
        let at = rng.below(damaged.len() as u64) as usize;
        let truncated = case % 2 == 0;
        if truncated {
            damaged.truncate(at);
        } else {
            // Never the same value: the byte really changes.
            damaged[at] ^= 1 + (rng.next_u64() % 255) as u8;
        }
        std::fs::write(&path, &damaged).expect("write");
        // The damaged message is the one holding byte `at`; the clean prefix is every whole
        // message before it, cut from the valid day and replayed on its own.
        let damaged_index = frames.partition_point(|&(_, end)| end <= at);
        let clean_end = damaged_index.checked_sub(1).map_or(0, |i| frames[i].1);
        let prefix_path = dir.path().join(format!("prefix-{case}.itch50"));
        std::fs::write(&prefix_path, &bytes[..clean_end]).expect("write");
        let prefix = replay_kept(&prefix_path);
        // An empty prefix (damage in the first message) held no feed data: that is a fault.
        assert_eq!(
            (prefix.summary.messages, prefix.summary.error.is_some()),
            (damaged_index as u64, damaged_index == 0),
            "case {case}: the clean prefix replays whole: {:?}",
            prefix.summary.error
        );

        let got = replay_kept(&path);
        assert!(got.summary.messages <= 3_000);
        if let Some(error) = got.summary.error.as_ref().map(|e| e.to_string()) {
            assert!(
                error.contains("byte ") && error.contains("message "),
                "{error}"
            );
        }
        // Everything before the damage is applied exactly as in the clean prefix: the same
        // top-of-book rows up to the damaged message, whatever happens after it.
        let first_damaged = damaged_index as u64 + 1;
        assert_eq!(
            rows_before(&got.bbo, first_damaged),
            rows_before(&prefix.bbo, first_damaged),
            "case {case}: damage at byte {at} (message {first_damaged}) changed what came before"
        );
        // Where nothing from the damaged message on was applied (a cut, or corruption that
        // stopped the replay there), the books kept are the clean prefix's books.
        let stopped_there =
            got.summary.error.is_some() && got.summary.messages == damaged_index as u64;
        if truncated || stopped_there {
            assert_eq!(
                got.summary.messages, damaged_index as u64,
                "case {case}: a cut file applies its whole messages only"
            );
            assert_eq!(
                got.depth, prefix.depth,
                "case {case}: the books kept before byte {at} differ from the prefix's"
            );
            assert_eq!(got.bbo, prefix.bbo, "case {case}");
            books_compared += 1;
            stopped_at_damage += usize::from(!truncated);
        }
    }
    // The comparisons above really ran, for cuts and for corruption that stopped the replay.
    assert!(
        books_compared >= 100,
        "{books_compared} cases compared books"
    );
    assert!(stopped_at_damage > 0, "no corruption stopped the replay");
}
