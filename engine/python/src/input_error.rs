//! `ticklane.InputError`: an input that could not be read on, with where (the file, the
//! byte offset and the 1-based message index, as the CLI names them; `None` where the
//! fault has no position, as when the file cannot be opened).
#![forbid(unsafe_code)]

use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use ticklane_engine::replay::{ReplayFault, ReplaySummary};

pyo3::create_exception!(
    ticklane,
    InputError,
    PyException,
    "An input that could not be read on: `path`, `offset` (bytes) and `message_index` \
     (1-based) say where (`None` where the fault has no place, as a file that cannot be \
     opened); everything before it was replayed, and `summary` is the replay's summary \
     (`None` where it could not start)."
);

pyo3::create_exception!(
    ticklane,
    LossDeclared,
    PyException,
    "The capture's MoldUDP64 sequence numbers declared messages lost (where `ticklane replay` \
     exits 3): `messages` counts them, `ranges` lists them as inclusive `(first, last)` \
     sequence pairs, and `summary` is the replay's summary; every batch was delivered first."
);

/// Where a fault is, when it says.
struct Place {
    path: Option<String>,
    offset: Option<u64>,
    index: Option<u64>,
}

fn place(fault: &ReplayFault) -> Place {
    match fault {
        ReplayFault::Decode {
            path,
            offset,
            index,
            ..
        } => Place {
            path: Some(path.display().to_string()),
            offset: Some(*offset),
            index: Some(*index),
        },
        ReplayFault::Input(e) => Place {
            path: Some(e.path.display().to_string()),
            offset: (e.index > 0).then_some(e.offset),
            index: (e.index > 0).then_some(e.index),
        },
        ReplayFault::NoFeedData { path, .. } => Place {
            path: Some(path.display().to_string()),
            offset: None,
            index: None,
        },
        ReplayFault::BookStage(_) => Place {
            path: None,
            offset: None,
            index: None,
        },
    }
}

/// `fault` as an `InputError` with its attributes.
pub fn input_error(py: Python<'_>, fault: &ReplayFault) -> PyErr {
    let err = InputError::new_err(fault.to_string());
    let place = place(fault);
    let value = err.value(py);
    let set = || -> PyResult<()> {
        value.setattr("path", place.path)?;
        value.setattr("offset", place.offset)?;
        value.setattr("message_index", place.index)?;
        Ok(())
    };
    match set() {
        Ok(()) => err,
        Err(e) => e,
    }
}

/// The replay's declared loss, `line` the CLI's words for it, as a `LossDeclared`.
pub fn loss_declared(py: Python<'_>, line: String, summary: &ReplaySummary) -> PyErr {
    let err = LossDeclared::new_err(line);
    let value = err.value(py);
    let ranges: Vec<(u64, u64)> = summary
        .packets
        .as_ref()
        .map(|p| {
            p.gap_ranges
                .iter()
                .map(|&[first, last]| (first, last))
                .collect()
        })
        .unwrap_or_default();
    let set = || -> PyResult<()> {
        value.setattr("messages", summary.declared_lost_messages())?;
        value.setattr("ranges", ranges)?;
        let summary = py
            .import("json")?
            .call_method1("loads", (summary.to_json(),))?;
        value.setattr("summary", summary)?;
        Ok(())
    };
    match set() {
        Ok(()) => err,
        Err(e) => e,
    }
}

/// An error of the replay that is not the input's (an output, the books' allocation) with
/// only its message, as an `InputError` without a position.
pub fn plain_error(py: Python<'_>, message: String, path: Option<String>) -> PyErr {
    let err = InputError::new_err(message);
    let value = err.value(py);
    let _ = value.setattr("path", path);
    let _ = value.setattr("offset", py.None());
    let _ = value.setattr("message_index", py.None());
    let _ = value.setattr("summary", py.None());
    err
}
