"""Independent oracle: ticklane's two CSV outputs, produced by itch-book (PyPI, C++ core).

Replays an ITCH 5.0 file (2-byte big-endian length before every message, as in Nasdaq's
ITCH50 day files) through `itch_book._core.Session`, fed in chunks of the raw bytes, and
writes, in ticklane's formats (documented in engine/outputs/src/csv/mod.rs, "The contracts"):

  --bbo-out PATH   msg_index,timestamp_ns,locate,stock,bid_px,bid_qty,bid_orders,ask_px,ask_qty,ask_orders
                   one row per row of itch-book's `bbo` table, i.e. itch-book's trigger rule,
                   which is NOT ticklane's (see finding 2); compare with compare.py, which
                   reduces ticklane's stream to the rows itch-book emits.
  --book-out PATH  locate,stock,side,level,price,qty,orders   (final book, --depth N levels
                   per side, 1 <= N <= 50, itch-book's limit)

Usage (the venv at /tmp/oracle has itch-book 0.2.1):

    /tmp/oracle/bin/python tests/oracle/itch_book_oracle.py FILE \
        --bbo-out theirs_bbo.csv --book-out theirs_book.csv --depth 10
    /tmp/oracle/bin/python tests/oracle/itch_book_oracle.py --self-test

`--self-test` rebuilds the hand-made ITCH files behind the findings below (with
itch_writer.py) and checks every finding against the installed itch-book; run it after
upgrading itch-book.

Findings about itch-book 0.2.1, established by experiment on hand-built files (each is a
check in self_test(); "ticklane" means the book rules in engine/book/src/lib.rs):

 1. `seq` is 1-based and counts the messages itch-book decodes: every frame whose type is one
    of the 23 ITCH 5.0 types and whose length is that type's spec length, including types it
    does not act on (R, H, P, Q, I, O, L, V, N, ...). A frame of unknown type (`unknown` in
    stats) or with the wrong length for its type (`malformed`) is skipped and NOT counted, so
    after such a frame `seq` lags the frame position. This script therefore walks the frames
    itself and writes msg_index = 1-based position among all length-prefixed frames of the
    file, mapping seq -> frame through the "decoded" mask. On a well-formed file the two are
    equal. A zero-length frame ends the session: itch-book ignores every byte after it
    (stats `end_of_session`), and so does this script (frames after it are not counted).
 2. The `bbo` table emits a row only when bid_px, bid_sz, ask_px or ask_sz changes; a change
    of the order counts alone (bid_ct/ask_ct) emits NO row (reproduced with a U onto a live
    reference, the only well-formed-looking way to change a count without a size). Rows it
    does emit carry the current counts. The `depth` table does emit on count-only changes.
    ticklane emits on any of the six values, so compare.py collapses ticklane's stream: a
    ticklane row is kept iff (bid_px, bid_qty, ask_px, ask_qty) differs from that of the
    last kept row for the same locate (zeros before the first). Because every book event
    moves at least one size by a non-zero amount below 2^32 unless it is such a same-level
    count-only change, this reproduces itch-book's rows exactly on identical books.
 3. At most one `bbo` row per message, including U (the remove-and-add is one event; no
    intermediate row). Messages that leave the top of book unchanged (adds or executions
    at deeper levels, E/X for 0 shares, P, Q, R, H, S, ...) emit no row.
 4. For E, C, X, D and U the row is emitted for the locate of the order named (its stored
    locate), not the locate in the message header. Same as ticklane.
 5. U: the old order is removed and the new one added with the old order's side, at the new
    price, as a new order at the back of its level (FIFO position is not observable in these
    tables; engine/book/src/lib.rs documents it). A U whose new order would be rejected (0 shares, or
    price 0) still removes the old order (stats `rejected` + 1). A U naming an unknown
    reference changes nothing (`missing_ref` + 1), adds nothing: as ticklane.
 6. An add (A/F) with price 0 is rejected (`rejected`): no order, no row. ticklane accepts
    zero prices -> divergence; keep zero prices out of files used for comparison.
 7. An add with 0 shares is rejected (`rejected`), as in ticklane.
 8. An add (or U) reusing a live reference evicts the live order and adds the new one
    (`dup_ref` + 1; even onto the other side or another price). ticklane rejects the add and
    keeps the live order -> divergence; keep live-reference reuse out of compared files.
 9. Reference 0 is rejected on add (`rejected`), and E/C/X/D/U naming 0 then find nothing
    (`missing_ref`). ticklane treats 0 as an ordinary reference -> divergence; keep
    reference 0 out of compared files.
10. E, C and X for more than the remaining shares clamp to the remaining shares (`clamped`
    + 1) and the order leaves the book. C reduces the order at its resting price whatever
    the execution price. Same as ticklane.
11. Level sizes are summed in uint32: 2^32-1 + 2 shares at one price reads 1. Sizes in both
    tables are uint32, counts uint32, prices int64 integers in 1/10,000 dollars (the core
    session never produces floats; Feed(price_type="float") converts afterwards, we don't
    use Feed). Compare quantities modulo 2^32 (compare.py --mod32) when a level can exceed
    2^32 - 1 shares.
12. Empty side: px 0, sz 0, ct 0, i.e. ticklane's `0,0,0`. `ts` in the core tables is the
    raw ITCH timestamp (ns since midnight); Feed adds New York midnight, we don't.
13. Final depth: the core has no book query; the `depth` table (one row whenever anything in
    the top N levels of either side changes, count-only changes included, never on changes
    below level N) holds after its last row per locate exactly the final top N. This script
    drains the table after every chunk and keeps the last row per locate, so memory stays
    flat. A level is present iff its count is non-zero. depth is limited to 1..50.
14. Crossing adds and U are applied as sent (no uncrossing; stats `crossed_books`), as in
    ticklane. Feeding the bytes in chunks of any size (1 byte, 7 bytes, ...) gives the same
    tables as one buffer.

`stock` is computed here, not by itch-book: the symbol of the latest R message for that
locate with trailing spaces removed, or empty; for bbo rows "latest" means at or before the
row's message, for the book file at the end of the input.
"""

from __future__ import annotations

import argparse
import mmap
import os
import sys
from array import array

import numpy as np
from itch_book._core import Session

CHUNK = 8 << 20

# Spec length (type byte included) of each ITCH 5.0 message type; 0 = not an ITCH 5.0 type.
SPEC_LEN = np.zeros(256, dtype=np.int64)
for _t, _n in {"S": 12, "R": 39, "H": 25, "Y": 20, "L": 26, "V": 35, "W": 12, "K": 28,
               "J": 35, "h": 21, "A": 36, "F": 40, "E": 31, "C": 36, "X": 23, "D": 19,
               "U": 35, "P": 44, "Q": 40, "B": 19, "I": 50, "N": 20, "O": 48}.items():
    SPEC_LEN[ord(_t)] = _n

BBO_HEADER = "msg_index,timestamp_ns,locate,stock,bid_px,bid_qty,bid_orders,ask_px,ask_qty,ask_orders\n"
BOOK_HEADER = "locate,stock,side,level,price,qty,orders\n"


class Frames:
    """The file's length-prefixed frames, walked once (finding 1)."""

    def __init__(self, data) -> None:
        offs = array("q")
        off, n = 0, len(data)
        self.end_of_session = False
        while off + 2 <= n:
            ln = (data[off] << 8) | data[off + 1]
            if ln == 0:
                self.end_of_session = True
                break
            if off + 2 + ln > n:
                break                           # truncated tail: itch-book keeps it pending
            offs.append(off)
            off += 2 + ln
        self.trailing = n - off if not self.end_of_session else 0
        buf = np.frombuffer(data, dtype=np.uint8)
        self.offs = np.frombuffer(offs, dtype=np.int64) if len(offs) else np.zeros(0, np.int64)
        self.count = len(self.offs)
        if self.count:
            lens = (buf[self.offs].astype(np.int64) << 8) | buf[self.offs + 1]
            tags = buf[self.offs + 2]
            decoded = SPEC_LEN[tags] == lens
        else:
            tags = np.zeros(0, np.uint8)
            decoded = np.zeros(0, bool)
        # seq k (1-based) -> msg_index (1-based frame position)
        self.seq_to_index = np.flatnonzero(decoded).astype(np.int64) + 1
        self.identity = bool(decoded.all())
        # R messages, in file order: (locate, msg_index, symbol)
        r = np.flatnonzero(decoded & (tags == ord("R")))
        ro = self.offs[r] + 2
        self.r_locate = ((buf[ro + 1].astype(np.int64) << 8) | buf[ro + 2]) if len(r) else np.zeros(0, np.int64)
        self.r_index = r.astype(np.int64) + 1
        self.r_symbol = [bytes(data[o + 11:o + 19]).rstrip(b" ").decode("ascii", "replace") for o in ro.tolist()]
        # search key: locate in the high bits, msg index in the low bits, sorted
        key = (self.r_locate << 40) | self.r_index
        order = np.argsort(key, kind="stable")
        self.r_key = key[order]
        self.r_sym_sorted = [self.r_symbol[i] for i in order.tolist()]

    def msg_index(self, seq: np.ndarray) -> np.ndarray:
        seq = seq.astype(np.int64)
        return seq if self.identity else self.seq_to_index[seq - 1]

    def stocks_at(self, locate: np.ndarray, index: np.ndarray) -> list[str]:
        """Symbol of the latest R for each locate at or before each message index."""
        if not len(self.r_key):
            return [""] * len(locate)
        loc = locate.astype(np.int64)
        pos = np.searchsorted(self.r_key, (loc << 40) | index, side="right") - 1
        ok = (pos >= 0) & ((self.r_key[np.maximum(pos, 0)] >> 40) == loc)
        syms = self.r_sym_sorted
        return [syms[p] if k else "" for p, k in zip(pos.tolist(), ok.tolist())]

    def final_stock(self, locate: int) -> str:
        return self.stocks_at(np.array([locate]), np.array([1 << 39]))[0]


def run(path: str, bbo_out: str | None, book_out: str | None, depth: int,
        chunk: int = CHUNK) -> dict:
    if book_out and not 1 <= depth <= 50:
        raise SystemExit(f"--depth {depth}: itch-book's depth table holds 1..50 levels")
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        data = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) if size else b""
    frames = Frames(data)
    session = Session(tables=["bbo"], depth=depth if book_out else 0, symbols=[])
    arr = np.frombuffer(data, dtype=np.uint8)
    last_depth: dict[int, list[int]] = {}
    out = open(bbo_out, "w", newline="\n") if bbo_out else None
    bbo_rows = 0
    try:
        if out:
            out.write(BBO_HEADER)
        for start in range(0, len(arr), chunk):
            session.feed(arr[start:start + chunk])
            b = session.take_bbo()
            if out and len(b["seq"]):
                idx = frames.msg_index(b["seq"])
                stocks = frames.stocks_at(b["locate"], idx)
                cols = [idx.tolist(), b["ts"].tolist(), b["locate"].tolist(), stocks,
                        b["bid_px"].tolist(), b["bid_sz"].tolist(), b["bid_ct"].tolist(),
                        b["ask_px"].tolist(), b["ask_sz"].tolist(), b["ask_ct"].tolist()]
                out.write("".join(
                    f"{i},{t},{l},{s},{bp},{bq},{bc},{ap},{aq},{ac}\n"
                    for i, t, l, s, bp, bq, bc, ap, aq, ac in zip(*cols)))
                bbo_rows += len(idx)
            if book_out:
                d = session.take_depth()
                loc = d["locate"]
                if len(loc):
                    rev = loc[::-1]
                    u, first_in_rev = np.unique(rev, return_index=True)
                    last = len(loc) - 1 - first_in_rev
                    names = [k for k in d if k not in ("ts", "seq", "locate")]
                    mat = np.stack([d[k].astype(np.int64)[last] for k in names], axis=1)
                    for l, row in zip(u.tolist(), mat.tolist()):
                        last_depth[l] = row
    finally:
        if out:
            out.close()
    stats = session.stats()
    if stats["pending_bytes"]:
        print(f"warning: {path}: {stats['pending_bytes']} trailing bytes of a truncated message",
              file=sys.stderr)
    book_rows = 0
    if book_out:
        # column order of the depth table: per level i: bid_px_i bid_sz_i bid_ct_i ask_px_i ask_sz_i ask_ct_i
        with open(book_out, "w", newline="\n") as bo:
            bo.write(BOOK_HEADER)
            for l in sorted(last_depth):
                row = last_depth[l]
                stock = frames.final_stock(l)
                for side, base in (("B", 0), ("S", 3)):
                    for lvl in range(depth):
                        px, sz, ct = row[6 * lvl + base:6 * lvl + base + 3]
                        if ct == 0:
                            break
                        bo.write(f"{l},{stock},{side},{lvl + 1},{px},{sz},{ct}\n")
                        book_rows += 1
    stats = dict(stats, frames=frames.count, bbo_rows=bbo_rows, book_rows=book_rows)
    return stats


# ------------------------------------------------------------------------------------------
# self-test: each finding above, on hand-built files

def _tables(data: bytes, depth: int = 3, chunk: int | None = None):
    s = Session(tables=["bbo"], depth=depth, symbols=[])
    if chunk:
        for i in range(0, len(data), chunk):
            s.feed(data[i:i + chunk])
    else:
        s.feed(data)
    b, d = s.take_bbo(), s.take_depth()
    bbo = [tuple(r) for r in zip(*[b[k].tolist() for k in
           ("seq", "ts", "locate", "bid_px", "bid_sz", "bid_ct", "ask_px", "ask_sz", "ask_ct")])]
    dep = [tuple(r) for r in zip(*[d[k].tolist() for k in d if k != "ts"])]
    return bbo, dep, s.stats()


def self_test() -> int:
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from itch_writer import ItchWriter, synth

    P = 1_000_000
    checks = 0

    def check(cond, what):
        nonlocal checks
        if not cond:
            raise AssertionError(f"itch-book no longer behaves as documented: {what}")
        checks += 1

    def top(rows):  # bbo rows without ts: (seq, locate, bid px sz ct, ask px sz ct)
        return [(r[0], r[2]) + r[3:] for r in rows]

    # 1. seq: 1-based over decoded messages; unknown / wrong-length frames not counted
    w = ItchWriter()
    w.system_event("O", ts=1)
    w.stock_directory(1, "AAA")
    w.raw(b"Z" + bytes(10))                      # unknown type
    w.raw(b"A" + bytes(20))                      # A with the wrong length
    w.add(1, 5, "B", 100, "AAA", P)              # frame 5
    bbo, _, st = _tables(w.bytes())
    check(bbo[0][0] == 3 and st["unknown"] == 1 and st["malformed"] == 1, "1: seq of frame 5 is 3")
    w = ItchWriter()
    for tag, n in (("O", 48), ("L", 26), ("N", 20), ("V", 35), ("I", 50)):
        w.raw(tag.encode() + bytes(n - 1))
    w.add(1, 1, "B", 100, "AAA", P)
    bbo, _, _ = _tables(w.bytes())
    check(bbo[0][0] == 6, "1: O L N V I count in seq")
    w = ItchWriter()
    w.add(1, 1, "B", 100, "AAA", P)
    w.raw(b"")                                   # zero-length frame
    w.add(1, 2, "B", 100, "AAA", P)
    bbo, _, st = _tables(w.bytes())
    check(len(bbo) == 1 and st["end_of_session"] and st["messages"] == 1, "1: zero length ends")
    with_ts = ItchWriter()
    with_ts.add(1, 1, "B", 100, "AAA", P, ts=123_456_789)
    check(_tables(with_ts.bytes())[0][0][1] == 123_456_789, "12: ts is the raw ITCH timestamp")

    # 2. count-only change: no bbo row, but a depth row
    w = ItchWriter()
    w.add(1, 1, "B", 100, "AAA", P)
    w.add(1, 2, "B", 100, "AAA", P)
    w.replace(1, 1, 2, 200, P)                   # 200 shares, 2 orders -> 200 shares, 1 order
    bbo, dep, st = _tables(w.bytes())
    check(top(bbo) == [(1, 1, P, 100, 1, 0, 0, 0), (2, 1, P, 200, 2, 0, 0, 0)], "2: no row on count")
    check(dep[-1][:5] == (3, 1, P, 200, 1) and st["dup_ref"] == 1, "2/13: depth row on count")

    # 3. no row when the top does not change; one row per U
    w = ItchWriter()
    w.add(1, 1, "B", 100, "AAA", P)
    w.add(1, 2, "B", 100, "AAA", P - 100)        # deeper
    w.execute(1, 1, 0)                           # 0 shares
    w.cancel(1, 2, 10)                           # deeper
    w.trade(1, "AAA", 100, P)
    w.cross_trade(1, "AAA", 100, P)
    w.trading_action(1, "AAA", "H")
    w.replace(1, 1, 3, 50, P + 100)              # one row
    bbo, _, _ = _tables(w.bytes())
    check([r[0] for r in bbo] == [1, 8], "3: rows only at 1 and 8")
    check(top(bbo)[1] == (8, 1, P + 100, 50, 1, 0, 0, 0), "3/5: U moves the order")

    # 4. E C X U D rows go to the order's locate
    w = ItchWriter()
    w.add(1, 1, "B", 100, "AAA", P)
    w.add(2, 2, "S", 100, "BBB", P)
    w.execute(9, 1, 10)
    w.execute_price(9, 1, 10, P)
    w.cancel(9, 1, 10)
    w.replace(9, 1, 3, 50, P + 1)
    w.delete(9, 3)
    w.delete(9, 2)
    bbo, _, _ = _tables(w.bytes())
    check([r[2] for r in bbo] == [1, 2, 1, 1, 1, 1, 1, 2], "4: locate of the order")

    # 5. U keeps the side (crossing allowed), rejected new order still removes the old
    w = ItchWriter()
    w.add(1, 1, "B", 100, "AAA", P)
    w.add(1, 2, "S", 100, "AAA", P + 100)
    w.replace(1, 1, 3, 50, P + 200)              # bid above the ask: stays a bid
    bbo, _, st = _tables(w.bytes())
    check(top(bbo)[-1] == (3, 1, P + 200, 50, 1, P + 100, 100, 1) and st["crossed_books"] == 1,
          "5/14: U keeps side, crossed book kept")
    for shares, price in ((0, P), (50, 0)):
        w = ItchWriter()
        w.add(1, 1, "B", 100, "AAA", P)
        w.replace(1, 1, 4, shares, price)
        bbo, _, st = _tables(w.bytes())
        check(top(bbo)[-1] == (2, 1, 0, 0, 0, 0, 0, 0) and st["rejected"] == 1 and st["live_orders"] == 0,
              f"5: U to {shares}@{price} removes old, rejects new")
    w = ItchWriter()
    w.add(1, 1, "B", 100, "AAA", P)
    w.replace(1, 77, 3, 50, P + 200)
    bbo, _, st = _tables(w.bytes())
    check(len(bbo) == 1 and st["missing_ref"] == 1 and st["live_orders"] == 1, "5: U unknown ref")

    # 6, 7, 8. zero price, zero shares, live reference reused
    w = ItchWriter()
    w.add(1, 1, "B", 100, "AAA", P)
    w.add(1, 2, "B", 100, "AAA", 0)
    w.add(1, 3, "B", 0, "AAA", P)
    w.add(1, 1, "S", 30, "AAA", P + 300)
    bbo, _, st = _tables(w.bytes())
    check([r[0] for r in bbo] == [1, 4] and st["rejected"] == 2, "6/7: zero price, zero shares")
    check(top(bbo)[-1] == (4, 1, 0, 0, 0, P + 300, 30, 1) and st["dup_ref"] == 1, "8: dup evicts")

    # 9. reference 0
    w = ItchWriter()
    w.add(1, 0, "B", 100, "AAA", P)
    w.execute(1, 0, 10)
    w.delete(1, 0)
    bbo, _, st = _tables(w.bytes())
    check(bbo == [] and st["rejected"] == 1 and st["missing_ref"] == 2, "9: ref 0 rejected")

    # 10. clamping
    w = ItchWriter()
    w.add(1, 1, "B", 100, "AAA", P)
    w.add(1, 2, "B", 100, "AAA", P - 100)
    w.execute(1, 1, 500)
    w.cancel(1, 2, 300)
    w.add(1, 3, "B", 10, "AAA", P)
    w.execute_price(1, 3, 20, P + 5000)
    bbo, _, st = _tables(w.bytes())
    check([r[3:6] for r in bbo] == [(P, 100, 1), (P - 100, 100, 1), (0, 0, 0), (P, 10, 1), (0, 0, 0)]
          and st["clamped"] == 3 and st["live_orders"] == 0, "10: clamps")

    # 11. uint32 level sums
    w = ItchWriter()
    w.add(1, 1, "B", 2**32 - 1, "AAA", P)
    w.add(1, 2, "B", 2, "AAA", P)
    bbo, _, _ = _tables(w.bytes())
    check(top(bbo)[-1] == (2, 1, P, 1, 2, 0, 0, 0), "11: 32-bit sums")

    # 13. depth table silent below level N
    w = ItchWriter()
    w.add(1, 1, "B", 100, "AAA", P)
    w.add(1, 2, "B", 100, "AAA", P - 100)
    w.execute(1, 2, 10)
    w.delete(1, 1)
    _, dep, _ = _tables(w.bytes(), depth=1)
    check([r[0] for r in dep] == [1, 4] and dep[-1][2:5] == (P - 100, 90, 1), "13: depth=1 rows")

    # 14. chunking does not matter
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "s.itch")
        synth(path, 5000, 5, 7)
        data = open(path, "rb").read()
        whole = _tables(data)
        for c in (1, 7, 4096):
            check(_tables(data, chunk=c)[:2] == whole[:2], f"14: chunk {c}")

        # end to end: this script's own outputs on a file with bad frames and late R
        w = ItchWriter()
        w.stock_directory(1, "AAA  ")
        w.add(1, 1, "B", 100, "AAA", P)
        w.raw(b"Z" + bytes(10))
        w.add(1, 2, "S", 100, "AAA", P + 100)
        w.stock_directory(1, "AAB")
        w.add(1, 3, "S", 50, "AAA", P + 200)
        w.add(2, 4, "B", 70, "BBB", P)
        w.save(path)
        run(path, path + ".bbo", path + ".book", 2, chunk=10)
        check(open(path + ".bbo").read() == BBO_HEADER +
              f"2,2,1,AAA,{P},100,1,0,0,0\n4,3,1,AAA,{P},100,1,{P + 100},100,1\n"
              f"7,6,2,,{P},70,1,0,0,0\n", "script: bbo csv")   # frame 3 has no ts of its own
        check(open(path + ".book").read() == BOOK_HEADER +
              f"1,AAB,B,1,{P},100,1\n1,AAB,S,1,{P + 100},100,1\n1,AAB,S,2,{P + 200},50,1\n"
              f"2,,B,1,{P},70,1\n", "script: book csv")
    print(f"SELF-TEST OK: {checks} checks of the documented itch-book behaviour passed")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("file", nargs="?", help="ITCH 5.0 file, 2-byte length-prefixed messages")
    ap.add_argument("--bbo-out", help="top-of-book CSV to write")
    ap.add_argument("--book-out", help="final depth CSV to write")
    ap.add_argument("--depth", type=int, default=10, help="levels per side in --book-out (1..50)")
    ap.add_argument("--chunk-bytes", type=int, default=CHUNK, help=argparse.SUPPRESS)
    ap.add_argument("--self-test", action="store_true", help="check the documented findings")
    a = ap.parse_args(argv)
    if a.self_test:
        return self_test()
    if not a.file or not (a.bbo_out or a.book_out):
        ap.error("FILE and at least one of --bbo-out / --book-out are required")
    st = run(a.file, a.bbo_out, a.book_out, a.depth, a.chunk_bytes)
    print(f"itch-book: {st['frames']} messages, {st['bbo_rows']} bbo rows, {st['book_rows']} "
          f"depth rows; unknown={st['unknown']} malformed={st['malformed']} "
          f"missing_ref={st['missing_ref']} dup_ref={st['dup_ref']} rejected={st['rejected']} "
          f"clamped={st['clamped']} crossed_books={st['crossed_books']} "
          f"live_orders={st['live_orders']}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
