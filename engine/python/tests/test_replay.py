"""``ticklane.open(path).batches(...)`` against the ``ticklane replay`` command on the same
file: the same rows, the same summary, the same errors; and the package's manners (the GIL
released, flat memory, stopping early, Ctrl-C)."""

from __future__ import annotations

import gzip
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

import ticklane
from conftest import shared_data

#: Fields of the summary that measure the run rather than the input.
TIMINGS = ("elapsed_s", "msgs_per_s")


def frame(replay: ticklane.Replay, **kwargs) -> pl.DataFrame:
    """Every bbo row of the replay, through polars."""
    frames = [pl.DataFrame(b.bbo) for b in replay.batches(**kwargs)]
    return pl.concat(frames)


def cli_bbo(cli, path: Path, tmp_path: Path, schema, *args) -> pl.DataFrame:
    """The command's ``--bbo-out`` rows for ``path``, typed as the package types them."""
    out = tmp_path / "bbo.csv"
    cli("replay", path, "--bbo-out", out, "--quiet", *args)
    return pl.read_csv(out, schema=schema)


def cli_summary(cli, path: Path, tmp_path: Path, *args, check=True) -> dict:
    out = tmp_path / "summary.json"
    cli("replay", path, "--summary-json", out, "--quiet", *args, check=check)
    return json.loads(out.read_text())


def without_timings(summary: dict) -> dict:
    return {k: v for k, v in summary.items() if k not in TIMINGS}


def test_bbo_equals_the_command_s_csv(cli, day, tmp_path):
    replay = ticklane.open(day)
    got = frame(replay, rows=50_000)
    assert got.columns == [
        "msg_index", "timestamp_ns", "locate", "stock", "bid_px", "bid_qty",
        "bid_orders", "ask_px", "ask_qty", "ask_orders",
    ]
    assert got.schema["msg_index"] == pl.UInt64
    assert got.schema["bid_px"] == pl.UInt32
    assert got.schema["stock"] == pl.String
    want = cli_bbo(cli, day, tmp_path, got.schema)
    assert got.height == want.height > 100_000
    assert got.equals(want)
    # The command counts bbo rows where it writes them, as the package does.
    summary = cli_summary(cli, day, tmp_path, "--bbo-out", tmp_path / "again.csv")
    assert without_timings(replay.summary) == without_timings(summary)


def test_batches_hold_at_most_rows_rows_and_every_row_once(day):
    sizes = [len(b.bbo) for b in ticklane.open(day).batches(rows=7_919)]
    assert all(0 < n <= 7_919 for n in sizes)
    assert all(n == 7_919 for n in sizes[:-1])
    assert sum(sizes) == frame(ticklane.open(day)).height


def test_pyarrow_and_pandas_take_the_batches_as_they_are(day):
    want = frame(ticklane.open(day), rows=40_000)
    tables = [pa.table(b.bbo) for b in ticklane.open(day).batches(rows=40_000)]
    table = pa.concat_tables(tables)
    assert table.schema.field("ask_qty").type == pa.uint64()
    assert pl.from_arrow(table).equals(want)
    batches = [pa.record_batch(b.bbo) for b in ticklane.open(day).batches(rows=40_000)]
    assert sum(b.num_rows for b in batches) == want.height
    pandas = pd.concat(
        [pd.DataFrame.from_arrow(b.bbo) for b in ticklane.open(day).batches(rows=40_000)],
        ignore_index=True,
    )
    assert pandas.shape == (want.height, 10)
    assert pandas["bid_px"].tolist() == want["bid_px"].to_list()
    assert pandas["stock"].tolist() == want["stock"].to_list()


def test_threads_give_the_same_rows(day):
    one = frame(ticklane.open(day))
    two = frame(ticklane.open(day, threads=2), rows=30_000)
    assert two.equals(one)


def test_symbols_and_between_choose_the_command_s_rows(cli, day, tmp_path):
    everything = frame(ticklane.open(day))
    symbols = everything["stock"].value_counts(sort=True)["stock"].to_list()[1:3]
    stamps = everything["timestamp_ns"]
    start, end = (int(stamps.quantile(q)) // 1_000 for q in (0.3, 0.6))
    window = "-".join(
        f"{us // 3_600_000_000:02}:{us // 60_000_000 % 60:02}:{us // 1_000_000 % 60:02}"
        f".{us % 1_000_000:06}"
        for us in (start, end)
    )
    got = frame(ticklane.open(day, symbols=symbols, between=window))
    want = cli_bbo(
        cli, day, tmp_path, got.schema, "--symbols", ",".join(symbols), "--between", window
    )
    assert 0 < got.height < everything.height
    assert set(got["stock"].unique()) == set(symbols)
    assert got.equals(want)


def test_a_gzipped_day_gives_the_same_rows(day, tmp_path):
    gz = tmp_path / "day.itch50.gz"
    gz.write_bytes(gzip.compress(day.read_bytes(), compresslevel=1))
    assert frame(ticklane.open(gz)).equals(frame(ticklane.open(day)))


def test_a_truncated_file_is_an_input_error_where_the_command_says(cli, day, tmp_path):
    cut = tmp_path / "cut.itch50"
    data = day.read_bytes()
    cut.write_bytes(data[: len(data) * 2 // 3 + 5])
    done = cli("replay", cut, "--quiet", check=False)
    assert done.returncode == 1
    where = re.search(r"byte (\d+), message (\d+)", done.stderr)
    assert where, done.stderr

    replay = ticklane.open(cut)
    rows = 0
    with pytest.raises(ticklane.InputError) as raised:
        for batch in replay.batches(rows=10_000):
            rows += len(batch.bbo)
    error = raised.value
    assert error.path == str(cut)
    assert (error.offset, error.message_index) == tuple(map(int, where.groups()))
    assert "truncated" in str(error)
    # Everything before the fault was delivered, and the summary says what stopped it.
    assert rows == frame(ticklane.open(day)).filter(
        pl.col("msg_index") < error.message_index
    ).height
    assert replay.summary["error"]


def test_a_missing_file_is_an_input_error_naming_it(tmp_path):
    missing = tmp_path / "nowhere.itch50"
    with pytest.raises(ticklane.InputError) as raised:
        next(iter(ticklane.open(missing).batches()))
    assert raised.value.path == str(missing)
    assert raised.value.offset is None and raised.value.message_index is None


def test_declared_loss_is_loss_declared_with_the_command_s_ranges(cli, tmp_path):
    capture = shared_data() / "pcap" / "nasdaq-itch50-live" / "Multiple.Packets.pcap"
    done = cli("replay", capture, "--quiet", check=False)
    assert done.returncode == 3, done.stderr
    want = cli_summary(cli, capture, tmp_path, "--bbo-out", tmp_path / "bbo.csv", check=False)

    replay = ticklane.open(capture)
    with pytest.raises(ticklane.LossDeclared) as raised:
        for _ in replay.batches():
            pass
    loss = raised.value
    ranges = want["declared_lost_ranges"]
    assert ranges, want
    assert loss.ranges == [tuple(r) for r in ranges]
    assert loss.messages == sum(last - first + 1 for first, last in ranges)
    assert without_timings(loss.summary) == without_timings(want)
    assert without_timings(replay.summary) == without_timings(want)


@pytest.mark.parametrize(
    "kwargs",
    [{"tables": ("quotes",)}, {"tables": ()}, {"rows": 0}],
)
def test_bad_arguments_are_value_errors(day, kwargs):
    with pytest.raises(ValueError):
        next(iter(ticklane.open(day).batches(**kwargs)))


@pytest.mark.parametrize(
    "kwargs",
    [
        {"between": "10:00-09:00"},
        {"between": "noon-one"},
        {"symbols": "TOOLONGNAME"},
        {"date": "12/24/2010"},
        {"threads": 256},
    ],
)
def test_bad_filters_are_value_errors(day, kwargs):
    with pytest.raises(ValueError):
        next(iter(ticklane.open(day, **kwargs).batches()))


def test_bad_open_arguments_are_value_errors(day):
    with pytest.raises(ValueError):
        ticklane.open(day, threads=0)
    with pytest.raises(ValueError):
        ticklane.open(day, symbols=[])


def test_symbols_may_be_one_comma_separated_string(day):
    everything = frame(ticklane.open(day))
    pair = sorted(everything["stock"].unique().to_list())[:2]
    listed = frame(ticklane.open(day, symbols=pair))
    assert listed.height > 0
    assert frame(ticklane.open(day, symbols=",".join(pair))).equals(listed)


def test_the_summary_waits_for_the_end(day):
    replay = ticklane.open(day)
    with pytest.raises(RuntimeError):
        replay.summary


def test_another_python_thread_runs_while_a_batch_is_made(long_day):
    """The first batch of a replay asked for in one batch takes the whole replay to make;
    a thread that ticks every millisecond must keep ticking meanwhile."""
    ticks: list[float] = []
    stop = threading.Event()

    def tick():
        while not stop.is_set():
            ticks.append(time.perf_counter())
            time.sleep(0.001)

    ticker = threading.Thread(target=tick)
    ticker.start()
    try:
        batches = iter(ticklane.open(long_day).batches(rows=100_000_000))
        started = time.perf_counter()
        next(batches)
        ended = time.perf_counter()
    finally:
        stop.set()
        ticker.join()
    during = [t for t in ticks if started < t < ended]
    assert ended - started > 0.2, "the replay was too quick to show anything"
    assert len(during) >= 20, f"{len(during)} ticks in {ended - started:.2f} s"


def _threads() -> int:
    return len(os.listdir("/proc/self/task"))


def test_stopping_early_stops_the_replay(long_day):
    before = _threads()
    batches = ticklane.open(long_day).batches(rows=10_000)
    for n, _ in enumerate(batches):
        if n == 2:
            break
    assert _threads() > before, "the engine thread should still be running"
    batches.close()
    deadline = time.monotonic() + 10
    while _threads() > before and time.monotonic() < deadline:
        time.sleep(0.01)
    assert _threads() == before


def _peak_kib_of(*command: object) -> int:
    """The peak RSS of one run of a command (its own, not any other child's)."""
    child = subprocess.Popen([*map(str, command)], stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    assert child.returncode == 0, command
    return usage.ru_maxrss


GROWTH = """
import sys, pyarrow as pa, ticklane

def kib(field):
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) for l in f if l.startswith(field + ":"))

before = kib("VmRSS")
total = 0
for batch in ticklane.open(sys.argv[1]).batches(rows=10_000):
    total += pa.record_batch(batch.bbo).nbytes
print(kib("VmHWM") - before, total >> 10)
"""


def test_memory_stays_flat_over_a_long_day(long_day):
    """The package holds a few batches at a time, whatever the day's length: its growth
    over the replay is the engine's own (the command's peak RSS) and a margin far below
    the rows' total size; a package that kept its rows would grow by all of them."""
    from conftest import binary

    engine_kib = _peak_kib_of(binary(), "replay", long_day, "--bbo-out", os.devnull, "--quiet")
    done = subprocess.run(
        [sys.executable, "-c", GROWTH, str(long_day)],
        capture_output=True, text=True, check=True, timeout=300,
    )
    grown_kib, rows_kib = map(int, done.stdout.split())
    margin_kib = 24 << 10
    assert rows_kib > 2 * margin_kib, f"only {rows_kib} KiB of rows: the day proves nothing"
    assert grown_kib < engine_kib + margin_kib, (
        f"grew {grown_kib} KiB over {rows_kib} KiB of rows; the command peaks at "
        f"{engine_kib} KiB"
    )


CTRL_C = """
import sys, time, ticklane
batches = iter(ticklane.open(sys.argv[1]).batches(rows=100_000_000))
print("waiting", flush=True)
started = time.perf_counter()
try:
    next(batches)
    print("finished", time.perf_counter() - started, flush=True)
except KeyboardInterrupt:
    print("interrupted", time.perf_counter() - started, flush=True)
"""


def test_ctrl_c_interrupts_a_wait_for_a_batch(long_day):
    child = subprocess.Popen(
        [sys.executable, "-c", CTRL_C, str(long_day)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert child.stdout.readline().strip() == "waiting"
    time.sleep(0.1)
    child.send_signal(signal.SIGINT)
    out, err = child.communicate(timeout=30)
    assert out.startswith("interrupted"), (out, err)
    assert float(out.split()[1]) < 2.0, out


def test_the_readme_s_lines_make_the_command_s_dataframe(cli, day, tmp_path, monkeypatch):
    from conftest import ROOT

    readme = (ROOT / "README.md").read_text()
    found = re.search(
        r"<!-- snippet:python-package -->\s*```python\n(.*?)```", readme, re.DOTALL
    )
    assert found, "README.md has no python-package snippet"
    (tmp_path / "day.itch50").symlink_to(day)
    monkeypatch.chdir(tmp_path)
    names: dict = {}
    exec(compile(found.group(1), "README.md", "exec"), names)
    want = cli_bbo(cli, day, tmp_path, names["bbo"].schema)
    assert names["bbo"].equals(want)


@pytest.mark.parametrize("name", ["day.dbn", "day.dbn.zst"])
def test_a_dbn_mbo_input_gives_the_command_s_rows(cli, day, tmp_path, name):
    dbn = tmp_path / name
    cli("replay", day, "--dbn-out", dbn, "--date", "2024-03-01", "--quiet")
    got = frame(ticklane.open(dbn))
    assert got.columns[-1] == "ts_event", "a DBN input carries its session"
    got = got.drop("ts_event")
    want = cli_bbo(cli, dbn, tmp_path, got.schema)
    assert got.height > 100_000
    assert got.equals(want)
