//! `ticklane.replay(path, **outputs)`: the command's file outputs, written by the command's
//! own `run_replay` on an engine thread while Python waits with the GIL released, a tenth
//! of a second at a time so that Ctrl-C is felt. The summary comes back as JSON; a replay
//! the command would end with a non-zero status raises (see `replay_end`).
#![forbid(unsafe_code)]

use std::path::PathBuf;
use std::sync::mpsc::{channel, RecvTimeoutError};

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;

use crate::engine_thread::{spawn_replay, WAIT};
use crate::replay_end::ended;
use crate::request::{parsed, replay_request, with_common};

/// Replays `path` into the outputs named; returns the summary JSON.
#[pyfunction]
#[pyo3(signature = (
    path, *, bbo_out=None, book_out=None, depth=10, dbn_out=None, schema="mbo".to_string(),
    dataset=None, date=None, sample=None, sample_out=None, sample_depth=10,
    symbols=String::new(), between=String::new(), parquet_out=None,
    parquet_schema="bbo".to_string(), summary_json=None, recover_lengths=false, threads=1,
))]
#[allow(clippy::too_many_arguments)] // one keyword per flag of `ticklane replay`
pub fn replay_files(
    py: Python<'_>,
    path: PathBuf,
    bbo_out: Option<PathBuf>,
    book_out: Option<PathBuf>,
    depth: usize,
    dbn_out: Option<PathBuf>,
    schema: String,
    dataset: Option<String>,
    date: Option<String>,
    sample: Option<String>,
    sample_out: Option<PathBuf>,
    sample_depth: usize,
    symbols: String,
    between: String,
    parquet_out: Option<PathBuf>,
    parquet_schema: String,
    summary_json: Option<PathBuf>,
    recover_lengths: bool,
    threads: usize,
) -> PyResult<String> {
    let mut request = with_common(
        replay_request(path),
        date.as_deref(),
        symbols,
        between,
        threads,
    )?;
    if depth == 0 || sample_depth == 0 {
        return Err(pyo3::exceptions::PyValueError::new_err(
            "depth and sample_depth must be at least 1",
        ));
    }
    request.bbo_out = bbo_out;
    request.book_out = book_out;
    request.depth = depth;
    request.dbn_out = dbn_out;
    request.schema = parsed("schema", &schema)?;
    request.dataset = dataset.map(|d| parsed("dataset", &d)).transpose()?;
    request.sample = match (sample_out, sample) {
        (Some(out), Some(interval)) => Some((out, parsed("sample", &interval)?, sample_depth)),
        (None, None) => None,
        _ => {
            return Err(pyo3::exceptions::PyValueError::new_err(
                "sample and sample_out go together: the interval and the file",
            ))
        }
    };
    request.parquet_out = parquet_out;
    request.parquet_schema = parsed("parquet_schema", &parquet_schema)?;
    request.summary_json = summary_json;
    request.recover_lengths = recover_lengths;

    let input = request.input.clone();
    let (done, mut finished) = channel();
    spawn_replay(request, move |run| {
        let _ = done.send(run);
    })?;
    let run = loop {
        let waiting = &mut finished;
        match py.detach(move || waiting.recv_timeout(WAIT)) {
            Ok(run) => break run,
            Err(RecvTimeoutError::Timeout) => py.check_signals()?,
            Err(RecvTimeoutError::Disconnected) => {
                return Err(PyRuntimeError::new_err("the replay thread panicked"))
            }
        }
    };
    let end = ended(py, &input, run);
    match (end.error, end.summary) {
        (Some(error), _) => Err(error),
        (None, Some(summary)) => Ok(summary),
        (None, None) => Err(PyRuntimeError::new_err(
            "the replay ended without a summary",
        )),
    }
}
