"""Replays a folder of captured days in parallel on a Dask cluster: one task per day, each
task one ``ticklane.replay`` writing that day's Parquet file and returning its summary.

    python replay_days.py DAYS OUT [--scheduler tcp://HOST:8786] [--workers N] [--schema S]

Without ``--scheduler`` it starts a ``distributed.LocalCluster`` of process workers on this
machine (``--workers``, default one per core: a replay runs on one core, its GIL released);
with one, the same code runs on that cluster, whose workers need the ``ticklane`` package
and the same paths to DAYS and OUT (a shared file system). Days are the files in DAYS that
``ticklane replay`` reads (ITCH50, ``.gz``, pcap, DBN); each writes ``OUT/<name>.parquet``
(``--schema bbo`` or ``mbp-10``), the rows of a serial run, and the summaries are
printed as JSON lines in the days' order. A day that fails is reported with its error and
does not stop the others; the exit status is then 1.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional

#: The file names a replay reads, by their endings.
DAY_SUFFIXES = (".itch50", ".itch", ".gz", ".pcap", ".pcapng", ".dbn", ".zst", "ITCH50")


def days_in(folder: Path) -> List[Path]:
    """The days in ``folder``, by name."""
    return sorted(p for p in folder.iterdir() if p.is_file() and p.name.endswith(DAY_SUFFIXES))


def replay_day(day: str, out: str, schema: str = "bbo") -> Dict[str, Any]:
    """One task: replays ``day`` into ``out/<name>.parquet``; its summary, or its error."""
    import ticklane

    parquet = os.path.join(out, Path(day).name + ".parquet")
    try:
        summary = ticklane.replay(day, parquet_out=parquet, parquet_schema=schema)
    except (ticklane.InputError, ticklane.LossDeclared, ValueError, OSError) as error:
        return {"day": day, "parquet": None, "error": f"{type(error).__name__}: {error}"}
    return {"day": day, "parquet": parquet, "summary": summary}


def replay_days(client: Any, days: List[Path], out: Path, schema: str = "bbo") -> List[Dict[str, Any]]:
    """Every day replayed on ``client``'s cluster, one task each; the results in the days'
    order."""
    out.mkdir(parents=True, exist_ok=True)
    futures = client.map(
        replay_day, [str(d) for d in days], out=str(out), schema=schema, pure=False
    )
    return client.gather(futures)


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("days", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--scheduler", help="a running scheduler (default: a local cluster)")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--schema", choices=("bbo", "mbp-10"), default="bbo")
    args = parser.parse_args(argv)
    from distributed import Client, LocalCluster

    days = days_in(args.days)
    if not days:
        parser.error(f"{args.days} holds no day ticklane replay reads")
    if args.scheduler:
        with Client(args.scheduler) as client:
            results = replay_days(client, days, args.out, args.schema)
    else:
        with LocalCluster(
            n_workers=args.workers, threads_per_worker=1, processes=True,
            dashboard_address=None,
        ) as cluster, Client(cluster) as client:
            results = replay_days(client, days, args.out, args.schema)
    for result in results:
        print(json.dumps(result), flush=True)
    return 1 if any("error" in r for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
