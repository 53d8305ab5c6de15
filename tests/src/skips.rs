//! Where the repository and the real captures beside it are, and how a test that cannot run
//! its oracle or read its data says so: under `CI=true` (set by `.ci/run`) it fails;
//! elsewhere it writes `SKIPPED` where a person running `cargo test` sees it.

use std::io::Write;
use std::path::{Path, PathBuf};

/// The repository root (this crate lives in `tests/`).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// True when running under CI (`CI=true`), where nothing may be skipped quietly.
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true")
}

/// Says that `test` skipped and why, where a person running `cargo test` sees it.
///
/// libtest captures what `println!` and `eprintln!` write and shows it only for failing
/// tests, so a skip printed with them vanishes. A write to the process's stderr handle
/// itself bypasses that capture (checked with `cargo test` on rustc 1.95: the line appears
/// between the test's name and its `ok`); every skip goes through here.
pub fn skip(test: &str, why: &str) {
    let line = format!("\n!!!! SKIPPED {test}: {why}\n");
    // Nothing sensible to do if stderr itself is gone.
    let _ = std::io::stderr().write_all(line.as_bytes());
}

/// `../shared/data` beside the repository, if it is there. Without it, `test` says loudly
/// that it skipped, except under CI, where it fails.
///
/// # Panics
///
/// Under `CI=true` when the folder is missing.
pub fn shared_data(test: &str) -> Option<PathBuf> {
    let dir = repo_root().join("../shared/data");
    if dir.is_dir() {
        return Some(dir);
    }
    assert!(
        !in_ci(),
        "CI=true but {} is missing: {test} reads the real captures there",
        dir.display()
    );
    skip(
        test,
        &format!(
            "{} not found; this test reads the real captures there",
            dir.display()
        ),
    );
    None
}
