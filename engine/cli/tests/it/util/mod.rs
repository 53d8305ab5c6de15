//! Helpers for the command's tests. The snapshot and serve helpers are the engine tests'
//! own files, compiled here too rather than copied; child processes, ports and packet bytes
//! come from `ticklane-testkit`.

// Shared with the engine's tests, of which this binary uses a part.
#[allow(dead_code)]
#[path = "../../../../tests/it/util/serve.rs"]
pub mod serve;
#[allow(dead_code)]
#[path = "../../../../tests/it/util/snapshot.rs"]
pub mod snapshot;

use std::path::Path;
use std::process::{Command, Output};

pub use ticklane_testkit::process::{free_port, wait_bounded, Watched, READY_WITHIN};

/// The `ticklane` binary cargo built for this crate's tests.
pub fn ticklane() -> Command {
    Command::new(env!("CARGO_BIN_EXE_ticklane"))
}

/// The child's stdout, after asserting it exited 0 (else both streams are shown).
pub fn ok(output: Output) -> String {
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "exit {}:\n{text}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    text
}

/// `path` as an argument.
pub fn utf8(path: &Path) -> &str {
    path.to_str().expect("utf-8 path")
}
