//! Helpers shared by the integration tests.
#![allow(dead_code)]

pub mod counting_allocator;
pub mod oracle;

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use ticklane_feed::sim::{write_itch50, GenConfig};

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
/// between the test's name and its `ok`); every skip in this crate goes through here.
pub fn skip(test: &str, why: &str) {
    let line = format!("\n!!!! SKIPPED {test}: {why}\n");
    // Nothing sensible to do if stderr itself is gone.
    let _ = std::io::stderr().write_all(line.as_bytes());
}

/// `../shared/data` beside the repository, if it is there. Without it, `test` says loudly
/// that it skipped, except under CI, where it fails.
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
