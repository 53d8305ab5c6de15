"""Build Nasdaq TotalView-ITCH 5.0 files by hand, for oracle experiments and benchmarks.

Every message is written as ITCH 5.0 specifies it (big-endian fields, 6-byte timestamp)
behind the 2-byte big-endian length prefix that Nasdaq's ITCH50 day files use.

As a library (from tests/oracle, or with tests/oracle on sys.path)::

    from itch_writer import ItchWriter
    w = ItchWriter()
    w.stock_directory(1, "AAPL")
    w.add(1, ref=10, side="B", shares=100, stock="AAPL", price=1_000_000, ts=5)
    w.execute(1, ref=10, shares=40)
    w.save("small.itch")          # w.count is the number of messages written

As a command, a deterministic synthetic day (adds near the touch, executes, cancels,
deletes, replaces across many stocks; a fixed seed gives the same bytes every time)::

    /tmp/oracle/bin/python tests/oracle/itch_writer.py synth OUT.itch \
        --messages 3000000 --stocks 50 --seed 1

The synthetic feed keeps to the well-formed subset on which ticklane and both PyPI
implementations agree by construction: no zero prices, no zero shares, no reused live
references, no unknown references, executions and cancels never above the remaining shares.
"""

from __future__ import annotations

import argparse
import random
import struct
import sys

__all__ = ["ItchWriter", "frame", "synth"]

# Header: type(1) locate(2) tracking(2) timestamp(6, sent as u16 high + u32 low).
_HDR = ">cHHHI"
_S = struct.Struct(_HDR + "c")
_R = struct.Struct(_HDR + "8sccIcc2scccccIc")
_H = struct.Struct(_HDR + "8scc4s")
_A = struct.Struct(_HDR + "QcI8sI")
_F = struct.Struct(_HDR + "QcI8sI4s")
_E = struct.Struct(_HDR + "QIQ")
_C = struct.Struct(_HDR + "QIQcI")
_X = struct.Struct(_HDR + "QI")
_D = struct.Struct(_HDR + "Q")
_U = struct.Struct(_HDR + "QQII")
_P = struct.Struct(_HDR + "QcI8sIQ")
_Q = struct.Struct(_HDR + "Q8sIQc")
_LEN = struct.Struct(">H")

_SIZES = {"S": 12, "R": 39, "H": 25, "A": 36, "F": 40, "E": 31, "C": 36, "X": 23, "D": 19,
          "U": 35, "P": 44, "Q": 40}
for _tag, _st in (("S", _S), ("R", _R), ("H", _H), ("A", _A), ("F", _F), ("E", _E), ("C", _C),
                  ("X", _X), ("D", _D), ("U", _U), ("P", _P), ("Q", _Q)):
    assert _st.size == _SIZES[_tag], (_tag, _st.size)


def _ts(ts: int) -> tuple[int, int]:
    if not 0 <= ts < 1 << 48:
        raise ValueError(f"timestamp {ts} does not fit 48 bits")
    return ts >> 32, ts & 0xFFFFFFFF


def _stock(s: str | bytes) -> bytes:
    b = s.encode("ascii") if isinstance(s, str) else s
    if len(b) > 8:
        raise ValueError(f"stock {s!r} longer than 8 characters")
    return b.ljust(8, b" ")


def _c(ch: str | bytes) -> bytes:
    b = ch.encode("ascii") if isinstance(ch, str) else ch
    assert len(b) == 1, ch
    return b


def frame(body: bytes) -> bytes:
    """Prefix one message with its 2-byte big-endian length."""
    return _LEN.pack(len(body)) + body


class ItchWriter:
    """Accumulates length-prefixed ITCH 5.0 messages in memory.

    Every method appends one message and returns its 1-based index in the file. `ts` is
    nanoseconds since midnight; when omitted it is the previous message's timestamp + 1.
    `tracking` defaults to 0.
    """

    def __init__(self) -> None:
        self.buf = bytearray()
        self.count = 0
        self.last_ts = 0

    def _put(self, st: struct.Struct, tag: bytes, locate: int, ts: int | None, *fields,
             tracking: int = 0) -> int:
        if ts is None:
            ts = self.last_ts + 1
        self.last_ts = ts
        hi, lo = _ts(ts)
        self.buf += _LEN.pack(st.size)
        self.buf += st.pack(tag, locate, tracking, hi, lo, *fields)
        self.count += 1
        return self.count

    def raw(self, body: bytes) -> int:
        """Appends an arbitrary message body (no prefix); used for malformed-input tests."""
        self.buf += frame(body)
        self.count += 1
        return self.count

    # --- administrative ---------------------------------------------------------------
    def system_event(self, code: str = "O", ts: int | None = None) -> int:
        return self._put(_S, b"S", 0, ts, _c(code))

    def stock_directory(self, locate: int, stock: str, ts: int | None = None,
                        round_lot: int = 100) -> int:
        return self._put(_R, b"R", locate, ts, _stock(stock), b"Q", b"N", round_lot, b"N",
                         b"C", b"  ", b"P", b"N", b"N", b"1", b"N", 0, b"N")

    def trading_action(self, locate: int, stock: str, state: str = "T",
                       ts: int | None = None) -> int:
        return self._put(_H, b"H", locate, ts, _stock(stock), _c(state), b" ", b"    ")

    # --- book messages ----------------------------------------------------------------
    def add(self, locate: int, ref: int, side: str, shares: int, stock: str, price: int,
            ts: int | None = None, mpid: str | None = None) -> int:
        if mpid is None:
            return self._put(_A, b"A", locate, ts, ref, _c(side), shares, _stock(stock), price)
        return self._put(_F, b"F", locate, ts, ref, _c(side), shares, _stock(stock), price,
                         mpid.encode().ljust(4)[:4])

    def execute(self, locate: int, ref: int, shares: int, match: int = 0,
                ts: int | None = None) -> int:
        return self._put(_E, b"E", locate, ts, ref, shares, match)

    def execute_price(self, locate: int, ref: int, shares: int, price: int,
                      printable: str = "Y", match: int = 0, ts: int | None = None) -> int:
        return self._put(_C, b"C", locate, ts, ref, shares, match, _c(printable), price)

    def cancel(self, locate: int, ref: int, shares: int, ts: int | None = None) -> int:
        return self._put(_X, b"X", locate, ts, ref, shares)

    def delete(self, locate: int, ref: int, ts: int | None = None) -> int:
        return self._put(_D, b"D", locate, ts, ref)

    def replace(self, locate: int, old: int, new: int, shares: int, price: int,
                ts: int | None = None) -> int:
        return self._put(_U, b"U", locate, ts, old, new, shares, price)

    def trade(self, locate: int, stock: str, shares: int, price: int, side: str = "B",
              ref: int = 0, match: int = 0, ts: int | None = None) -> int:
        return self._put(_P, b"P", locate, ts, ref, _c(side), shares, _stock(stock), price, match)

    def cross_trade(self, locate: int, stock: str, shares: int, price: int,
                    cross_type: str = "O", match: int = 0, ts: int | None = None) -> int:
        return self._put(_Q, b"Q", locate, ts, shares, _stock(stock), price, match,
                         _c(cross_type))

    # --- output -----------------------------------------------------------------------
    def bytes(self) -> bytes:
        return bytes(self.buf)

    def save(self, path: str) -> None:
        with open(path, "wb") as f:
            f.write(self.buf)


def synth(path: str, messages: int, stocks: int = 50, seed: int = 1) -> int:
    """Writes a deterministic synthetic day to `path`; returns the message count.

    The count is `messages` or a few more: a mid move near the end may pull several orders.

    Roughly: 40% adds (within a few ticks of the touch), 30% deletes, 12% replaces, 8%
    partial cancels, 8% executes (E), 2% executes with price (C); a book holding 400 live
    orders deletes instead of adding, so books stay a realistic size. Prices are in cents
    (100 ITCH units per tick) around a per-stock mid that random-walks; when the mid moves,
    the orders it crossed are deleted, so the books never cross.
    """
    rng = random.Random(seed)
    open(path, "wb").close()
    w = ItchWriter()
    w.system_event("O", ts=1)
    names = [f"S{i:03d}" for i in range(stocks)]
    for i, name in enumerate(names):
        w.stock_directory(i + 1, name, ts=2 + i)
    w.system_event("Q", ts=34_200_000_000_000)
    ts = 34_200_000_000_000
    mids = [rng.randrange(1_000, 50_000) * 100 for _ in range(stocks)]   # $10 .. $500
    live: list[list[int]] = [[] for _ in range(stocks)]   # refs per stock
    orders: dict[int, list] = {}                          # ref -> [stock index, side, shares, price]
    next_ref = 1
    match = 1
    body_target = messages - 1                            # leave room for the closing S
    rand = rng.random
    randrange = rng.randrange
    while w.count < body_target:
        ts += randrange(1, 20_000)
        s = randrange(stocks)
        loc = s + 1
        refs = live[s]
        r = rand()
        if (r < 0.40 and len(refs) < 400) or len(refs) < 8:
            side = "B" if rand() < 0.5 else "S"
            mid = mids[s]
            off = 100 * (1 + int(rng.expovariate(0.6)))
            price = max(100, mid - off) if side == "B" else mid + off
            shares = 100 * randrange(1, 10)
            ref = next_ref
            next_ref += 1
            w.add(loc, ref, side, shares, names[s], price, ts=ts)
            orders[ref] = [s, side, shares, price]
            refs.append(ref)
            if rand() < 0.01:                          # move the mid now and then, and
                mid = mids[s] = max(300, mid + 100 * randrange(-2, 3))
                for old in [q for q in refs if (orders[q][1] == "B") == (orders[q][3] >= mid)]:
                    ts += 1                            # pull what it crossed: no crossed books
                    w.delete(loc, old, ts=ts)
                    refs.remove(old)
                    del orders[old]
            continue
        i = randrange(len(refs))
        ref = refs[i]
        o = orders[ref]
        if r < 0.70:                                   # delete (also instead of an add on a full book)
            w.delete(loc, ref, ts=ts)
            refs[i] = refs[-1]
            refs.pop()
            del orders[ref]
        elif r < 0.82:                                 # replace: new ref, new size/price
            new = next_ref
            next_ref += 1
            price = o[3] + 100 * randrange(-2, 3)    # stays on its own side of the mid
            price = min(price, mids[s] - 100) if o[1] == "B" else max(price, mids[s] + 100)
            price = max(100, price)
            shares = 100 * randrange(1, 10)
            w.replace(loc, ref, new, shares, price, ts=ts)
            del orders[ref]
            orders[new] = [s, o[1], shares, price]
            refs[i] = new
        else:
            if r < 0.90:                               # partial cancel
                n = randrange(1, o[2] + 1)
                w.cancel(loc, ref, n, ts=ts)
            elif r < 0.98:                             # execute
                n = randrange(1, o[2] + 1)
                w.execute(loc, ref, n, match=match, ts=ts)
                match += 1
            else:                                      # execute with price
                n = randrange(1, o[2] + 1)
                w.execute_price(loc, ref, n, o[3], printable="Y", match=match, ts=ts)
                match += 1
            o[2] -= n
            if o[2] == 0:
                refs[i] = refs[-1]
                refs.pop()
                del orders[ref]
        if len(w.buf) > 64 << 20:                      # flush to keep memory flat
            _flush(path, w)
    w.system_event("C", ts=ts + 1)
    _flush(path, w)
    return w.count


def _flush(path: str, w: ItchWriter) -> None:
    """Appends the writer's buffer to `path` (created empty by `synth`) and empties it."""
    with open(path, "ab") as f:
        f.write(w.buf)
    w.buf = bytearray()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    sp = sub.add_parser("synth", help="write a deterministic synthetic ITCH50 file")
    sp.add_argument("out")
    sp.add_argument("--messages", type=int, default=3_000_000)
    sp.add_argument("--stocks", type=int, default=50)
    sp.add_argument("--seed", type=int, default=1)
    a = ap.parse_args(argv)
    n = synth(a.out, a.messages, a.stocks, a.seed)
    print(f"wrote {a.out}: {n} messages", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
