//! The independent implementation the cross-checks compare against: itch-book (PyPI, C++
//! core), driven by the scripts in `tests/oracle/`.
//!
//! The Python is `$TICKLANE_ORACLE_PYTHON`, else `.venv/bin/python` at the repo root. If it
//! cannot import `itch_book`, a test fails under `CI=true` and otherwise says loudly that it
//! skipped. The one exception: `.ci/run` sets `TICKLANE_ORACLE_SKIP=<why>` when PyPI itself
//! could not be reached (and prints `ORACLE SKIPPED` in its own output); then the test skips
//! loudly even under CI.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::skips::{in_ci, repo_root, skip};

/// A Python that can import `itch_book`, or `None` after saying loudly why `test` skips.
///
/// # Panics
///
/// Under `CI=true` when no such Python exists and `.ci/run` did not decide to skip.
pub fn python(test: &str) -> Option<PathBuf> {
    python_with(test, "itch_book", "itch-book")
}

/// A Python that can import `module` (PyPI's `package`), or `None` after saying loudly why
/// `test` skips; the same rules as [`python`].
///
/// # Panics
///
/// Under `CI=true` when no such Python exists and `.ci/run` did not decide to skip.
pub fn python_with(test: &str, module: &str, package: &str) -> Option<PathBuf> {
    if let Some(reason) = std::env::var_os("TICKLANE_ORACLE_SKIP") {
        let reason = reason.to_string_lossy();
        assert!(
            !reason.trim().is_empty(),
            "TICKLANE_ORACLE_SKIP is set but empty: the skip must say why"
        );
        skip(test, &format!("ORACLE SKIPPED by .ci/run: {reason}"));
        return None;
    }
    let python = std::env::var_os("TICKLANE_ORACLE_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join(".venv/bin/python"));
    let has_module = python.exists()
        && Command::new(&python)
            .args(["-c", &format!("import {module}")])
            .status()
            .is_ok_and(|s| s.success());
    if has_module {
        return Some(python);
    }
    let why = format!("no Python with {package} at {}", python.display());
    assert!(
        !in_ci(),
        "CI=true but {why}: .ci/run must install the oracle"
    );
    skip(
        test,
        &format!("ORACLE SKIPPED: {why} (run .ci/run, or set TICKLANE_ORACLE_PYTHON)"),
    );
    None
}

/// Runs `tests/oracle/<script>` with `args`; returns its stdout.
///
/// # Panics
///
/// If the script cannot start or exits unsuccessfully (its output is in the message).
pub fn run(python: &Path, script: &str, args: &[&Path], extra: &[&str]) -> String {
    let out = Command::new(python)
        .arg(repo_root().join("tests/oracle").join(script))
        .args(args)
        .args(extra)
        .output()
        .unwrap_or_else(|e| panic!("running {script}: {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{script} failed ({}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}
