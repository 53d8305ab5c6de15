//! How a replay's end reaches Python: its summary (the JSON of `--summary-json`) and, where
//! the command would not exit 0, the exception that says why. The exit statuses map one to
//! one: 1 (the input could not be read on) is `InputError`, 3 (messages declared lost) is
//! `LossDeclared`, 2 (what was asked does not go together) is `ValueError`; an output that
//! could not be written is `OSError`.
#![forbid(unsafe_code)]

use std::path::Path;

use pyo3::exceptions::{PyOSError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use ticklane_engine::output_filter::FilterError;
use ticklane_engine::replay::{declared_lost_line, ReplayError, ReplayRun};
use ticklane_engine::views::{error_text, ExitStatus};

use crate::input_error::{input_error, loss_declared, plain_error};

/// A finished replay, as Python sees it.
pub struct Ended {
    /// The summary as JSON; `None` where the replay could not start or finish its outputs.
    pub summary: Option<String>,
    /// The exception, unless the command would have exited 0.
    pub error: Option<PyErr>,
}

/// The end of the replay of `input` that `run` returned.
pub fn ended(py: Python<'_>, input: &Path, run: anyhow::Result<ReplayRun>) -> Ended {
    match run {
        Ok(run) => {
            let summary = run.summary.to_json();
            let error = match &run.summary.error {
                Some(fault) => Some(with_summary(py, input_error(py, fault), &summary)),
                None => declared_lost_line(input, &run.summary)
                    .map(|line| loss_declared(py, line, &run.summary)),
            };
            Ended {
                summary: Some(summary),
                error,
            }
        }
        Err(e) => Ended {
            summary: None,
            error: Some(replay_error(py, &e)),
        },
    }
}

/// `error` with the replay's summary as its `summary` attribute (a dict).
fn with_summary(py: Python<'_>, error: PyErr, summary: &str) -> PyErr {
    let set = || -> PyResult<()> {
        let summary = py.import("json")?.call_method1("loads", (summary,))?;
        error.value(py).setattr("summary", summary)
    };
    match set() {
        Ok(()) => error,
        Err(e) => e,
    }
}

/// A replay that could not start or finish its outputs, as the exception for its cause.
pub fn replay_error(py: Python<'_>, e: &anyhow::Error) -> PyErr {
    let text = error_text(e);
    if let Some(ReplayError::Open(open)) = e.downcast_ref::<ReplayError>() {
        return plain_error(py, text, Some(open.path.display().to_string()));
    }
    let asked_wrong = ExitStatus::of_error(e.as_ref()) == ExitStatus::Usage
        || e.chain().any(|cause| cause.is::<FilterError>());
    if asked_wrong {
        return PyValueError::new_err(text);
    }
    match e.downcast_ref::<ReplayError>() {
        Some(ReplayError::Output { .. }) => PyOSError::new_err(text),
        _ => PyRuntimeError::new_err(text),
    }
}
