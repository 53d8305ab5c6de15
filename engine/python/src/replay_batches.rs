//! A replay's tables as Arrow batches, iterated from Python: `run_replay` (the
//! `ticklane replay` command's own call) runs on an engine thread and hands each table's
//! rows over in pieces of at most [`PIECE`] rows, every table on one bounded channel, so
//! the engine runs ahead by at most [`AHEAD`] batches and memory stays flat however long
//! the day. Python moves each piece into its table's columns as it comes, with the GIL
//! released, waiting a tenth of a second at a time so that Ctrl-C is felt; an iterator
//! dropped or interrupted mid-way stops the replay (its next hand-off finds no one).
//!
//! A batch is one step: it ends when any table asked for holds `rows` rows, and holds
//! every table asked for (some with fewer rows, or none). The depth, the books as the
//! replay left them, comes in the batches after the streams' last rows.
#![forbid(unsafe_code)]

use std::path::PathBuf;
use std::sync::mpsc::{sync_channel, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::thread::JoinHandle;

use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use ticklane_engine::book::Books;
use ticklane_engine::csv::each_final_level;
use ticklane_engine::dbn_out::SessionDate;
use ticklane_engine::output_filter::OutputFilter;
use ticklane_engine::parquet_out::BboColumns;
use ticklane_engine::replay::{is_dbn_input, ReplayRun};
use ticklane_engine::row_chunks::{Chunk, RowChunks, Tables};

use crate::arrow_batch::ArrowBatch;
use crate::engine_thread::{spawn_replay, WAIT};
use crate::replay_end::ended;
use crate::request::{replay_request, with_common};
use crate::table_columns::{
    Columns, DepthColumns, DepthRow, OrderColumns, StatusColumns, TradeColumns,
};
use crate::table_shape::TableShape;

/// Batches the engine may have made and Python not yet taken.
pub const AHEAD: usize = 2;

/// The most rows the engine hands over at once: Python makes a batch's columns piece by
/// piece as they come, while the engine goes on, rather than all at the end of a batch.
const PIECE: usize = 1 << 16;

/// The tables a replay's batches can hold, in the order a batch gives them.
pub const TABLE_NAMES: [&str; 5] = ["bbo", "trades", "orders", "status", "depth"];

/// The replay's tables, batch by batch.
#[pyclass(module = "ticklane._native", name = "TableBatches")]
pub struct TableBatches {
    state: Mutex<State>,
}

struct State {
    /// The input, as the errors name it.
    input: PathBuf,
    /// `None` once the engine has sent every row (or was stopped).
    from: Option<Receiver<Chunk>>,
    engine: Option<JoinHandle<anyhow::Result<ReplayRun>>>,
    /// The tables' columns being filled, and the rows a batch holds.
    gathered: Gathered,
    rows: usize,
    /// The piece the engine sent last, as far as it has been taken.
    pending: Option<Pending>,
    /// Dollars, `ts_event`.
    shape: TableShape,
    /// The midnight the input itself dates its rows by (a DBN input), which `ts_event`
    /// takes over the date given or the file name's.
    input_midnight: Arc<OnceLock<u64>>,
    /// The depth table's levels per side and the stocks it keeps, where asked.
    depth: Option<(usize, OutputFilter)>,
    /// The final depth, once the replay has ended, as far as it has been taken.
    depth_rows: Option<Pending<Vec<DepthRow>>>,
    /// What ended the replay, raised after its last batch.
    error: Option<PyErr>,
    /// Set once the replay's end was taken: its summary JSON, if it made one.
    summary: Option<Option<String>>,
}

/// Starts replaying `path` on an engine thread; its `tables` come in batches of `rows`,
/// in `price` ("int" or "float") prices, the depth `depth` levels per side.
#[pyfunction]
#[pyo3(signature = (
    path, rows, tables, date=None, symbols=String::new(), between=String::new(), threads=1,
    price="int".to_string(), depth=10,
))]
#[allow(clippy::too_many_arguments)] // Python's keywords, one each
pub fn table_batches(
    path: PathBuf,
    rows: usize,
    tables: Vec<String>,
    date: Option<String>,
    symbols: String,
    between: String,
    threads: usize,
    price: String,
    depth: usize,
) -> PyResult<TableBatches> {
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
    let asked = |name: &str| tables.iter().any(|t| t == name);
    if let Some(unknown) = tables.iter().find(|t| !TABLE_NAMES.contains(&t.as_str())) {
        return Err(PyValueError::new_err(format!(
            "no table {unknown:?}: the tables are {}",
            TABLE_NAMES.join(", ")
        )));
    }
    if tables.is_empty() {
        return Err(PyValueError::new_err(format!(
            "tables names none of {}",
            TABLE_NAMES.join(", ")
        )));
    }
    let filter = OutputFilter::parse(&symbols, &between)
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
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
    let shape = TableShape {
        float_prices,
        midnight_utc_ns: session.map(SessionDate::midnight_utc_ns),
    };
    let wanted = Tables {
        bbo: asked("bbo"),
        trades: asked("trades"),
        orders: asked("orders"),
        status: asked("status"),
    };
    let streams = [wanted.bbo, wanted.trades, wanted.orders, wanted.status];
    let streamed = streams.iter().filter(|&&t| t).count().max(1);
    let piece = rows.min(PIECE);
    let (to, from) = sync_channel(AHEAD * streamed * rows.div_ceil(piece));
    let input_midnight = Arc::new(OnceLock::new());
    request.chunks = Some(RowChunks {
        rows: piece,
        to,
        tables: wanted,
        midnight_utc_ns: Arc::clone(&input_midnight),
    });
    let input = request.input.clone();
    let engine = spawn_replay(request, |run| run)?;
    let room = rows.min(1 << 20);
    Ok(TableBatches {
        state: Mutex::new(State {
            input,
            from: Some(from),
            engine: Some(engine),
            gathered: Gathered {
                bbo: wanted.bbo.then(|| BboColumns::with_capacity(room)),
                trades: wanted.trades.then(TradeColumns::new),
                orders: wanted.orders.then(OrderColumns::new),
                status: wanted.status.then(StatusColumns::new),
                depth: asked("depth").then(DepthColumns::new),
            },
            rows,
            pending: None,
            shape,
            input_midnight,
            depth: asked("depth").then_some((depth, filter)),
            depth_rows: None,
            error: None,
            summary: None,
        }),
    })
}

/// Each table's columns, where asked.
struct Gathered {
    bbo: Option<BboColumns>,
    trades: Option<TradeColumns>,
    orders: Option<OrderColumns>,
    status: Option<StatusColumns>,
    depth: Option<DepthColumns>,
}

impl Gathered {
    /// The rows of the table that holds the most.
    fn fullest(&self) -> usize {
        [
            self.bbo.as_ref().map(Columns::len),
            self.trades.as_ref().map(Columns::len),
            self.orders.as_ref().map(Columns::len),
            self.status.as_ref().map(Columns::len),
            self.depth.as_ref().map(Columns::len),
        ]
        .into_iter()
        .flatten()
        .max()
        .unwrap_or(0)
    }

    /// Every table asked for, by name, as batches of `shape`; the columns start again.
    fn finish(&mut self, shape: TableShape) -> Result<Vec<(&'static str, ArrowBatch)>, String> {
        let mut out = Vec::new();
        let mut add = |name, batch, prices: &[&str]| -> Result<(), String> {
            let batch = shape.apply(batch, prices).map_err(|e| e.to_string())?;
            out.push((name, ArrowBatch::new(batch)));
            Ok(())
        };
        if let Some(c) = &mut self.bbo {
            add("bbo", Columns::finish(c), &["bid_px", "ask_px"])?;
        }
        if let Some(c) = &mut self.trades {
            add("trades", c.finish(), &["price"])?;
        }
        if let Some(c) = &mut self.orders {
            add("orders", c.finish(), &["price"])?;
        }
        if let Some(c) = &mut self.status {
            add(
                "status",
                c.finish(),
                &["far_price", "near_price", "reference_price"],
            )?;
        }
        if let Some(c) = &mut self.depth {
            add("depth", c.finish(), &["price"])?;
        }
        Ok(out)
    }
}

/// Rows from the engine and how many of them are taken.
struct Pending<R = Chunk> {
    rows: R,
    taken: usize,
}

impl<R> Pending<R> {
    fn new(rows: R) -> Self {
        Pending { rows, taken: 0 }
    }
}

/// Moves rows from `from[*taken..]` into `columns` until they hold `rows` rows or `from`
/// is used up; `true` once it is.
fn take_rows<R, C: Columns<R>>(
    from: &[R],
    taken: &mut usize,
    columns: Option<&mut C>,
    rows: usize,
) -> bool {
    // A table not asked for is sent no rows; were it, they would be dropped here.
    if let Some(columns) = columns {
        let room = rows.saturating_sub(columns.len());
        let end = from.len().min(*taken + room);
        for row in &from[*taken..end] {
            columns.push(row);
        }
        *taken = end;
    } else {
        *taken = from.len();
    }
    *taken == from.len()
}

impl Pending {
    /// Moves this piece's rows into its table's columns as far as they have room; `true`
    /// once the piece is used up.
    fn move_into(&mut self, gathered: &mut Gathered, rows: usize) -> bool {
        let taken = &mut self.taken;
        match &self.rows {
            Chunk::Bbo(r) => take_rows(r, taken, gathered.bbo.as_mut(), rows),
            Chunk::Trades(r) => take_rows(r, taken, gathered.trades.as_mut(), rows),
            Chunk::Orders(r) => take_rows(r, taken, gathered.orders.as_mut(), rows),
            Chunk::Status(r) => take_rows(r, taken, gathered.status.as_mut(), rows),
        }
    }
}

/// The final depth of `books`, `depth` levels per side of the stocks `filter` keeps.
fn depth_rows(books: &[Books], depth: usize, filter: &OutputFilter) -> Vec<DepthRow> {
    let mut rows = Vec::new();
    let _ = each_final_level::<std::convert::Infallible>(
        books,
        depth,
        filter,
        |locate, symbol, side, level, view| {
            rows.push(DepthRow::new(locate, symbol, side, level, view));
            Ok(())
        },
    );
    rows
}

impl State {
    /// The rows gathered so far, as a batch of the asked shape.
    fn batch(&mut self, py: Python<'_>) -> PyResult<Vec<(&'static str, ArrowBatch)>> {
        let mut shape = self.shape;
        if let Some(&midnight) = self.input_midnight.get() {
            shape.midnight_utc_ns = Some(midnight);
        }
        let gathered = &mut self.gathered;
        py.detach(move || gathered.finish(shape))
            .map_err(PyRuntimeError::new_err)
    }

    /// The engine has sent everything: takes its end (the summary, the error to raise
    /// after the last batch) and the books' final depth.
    fn end(&mut self, py: Python<'_>) -> PyResult<()> {
        self.from = None;
        let Some(engine) = self.engine.take() else {
            return Ok(());
        };
        let mut run = py
            .detach(move || engine.join())
            .map_err(|_| PyRuntimeError::new_err("the replay thread panicked"))?;
        if let (Some((depth, filter)), Ok(run)) = (&self.depth, &mut run) {
            let books = std::mem::take(&mut run.books);
            let rows = py.detach(|| depth_rows(&books, *depth, filter));
            self.depth_rows = Some(Pending::new(rows));
        }
        let end = ended(py, &self.input, run);
        self.summary = Some(end.summary);
        self.error = end.error;
        Ok(())
    }
}

#[pymethods]
impl TableBatches {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    /// The next batch, as `(table, rows)` pairs; `None` (StopIteration) at the end.
    fn __next__(&self, py: Python<'_>) -> PyResult<Option<Vec<(&'static str, ArrowBatch)>>> {
        let mut guard = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let state = &mut *guard;
        loop {
            if state.gathered.fullest() >= state.rows {
                return state.batch(py).map(Some);
            }
            let Some(from) = &mut state.from else {
                // The streams are over: the rows left, then the depth, then the end.
                if state.summary.is_none() {
                    if state.gathered.fullest() > 0 {
                        return state.batch(py).map(Some);
                    }
                    state.end(py)?;
                }
                if let Some(depth) = &mut state.depth_rows {
                    let rows = state.rows;
                    let used = take_rows(
                        &depth.rows,
                        &mut depth.taken,
                        state.gathered.depth.as_mut(),
                        rows,
                    );
                    if used {
                        state.depth_rows = None;
                    }
                    if state.gathered.fullest() > 0 {
                        return state.batch(py).map(Some);
                    }
                }
                return match state.error.take() {
                    Some(error) => Err(error),
                    None => Ok(None),
                };
            };
            let (gathered, pending, rows) = (&mut state.gathered, &mut state.pending, state.rows);
            let got = py.detach(move || {
                let piece = match pending {
                    Some(piece) => piece,
                    None => pending.insert(Pending::new(from.recv_timeout(WAIT)?)),
                };
                if piece.move_into(gathered, rows) {
                    *pending = None;
                }
                Ok(())
            });
            match got {
                Ok(()) => {}
                Err(RecvTimeoutError::Timeout) => {
                    if let Err(interrupted) = py.check_signals() {
                        // Dropping the receiver stops the engine at its next hand-off.
                        state.from = None;
                        state.engine = None;
                        state.summary = Some(None);
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
            .flatten()
    }
}
