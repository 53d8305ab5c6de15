//! The engine thread a replay runs on while Python waits for it with the GIL released, a
//! [`WAIT`] at a time so that Ctrl-C is felt between waits.
#![forbid(unsafe_code)]

use std::thread::JoinHandle;
use std::time::Duration;

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use ticklane_engine::replay::{run_replay, ReplayRequest, ReplayRun};

/// How long one wait for the engine lasts before Python's signals are checked.
pub const WAIT: Duration = Duration::from_millis(100);

/// Runs `request` (the command's own `run_replay`) on an engine thread; `then` takes its
/// result there.
pub fn spawn_replay<T: Send + 'static>(
    request: ReplayRequest,
    then: impl FnOnce(anyhow::Result<ReplayRun>) -> T + Send + 'static,
) -> PyResult<JoinHandle<T>> {
    std::thread::Builder::new()
        .name("ticklane-replay".into())
        .spawn(move || then(run_replay(&request, &mut |_note| {})))
        .map_err(|e| PyRuntimeError::new_err(format!("starting the replay thread: {e}")))
}
