"""Whole-process throughput: ticklane against two independent ITCH books from PyPI.

    /tmp/oracle/bin/python bench/compare_throughput.py FILE [--rounds 5] \
        [--ticklane target/release-lto/ticklane | --skip-ticklane]
    bench/compare_throughput.sh FILE [--rounds 5]      # builds ticklane first, then this

FILE is an ITCH 5.0 file (2-byte big-endian length before every message). Each engine runs
as its own process, reading FILE itself, and is timed as a whole (wall clock from spawn to
exit: interpreter start-up, imports, reading the file, building every book; nothing
excluded). The rounds are interleaved (A B C A B C ...) so drift on a shared machine hits
every engine alike; the best round of each counts. Engines:

  ticklane   `ticklane replay FILE --bbo-out /dev/null` (full books + top-of-book stream)
  ticklane-Nt  the same with `--threads N`, for each N of `--threads` (default 2; 1 or
             `--threads ''` for none): its ratio below 1 is its speedup's inverse
  ticklane-books  `ticklane replay FILE` with no output at all: the books alone
  ticklane-dbn-S  the same with `--dbn-out TMP/x.S.dbn --schema S`, for each schema S of
             `--dbn-schemas` (default all five; `''` for none): its ratio is what writing
             DBN costs (the goal: never above 2, i.e. never halving throughput)
  ticklane-pq-S  the same with `--parquet-out TMP/x.S.parquet --parquet-schema S`, for each
             view S of `--parquet-schemas` (default bbo,mbp-10; `''` for none)
  ticklane-dbn-S-Nt, ticklane-pq-S-Nt  those DBN and Parquet rows again with `--threads N`,
             for each N of `--output-threads` (default none): the outputs made on N book
             threads (the files are one thread's, byte for byte)
  ticklane-sample-I  the same with `--sample I --sample-out TMP/x.I.csv`, for each interval I
             of `--samples` (default 1s; `''` for none)
  itch-book  itch_book._core.Session(tables=["bbo"]): parse, full books for every symbol and
             the bbo table, fed 8 MiB chunks of the file; the table is drained after each
             chunk (what itch-book's own Feed does, without its reader thread and numpy
             post-processing)
  itchcpp    itchcpp.book.BookManager().process_stream(whole file): parse and full L3 books
             for every symbol (no symbol filter = all tracked). process_stream restarts its
             parser on every call, so it cannot be fed arbitrary chunks; one call on the
             whole file is the fastest complete path the package offers

The two Python engines are run through this same script (`--driver NAME FILE`, an internal
mode), which prints the engine's own message count so the harness can check that all of
the file was processed. The message count in the table is counted once, by this script,
from the file's frames (up to a zero-length end-of-session frame).

Output (msgs_per_s = messages / best_s; ticklane_ratio = engine best_s / ticklane best_s,
i.e. how many times faster ticklane is):

    file: X  messages: N  rounds: 5 (best of, interleaved)
    engine      best_s   msgs_per_s   ticklane_ratio
    ticklane    ...
    itch-book   ...
    itchcpp     ...
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

CHUNK = 8 << 20


def count_messages(path: str) -> int:
    """Number of length-prefixed frames before EOF or a zero-length frame."""
    n = 0
    with open(path, "rb") as f:
        data = f.read()
    off, end = 0, len(data)
    while off + 2 <= end:
        ln = (data[off] << 8) | data[off + 1]
        if ln == 0 or off + 2 + ln > end:
            break
        off += 2 + ln
        n += 1
    return n


def drive_itch_book(path: str) -> int:
    from itch_book._core import Session

    s = Session(tables=["bbo"], depth=0, symbols=[])
    s.reserve(CHUNK // 21)
    rows = 0
    with open(path, "rb", buffering=0) as f:
        while chunk := f.read(CHUNK):
            s.feed(chunk)
            rows += len(s.take_bbo()["seq"])
    st = s.stats()
    print(f"messages={st['messages']} bbo_rows={rows} books={st['books']}")
    return 0


def drive_itchcpp(path: str) -> int:
    from itchcpp.book import BookManager

    m = BookManager()
    with open(path, "rb") as f:
        m.process_stream(f.read())
    print(f"messages=? books={m.book_count()}")
    return 0


DRIVERS = {"itch-book": drive_itch_book, "itchcpp": drive_itchcpp}


def listed(csv: str) -> list[str]:
    """The non-empty items of a comma-separated option."""
    return [t.strip() for t in csv.split(",") if t.strip()]


def time_once(cmd: list[str]) -> tuple[float, str]:
    t0 = time.perf_counter()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    dt = time.perf_counter() - t0
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} exited {p.returncode}:\n{p.stderr[-2000:]}")
    return dt, p.stdout.strip()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("file")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--ticklane", default="target/release-lto/ticklane",
                    help="path of the ticklane binary (default: %(default)s)")
    ap.add_argument("--skip-ticklane", action="store_true", help="time only the two PyPI engines")
    ap.add_argument("--threads", default="2",
                    help="comma-separated book-thread counts to time besides 1 (default: %(default)s)")
    ap.add_argument("--dbn-schemas", default="mbo,mbp-1,mbp-10,tbbo,trades",
                    help="comma-separated --dbn-out schemas to time (default: %(default)s)")
    ap.add_argument("--parquet-schemas", default="bbo,mbp-10",
                    help="comma-separated --parquet-out views to time (default: %(default)s)")
    ap.add_argument("--output-threads", default="",
                    help="comma-separated --threads N to time the DBN and Parquet rows with too")
    ap.add_argument("--samples", default="1s",
                    help="comma-separated --sample intervals to time (default: %(default)s)")
    ap.add_argument("--out-dir", default=None,
                    help="folder for the DBN, Parquet and sample files (default: a new folder in "
                         "the system's temporary folder). Their write goes through the page "
                         "cache to that folder's disk: a tmpfs such as /dev/shm leaves the "
                         "disk out and times what the engine does")
    ap.add_argument("--driver", choices=sorted(DRIVERS), help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.driver:
        return DRIVERS[a.driver](a.file)
    if a.rounds < 1:
        ap.error("--rounds must be at least 1")

    messages = count_messages(a.file)
    if messages == 0:
        raise SystemExit(f"{a.file}: no ITCH messages")
    me = os.path.abspath(__file__)
    engines: list[tuple[str, list[str]]] = []
    out_dir = None
    if not a.skip_ticklane:
        if not os.access(a.ticklane, os.X_OK):
            raise SystemExit(f"{a.ticklane}: not an executable (build it, or pass --skip-ticklane)")
        engines.append(("ticklane", [a.ticklane, "replay", a.file, "--bbo-out", "/dev/null"]))
        for n in (int(t) for t in a.threads.split(",") if t.strip() and int(t) > 1):
            engines.append((f"ticklane-{n}t", [a.ticklane, "replay", a.file, "--bbo-out",
                                               "/dev/null", "--threads", str(n)]))
        engines.append(("ticklane-books", [a.ticklane, "replay", a.file, "-q"]))
        out_dir = tempfile.mkdtemp(prefix="ticklane-out-", dir=a.out_dir)
        base = [a.ticklane, "replay", a.file, "--bbo-out", "/dev/null"]
        for schema in listed(a.dbn_schemas):
            engines.append((f"ticklane-dbn-{schema}",
                            base + ["--dbn-out", os.path.join(out_dir, f"x.{schema}.dbn"),
                                    "--schema", schema, "--date", "2019-01-30"]))
        for view in listed(a.parquet_schemas):
            engines.append((f"ticklane-pq-{view}",
                            base + ["--parquet-out", os.path.join(out_dir, f"x.{view}.parquet"),
                                    "--parquet-schema", view, "--date", "2019-01-30"]))
        for n in (int(t) for t in listed(a.output_threads) if int(t) > 1):
            threads = ["--threads", str(n)]
            for schema in listed(a.dbn_schemas):
                engines.append((f"ticklane-dbn-{schema}-{n}t",
                                base + ["--dbn-out", os.path.join(out_dir, f"x.{schema}.{n}t.dbn"),
                                        "--schema", schema, "--date", "2019-01-30"] + threads))
            for view in listed(a.parquet_schemas):
                engines.append((f"ticklane-pq-{view}-{n}t",
                                base + ["--parquet-out",
                                        os.path.join(out_dir, f"x.{view}.{n}t.parquet"),
                                        "--parquet-schema", view, "--date", "2019-01-30"]
                                + threads))
        for interval in listed(a.samples):
            engines.append((f"ticklane-sample-{interval}",
                            base + ["--sample", interval,
                                    "--sample-out", os.path.join(out_dir, f"x.{interval}.csv")]))
    for name in ("itch-book", "itchcpp"):
        engines.append((name, [sys.executable, me, "--driver", name, a.file]))

    best = {name: float("inf") for name, _ in engines}
    warned = False
    for _ in range(a.rounds):
        for name, cmd in engines:
            dt, out = time_once(cmd)
            best[name] = min(best[name], dt)
            if name == "itch-book" and f"messages={messages} " not in out + " " and not warned:
                warned = True       # e.g. frames of unknown type, which itch-book skips
                print(f"warning: itch-book reports {out!r}; the file has {messages} frames",
                      file=sys.stderr)

    print(f"file: {a.file}  messages: {messages}  rounds: {a.rounds} (best of, interleaved)")
    print(f"{'engine':<20} {'best_s':>8} {'msgs_per_s':>12}   ticklane_ratio")
    base = best.get("ticklane")
    for name, _ in engines:
        s = best[name]
        ratio = f"{s / base:.2f}x" if base else "-"
        print(f"{name:<20} {s:>8.3f} {messages / s:>12.0f}   {ratio}")
    if out_dir:
        shutil.rmtree(out_dir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
