//! `ticklane replay`'s code path on damaged ITCH50 length prefixes: a 0xFFFF prefix in the
//! middle of a day stops the replay at that frame, with everything before it applied, and
//! the RITCH hint comes only for a file whose prefixes are really zeroed, which
//! `--recover-lengths` then replays to the books of the intact file.

use std::path::Path;

use ticklane_engine::book::BookConfig;
use ticklane_engine::replay::{replay_file, ReplayOptions, ReplaySummary};
use ticklane_sim::GenConfig;

use crate::util;

fn replay(input: &Path, book_out: &Path, recover_lengths: bool) -> ReplaySummary {
    replay_file(&ReplayOptions {
        input: input.to_path_buf(),
        book_out: Some(book_out.to_path_buf()),
        depth: 5,
        recover_lengths,
        books: BookConfig {
            max_orders: 1 << 16,
            max_books: 64,
            levels_per_side: 1024,
        },
        ..ReplayOptions::default()
    })
    .unwrap_or_else(|e| panic!("{}: {e}", input.display()))
    .summary
}

/// Byte offsets of each frame's length prefix, walking the prefixes as BinaryFILE lays
/// them out.
fn frame_offsets(bytes: &[u8]) -> Vec<usize> {
    let mut offsets = Vec::new();
    let mut at = 0;
    while at + 2 <= bytes.len() {
        offsets.push(at);
        at += 2 + usize::from(u16::from_be_bytes([bytes[at], bytes[at + 1]]));
    }
    assert_eq!(at, bytes.len(), "the generated day is well framed");
    offsets
}

fn generated_day(dir: &Path) -> (std::path::PathBuf, Vec<u8>) {
    let day = dir.join("day.itch50");
    util::write_generated(
        &day,
        GenConfig {
            messages: 20_000,
            seed: 8,
            ..GenConfig::default()
        },
    );
    let bytes = std::fs::read(&day).expect("read generated day");
    (day, bytes)
}

#[test]
fn a_ffff_prefix_mid_day_stops_there_and_keeps_what_came_before() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (_, bytes) = generated_day(dir.path());
    let offsets = frame_offsets(&bytes);
    let k = 10_000; // 1-based index of the damaged frame
    let at = offsets[k - 1];

    let damaged = dir.path().join("damaged.itch50");
    let mut d = bytes.clone();
    d[at..at + 2].copy_from_slice(&[0xff, 0xff]);
    std::fs::write(&damaged, &d).expect("write");
    let s = replay(&damaged, &dir.path().join("damaged.csv"), false);
    assert_eq!(s.messages, k as u64 - 1);
    let error = s.error.expect("the damage is reported").to_string();
    for needle in [
        "damaged.itch50".to_string(),
        format!("byte {at}, message {k}"),
        "length prefix says 65535 bytes".to_string(),
        "the file is corrupt here".to_string(),
    ] {
        assert!(error.contains(&needle), "{needle:?} missing from: {error}");
    }
    assert!(!error.contains("RITCH"), "{error}");
    assert!(!error.contains("--recover-lengths"), "{error}");

    // The books kept are those of the frames before the damage, replayed on their own.
    let prefix = dir.path().join("prefix.itch50");
    std::fs::write(&prefix, &bytes[..at]).expect("write");
    let p = replay(&prefix, &dir.path().join("prefix.csv"), false);
    assert_eq!(
        (p.messages, p.error.map(|e| e.to_string())),
        (k as u64 - 1, None)
    );
    let kept = std::fs::read(dir.path().join("damaged.csv")).expect("book csv");
    let expected = std::fs::read(dir.path().join("prefix.csv")).expect("book csv");
    assert!(kept.len() > 100, "the day has live orders at message {k}");
    assert_eq!(kept, expected);
}

#[test]
fn zeroed_prefixes_get_the_hint_and_recover_lengths_gives_the_intact_books() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (day, bytes) = generated_day(dir.path());
    let mut zeroed = bytes.clone();
    for at in frame_offsets(&bytes) {
        zeroed[at..at + 2].fill(0);
    }
    let ritch = dir.path().join("ritch.itch50");
    std::fs::write(&ritch, &zeroed).expect("write");

    let s = replay(&ritch, &dir.path().join("ritch.csv"), false);
    assert_eq!(s.messages, 0);
    let error = s.error.expect("zeroed prefixes are an error").to_string();
    for needle in ["byte 0, message 1", "RITCH", "--recover-lengths"] {
        assert!(error.contains(needle), "{needle:?} missing from: {error}");
    }

    let recovered = replay(&ritch, &dir.path().join("recovered.csv"), true);
    let intact = replay(&day, &dir.path().join("intact.csv"), false);
    assert_eq!(
        (recovered.messages, recovered.error.map(|e| e.to_string())),
        (20_000, None)
    );
    assert_eq!(intact.messages, 20_000);
    assert_eq!(
        std::fs::read(dir.path().join("recovered.csv")).expect("csv"),
        std::fs::read(dir.path().join("intact.csv")).expect("csv")
    );
}
