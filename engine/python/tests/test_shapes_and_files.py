"""The bbo table's other shapes (dollars, ``ts_event``) and ``ticklane.replay(path,
**outputs)`` against the command writing the same outputs."""

from __future__ import annotations

import datetime
import json
import re

import polars as pl
import pyarrow.parquet as pq
import pytest

import ticklane
from conftest import shared_data
from test_replay import TIMINGS, frame, without_timings


def test_float_prices_are_dollars_with_null_for_an_empty_side(day):
    ints = frame(ticklane.open(day))
    dollars = frame(ticklane.open(day), price="float")
    assert dollars.schema["bid_px"] == pl.Float64
    assert dollars.schema["ask_px"] == pl.Float64
    for side in ("bid_px", "ask_px"):
        cents = ints[side].to_numpy()
        got = dollars[side]
        assert got.null_count() == (cents == 0).sum() > 0
        assert got.is_null().to_numpy().tolist() == (cents == 0).tolist()
        # IEEE division of each integer by 10,000, as numpy does it.
        assert (got.fill_null(0).to_numpy() == cents / 10_000.0).all()
    others = [c for c in ints.columns if c not in ("bid_px", "ask_px")]
    assert dollars.select(others).equals(ints.select(others))


def test_an_unknown_price_is_a_value_error(day):
    with pytest.raises(ValueError, match="price"):
        next(iter(ticklane.open(day).batches(price="cents")))


def test_ts_event_comes_from_the_file_name_or_the_date(day, tmp_path):
    plain = frame(ticklane.open(day))
    assert "ts_event" not in plain.columns, "an undated file has no ts_event"

    named = tmp_path / "01302019.NASDAQ_ITCH50"
    named.symlink_to(day)
    dated = frame(ticklane.open(named))
    assert dated.columns == plain.columns + ["ts_event"]
    assert dated.schema["ts_event"] == pl.Datetime("ns", "UTC")
    # 2019-01-30 is in standard time: New York midnight is 05:00 UTC.
    midnight = datetime.datetime(2019, 1, 30, 5, tzinfo=datetime.timezone.utc)
    want = pl.lit(midnight).dt.cast_time_unit("ns") + pl.duration(
        nanoseconds=pl.col("timestamp_ns")
    )
    assert dated.select((pl.col("ts_event") == want).all()).item()
    assert dated.drop("ts_event").equals(plain)

    # In daylight time the midnight is 04:00 UTC; date= may be a datetime.date.
    summer = frame(ticklane.open(day, date=datetime.date(2019, 7, 1)))
    first = summer.row(0, named=True)
    offset = datetime.timedelta(microseconds=first["timestamp_ns"] // 1_000)
    assert first["ts_event"].replace(microsecond=0) == (
        datetime.datetime(2019, 7, 1, 4, tzinfo=datetime.timezone.utc) + offset
    ).replace(microsecond=0)
    assert frame(ticklane.open(day, date="2019-07-01")).equals(summer)


def _cli_outputs(cli, path, out, *args):
    cli(
        "replay", path, "--quiet",
        "--bbo-out", out / "bbo.csv",
        "--book-out", out / "book.csv",
        "--dbn-out", out / "mbo.dbn",
        "--parquet-out", out / "bbo.parquet",
        "--summary-json", out / "summary.json",
        *args,
    )


def test_replay_writes_the_command_s_outputs(cli, day, tmp_path):
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    ours.mkdir()
    theirs.mkdir()
    _cli_outputs(cli, day, theirs, "--date", "2019-01-30", "--threads", "2")
    summary = ticklane.replay(
        day,
        bbo_out=ours / "bbo.csv",
        book_out=ours / "book.csv",
        dbn_out=ours / "mbo.dbn",
        parquet_out=ours / "bbo.parquet",
        summary_json=ours / "summary.json",
        date=datetime.date(2019, 1, 30),
        threads=2,
    )
    for name in ("bbo.csv", "book.csv", "mbo.dbn"):
        assert (ours / name).read_bytes() == (theirs / name).read_bytes(), name
    assert pq.read_table(ours / "bbo.parquet").equals(pq.read_table(theirs / "bbo.parquet"))
    want = json.loads((theirs / "summary.json").read_text())
    assert without_timings(summary) == without_timings(want)
    written = json.loads((ours / "summary.json").read_text())
    assert without_timings(written) == without_timings(summary)
    assert all(k in summary for k in TIMINGS)


def test_replay_samples_and_filters_as_the_command_does(cli, day, tmp_path):
    got = frame(ticklane.open(day))
    symbols = sorted(got["stock"].unique().to_list())[:2]
    ticklane.replay(
        day, sample="10ms", sample_out=tmp_path / "ours.csv", sample_depth=3,
        symbols=symbols, between="00:00-23:59",
    )
    cli(
        "replay", day, "--quiet", "--sample", "10ms", "--sample-out", tmp_path / "theirs.csv",
        "--sample-depth", 3, "--symbols", ",".join(symbols), "--between", "00:00-23:59",
    )
    ours = (tmp_path / "ours.csv").read_bytes()
    assert ours == (tmp_path / "theirs.csv").read_bytes()
    assert ours.count(b"\n") > 10


def test_replay_raises_input_error_with_the_summary(cli, day, tmp_path):
    cut = tmp_path / "cut.itch50"
    data = day.read_bytes()
    cut.write_bytes(data[: len(data) * 3 // 5 + 2])  # inside a message
    where = re.search(
        r"byte (\d+), message (\d+)", cli("replay", cut, "--quiet", check=False).stderr
    )
    assert where
    with pytest.raises(ticklane.InputError) as raised:
        ticklane.replay(cut, bbo_out=tmp_path / "bbo.csv")
    error = raised.value
    assert (error.offset, error.message_index) == tuple(map(int, where.groups()))
    assert error.summary["error"]
    assert error.summary["bbo_rows"] > 0


def test_replay_raises_loss_declared_for_a_capture_with_gaps(tmp_path):
    capture = shared_data() / "pcap" / "nasdaq-itch50-live" / "Multiple.Packets.pcap"
    with pytest.raises(ticklane.LossDeclared) as raised:
        ticklane.replay(capture, bbo_out=tmp_path / "bbo.csv")
    assert raised.value.ranges
    assert raised.value.summary["declared_lost_messages"] == raised.value.messages
    assert (tmp_path / "bbo.csv").is_file(), "the outputs are finished before it raises"


@pytest.mark.parametrize(
    "outputs, words",
    [
        ({"sample": "10ms"}, "sample_out"),
        ({"dbn_out": "x.dbn"}, "date"),
        ({"schema": "quotes", "dbn_out": "x.dbn"}, "schema"),
        ({"parquet_schema": "l3", "parquet_out": "x.parquet"}, "parquet_schema"),
        ({"bbo_out": "nowhere/bbo.csv"}, "nowhere"),
        ({"depth": 0, "book_out": "b.csv"}, "depth"),
    ],
)
def test_replay_refuses_what_the_command_refuses(day, tmp_path, monkeypatch, outputs, words):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match=words):
        ticklane.replay(day, **outputs)


def test_replay_refuses_to_overwrite_its_input(day):
    with pytest.raises(ValueError):
        ticklane.replay(day, bbo_out=day)
    assert day.stat().st_size > 0


def test_a_dbn_input_dates_ts_event_by_its_own_session(cli, day, tmp_path):
    named = tmp_path / "01302019.NASDAQ_ITCH50"
    named.symlink_to(day)
    dbn = tmp_path / "undated.dbn"
    cli("replay", named, "--dbn-out", dbn, "--quiet")
    from_itch = frame(ticklane.open(named))
    from_dbn = frame(ticklane.open(dbn))
    assert from_dbn.schema["ts_event"] == pl.Datetime("ns", "UTC")
    assert from_dbn["ts_event"].equals(from_itch["ts_event"])
