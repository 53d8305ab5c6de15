//! Errors from the operating system name the operation and the file.

use ticklane_feed::capture::{CaptureErrorKind, CaptureReader, IoOp, ReadOptions};

#[test]
fn a_missing_file_says_cannot_open_and_its_path() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("missing.itch50");
    let err = CaptureReader::open(&path, ReadOptions::default())
        .err()
        .expect("no such file");
    assert!(matches!(
        err.kind,
        CaptureErrorKind::Io { op: IoOp::Open, .. }
    ));
    let text = err.to_string();
    assert!(
        text.starts_with(&format!("cannot open {}: ", path.display())),
        "{text}"
    );
    // The position is meaningless before the file is open.
    assert!(!text.contains("byte 0"), "{text}");
}

#[test]
fn a_directory_says_what_failed_on_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    // Opening a directory read-only succeeds on Linux; reading its first bytes fails.
    let err = CaptureReader::open(dir.path(), ReadOptions::default())
        .err()
        .expect("a directory is not a capture");
    let CaptureErrorKind::Io { op, .. } = &err.kind else {
        panic!("{err}");
    };
    let text = err.to_string();
    assert!(
        text.contains(&format!("cannot {op} {}", dir.path().display())),
        "{text}"
    );
    assert_eq!(*op, IoOp::Head);
    assert!(
        text.starts_with(&format!(
            "cannot read the first bytes of {}: ",
            dir.path().display()
        )),
        "{text}"
    );
}
