"""ticklane: Nasdaq TotalView-ITCH 5.0 order books, replayed into Arrow batches.

The engine is the one the ``ticklane`` command runs (the same replay, the same books, the
same rows); this package calls it in-process and hands its output to Python as Arrow
record batches without copying them::

    import polars as pl
    import ticklane

    for batch in ticklane.open("day.itch50").batches(tables=("bbo",)):
        df = pl.DataFrame(batch.bbo)

Each batch attribute speaks the Arrow PyCapsule interface, so ``polars.DataFrame(x)``,
``pyarrow.table(x)``, ``pyarrow.record_batch(x)`` and ``pandas.DataFrame.from_arrow(x)``
(pandas 3) take it as it is. (``polars.from_arrow(x)`` makes a single struct column of a
PyCapsule object; ``polars.DataFrame(x)`` is the call that keeps the columns.)

Errors are exceptions: :class:`InputError` for an input that cannot be read on (with the
file, byte offset and message index as attributes), :class:`LossDeclared` for a capture
whose MoldUDP64 sequence numbers declare messages lost (where ``ticklane replay`` exits 3),
raised after every batch before them was delivered.

A running engine's books are read from its memory-mapped snapshot with :class:`Snapshot`
(as dicts or Arrow tables, following a writer that restarts), and its subscriber server's
updates with :func:`subscribe` (reconnecting with jittered backoff).
"""

from __future__ import annotations

import datetime
import json
import os
from typing import Any, Dict, Iterator, Optional, Sequence, Tuple, Union

from ._native import ArrowBatch, InputError, LossDeclared
from ._native import Snapshot, SnapshotError, SlotUnreadable
from ._native import SubscribeError, Subscription, subscribe
from ._native import table_batches as _table_batches
from ._native import replay_files as _replay_files

__all__ = [
    "ArrowBatch", "Batch", "InputError", "LossDeclared", "Replay", "SlotUnreadable", "Snapshot",
    "SnapshotError", "SubscribeError", "Subscription", "TABLES", "open", "replay", "subscribe",
]

#: A path, as ``open`` and ``replay`` take one.
PathLike = Union[str, "os.PathLike[str]"]
#: A session date: ``YYYY-MM-DD`` or a :class:`datetime.date`.
DateLike = Union[None, str, datetime.date]

#: The tables :meth:`Replay.batches` can give.
TABLES = ("bbo", "trades", "orders", "status", "depth")


class Batch:
    """One step of a replay: one attribute per table asked for, each an :class:`ArrowBatch`.

    ``bbo``: the top-of-book stream, one row per change of a stock's best bid or ask, with
    the columns of ``ticklane replay --bbo-out`` (``msg_index``, ``timestamp_ns`` since
    midnight, ``locate``, ``stock``, ``bid_px``, ``bid_qty``, ``bid_orders``, ``ask_px``,
    ``ask_qty``, ``ask_orders``).

    ``trades``: every execution (``E``, ``C`` marked printable) and non-cross trade
    (``P``), as ``--dbn-out --schema trades`` prints them: ``msg_index``,
    ``timestamp_ns``, ``locate``, ``stock``, ``price``, ``shares``, ``side`` (the
    aggressor: ``B``, ``A``, or ``N`` for ``P``), ``match_number``, ``order_ref`` (the
    order executed), ``type`` and ``flags`` (DBN's record flags).

    ``orders``: every order event as ``--dbn-out --schema mbo`` writes it: ``timestamp_ns``,
    ``locate`` (the record's ``instrument_id``), ``stock``, ``action``, ``side``,
    ``price``, ``size``, ``order_id``, ``flags``, ``sequence``.

    ``status``: system events (``S``), trading actions (``H``), Reg SHO restrictions
    (``Y``), operational halts (``h``), circuit-breaker breaches (``W``) and imbalance
    indicators (``I``): ``msg_index``, ``timestamp_ns``, ``type``, ``locate``, ``stock``,
    ``state`` (the event code, trading state, Reg SHO action, halt action, level breached
    or imbalance direction), ``reason`` (``H``'s reason, ``h``'s market code), and for
    ``I`` only ``paired_shares``, ``imbalance_shares``, ``far_price``, ``near_price``,
    ``reference_price``, ``cross_type``, ``price_variation``.

    ``depth``: the books as the replay left them, as ``--book-out`` writes them
    (``locate``, ``stock``, ``side`` ``B``/``S``, ``level``, ``price``, ``qty``,
    ``orders``); its rows come in the batches after every other table's last rows.

    A batch ends when any table holds ``rows`` rows, so the others may hold fewer or none
    (an empty table keeps its columns). Prices are integers in 1/10,000 dollars, 0 for an
    empty side or no price (with ``price="float"``: dollars as float64, null for those).
    Where the session date is known (``date=``, or a date in the file name, as
    ``01302019.NASDAQ_ITCH50`` or ``20190130``; a DBN input's own session: ``date=``, its
    metadata or its first record), each table with ``timestamp_ns`` ends with a column
    ``ts_event``, the row's UTC time (``timestamp[ns, UTC]``: the date's New York midnight
    plus ``timestamp_ns``). Text columns are strings; stocks are trimmed.
    """

    __slots__ = TABLES

    def __init__(self, tables: Sequence[Tuple[str, ArrowBatch]]) -> None:
        for name, rows in tables:
            setattr(self, name, rows)

    def __getattr__(self, name: str) -> Any:
        if name in TABLES:
            raise AttributeError(
                f"this replay's batches hold no {name!r} table: ask for it in "
                f"batches(tables=(..., {name!r}))"
            )
        raise AttributeError(name)

    def __repr__(self) -> str:
        held = ", ".join(f"{t}={getattr(self, t)!r}" for t in TABLES if hasattr(self, t))
        return f"Batch({held})"


def _date_text(date: DateLike) -> Optional[str]:
    if isinstance(date, datetime.date):
        return date.isoformat()
    return date


def _symbol_list(symbols: Union[None, str, Sequence[str]]) -> str:
    """``symbols`` as the command's ``--symbols`` takes them: comma separated."""
    if symbols is None:
        return ""
    listed = symbols.split(",") if isinstance(symbols, str) else list(symbols)
    if not any(s.strip() for s in listed):
        raise ValueError(
            "symbols names no symbol; leave it out (None) to keep every symbol"
        )
    return ",".join(listed)


class Replay:
    """A replay of one input, opened by :func:`open`; nothing runs until it is iterated."""

    def __init__(
        self,
        path: PathLike,
        date: DateLike,
        symbols: Union[None, str, Sequence[str]],
        between: Optional[str],
        threads: int,
    ) -> None:
        self.path = os.fspath(path)
        self._date = _date_text(date)
        self._symbols = _symbol_list(symbols)
        self._between = between or ""
        self._threads = threads
        self._summary: Optional[Dict[str, Any]] = None

    def batches(
        self,
        tables: Sequence[str] = ("bbo",),
        rows: int = 1_000_000,
        *,
        price: str = "int",
        depth: int = 10,
    ) -> Iterator[Batch]:
        """Replays the input and yields its tables in batches of at most ``rows`` rows.

        ``tables`` names the tables each :class:`Batch` holds (of :data:`TABLES`);
        ``price`` is ``"int"`` (1/10,000 dollars, as the command's CSVs) or ``"float"``
        (dollars); ``depth`` is the levels per side of the ``depth`` table (the command's
        ``--depth``). The ``trades``, ``orders`` and ``status`` tables are taken from an
        ITCH input on one book thread (``threads=1``); asked of a DBN input, or with more
        threads, they are a ``ValueError``.

        The replay runs on an engine thread with the GIL released, at most two batches
        ahead of the loop that takes them, so memory stays flat however long the day;
        stopping the loop (or Ctrl-C) stops the replay. An input that cannot be read on
        raises :class:`InputError` after the batches of everything before the fault; a
        capture with messages declared lost raises :class:`LossDeclared` after the last
        batch. Either way :attr:`summary` then holds the replay's summary.
        """
        if isinstance(tables, str):
            tables = (tables,)
        unknown = [t for t in tables if t not in TABLES]
        if unknown or not tables:
            raise ValueError(
                f"tables must name some of {', '.join(TABLES)}; got {list(tables)!r}"
            )
        if depth < 1:
            raise ValueError("depth must be at least 1")
        native = _table_batches(
            self.path,
            rows,
            list(dict.fromkeys(tables)),
            date=self._date,
            symbols=self._symbols,
            between=self._between,
            threads=self._threads,
            price=price,
            depth=depth,
        )
        try:
            for step in native:
                yield Batch(step)
        finally:
            summary = native.summary_json()
            if summary is not None:
                self._summary = json.loads(summary)

    @property
    def summary(self) -> Dict[str, Any]:
        """The replay's summary (the JSON of ``ticklane replay --summary-json``), once
        :meth:`batches` has run to the end; before that, ``RuntimeError``."""
        if self._summary is None:
            raise RuntimeError("the replay has not run to its end yet: iterate batches()")
        return self._summary

    def __repr__(self) -> str:
        return f"ticklane.Replay({self.path!r})"


def open(  # noqa: A001 - the name analysts expect, as in itch-book
    path: PathLike,
    *,
    date: DateLike = None,
    symbols: Union[None, str, Sequence[str]] = None,
    between: Optional[str] = None,
    threads: int = 1,
) -> Replay:
    """Opens an input the ``ticklane replay`` command reads: an ITCH50 file (plain or
    ``.gz``), a pcap or pcapng capture of MoldUDP64, or DBN MBO (plain or zstd).

    ``date`` (``YYYY-MM-DD`` or a :class:`datetime.date`) is the session date where the
    file name does not say it (it dates the ``ts_event`` column);
    ``symbols`` (a list, or one comma-separated string) keeps only those stocks' rows and
    ``between`` (``HH:MM-HH:MM`` or ``HH:MM:SS.f-HH:MM:SS.f``, New York time, start
    included, end excluded) only rows in that window of exchange time, as the command's
    ``--symbols`` and ``--between`` (the books still apply every message); ``threads``
    spreads the stocks over that many book threads, with the same rows in the same order.
    A bad value is a ``ValueError`` when :meth:`Replay.batches` starts.
    """
    if threads < 1:
        raise ValueError("threads must be at least 1")
    return Replay(path, date, symbols, between, threads)


def replay(
    path: PathLike,
    *,
    bbo_out: Optional[PathLike] = None,
    book_out: Optional[PathLike] = None,
    depth: int = 10,
    dbn_out: Optional[PathLike] = None,
    schema: str = "mbo",
    dataset: Optional[str] = None,
    date: DateLike = None,
    sample: Optional[str] = None,
    sample_out: Optional[PathLike] = None,
    sample_depth: int = 10,
    symbols: Union[None, str, Sequence[str]] = None,
    between: Optional[str] = None,
    parquet_out: Optional[PathLike] = None,
    parquet_schema: str = "bbo",
    summary_json: Optional[PathLike] = None,
    recover_lengths: bool = False,
    threads: int = 1,
) -> Dict[str, Any]:
    """Runs ``ticklane replay`` on ``path`` in this process and returns its summary (the
    ``--summary-json`` object) as a dict.

    Each keyword is the command's flag of that name (``bbo_out`` is ``--bbo-out``, ``sample``
    the interval as ``"100ms"`` and ``sample_out`` its file, ``schema`` the DBN schema of
    ``dbn_out``, ``parquet_schema`` ``"bbo"`` or ``"mbp-10"``), with the command's defaults
    and its checks: options that do not go together are a ``ValueError``; an input that
    cannot be read on is an :class:`InputError` and declared loss a :class:`LossDeclared`
    (each with the summary as ``summary``), after every output was finished as the command
    finishes it. The replay runs on an engine thread with the GIL released; Ctrl-C raises
    ``KeyboardInterrupt`` at once, and the engine thread finishes its files in the
    background (or is ended with the interpreter).
    """
    optional = lambda p: None if p is None else os.fspath(p)  # noqa: E731
    summary = _replay_files(
        os.fspath(path),
        bbo_out=optional(bbo_out),
        book_out=optional(book_out),
        depth=depth,
        dbn_out=optional(dbn_out),
        schema=schema,
        dataset=dataset,
        date=_date_text(date),
        sample=sample,
        sample_out=optional(sample_out),
        sample_depth=sample_depth,
        symbols=_symbol_list(symbols),
        between=between or "",
        parquet_out=optional(parquet_out),
        parquet_schema=parquet_schema,
        summary_json=optional(summary_json),
        recover_lengths=recover_lengths,
        threads=threads,
    )
    return json.loads(summary)
