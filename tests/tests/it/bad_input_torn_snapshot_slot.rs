//! A snapshot with one torn slot (a writer killed mid-write leaves its seqlock sequence odd):
//! `book --csv` (the library's export) and the Python reader print every other book and name
//! the torn slot, rather than print nothing. The file is written through the writer, then
//! the slot's sequence word is made odd with plain file I/O at the offset the layout table
//! (`ticklane_engine::snapshot::layout`) gives; the expected CSV is the replay's own
//! `--book-out` of the same books, less the torn instrument's rows.

use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;
use std::process::Command;

use ticklane_engine::csv::{export_snapshot_book_csv, write_book_csv, write_snapshot_book_csv};
use ticklane_engine::replay::{replay_file, ReplayOptions};
use ticklane_engine::snapshot::{
    read_all, ReadError, SnapshotError, SnapshotReader, SnapshotWriter,
};
use ticklane_feed::itch::Nanos;
use ticklane_sim::GenConfig;

use crate::util;

const DEPTH: usize = 5;
/// The slot torn.
const TORN: usize = 1;

/// The layout table (`ticklane_engine::snapshot::layout`): the header is 128 bytes, slot `i`
/// starts at `header_size + i * slot_size` with `slot_size = 136 + 32 * depth`, and its first
/// 8 bytes are the sequence word, in the writer's (here: this host's) byte order.
fn sequence_offset(slot: usize) -> u64 {
    (128 + slot * (136 + 32 * DEPTH)) as u64
}

/// Makes slot `slot`'s sequence odd, as a writer killed between its two stores leaves it.
fn tear(path: &Path, slot: usize) {
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .expect("open snapshot");
    let at = sequence_offset(slot);
    let mut word = [0u8; 8];
    file.seek(SeekFrom::Start(at)).expect("seek");
    file.read_exact(&mut word).expect("read sequence");
    let sequence = u64::from_ne_bytes(word);
    assert_eq!(sequence % 2, 0, "a published slot has an even sequence");
    assert!(sequence > 0, "the slot was published");
    file.seek(SeekFrom::Start(at)).expect("seek");
    file.write_all(&(sequence + 1).to_ne_bytes())
        .expect("write sequence");
}

struct Torn {
    _dir: tempfile::TempDir,
    snapshot: std::path::PathBuf,
    /// The replay's book CSV without the torn instrument's rows.
    expected: String,
    torn_locate: u16,
}

fn torn_snapshot() -> Torn {
    let dir = tempfile::tempdir().expect("tempdir");
    let day = dir.path().join("day.itch50");
    util::write_generated(
        &day,
        GenConfig {
            messages: 20_000,
            seed: 4,
            stocks: 5,
            hard_cases: false,
            crossing: false,
        },
    );
    let books = replay_file(&ReplayOptions {
        input: day,
        depth: DEPTH,
        ..ReplayOptions::default()
    })
    .expect("replay")
    .books;
    let snapshot = dir.path().join("books.snap");
    let mut writer = SnapshotWriter::create(&snapshot, 16, DEPTH).expect("create snapshot");
    let locates = books.locates();
    assert!(
        locates.len() > TORN + 1,
        "books on both sides of the torn slot"
    );
    for &locate in &locates {
        writer
            .publish(&books, locate, 1, Nanos(0))
            .expect("room for every book");
    }
    let torn_locate = locates
        .iter()
        .copied()
        .find(|&l| writer.slot_of(l) == Some(TORN))
        .expect("a book in the torn slot")
        .0;
    drop(writer);
    tear(&snapshot, TORN);

    let all =
        String::from_utf8(write_book_csv(&books, DEPTH, Vec::new()).expect("csv")).expect("utf-8");
    let expected: String = all
        .lines()
        .filter(|line| !line.starts_with(&format!("{torn_locate},")))
        .map(|line| format!("{line}\n"))
        .collect();
    assert!(expected.len() < all.len(), "the torn book had rows");
    Torn {
        _dir: dir,
        snapshot,
        expected,
        torn_locate,
    }
}

#[test]
fn the_library_exports_every_readable_book_and_names_the_torn_slot() {
    let t = torn_snapshot();
    let reader = SnapshotReader::open(&t.snapshot)
        .expect("open")
        .with_read_attempts(64);

    let export = export_snapshot_book_csv(&reader, DEPTH, Vec::new()).expect("export");
    assert_eq!(
        String::from_utf8(export.sink.clone()).expect("utf-8"),
        t.expected
    );
    assert_eq!(export.unreadable.len(), 1, "{:?}", export.unreadable);
    let torn = export.unreadable[0];
    assert_eq!(torn.slot, TORN);
    assert!(
        matches!(torn.error, ReadError::WriteInProgress { sequence, .. } if sequence % 2 == 1),
        "{torn}"
    );
    assert!(torn.to_string().starts_with("snapshot slot 1: "), "{torn}");

    let slots = read_all(&reader);
    assert_eq!(slots.unreadable, export.unreadable);
    assert!(slots.states.iter().all(|s| s.locate.0 != t.torn_locate));
    assert_eq!(slots.states.len(), reader.slots().len() - 1);

    // The strict form writes the same rows, then fails naming the slot.
    let mut strict = Vec::new();
    let err =
        write_snapshot_book_csv(&reader, DEPTH, &mut strict).expect_err("a torn slot is an error");
    assert!(
        matches!(err, SnapshotError::Read { slot: TORN, .. }),
        "{err}"
    );
    assert_eq!(String::from_utf8(strict).expect("utf-8"), t.expected);
}

#[test]
fn the_python_reader_prints_every_readable_book_and_names_the_torn_slot() {
    let t = torn_snapshot();
    let script = util::repo_root().join("tests/oracle/snapshot_reader.py");
    let output = match Command::new("python3")
        .arg(&script)
        .arg(&t.snapshot)
        .arg("--csv")
        .output()
    {
        Ok(output) => output,
        Err(e) => {
            assert!(!util::in_ci(), "CI=true but python3 cannot run: {e}");
            util::skip(
                "the_python_reader_prints_every_readable_book_and_names_the_torn_slot",
                &format!("python3 cannot run: {e}"),
            );
            return;
        }
    };
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert_eq!(
        String::from_utf8(output.stdout).expect("utf-8"),
        t.expected,
        "{stderr}"
    );
    assert!(stderr.contains("slot 1 "), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
}
