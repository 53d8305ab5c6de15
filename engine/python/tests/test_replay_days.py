"""The Dask example (``engine/python/examples/replay_days.py``): a folder of days replayed on
a ``distributed.LocalCluster`` of process workers, one task per day, gives the summaries and
the Parquet rows of replaying the days one after another (the files differ only in the run's
time and rate, which each file's footer records)."""

from __future__ import annotations

import json
import subprocess
import sys

import pyarrow.parquet as pq
import pytest

import ticklane
from conftest import ROOT

EXAMPLE = ROOT / "engine" / "python" / "examples" / "replay_days.py"


def comparable(summary: dict) -> dict:
    """The summary without what depends on the run rather than the day (times, rates, paths)."""
    return {
        k: v for k, v in summary.items()
        if not any(w in k for w in ("elapsed", "seconds", "per_s", "wall", "rate", "ns_per"))
    }


def test_a_folder_of_days_on_a_local_cluster_is_the_serial_run(cli, tmp_path):
    pytest.importorskip("distributed")
    days = tmp_path / "days"
    days.mkdir()
    for seed in (1, 2, 3):
        cli("gen", days / f"day{seed}.itch50", "--messages", 60_000, "--seed", seed)
    (days / "notes.txt").write_text("not a day")
    out = tmp_path / "out"
    done = subprocess.run(
        [sys.executable, str(EXAMPLE), str(days), str(out), "--workers", "2"],
        capture_output=True, text=True, timeout=600,
    )
    assert done.returncode == 0, done.stderr
    results = [json.loads(line) for line in done.stdout.splitlines()]
    assert [r["day"] for r in results] == [str(days / f"day{s}.itch50") for s in (1, 2, 3)]
    serial = tmp_path / "serial"
    serial.mkdir()
    for result in results:
        name = result["day"].rsplit("/", 1)[1]
        expected = ticklane.replay(result["day"], parquet_out=serial / f"{name}.parquet")
        assert comparable(result["summary"]) == comparable(expected), name
        ours, theirs = (pq.read_table(d / f"{name}.parquet") for d in (out, serial))
        assert ours.equals(theirs), name
        # The footer carries the run's summary, its time and rate too: the rest is equal.
        ours, theirs = (
            dict(pq.read_metadata(d / f"{name}.parquet").metadata) for d in (out, serial)
        )
        summaries = [json.loads(m.pop(b"ticklane.summary")) for m in (ours, theirs)]
        assert ours == theirs and comparable(summaries[0]) == comparable(summaries[1]), name


def test_a_day_that_fails_is_reported_and_the_others_still_run(cli, tmp_path):
    pytest.importorskip("distributed")
    days = tmp_path / "days"
    days.mkdir()
    cli("gen", days / "good.itch50", "--messages", 20_000, "--seed", 4)
    whole = (days / "good.itch50").read_bytes()
    (days / "torn.itch50").write_bytes(whole[: len(whole) // 2 + 3])
    done = subprocess.run(
        [sys.executable, str(EXAMPLE), str(days), str(tmp_path / "out"), "--workers", "2"],
        capture_output=True, text=True, timeout=600,
    )
    assert done.returncode == 1, done.stderr
    good, torn = (json.loads(line) for line in done.stdout.splitlines())
    assert good["summary"]["messages"] > 0 and "error" not in good
    assert torn["error"].startswith("InputError") and "torn.itch50" in torn["error"], torn
