//! `ticklane.Snapshot`: the memory-mapped snapshot a running engine publishes its books into,
//! read from Python by the engine's own reader (the seqlock copy, the bounded retries, the
//! header's validation, the reopen across a writer's restart), as dicts or Arrow tables.
#![forbid(unsafe_code)]

use std::path::PathBuf;

use pyo3::exceptions::{PyException, PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use ticklane_engine::book::{LevelView, Side};
use ticklane_engine::snapshot::{
    read_all, wall_clock_ns, InstrumentState, SnapshotError as OpenError, SnapshotHeader,
    SnapshotReader, SnapshotSlots,
};
use ticklane_engine::views::{header_status, SILENT_AFTER_NS};

use super::arrow_batch::ArrowBatch;
use super::snapshot_columns::{snapshot_books, BOOK_PRICES};
use super::table_columns::{Columns, DepthColumns, DepthRow};
use super::table_shape::TableShape;

pyo3::create_exception!(
    ticklane,
    SnapshotError,
    PyValueError,
    "The file is not a snapshot this reader can trust (not a ticklane snapshot, another byte \
     order or layout version, sizes that disagree with each other or with the file)."
);

pyo3::create_exception!(
    ticklane,
    SlotUnreadable,
    PyException,
    "Some books could not be copied consistently within the read bound (a writer killed in \
     the middle of a write leaves its slot so until a new writer rewrites it): `slots` lists \
     them as `(slot, reason)`, and `readable` holds what was asked for without them (the \
     list of dicts or the Arrow table), every other book as it stood."
);

/// A snapshot file, mapped read-only.
///
/// ``Snapshot(path)`` maps the file a running (or finished, or killed) ``ticklane run``
/// publishes its books into and validates its header; it never writes to the file and never
/// waits on the writer. Each read copies every book consistently on its own (its seqlock),
/// retrying a bounded number of times: a book that cannot be copied so is reported, never
/// returned torn. A writer that restarts on the path renames a new file over it:
/// :attr:`replaced` tells, and :meth:`reopen_if_replaced` follows it.
///
/// Prices are integers in 1/10,000 dollars (``price="float"`` in :meth:`to_arrow`: dollars);
/// times are nanoseconds: exchange times since midnight, ``*_ns`` wall-clock times since the
/// Unix epoch.
#[pyclass(module = "ticklane", name = "Snapshot")]
pub struct Snapshot {
    reader: SnapshotReader,
}

/// `error` as a Python exception: the file's own I/O error as `OSError` (its errno subclass,
/// `FileNotFoundError` and the like), anything else as `SnapshotError`.
fn snapshot_error(error: OpenError) -> PyErr {
    match error {
        OpenError::Io { path, source } => match source.raw_os_error() {
            Some(errno) => PyOSError::new_err((
                errno,
                format!("snapshot {}: {source}", path.display()),
                path.display().to_string(),
            )),
            None => PyOSError::new_err(format!("snapshot {}: {source}", path.display())),
        },
        other => SnapshotError::new_err(other.to_string()),
    }
}

/// Whether a read wants prices in dollars.
fn float_prices(price: &str) -> PyResult<bool> {
    match price {
        "int" => Ok(false),
        "float" => Ok(true),
        other => Err(PyValueError::new_err(format!(
            "price must be \"int\" or \"float\", not {other:?}"
        ))),
    }
}

fn levels(side: &[LevelView], depth: usize) -> Vec<(u32, u64, u32)> {
    side.iter()
        .take(depth)
        .map(|l| (l.price.0, l.qty, l.orders))
        .collect()
}

/// One book as a dict.
fn book_dict<'py>(
    py: Python<'py>,
    state: &InstrumentState,
    depth: usize,
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("symbol", String::from_utf8_lossy(state.symbol()))?;
    d.set_item("locate", state.locate.0)?;
    d.set_item(
        "trading_state",
        state.trading_state.map(|s| char::from(s).to_string()),
    )?;
    d.set_item("stale", state.flags.is_stale())?;
    d.set_item("maybe_bad", state.flags.is_maybe_bad())?;
    d.set_item("crossed", state.flags.is_crossed())?;
    d.set_item("behind_since_ns", state.behind_since_ns)?;
    d.set_item("feed_seq", state.feed_seq)?;
    d.set_item("exchange_ts_ns", state.exchange_ts.0)?;
    d.set_item("updated_ns", state.updated_ns)?;
    d.set_item("publishes", state.publishes)?;
    d.set_item("sequence", state.sequence)?;
    d.set_item("bids", levels(&state.bids, depth))?;
    d.set_item("asks", levels(&state.asks, depth))?;
    let last = match state.last_trade {
        Some(t) => {
            let trade = PyDict::new(py);
            trade.set_item("price", t.price.0)?;
            trade.set_item("shares", t.shares)?;
            trade.set_item("timestamp_ns", t.timestamp.0)?;
            Some(trade)
        }
        None => None,
    };
    d.set_item("last_trade", last)?;
    d.set_item("trades", state.trades)?;
    d.set_item("traded_shares", state.traded_shares)?;
    Ok(d)
}

fn header_dict<'py>(
    py: Python<'py>,
    h: &SnapshotHeader,
    now_ns: u64,
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("writer_pid", h.writer_pid)?;
    d.set_item("created_ns", h.created_ns)?;
    d.set_item("heartbeat_ns", h.heartbeat_ns)?;
    d.set_item("instruments", h.instruments)?;
    d.set_item("capacity", h.slot_capacity)?;
    d.set_item("depth", h.depth)?;
    d.set_item("closed", h.is_closed())?;
    d.set_item(
        "writer_silent",
        !h.is_closed() && now_ns.saturating_sub(h.heartbeat_ns) > SILENT_AFTER_NS,
    )?;
    d.set_item("stale", h.is_stale())?;
    d.set_item("stale_since_ns", h.stale_since())?;
    d.set_item("line_state", h.line().map(|l| l.as_str()))?;
    d.set_item("maybe_bad", h.is_maybe_bad())?;
    d.set_item(
        "maybe_bad_since_ns",
        h.is_maybe_bad().then_some(h.maybe_bad_since_ns),
    )?;
    d.set_item("lost_messages", h.lost_messages)?;
    d.set_item("behind_ns", h.behind_ns)?;
    d.set_item("full_publications", h.full_publications)?;
    d.set_item("status", header_status(h, now_ns))?;
    Ok(d)
}

impl Snapshot {
    /// Every slot in use, read with the GIL released, in locate order (as `--book-out`).
    fn read_sorted(&self, py: Python<'_>) -> SnapshotSlots {
        py.detach(|| {
            let mut slots = read_all(&self.reader);
            slots.states.sort_by_key(|s| s.locate);
            slots
        })
    }

    /// The levels per side asked for, at most the file's.
    fn depth_of(&self, depth: Option<usize>) -> PyResult<usize> {
        match depth {
            Some(0) => Err(PyValueError::new_err("depth must be at least 1")),
            Some(d) => Ok(d.min(self.reader.depth())),
            None => Ok(self.reader.depth()),
        }
    }

    /// `readable`, or `SlotUnreadable` carrying it when `slots` left books out.
    fn complete<'py>(
        py: Python<'py>,
        slots: &SnapshotSlots,
        readable: Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        if slots.unreadable.is_empty() {
            return Ok(readable);
        }
        let reasons: Vec<(usize, String)> = slots
            .unreadable
            .iter()
            .map(|u| (u.slot, u.error.to_string()))
            .collect();
        let named: Vec<String> = slots.unreadable.iter().map(|u| u.to_string()).collect();
        let err = SlotUnreadable::new_err(format!(
            "{} of {} books left out: {}",
            slots.unreadable.len(),
            slots.unreadable.len() + slots.states.len(),
            named.join("; ")
        ));
        let value = err.value(py);
        value.setattr("slots", reasons)?;
        value.setattr("readable", readable)?;
        Err(err)
    }
}

#[pymethods]
impl Snapshot {
    #[new]
    fn open(path: PathBuf) -> PyResult<Self> {
        SnapshotReader::open(&path)
            .map(|reader| Snapshot { reader })
            .map_err(snapshot_error)
    }

    /// The file's path.
    #[getter]
    fn path(&self) -> String {
        self.reader.path().display().to_string()
    }

    /// The engine-wide state as it stands now: ``writer_pid``, ``created_ns`` and
    /// ``heartbeat_ns`` (the writer stamps it at least every second), ``instruments`` (books
    /// in the file), ``capacity``, ``depth`` (levels per side), ``closed`` (the writer
    /// exited), ``writer_silent`` (no heartbeat for 5 s and not closed: gone or stuck),
    /// ``stale`` with ``stale_since_ns`` and ``line_state`` (the feed is down: every book is
    /// its last known state), ``maybe_bad`` with ``maybe_bad_since_ns`` and
    /// ``lost_messages`` (messages were declared lost: books may be wrong), ``behind_ns``,
    /// ``full_publications`` (books the file had no slot for), and ``status``, the line
    /// ``ticklane book`` prints.
    #[getter]
    fn header<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        header_dict(py, &self.reader.header(), wall_clock_ns())
    }

    /// Books in the file now.
    fn __len__(&self) -> usize {
        self.reader.slots().len()
    }

    /// Whether the path names another file than the one mapped: a writer (re)started on the
    /// path renamed its new file over it, and this reader still shows the old writer's books.
    #[getter]
    fn replaced(&self) -> bool {
        self.reader.is_replaced()
    }

    /// Maps the path's new file if :attr:`replaced`; ``True`` if it did. An error opening the
    /// new file is raised, and the old mapping is kept.
    fn reopen_if_replaced(&mut self) -> PyResult<bool> {
        self.reader.reopen_if_replaced().map_err(snapshot_error)
    }

    /// Every book, each a dict, in locate order: ``symbol``, ``locate``,
    /// ``trading_state`` (``T``, ``H``, ``P``, ``Q`` or ``None``), ``stale``,
    /// ``maybe_bad``, ``crossed``, ``behind_since_ns``, ``feed_seq`` (of the last message
    /// applied), ``exchange_ts_ns`` (its ITCH time), ``updated_ns`` (its publication),
    /// ``publishes``, ``sequence`` (the slot's seqlock sequence: equal means the same
    /// state), ``bids`` and ``asks`` (best first, at most ``depth`` levels, each
    /// ``(price, qty, orders)``), ``last_trade`` (``price``, ``shares``, ``timestamp_ns``,
    /// or ``None``), ``trades`` and ``traded_shares``.
    ///
    /// Books that cannot be read raise :class:`SlotUnreadable`, whose ``readable`` is this
    /// list without them.
    #[pyo3(signature = (*, depth=None))]
    fn books<'py>(&self, py: Python<'py>, depth: Option<usize>) -> PyResult<Bound<'py, PyAny>> {
        let depth = self.depth_of(depth)?;
        let slots = self.read_sorted(py);
        let list = PyList::empty(py);
        for state in &slots.states {
            list.append(book_dict(py, state, depth)?)?;
        }
        Snapshot::complete(py, &slots, list.into_any())
    }

    /// The book of ``symbol`` as a dict (as :meth:`books` gives them), or ``None`` if the file
    /// has no such book. Raises :class:`SlotUnreadable` if its slot cannot be read.
    #[pyo3(signature = (symbol, *, depth=None))]
    fn book<'py>(
        &self,
        py: Python<'py>,
        symbol: &str,
        depth: Option<usize>,
    ) -> PyResult<Option<Bound<'py, PyDict>>> {
        let depth = self.depth_of(depth)?;
        let Some(slot) = self.reader.find(symbol.as_bytes()) else {
            return Ok(None);
        };
        match py.detach(|| self.reader.read(slot)) {
            Ok(state) => book_dict(py, &state, depth).map(Some),
            Err(error) => {
                let err =
                    SlotUnreadable::new_err(format!("{symbol}: snapshot slot {slot}: {error}"));
                let value = err.value(py);
                value.setattr("slots", vec![(slot, error.to_string())])?;
                value.setattr("readable", py.None())?;
                Err(err)
            }
        }
    }

    /// Every book as an Arrow record batch (an :class:`ArrowBatch`, which pyarrow, polars and
    /// pandas take without a copy), in locate order.
    ///
    /// ``table="books"``: one row per book: ``locate``, ``stock``, ``trading_state``,
    /// ``stale``, ``maybe_bad``, ``crossed``, ``behind``, ``feed_seq``, ``exchange_ts_ns``,
    /// ``updated_ns``, ``bid_px``, ``bid_qty``, ``bid_orders``, ``ask_px``, ``ask_qty``,
    /// ``ask_orders`` (the best levels, 0 for an empty side), ``bid_levels``,
    /// ``ask_levels``, ``last_trade_px``, ``last_trade_shares``, ``last_trade_ns`` (null
    /// before a trade), ``trades``, ``traded_shares``, ``publishes``, ``sequence``.
    ///
    /// ``table="depth"``: the ``--book-out`` rows, as ``ticklane book --csv`` prints them
    /// (``locate``, ``stock``, ``side`` ``B``/``S``, ``level``, ``price``, ``qty``,
    /// ``orders``), up to ``depth`` levels per side.
    ///
    /// ``price="float"`` gives prices in dollars (null for 0). Books that cannot be read
    /// raise :class:`SlotUnreadable`, whose ``readable`` is the table without them.
    #[pyo3(signature = (table="books", *, depth=None, price="int"))]
    fn to_arrow<'py>(
        &self,
        py: Python<'py>,
        table: &str,
        depth: Option<usize>,
        price: &str,
    ) -> PyResult<Bound<'py, PyAny>> {
        let depth = self.depth_of(depth)?;
        let shape = TableShape {
            float_prices: float_prices(price)?,
            midnight_utc_ns: None,
        };
        let slots = self.read_sorted(py);
        let (batch, prices) = match table {
            "books" => (snapshot_books(&slots.states), BOOK_PRICES),
            "depth" => (depth_table(&slots.states, depth), &["price"][..]),
            other => {
                return Err(PyValueError::new_err(format!(
                    "table must be \"books\" or \"depth\", not {other:?}"
                )))
            }
        };
        let batch = shape
            .apply(batch, prices)
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        let readable = Bound::new(py, ArrowBatch::new(batch))?.into_any();
        Snapshot::complete(py, &slots, readable)
    }

    fn __repr__(&self) -> String {
        format!(
            "ticklane.Snapshot({:?}: {} books)",
            self.reader.path().display().to_string(),
            self.reader.slots().len()
        )
    }
}

/// The `--book-out` rows of `states` (in locate order), `depth` levels per side.
fn depth_table(states: &[InstrumentState], depth: usize) -> arrow_array::RecordBatch {
    let mut columns = DepthColumns::new();
    for state in states {
        for (side, levels) in [(Side::Bid, &state.bids), (Side::Ask, &state.asks)] {
            for (i, level) in levels.iter().take(depth).enumerate() {
                columns.push(&DepthRow::new(
                    state.locate,
                    state.symbol(),
                    side,
                    i + 1,
                    level,
                ));
            }
        }
    }
    columns.finish()
}
