//! The real captures in `../shared/data` through `ticklane replay`'s code path: the Nasdaq
//! pcaps decode with the packet, gap and message counts PROVENANCE.md gives, and the RITCH
//! file gets its clear error, then replays with `--recover-lengths`.

use std::path::Path;

use ticklane_engine::book::BookConfig;
use ticklane_engine::exit_status::ExitStatus;
use ticklane_engine::replay::{replay_file, ReplayOptions, ReplaySummary};

use crate::util;

fn replay(path: &Path, recover_lengths: bool) -> ReplaySummary {
    replay_file(&ReplayOptions {
        input: path.to_path_buf(),
        recover_lengths,
        books: BookConfig {
            max_orders: 1 << 16,
            max_books: 256,
            levels_per_side: 1024,
        },
        ..ReplayOptions::default()
    })
    .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    .summary
}

fn pcaps(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .expect("capture folder")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "pcap"))
        .collect();
    files.sort();
    files
}

/// The one live capture whose sequence jumps (PROVENANCE.md).
fn has_the_gap(file: &Path) -> bool {
    file.file_name()
        .is_some_and(|n| n == "Multiple.Packets.pcap")
}

#[test]
fn live_nasdaq_captures_decode_with_their_gap() {
    let Some(data) = util::shared_data("live_nasdaq_captures_decode_with_their_gap") else {
        return;
    };
    let files = pcaps(&data.join("pcap/nasdaq-itch50-live"));
    assert_eq!(files.len(), 8);
    let (mut packets, mut messages, mut gaps) = (0, 0, Vec::new());
    for file in &files {
        let s = replay(file, false);
        assert!(s.error.is_none(), "{}: {:?}", file.display(), s.error);
        assert_eq!(s.unknown_types, 0);
        // Only the capture with the gap declares loss, and that is its own exit status (3).
        let expected = if has_the_gap(file) {
            ExitStatus::DeclaredLost
        } else {
            ExitStatus::Success
        };
        assert_eq!(s.exit_status(), expected, "{}", file.display());
        let p = s.packets.expect("pcap inputs report packets");
        packets += p.packets;
        messages += s.messages;
        gaps.extend(p.gap_ranges);
        assert_eq!(p.duplicates, 0);
    }
    assert_eq!((packets, messages), (9, 46));
    // Multiple.Packets.pcap jumps from 14,764,496 to 19,009,117.
    assert_eq!(gaps, vec![[14_764_497, 19_009_116]]);
}

#[test]
fn sanitized_captures_replay_unsequenced() {
    let Some(data) = util::shared_data("sanitized_captures_replay_unsequenced") else {
        return;
    };
    let files = pcaps(&data.join("pcap/nasdaq-itch50-sanitized"));
    assert_eq!(files.len(), 15);
    let (mut packets, mut messages) = (0, 0);
    for file in &files {
        let s = replay(file, false);
        assert!(s.error.is_none(), "{}: {:?}", file.display(), s.error);
        let p = s.packets.expect("pcap inputs report packets");
        assert_eq!(
            (p.gaps, p.duplicates),
            (0, 0),
            "zeroed sequences are not gaps"
        );
        packets += p.packets;
        messages += s.messages;
    }
    assert_eq!((packets, messages), (71, 71));
}

#[test]
fn ritch_file_gets_a_clear_error_then_recovers() {
    let Some(data) = util::shared_data("ritch_file_gets_a_clear_error_then_recovers") else {
        return;
    };
    let file = data.join("ritch/ex20101224.TEST_ITCH_50");
    let s = replay(&file, false);
    let error = s
        .error
        .expect("zeroed length prefixes are an error")
        .to_string();
    for needle in [
        "ex20101224.TEST_ITCH_50",
        "byte 0",
        "message 1",
        "length prefix is 0",
        "--recover-lengths",
    ] {
        assert!(error.contains(needle), "{needle:?} missing from: {error}");
    }
    assert_eq!(s.messages, 0);

    let s = replay(&file, true);
    assert!(s.error.is_none(), "{:?}", s.error);
    assert_eq!(s.messages, 12_012);
    let by_type: Vec<(char, u64)> = s.by_type.seen().map(|(t, n)| (t as char, n)).collect();
    assert_eq!(
        by_type,
        [
            ('S', 6),
            ('R', 3),
            ('H', 3),
            ('A', 4997),
            ('F', 3),
            ('E', 198),
            ('X', 45),
            ('D', 1745),
            ('U', 12),
            ('P', 5000)
        ]
    );
    // PROVENANCE.md: 117 references to orders never added, and books that end crossed.
    assert_eq!(s.book.unknown_refs, 117);
    assert!(s.crossed_books_end > 0);
}
