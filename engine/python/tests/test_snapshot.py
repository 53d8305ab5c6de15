"""``ticklane.Snapshot`` against the command's own readers of the same file (``ticklane book
--csv``), a replay's ``--book-out`` of the same day, and the standard-library reader in
``tests/oracle`` written from the layout's documentation alone."""

from __future__ import annotations

import importlib.util
import io
import shutil

import pyarrow as pa
import pytest

import ticklane
from conftest import ROOT

ORACLE = ROOT / "tests" / "oracle" / "snapshot_reader.py"
DEPTH = 10


def oracle():
    """The standard-library reader, as a module."""
    spec = importlib.util.spec_from_file_location("snapshot_reader_oracle", ORACLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def published(cli, day, tmp_path_factory):
    """The generated day replayed through the live pipeline into a snapshot, and the same
    day's ``--book-out`` from a plain replay."""
    folder = tmp_path_factory.mktemp("snapshot")
    snap = folder / "books.snap"
    cli("replay", day, "--pace", "max", "--snapshot", snap, "--depth", DEPTH)
    book_csv = folder / "book.csv"
    cli("replay", day, "--book-out", book_csv, "--depth", DEPTH)
    return snap, book_csv.read_text()


def csv_of(table: pa.Table) -> str:
    """A depth table as the ``--book-out`` CSV."""
    lines = [",".join(table.column_names)]
    for row in table.to_pylist():
        lines.append(",".join(str(row[c]) for c in table.column_names))
    return "\n".join(lines) + "\n"


def test_the_depth_table_is_the_commands_csv_and_the_oracles(cli, published, capsys):
    snap_path, book_csv = published
    snap = ticklane.Snapshot(snap_path)
    depth = csv_of(pa.table(snap.to_arrow("depth")))
    assert depth == cli("book", "--snapshot", snap_path, "--csv").stdout
    assert depth == book_csv, "the live pipeline's final books are the replay's"
    reader = oracle()
    out = io.StringIO()
    assert reader.write_csv(reader.Snapshot(str(snap_path)), DEPTH, out) == []
    assert depth == out.getvalue()
    shallow = csv_of(pa.table(snap.to_arrow("depth", depth=2)))
    assert shallow == cli("book", "--snapshot", snap_path, "--csv", "--depth", 2).stdout


def test_every_book_reads_as_the_oracle_reads_it(published):
    snap_path, _ = published
    snap = ticklane.Snapshot(snap_path)
    books = snap.books()
    assert len(books) == len(snap) == snap.header["instruments"] > 0
    assert [b["locate"] for b in books] == sorted(b["locate"] for b in books)
    reader = oracle()
    theirs = {s["locate"]: s for s in reader.read_all(reader.Snapshot(str(snap_path)))[0]}
    for book in books:
        expected = theirs[book["locate"]]
        for key in ("symbol", "feed_seq", "exchange_ts_ns", "updated_ns", "publishes",
                    "sequence", "bids", "asks", "trades", "traded_shares"):
            assert book[key] == expected[key], (book["symbol"], key)
        assert book["trading_state"] == (expected["trading_state"] or None)
        trade = book["last_trade"]
        expected_trade = expected["last_trade"]
        assert (trade and (trade["price"], trade["shares"], trade["timestamp_ns"])) == (
            expected_trade
        )
        assert not (book["stale"] or book["maybe_bad"]), "a whole day, nothing lost"
    assert snap.book(books[0]["symbol"]) == books[0]
    assert snap.book("NOSUCH") is None


def test_the_books_table_holds_the_dicts_and_prices_in_dollars(published):
    snap = ticklane.Snapshot(published[0])
    books = snap.books()
    table = pa.table(snap.to_arrow())
    assert table.num_rows == len(books)
    for row, book in zip(table.to_pylist(), books):
        assert row["stock"] == book["symbol"] and row["locate"] == book["locate"]
        best_bid = book["bids"][0] if book["bids"] else (0, 0, 0)
        best_ask = book["asks"][0] if book["asks"] else (0, 0, 0)
        assert (row["bid_px"], row["bid_qty"], row["bid_orders"]) == best_bid
        assert (row["ask_px"], row["ask_qty"], row["ask_orders"]) == best_ask
        assert row["trades"] == book["trades"] and row["sequence"] == book["sequence"]
        assert row["last_trade_px"] == (book["last_trade"] or {}).get("price")
    dollars = pa.table(snap.to_arrow(price="float")).to_pylist()
    for row, book in zip(dollars, books):
        assert row["bid_px"] == (book["bids"][0][0] / 10_000 if book["bids"] else None)
    with pytest.raises(ValueError, match="table must be"):
        snap.to_arrow("trades")
    with pytest.raises(ValueError, match="price must be"):
        snap.to_arrow(price="cents")


def test_the_header_says_the_writer_closed_the_file(published):
    header = ticklane.Snapshot(published[0]).header
    assert header["closed"] and not header["writer_silent"], header
    assert header["depth"] == DEPTH and header["capacity"] >= header["instruments"]
    assert not (header["stale"] or header["maybe_bad"]) and header["lost_messages"] == 0
    assert "CLOSED" in header["status"], header["status"]


def test_a_restarted_writer_is_followed(cli, day, tmp_path):
    path = tmp_path / "books.snap"
    cli("replay", day, "--pace", "max", "--snapshot", path, "--depth", 4)
    snap = ticklane.Snapshot(path)
    assert not snap.replaced and not snap.reopen_if_replaced()
    cli("replay", day, "--pace", "max", "--snapshot", path, "--depth", 6)
    assert snap.replaced
    assert snap.header["depth"] == 4, "the old mapping, until reopened"
    assert snap.reopen_if_replaced()
    assert snap.header["depth"] == 6 and not snap.replaced


def test_files_that_are_not_snapshots_are_named(tmp_path):
    with pytest.raises(FileNotFoundError) as missing:
        ticklane.Snapshot(tmp_path / "nothing.snap")
    assert missing.value.filename == str(tmp_path / "nothing.snap")
    junk = tmp_path / "junk.snap"
    junk.write_bytes(b"not a snapshot" * 100)
    with pytest.raises(ticklane.SnapshotError, match="junk.snap"):
        ticklane.Snapshot(junk)


def test_a_torn_slot_is_named_and_the_other_books_still_read(published, tmp_path):
    """A writer killed mid-write leaves the slot's sequence odd: that book is reported, the
    others come as they are, as the oracle prints them."""
    torn = tmp_path / "torn.snap"
    shutil.copyfile(published[0], torn)
    reader = oracle()
    layout = reader.Snapshot(str(torn))
    slot = 1
    offset = reader.HEADER_SIZE + slot * layout.slot_size
    layout.map.close()
    with open(torn, "r+b") as f:
        f.seek(offset)
        sequence = int.from_bytes(f.read(8), "little")
        f.seek(offset)
        f.write((sequence | 1).to_bytes(8, "little"))
    snap = ticklane.Snapshot(torn)
    with pytest.raises(ticklane.SlotUnreadable, match="mid-write") as books:
        snap.books()
    assert [s for s, _ in books.value.slots] == [slot]
    assert len(books.value.readable) == len(snap) - 1
    with pytest.raises(ticklane.SlotUnreadable) as depth:
        snap.to_arrow("depth")
    out = io.StringIO()
    unreadable = reader.write_csv(reader.Snapshot(str(torn)), DEPTH, out)
    assert [s for s, _ in unreadable] == [slot]
    assert csv_of(pa.table(depth.value.readable)) == out.getvalue()
