//! Helpers shared by the integration tests.
#![allow(dead_code)]

pub mod counting_allocator;

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

/// `../shared/data` beside the repository, if it is there. Without it, a test says loudly
/// that it skipped, except under CI, where it fails.
pub fn shared_data() -> Option<PathBuf> {
    let dir = repo_root().join("../shared/data");
    if dir.is_dir() {
        return Some(dir);
    }
    assert!(!in_ci(), "CI=true but {} is missing", dir.display());
    println!(
        "SKIPPED: {} not found; this test reads the real captures there",
        dir.display()
    );
    None
}

/// Writes a generated ITCH50 file.
pub fn write_generated(path: &Path, config: GenConfig) {
    let mut out = BufWriter::new(File::create(path).expect("create generated file"));
    write_itch50(config, &mut out).expect("write generated file");
    out.flush().expect("flush generated file");
}
