"""The tables besides bbo against what the ``ticklane replay`` command writes for the same
file, read by other readers: ``depth`` against ``--book-out`` (polars' CSV reader),
``trades`` and ``orders`` against ``--dbn-out`` in the trades and MBO schemas (Databento's
own ``databento_dbn``), and ``trades``' match numbers and ``status`` against the ITCH
messages themselves, parsed here from the file's bytes by the spec's offsets."""

from __future__ import annotations

import struct
from pathlib import Path

import databento_dbn as dbn
import polars as pl
import pyarrow as pa
import pytest

import ticklane
from conftest import shared_data

#: The date the DBN outputs and the package are given, so ``ts_event`` can be compared.
DATE = "2024-03-01"


def tables(path: Path, names, rows: int = 40_000, open_kw=None, **batch_kw) -> dict:
    """Every table of one replay, each batch's part concatenated; checks that each batch
    holds every table asked for and no table more than ``rows`` rows."""
    parts = {name: [] for name in names}
    replay = ticklane.open(path, **(open_kw or {}))
    for batch in replay.batches(tables=names, rows=rows, **batch_kw):
        for name in names:
            part = pa.table(getattr(batch, name))
            assert part.num_rows <= rows, (name, part.num_rows)
            parts[name].append(part)
    return {name: pa.concat_tables(got) for name, got in parts.items()}


def rows_of(table: pa.Table) -> list:
    """The rows of ``table`` as dicts, its UTC timestamps as ns since the epoch."""
    for i, field in enumerate(table.schema):
        if pa.types.is_timestamp(field.type):
            table = table.set_column(i, field.name, table.column(i).cast(pa.int64()))
    return table.to_pylist()


def letter(value) -> str:
    """An action or side as its one letter, whatever type the binding hands back."""
    value = getattr(value, "value", value)
    return chr(value) if isinstance(value, int) else str(value)


def dbn_records(cli, path: Path, tmp_path: Path, schema: str, *args, check=True) -> list:
    """The records of the command's ``--dbn-out`` in ``schema``, as databento_dbn reads them."""
    out = tmp_path / f"{schema}.dbn"
    cli("replay", path, "--dbn-out", out, "--schema", schema, "--date", DATE, "--quiet",
        *args, check=check)
    decoder = dbn.DBNDecoder()
    decoder.write(out.read_bytes())
    items = decoder.decode()
    assert isinstance(items[0], dbn.Metadata)
    return items[1:]


def midnight_ns() -> int:
    """``DATE``'s New York midnight (EST: 1 March is before daylight time), ns since the epoch."""
    import datetime

    midnight = datetime.datetime(2024, 3, 1, 5, tzinfo=datetime.timezone.utc)
    return int(midnight.timestamp()) * 1_000_000_000


def itch_messages(path: Path):
    """Each message of an ITCH50 file (2-byte big-endian length, then the message) with
    its 1-based index."""
    data = path.read_bytes()
    at, index = 0, 0
    while at + 2 <= len(data):
        (length,) = struct.unpack_from(">H", data, at)
        index += 1
        yield index, data[at + 2 : at + 2 + length]
        at += 2 + length


def stamp(m: bytes) -> int:
    return int.from_bytes(m[5:11], "big")


def stock(raw: bytes) -> str:
    return raw.decode("ascii").rstrip()


def test_depth_equals_the_command_s_book_csv(cli, day, tmp_path):
    for threads, depth in ((1, 10), (2, 3)):
        out = tmp_path / f"book{threads}.csv"
        cli("replay", day, "--book-out", out, "--depth", depth, "--threads", threads, "--quiet")
        got = pl.DataFrame(
            tables(day, ("depth",), open_kw={"threads": threads}, depth=depth)["depth"]
        )
        want = pl.read_csv(out, schema=got.schema)
        assert got.height > 40
        assert got.equals(want), (threads, depth)


def test_depth_keeps_the_symbols_asked_for(cli, day, tmp_path):
    out = tmp_path / "book.csv"
    cli("replay", day, "--book-out", out, "--symbols", "AAAB,AAAE", "--quiet")
    got = pl.DataFrame(tables(day, ("depth",), open_kw={"symbols": ["AAAB", "AAAE"]})["depth"])
    assert got.height > 0 and set(got["stock"]) <= {"AAAB", "AAAE"}
    assert got.equals(pl.read_csv(out, schema=got.schema))


def test_trades_equal_the_command_s_dbn_trades(cli, day, tmp_path):
    got = rows_of(tables(day, ("trades",), open_kw={"date": DATE})["trades"])
    records = dbn_records(cli, day, tmp_path, "trades")
    midnight = midnight_ns()
    want = [
        {
            "msg_index": r.sequence,
            "timestamp_ns": r.ts_event - midnight,
            "locate": r.instrument_id,
            "price": r.price // 100_000,
            "shares": r.size,
            "side": letter(r.side),
            "flags": int(r.flags),
            "ts_event": r.ts_event,
        }
        for r in records
    ]
    assert len(got) > 40_000
    assert [{k: row[k] for k in want[0]} for row in got] == want


def test_trades_carry_the_messages_match_numbers_and_orders(day):
    got = tables(day, ("trades",))["trades"].to_pylist()
    by_index = {row["msg_index"]: row for row in got}
    printed = []
    for index, m in itch_messages(day):
        kind = chr(m[0])
        if kind in "EC":
            if kind == "C" and m[31:32] != b"Y":
                continue
            ref, match = struct.unpack_from(">Q", m, 11)[0], struct.unpack_from(">Q", m, 23)[0]
        elif kind == "P":
            ref, match = struct.unpack_from(">Q", m, 11)[0], struct.unpack_from(">Q", m, 36)[0]
        else:
            continue
        # An execution of an order the day never added prints nothing (as DBN's trades).
        if index in by_index:
            printed.append((index, kind, match, ref, stamp(m)))
    assert len(printed) == len(got) > 40_000
    assert printed == [
        (r["msg_index"], r["type"], r["match_number"], r["order_ref"], r["timestamp_ns"])
        for r in got
    ]
    assert {r["type"] for r in got} == {"E", "C", "P"}


def _order_rows(records, midnight: int) -> list:
    return [
        {
            "timestamp_ns": r.ts_event - midnight,
            "locate": r.instrument_id,
            "action": letter(r.action),
            "side": letter(r.side),
            "price": r.price // 100_000,
            "size": r.size,
            "order_id": r.order_id,
            "flags": int(r.flags),
            "sequence": r.sequence,
        }
        for r in records
    ]


def _without(rows: list, *names) -> list:
    return [{k: v for k, v in row.items() if k not in names} for row in rows]


def test_orders_equal_the_command_s_dbn_mbo(cli, day, tmp_path):
    got = tables(day, ("orders",), rows=100_000, open_kw={"date": DATE})["orders"]
    assert got.column_names[-1] == "ts_event"
    records = dbn_records(cli, day, tmp_path, "mbo")
    want = _order_rows(records, midnight_ns())
    assert len(want) > 300_000
    assert _without(got.to_pylist(), "stock", "ts_event") == want


def test_orders_name_each_record_s_stock_and_keep_the_symbols_asked_for(cli, day, tmp_path):
    names = ["AAAB", "AAAE"]
    got = tables(day, ("orders",), open_kw={"symbols": names, "date": DATE})["orders"]
    records = dbn_records(cli, day, tmp_path, "mbo", "--symbols", ",".join(names))
    rows = got.to_pylist()
    assert len(rows) > 1_000 and {r["stock"] for r in rows} == set(names)
    assert _without(rows, "stock", "ts_event") == _order_rows(records, midnight_ns())


def test_a_capture_s_orders_flag_the_books_after_its_loss(cli, tmp_path):
    capture = shared_data() / "pcap" / "nasdaq-itch50-live" / "Multiple.Packets.pcap"
    parts = {"orders": [], "trades": []}
    with pytest.raises(ticklane.LossDeclared):
        for batch in ticklane.open(capture, date=DATE).batches(("orders", "trades")):
            for name in parts:
                parts[name].append(pa.table(getattr(batch, name)))
    orders = pa.concat_tables(parts["orders"]).to_pylist()
    records = dbn_records(cli, capture, tmp_path, "mbo", check=False)
    assert len(orders) > 10
    assert _without(orders, "stock", "ts_event") == _order_rows(records, midnight_ns())
    maybe_bad_book = 1 << 2  # DBN's F_MAYBE_BAD_BOOK
    flagged = [o["flags"] & maybe_bad_book != 0 for o in orders]
    assert any(flagged), "the capture's loss comes before some of its order events"
    first = flagged.index(True)
    assert all(flagged[first:]), "flagged from the loss on"
    # The capture starts mid-day: its executions name orders it never added, so, as in
    # DBN's trades, they print nothing.
    trades = dbn_records(cli, capture, tmp_path, "trades", check=False)
    assert pa.concat_tables(parts["trades"]).num_rows == len(trades)


def _naive_status(path: Path) -> list:
    rows = []
    for index, m in itch_messages(path):
        kind = chr(m[0])
        row = {
            "msg_index": index,
            "timestamp_ns": stamp(m),
            "type": kind,
            "locate": struct.unpack_from(">H", m, 1)[0],
            "stock": "",
            "reason": "",
            "paired_shares": None,
            "imbalance_shares": None,
            "far_price": None,
            "near_price": None,
            "reference_price": None,
            "cross_type": None,
            "price_variation": None,
        }
        if kind == "S":
            row["state"] = chr(m[11])
        elif kind == "W":
            row["state"] = chr(m[11])
        elif kind == "H":
            row.update(stock=stock(m[11:19]), state=chr(m[19]), reason=stock(m[21:25]))
        elif kind == "Y":
            row.update(stock=stock(m[11:19]), state=chr(m[19]))
        elif kind == "h":
            row.update(stock=stock(m[11:19]), reason=chr(m[19]).rstrip(), state=chr(m[20]))
        elif kind == "I":
            paired, imbalance = struct.unpack_from(">QQ", m, 11)
            far, near, ref = struct.unpack_from(">III", m, 36)
            row.update(
                stock=stock(m[28:36]),
                state=chr(m[27]),
                paired_shares=paired,
                imbalance_shares=imbalance,
                far_price=far or None,
                near_price=near or None,
                reference_price=ref or None,
                cross_type=chr(m[48]),
                price_variation=chr(m[49]),
            )
        else:
            continue
        rows.append(row)
    return rows


def test_status_equals_the_day_s_status_messages(day):
    got = tables(day, ("status",))["status"].to_pylist()
    want = _naive_status(day)
    assert {r["type"] for r in want} == set("SWHYhI"), "the day has every status message"
    assert got == want


def test_status_keeps_the_symbols_asked_for_and_the_market_s_own_messages(day):
    names = {"AAAB", "AAAE"}
    got = tables(day, ("status",), open_kw={"symbols": sorted(names)})["status"].to_pylist()
    want = [r for r in _naive_status(day) if r["type"] in "SW" or r["stock"] in names]
    assert any(r["stock"] in names for r in want)
    assert got == want


def test_a_batch_holds_every_table_and_ends_when_one_is_full(day):
    names = ("bbo", "trades", "orders", "status", "depth")
    seen = {name: 0 for name in names}
    rows = 25_000
    full = 0
    for batch in ticklane.open(day).batches(tables=names, rows=rows):
        sizes = {name: len(getattr(batch, name)) for name in names}
        assert max(sizes.values()) <= rows
        full += max(sizes.values()) == rows
        for name, n in sizes.items():
            seen[name] += n
    whole = tables(day, names, rows=10_000_000)
    assert seen == {name: whole[name].num_rows for name in names}
    assert full >= seen["orders"] // rows


def test_float_prices_and_ts_event_in_every_table(day):
    got = tables(day, ("trades", "status", "depth"), open_kw={"date": DATE}, price="float")
    ints = tables(day, ("trades", "status", "depth"))
    for name, prices in (
        ("trades", ["price"]),
        ("status", ["far_price", "near_price", "reference_price"]),
        ("depth", ["price"]),
    ):
        for column in prices:
            dollars = got[name].column(column).to_pylist()
            cents = ints[name].column(column).to_pylist()
            assert dollars == [None if not c else c / 10_000 for c in cents], (name, column)
        assert ("ts_event" in got[name].column_names) == (name != "depth")


def test_an_unasked_table_is_an_attribute_error_that_says_how(day):
    batch = next(iter(ticklane.open(day).batches(tables=("trades",), rows=10)))
    with pytest.raises(AttributeError, match=r"tables=\(\.\.\., 'orders'\)"):
        batch.orders


@pytest.mark.parametrize("table", ["trades", "orders", "status"])
def test_book_thread_tables_refuse_more_threads_and_dbn_inputs(cli, day, tmp_path, table):
    with pytest.raises(ValueError, match="threads=1"):
        next(iter(ticklane.open(day, threads=2).batches(tables=(table,))))
    mbo = tmp_path / "day.dbn"
    cli("replay", day, "--dbn-out", mbo, "--date", DATE, "--quiet")
    with pytest.raises(ValueError, match="databento-dbn"):
        next(iter(ticklane.open(mbo).batches(tables=(table,))))
    # The bbo and depth tables take either.
    assert sum(len(b.depth) for b in ticklane.open(mbo).batches(tables=("depth",))) > 0
