"""Compare ticklane's CSV outputs with the itch-book oracle's, row for row.

    /tmp/oracle/bin/python tests/oracle/compare.py OURS_BBO THEIRS_BBO OURS_BOOK THEIRS_BOOK \
        [--mod32] [--no-collapse] [--show 10]
    /tmp/oracle/bin/python tests/oracle/compare.py --depth-only OURS_BOOK THEIRS_BOOK [--mod32]

--depth-only compares the final depth alone: for a book that has no top-of-book stream of
its own, such as one read out of a live snapshot with `ticklane book --snapshot PATH --csv`.

OURS_* are written by `ticklane replay FILE --bbo-out OURS_BBO --book-out OURS_BOOK --depth N`,
THEIRS_* by `tests/oracle/itch_book_oracle.py FILE --bbo-out THEIRS_BBO --book-out THEIRS_BOOK
--depth N` (same FILE, same N). Both use the formats in engine/outputs/src/csv/mod.rs.

Top of book. itch-book's `bbo` table triggers on fewer changes than ticklane's stream (finding
2 in itch_book_oracle.py): it emits a row only when bid_px, bid_qty, ask_px or ask_qty changes,
never on an order-count change alone, while ticklane emits when any of the six values
changes. So ticklane's stream is first collapsed (default; --no-collapse compares the raw
streams, e.g. two ticklane runs) by this rule:

    per locate, keep a ticklane row iff (bid_px, bid_qty, ask_px, ask_qty) differs from
    that tuple of the last KEPT row for the same locate (0,0,0,0 before the first);
    with --mod32 the quantities in that test are taken modulo 2^32, as itch-book sums them.

Under ticklane's book rules a count can only change alone at the top through inputs on
which the two books already disagree (itch-book's U onto a live reference), so on files the
two should agree on the collapse normally removes nothing; it is there so that such a
difference is reported once, at its real cause, and not as a cascade of count-only rows.

Kept rows are compared whole (all ten columns, counts included), exactly. Each message
produces at most one row in either stream, so rows are matched on msg_index; the first
differing rows (message index, both rows) and the number of differing rows are printed.

Depth: rows are matched on (locate, side, level) and compared whole.

--mod32 compares the quantity columns modulo 2^32 (itch-book sums levels in uint32; use it
when a level can hold 2^32 shares or more). Exit status 0 and the line
`ORACLE OK: N bbo rows, M depth rows equal` when everything matches, 1 otherwise, 2 on a
malformed input file.
"""

from __future__ import annotations

import argparse
import sys

BBO_HEADER = "msg_index,timestamp_ns,locate,stock,bid_px,bid_qty,bid_orders,ask_px,ask_qty,ask_orders"
BOOK_HEADER = "locate,stock,side,level,price,qty,orders"
BBO_QTY = (5, 8)        # bid_qty, ask_qty
BOOK_QTY = (5,)         # qty
M32 = (1 << 32) - 1


class BadInput(Exception):
    pass


def read_csv(path: str, header: str, qty_cols: tuple[int, ...], mod32: bool) -> list[list]:
    """Rows as lists; integer columns as int (quantities reduced if mod32)."""
    with open(path, "r", newline="") as f:
        first = f.readline()
        if first.rstrip("\n") != header:
            raise BadInput(f"{path}: header is {first.rstrip()!r}, expected {header!r}")
        ncols = header.count(",") + 1
        text_cols = {i for i, name in enumerate(header.split(",")) if name in ("stock", "side")}
        rows = []
        for lineno, line in enumerate(f, start=2):
            if not line.endswith("\n"):
                raise BadInput(f"{path}:{lineno}: last line does not end in \\n")
            fields = line[:-1].split(",")
            if len(fields) != ncols:
                raise BadInput(f"{path}:{lineno}: {len(fields)} fields, expected {ncols}")
            row = []
            for i, v in enumerate(fields):
                if i in text_cols:
                    row.append(v)
                else:
                    try:
                        n = int(v)
                    except ValueError:
                        raise BadInput(f"{path}:{lineno}: field {i + 1} {v!r} is not an integer")
                    row.append(n & M32 if mod32 and i in qty_cols else n)
            rows.append(row)
    return rows


def collapse(rows: list[list], mod32: bool) -> list[list]:
    """ticklane's stream reduced to the rows itch-book's bbo table emits (see docstring)."""
    last: dict[int, tuple] = {}
    kept = []
    for r in rows:
        bq, aq = r[5], r[8]
        if mod32:
            bq, aq = bq & M32, aq & M32
        key = (r[4], bq, r[7], aq)
        if last.get(r[2], (0, 0, 0, 0)) != key:
            last[r[2]] = key
            kept.append(r)
    return kept


def fmt(row) -> str:
    return "-" if row is None else ",".join(map(str, row))


def diff(ours: list[list], theirs: list[list], key, what: str, show: int) -> int:
    """Matches rows on key(row); prints the first `show` differences; returns their count."""
    a = {}
    for r in ours:
        k = key(r)
        if k in a:
            raise BadInput(f"{what}: ours has two rows for {k}")
        a[k] = r
    b = {}
    for r in theirs:
        k = key(r)
        if k in b:
            raise BadInput(f"{what}: theirs has two rows for {k}")
        b[k] = r
    bad = sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))
    for k in bad[:show]:
        print(f"{what} differs at {k}:\n  ours:   {fmt(a.get(k))}\n  theirs: {fmt(b.get(k))}")
    if bad:
        only_a = sum(1 for k in bad if k not in b)
        only_b = sum(1 for k in bad if k not in a)
        print(f"{what}: {len(bad)} differing rows ({only_a} only in ours, {only_b} only in "
              f"theirs, {len(bad) - only_a - only_b} with different values); "
              f"ours {len(ours)} rows, theirs {len(theirs)} rows")
    return len(bad)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="+",
                    help="OURS_BBO THEIRS_BBO OURS_BOOK THEIRS_BOOK, or with --depth-only "
                         "OURS_BOOK THEIRS_BOOK")
    ap.add_argument("--depth-only", action="store_true",
                    help="compare the final depth only (two files)")
    ap.add_argument("--mod32", action="store_true", help="compare quantities modulo 2^32")
    ap.add_argument("--collapse", action=argparse.BooleanOptionalAction, default=True,
                    help="reduce OURS_BBO to itch-book's trigger rule first (default: on)")
    ap.add_argument("--show", type=int, default=10, help="differences to print per file")
    a = ap.parse_args(argv)
    if len(a.files) != (2 if a.depth_only else 4):
        ap.error("expected OURS_BOOK THEIRS_BOOK with --depth-only, "
                 "else OURS_BBO THEIRS_BBO OURS_BOOK THEIRS_BOOK")
    try:
        if a.depth_only:
            ours_bbo, theirs_bbo = [], []
            ours_book_path, theirs_book_path = a.files
        else:
            ours_bbo = read_csv(a.files[0], BBO_HEADER, BBO_QTY, a.mod32)
            theirs_bbo = read_csv(a.files[1], BBO_HEADER, BBO_QTY, a.mod32)
            ours_book_path, theirs_book_path = a.files[2:]
        ours_book = read_csv(ours_book_path, BOOK_HEADER, BOOK_QTY, a.mod32)
        theirs_book = read_csv(theirs_book_path, BOOK_HEADER, BOOK_QTY, a.mod32)
        raw = len(ours_bbo)
        if a.collapse:
            ours_bbo = collapse(ours_bbo, a.mod32)
        bad_bbo = diff(ours_bbo, theirs_bbo, lambda r: r[0], "bbo msg_index", a.show)
        bad_book = diff(ours_book, theirs_book, lambda r: (r[0], r[2], r[3]),
                        "depth (locate, side, level)", a.show)
    except (BadInput, OSError) as e:
        print(f"compare: {e}", file=sys.stderr)
        return 2
    if bad_bbo or bad_book:
        print(f"ORACLE MISMATCH: {bad_bbo} bbo rows, {bad_book} depth rows differ")
        return 1
    if a.depth_only:
        print(f"ORACLE OK: {len(ours_book)} depth rows equal")
        return 0
    if a.collapse:
        print(f"ours: {raw} bbo rows, {len(ours_bbo)} after collapsing to itch-book's trigger rule")
    print(f"ORACLE OK: {len(ours_bbo)} bbo rows, {len(ours_book)} depth rows equal")
    return 0


if __name__ == "__main__":
    sys.exit(main())
