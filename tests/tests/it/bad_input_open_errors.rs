//! `ticklane replay` on an input it cannot open: the error names the operation and the
//! path, once, with no position that does not exist yet.

use ticklane_engine::replay::{replay_file, ReplayError, ReplayOptions};

#[test]
fn a_missing_input_says_cannot_open_and_names_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let input = dir.path().join("no-such-day.itch50");
    let err = replay_file(&ReplayOptions {
        input: input.clone(),
        ..ReplayOptions::default()
    })
    .err()
    .expect("nothing to open");
    assert!(matches!(err, ReplayError::Open(_)), "{err}");
    let text = err.to_string();
    let path = input.display().to_string();
    assert!(text.starts_with(&format!("cannot open {path}: ")), "{text}");
    assert_eq!(text.matches(&path).count(), 1, "{text}");
    assert!(!text.contains("byte 0"), "{text}");
}
