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
"""

from __future__ import annotations

import json
import os
from typing import Any, Dict, Iterator, Optional, Sequence, Union

from ._native import ArrowBatch, InputError, LossDeclared, bbo_batches as _bbo_batches

__all__ = ["ArrowBatch", "Batch", "InputError", "LossDeclared", "Replay", "TABLES", "open"]

#: The tables :meth:`Replay.batches` can give.
TABLES = ("bbo",)


class Batch:
    """One step of a replay: one attribute per table asked for.

    ``bbo``: the top-of-book stream, one row per change of a stock's best bid or ask, with
    the columns of ``ticklane replay --bbo-out`` (``msg_index``, ``timestamp_ns`` since
    midnight, ``locate``, ``stock``, ``bid_px``, ``bid_qty``, ``bid_orders``, ``ask_px``,
    ``ask_qty``, ``ask_orders``); prices are integers in 1/10,000 dollars, 0 for an empty
    side.
    """

    __slots__ = ("bbo",)

    def __init__(self, bbo: ArrowBatch) -> None:
        self.bbo = bbo

    def __repr__(self) -> str:
        return f"Batch(bbo={self.bbo!r})"


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
        path: Union[str, "os.PathLike[str]"],
        date: Optional[str],
        symbols: Union[None, str, Sequence[str]],
        between: Optional[str],
        threads: int,
    ) -> None:
        self.path = os.fspath(path)
        self._date = date
        self._symbols = _symbol_list(symbols)
        self._between = between or ""
        self._threads = threads
        self._summary: Optional[Dict[str, Any]] = None

    def batches(
        self, tables: Sequence[str] = ("bbo",), rows: int = 1_000_000
    ) -> Iterator[Batch]:
        """Replays the input and yields its rows in batches of at most ``rows`` rows.

        The replay runs on an engine thread with the GIL released, at most two batches
        ahead of the loop that takes them, so memory stays flat however long the day;
        stopping the loop (or Ctrl-C) stops the replay. An input that cannot be read on
        raises :class:`InputError` after the batches of everything before the fault; a
        capture with messages declared lost raises :class:`LossDeclared` after the last
        batch. Either way :attr:`summary` then holds the replay's summary.
        """
        unknown = [t for t in tables if t not in TABLES]
        if unknown or not tables:
            raise ValueError(
                f"tables must name some of {', '.join(TABLES)}; got {list(tables)!r}"
            )
        native = _bbo_batches(
            self.path,
            rows,
            date=self._date,
            symbols=self._symbols,
            between=self._between,
            threads=self._threads,
        )
        try:
            for bbo in native:
                yield Batch(bbo)
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
    path: Union[str, "os.PathLike[str]"],
    *,
    date: Optional[str] = None,
    symbols: Union[None, str, Sequence[str]] = None,
    between: Optional[str] = None,
    threads: int = 1,
) -> Replay:
    """Opens an input the ``ticklane replay`` command reads: an ITCH50 file (plain or
    ``.gz``), a pcap or pcapng capture of MoldUDP64, or DBN MBO (plain or zstd).

    ``date`` (``YYYY-MM-DD``) is the session date where the input does not say it;
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
