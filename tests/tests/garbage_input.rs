//! Bad input never panics: random bytes behind each format's magic number, and valid files
//! cut or corrupted at random places, go through `ticklane replay`'s code path and end in a
//! summary (with an error naming the file, byte offset and message index) or an error,
//! never a panic. Everything before the damage is applied.

use std::path::Path;

use proptest::prelude::*;
use ticklane_engine::book::BookConfig;
use ticklane_engine::replay::{replay_file, ReplayOptions, ReplaySummary};
use ticklane_feed::sim::GenConfig;

mod util;

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
            if let Some(error) = summary.error {
                prop_assert!(error.contains("garbage.bin"), "the error names the file: {}", error);
            }
        }
    }
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
    assert_eq!((whole.messages, whole.error), (3_000, None));
    let mut rng = ticklane_feed::sim::SplitMix64::new(5);
    for case in 0..200 {
        let path = dir.path().join(format!("damaged-{case}.itch50"));
        let mut damaged = bytes.clone();
        let at = rng.below(damaged.len() as u64) as usize;
        if case % 2 == 0 {
            damaged.truncate(at);
        } else {
            damaged[at] = rng.next_u64() as u8;
        }
        std::fs::write(&path, &damaged).expect("write");
        let summary = replay(&path, false).expect("a readable file");
        assert!(summary.messages <= 3_000);
        if let Some(error) = &summary.error {
            assert!(
                error.contains("byte ") && error.contains("message "),
                "{error}"
            );
        }
    }
}
