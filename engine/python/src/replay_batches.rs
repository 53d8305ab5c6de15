//! A replay's top-of-book rows as Arrow batches, iterated from Python: `run_replay` (the
//! `ticklane replay` command's own call) runs on an engine thread and hands its rows over
//! in pieces of at most [`PIECE`] rows on a bounded channel, so the engine runs ahead by at
//! most [`AHEAD`] batches and memory stays flat however long the day. Python moves each
//! piece into the batch's columns as it comes, with the GIL released, waiting a tenth of a
//! second at a time so that Ctrl-C is felt; an iterator dropped or interrupted mid-way
//! stops the replay (its next hand-off finds no one).
#![forbid(unsafe_code)]

use std::path::PathBuf;
use std::sync::mpsc::{sync_channel, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::thread::JoinHandle;

use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use ticklane_book::BboRow;
use ticklane_engine::dbn_out::SessionDate;
use ticklane_engine::parquet_out::BboColumns;
use ticklane_engine::replay::{is_dbn_input, ReplayRun};
use ticklane_engine::row_chunks::RowChunks;

use crate::arrow_batch::ArrowBatch;
use crate::bbo_shape::BboShape;
use crate::engine_thread::{spawn_replay, WAIT};
use crate::replay_end::ended;
use crate::request::{replay_request, with_common};

/// Batches the engine may have made and Python not yet taken.
pub const AHEAD: usize = 2;

/// The most rows the engine hands over at once: Python makes a batch's columns piece by
/// piece as they come, while the engine goes on, rather than all at the end of a batch.
const PIECE: usize = 1 << 16;

/// The replay's rows, batch by batch.
#[pyclass(module = "ticklane._native", name = "BboBatches")]
pub struct BboBatches {
    state: Mutex<State>,
}

struct State {
    /// The input, as the errors name it.
    input: PathBuf,
    /// `None` once the replay has ended (or was stopped).
    from: Option<Receiver<Vec<BboRow>>>,
    engine: Option<JoinHandle<anyhow::Result<ReplayRun>>>,
    /// The batch being filled, and the rows a batch holds.
    columns: BboColumns,
    rows: usize,
    /// The piece the engine sent last, as far as it has been taken.
    pending: Pending,
    /// Dollars, `ts_event`.
    shape: BboShape,
    /// The midnight the input itself dates its rows by (a DBN input), which `ts_event`
    /// takes over the date given or the file name's.
    input_midnight: Arc<OnceLock<u64>>,
    /// The summary JSON, once the replay has ended.
    summary: Option<String>,
}

/// Starts replaying `path` on an engine thread; its top-of-book rows come in batches of
/// `rows`, in `price` ("int" or "float") prices.
#[pyfunction]
#[pyo3(signature = (
    path, rows, date=None, symbols=String::new(), between=String::new(), threads=1,
    price="int".to_string(),
))]
pub fn bbo_batches(
    path: PathBuf,
    rows: usize,
    date: Option<String>,
    symbols: String,
    between: String,
    threads: usize,
    price: String,
) -> PyResult<BboBatches> {
    if rows == 0 {
        return Err(PyValueError::new_err("rows must be at least 1"));
    }
    let float_prices = match price.as_str() {
        "int" => false,
        "float" => true,
        other => {
            return Err(PyValueError::new_err(format!(
                "price={other:?}: give \"int\" (1/10,000 dollars) or \"float\" (dollars)"
            )))
        }
    };
    let mut request = with_common(
        replay_request(path),
        date.as_deref(),
        symbols,
        between,
        threads,
    )?;
    // A DBN input dates its own rows (`input_midnight`); an ITCH input by `date=`, else
    // its file name.
    let session = match is_dbn_input(&request.input) {
        true => None,
        false => request
            .date
            .or_else(|| SessionDate::from_file_name(&request.input).ok()),
    };
    let shape = BboShape {
        float_prices,
        midnight_utc_ns: session.map(SessionDate::midnight_utc_ns),
    };
    let piece = rows.min(PIECE);
    let (to, from) = sync_channel(AHEAD * rows.div_ceil(piece));
    let input_midnight = Arc::new(OnceLock::new());
    request.bbo_chunks = Some(RowChunks {
        rows: piece,
        to,
        midnight_utc_ns: Arc::clone(&input_midnight),
    });
    let input = request.input.clone();
    let engine = spawn_replay(request, |run| run)?;
    Ok(BboBatches {
        state: Mutex::new(State {
            input,
            from: Some(from),
            engine: Some(engine),
            columns: BboColumns::with_capacity(rows.min(1 << 20)),
            rows,
            pending: Pending::default(),
            shape,
            input_midnight,
            summary: None,
        }),
    })
}

/// A piece of rows from the engine and how many of them are taken.
#[derive(Default)]
struct Pending {
    rows: Vec<BboRow>,
    taken: usize,
}

impl Pending {
    fn is_empty(&self) -> bool {
        self.taken == self.rows.len()
    }

    fn refill(&mut self, rows: Vec<BboRow>) {
        self.rows = rows;
        self.taken = 0;
    }

    /// Moves rows into `columns` until they hold `rows` rows or this piece is used up.
    fn move_into(&mut self, columns: &mut BboColumns, rows: usize) {
        let room = rows.saturating_sub(columns.len());
        let end = self.rows.len().min(self.taken + room);
        for row in &self.rows[self.taken..end] {
            columns.push(row);
        }
        self.taken = end;
    }
}

impl State {
    /// The rows gathered so far, as a batch of the asked shape.
    fn batch(&mut self, py: Python<'_>) -> PyResult<ArrowBatch> {
        let mut shape = self.shape;
        if let Some(&midnight) = self.input_midnight.get() {
            shape.midnight_utc_ns = Some(midnight);
        }
        let columns = &mut self.columns;
        py.detach(move || shape.apply(columns.finish()))
            .map(ArrowBatch::new)
            .map_err(|e| PyRuntimeError::new_err(e.to_string()))
    }

    /// The replay has ended: its summary, or the error that ended it.
    fn end(&mut self, py: Python<'_>) -> PyResult<()> {
        self.from = None;
        let Some(engine) = self.engine.take() else {
            return Ok(());
        };
        let run = py
            .detach(move || engine.join())
            .map_err(|_| PyRuntimeError::new_err("the replay thread panicked"))?;
        let end = ended(py, &self.input, run);
        self.summary = end.summary;
        match end.error {
            Some(error) => Err(error),
            None => Ok(()),
        }
    }
}

#[pymethods]
impl BboBatches {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    /// The next batch of rows, `None` (StopIteration) at the end.
    fn __next__(&self, py: Python<'_>) -> PyResult<Option<ArrowBatch>> {
        let mut guard = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let state = &mut *guard;
        loop {
            if state.columns.len() == state.rows {
                return state.batch(py).map(Some);
            }
            let Some(from) = &mut state.from else {
                // The engine has sent everything: the rows left, then its end.
                if !state.columns.is_empty() {
                    return state.batch(py).map(Some);
                }
                state.end(py)?;
                return Ok(None);
            };
            let (columns, pending, rows) = (&mut state.columns, &mut state.pending, state.rows);
            let got = py.detach(move || {
                if pending.is_empty() {
                    pending.refill(from.recv_timeout(WAIT)?);
                }
                pending.move_into(columns, rows);
                Ok(())
            });
            match got {
                Ok(()) => {}
                Err(RecvTimeoutError::Timeout) => {
                    if let Err(interrupted) = py.check_signals() {
                        // Dropping the receiver stops the engine at its next hand-off.
                        state.from = None;
                        state.engine = None;
                        return Err(interrupted);
                    }
                }
                Err(RecvTimeoutError::Disconnected) => state.from = None,
            }
        }
    }

    /// The replay's summary as JSON (the CLI's `--summary-json`), once it has ended.
    fn summary_json(&self) -> Option<String> {
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .summary
            .clone()
    }
}
