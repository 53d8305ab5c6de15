#!/usr/bin/env python3
"""A second reader of the snapshot layout, in Python's standard library only.

The tests hold the engine's reader (and `ticklane book --csv`, and `ticklane.Snapshot`) to
this one, written from the layout's documentation alone: if the two disagree, one of them or
the documentation is wrong. It is no interface: Python programs use `ticklane.Snapshot`.

The engine publishes every book into a memory-mapped file; this reader maps it read-only,
validates the header, and copies slots out with the seqlock protocol: load the slot's sequence;
if it is odd a write is in progress, so try again; copy the payload; load the sequence again;
if it is unchanged the copy is consistent, otherwise try again. Retries are bounded: a slot
left mid-write by a killed writer is reported, never waited on forever.

The layout (offsets, sizes, meanings) is documented in engine/snapshot/src/layout.rs.
Python has no memory fences: this reader relies on the CPU keeping loads in program order,
which x86-64 does. On weakly ordered CPUs (ARM), use the Rust reader.

    python3 tests/oracle/snapshot_reader.py SNAPSHOT --csv [--depth N]   # every book, as `--book-out` CSV
    python3 tests/oracle/snapshot_reader.py SNAPSHOT STOCK               # one book
    python3 tests/oracle/snapshot_reader.py SNAPSHOT --watch [--interval-ms N] [--iterations K]
                                                # the header's status, once per interval

A writer that restarts on the path (after `kill -9` too) renames a new file over it; a
mapping of the old file keeps showing the dead writer's books. Snapshot.replaced() tells, by
the path's device and inode, and reopen_if_replaced() follows it, as --watch does.

With --csv, a slot that cannot be read (a writer killed mid-write leaves its sequence odd)
does not hide the others: every readable book is printed, each unreadable slot is named on
stderr, and the exit status is 1.
"""

import argparse
import mmap
import os
import struct
import sys
import time

MAGIC = b"TICKLANE"
LAYOUT_VERSION = 2
BYTE_ORDER_MARK = 0x01020304
HEADER_SIZE = 128
SLOT_FIXED_SIZE = 136  # the sequence word and the 128-byte fixed payload
LEVEL_SIZE = 16

# Native byte order, no padding: the writer's order, checked against BYTE_ORDER_MARK below.
HEADER = struct.Struct("=8sIIIIII Q II QQQQQ QQQQQ")  # magic .. full_publications, 128 bytes
PAYLOAD = struct.Struct("=8sHBBI QQQQQ II IIQ IIQ IIQQQ")  # 128 bytes
LEVEL = struct.Struct("=IIQ")  # price, orders, qty
WORD = struct.Struct("=Q")

HEARTBEAT_OFFSET, INSTRUMENTS_OFFSET = 56, 64
FLAGS_OFFSET = 72
STALE_SINCE_OFFSET, LINE_STATE_OFFSET = 88, 96
MAYBE_BAD_SINCE_OFFSET, LOST_OFFSET, FULL_OFFSET = 104, 112, 120
HEADER_STALE, HEADER_CLOSED, HEADER_MAYBE_BAD = 1, 2, 4
SLOT_STALE, SLOT_CROSSED, SLOT_BEHIND, SLOT_MAYBE_BAD = 1, 2, 4, 8
LINE_STATES = ["live", "silent", "disconnected", "reconnecting", "ended silent",
               "ended with an error", "isolated", "loading snapshot"]

assert HEADER.size == 128 and PAYLOAD.size == 128 and LEVEL.size == LEVEL_SIZE


class SnapshotError(Exception):
    """The file is not a snapshot this reader can trust."""


class SlotUnreadable(Exception):
    """A slot could not be copied consistently within the retry bound."""


class Snapshot:
    """A read-only view of a snapshot file."""

    def __init__(self, path):
        self.path = path
        with open(path, "rb") as f:
            st = os.fstat(f.fileno())
            self.identity = (st.st_dev, st.st_ino)
            self.map = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        if len(self.map) < HEADER_SIZE:
            raise SnapshotError(f"{path}: {len(self.map)} bytes, shorter than a header")
        (magic, version, byte_order, header_size, slot_size, capacity, depth, file_size,
         pid, _reserved0, _created, _heartbeat, _instruments, _flags, _behind,
         _stale_since, _line_state, _maybe_bad_since, _lost, _full) = \
            HEADER.unpack_from(self.map, 0)
        if magic != MAGIC:
            raise SnapshotError(f"{path}: not a ticklane snapshot (bad magic)")
        if byte_order != BYTE_ORDER_MARK:
            raise SnapshotError(f"{path}: written with another byte order")
        if version != LAYOUT_VERSION:
            raise SnapshotError(f"{path}: layout version {version}, this reader knows {LAYOUT_VERSION}")
        if not (1 <= capacity <= 65536 and 1 <= depth <= 1024):
            raise SnapshotError(f"{path}: capacity {capacity} or depth {depth} out of range")
        expected_slot = SLOT_FIXED_SIZE + 2 * depth * LEVEL_SIZE
        checks = [
            ("header_size", header_size, HEADER_SIZE),
            ("slot_size", slot_size, expected_slot),
            ("file_size", file_size, HEADER_SIZE + capacity * expected_slot),
            ("file length", min(len(self.map), file_size), file_size),
        ]
        for field, found, expected in checks:
            if found != expected:
                raise SnapshotError(f"{path}: {field} is {found}, expected {expected}")
        self.slot_size, self.capacity, self.depth, self.pid = slot_size, capacity, depth, pid

    def replaced(self):
        """Whether the path names another file than the one mapped (a restarted writer renamed
        its new file over it). A path that names nothing now is not a replacement."""
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return False
        return (st.st_dev, st.st_ino) != self.identity

    def heartbeat(self):
        """The writer's last heartbeat, wall-clock ns since the Unix epoch."""
        return WORD.unpack_from(self.map, HEARTBEAT_OFFSET)[0]

    def instruments(self):
        """Slots in use now: slots 0 .. instruments - 1 hold an instrument."""
        (count,) = WORD.unpack_from(self.map, INSTRUMENTS_OFFSET)
        return min(count, self.capacity)

    def flags(self):
        """Engine-wide flags: HEADER_STALE, HEADER_CLOSED, HEADER_MAYBE_BAD."""
        return WORD.unpack_from(self.map, FLAGS_OFFSET)[0]

    def status(self):
        """The engine-wide status as words: `STALE (why) since NS`, `MAYBE_BAD since NS
        (N lost)`, `FULL (N publications lost)`, `CLOSED`; empty when live and nothing lost.
        The flags word is read first: the writer stores a since-when before its flag."""
        flags = self.flags()
        word = lambda at: WORD.unpack_from(self.map, at)[0]
        words = []
        if flags & HEADER_STALE:
            code = word(LINE_STATE_OFFSET)
            why = LINE_STATES[code] if code < len(LINE_STATES) else f"state {code}"
            words.append(f"STALE ({why}) since {word(STALE_SINCE_OFFSET)} ns")
        if flags & HEADER_MAYBE_BAD:
            words.append(f"MAYBE_BAD since {word(MAYBE_BAD_SINCE_OFFSET)} ns "
                         f"({word(LOST_OFFSET)} messages lost)")
        if word(FULL_OFFSET):
            words.append(f"FULL ({word(FULL_OFFSET)} publications lost)")
        if flags & HEADER_CLOSED:
            words.append("CLOSED")
        return " ".join(words)

    def read_slot(self, slot, attempts=10_000):
        """Copies slot `slot` consistently; returns a dict of its fields."""
        offset = HEADER_SIZE + slot * self.slot_size
        for attempt in range(attempts):
            (before,) = WORD.unpack_from(self.map, offset)
            if before & 1 == 0:
                data = self.map[offset + 8: offset + self.slot_size]  # one copy
                (after,) = WORD.unpack_from(self.map, offset)
                if after == before:
                    return self._decode(before, data)
            if attempt % 64 == 63:
                time.sleep(0)  # let the writer run, on a shared core
        raise SlotUnreadable(f"slot {slot} stayed mid-write or changing over {attempts} tries"
                             f" (sequence {before})")

    def _decode(self, sequence, data):
        (symbol, locate, trading_state, _reserved, flags, feed_seq, exchange_ts, updated,
         behind_since, publishes, bid_levels, ask_levels,
         _bb_px, _bb_orders, _bb_qty, _ba_px, _ba_orders, _ba_qty,
         trade_px, trade_shares, trade_ts, trades, traded_shares) = PAYLOAD.unpack_from(data, 0)

        def side(start, count):
            levels = []
            for i in range(min(count, self.depth)):
                price, orders, qty = LEVEL.unpack_from(data, start + i * LEVEL_SIZE)
                levels.append((price, qty, orders))
            return levels

        ladders = SLOT_FIXED_SIZE - 8
        return {
            "sequence": sequence,
            "symbol": symbol.rstrip(b" ").decode("ascii", "replace"),
            "locate": locate,
            "trading_state": chr(trading_state) if trading_state else "",
            "flags": flags,
            "feed_seq": feed_seq,
            "exchange_ts_ns": exchange_ts,
            "updated_ns": updated,
            "behind_since_ns": behind_since,
            "publishes": publishes,
            "bids": side(ladders, bid_levels),
            "asks": side(ladders + self.depth * LEVEL_SIZE, ask_levels),
            "last_trade": (trade_px, trade_shares, trade_ts) if trades else None,
            "trades": trades,
            "traded_shares": traded_shares,
        }


def reopen_if_replaced(snap):
    """The snapshot at snap's path: a new Snapshot if a restarted writer replaced the file,
    else snap itself."""
    return Snapshot(snap.path) if snap.replaced() else snap


def watch(snap, interval_ms, iterations, out):
    """One status line per interval (`pid P  N instruments  heartbeat H  STATUS`), following
    a writer that replaces the file: the first line after says `reopened`."""
    shown = 0
    while iterations is None or shown < iterations:
        try:
            fresh = reopen_if_replaced(snap)
        except (OSError, SnapshotError) as e:
            print(f"snapshot_reader: the file was replaced but cannot be opened ({e}); "
                  "showing the old one", file=sys.stderr)
            fresh = snap
        if fresh is not snap:
            out.write(f"reopened: a new writer (pid {fresh.pid}, was {snap.pid}) "
                      "replaced the file\n")
            snap.map.close()
            snap = fresh
        out.write(f"pid {snap.pid}  {snap.instruments()} instruments  "
                  f"heartbeat {snap.heartbeat()}  {snap.status()}\n")
        out.flush()
        shown += 1
        time.sleep(interval_ms / 1000)


def read_all(snap):
    """Every slot in use: the states read, and (slot, reason) for each slot that was not."""
    states, unreadable = [], []
    for i in range(snap.instruments()):
        try:
            states.append(snap.read_slot(i))
        except SlotUnreadable as e:
            unreadable.append((i, str(e)))
    return states, unreadable


def write_csv(snap, depth, out):
    """Every readable book in the `--book-out` format: by locate, then B before S, then
    level. Returns the unreadable slots as (slot, reason), left out of the CSV."""
    states, unreadable = read_all(snap)
    states.sort(key=lambda s: s["locate"])
    out.write("locate,stock,side,level,price,qty,orders\n")
    for s in states:
        for letter, levels in (("B", s["bids"]), ("S", s["asks"])):
            for level, (price, qty, orders) in enumerate(levels[:depth], start=1):
                out.write(f"{s['locate']},{s['symbol']},{letter},{level},{price},{qty},{orders}\n")
    return unreadable


def show(snap, stock, out):
    """One book, both sides, with its last trade and flags. An unreadable slot does not stop
    the search; if the stock is not found, the unreadable slots are raised (it may be one)."""
    unreadable = []
    for i in range(snap.instruments()):
        try:
            s = snap.read_slot(i)
        except SlotUnreadable as e:
            unreadable.append(str(e))
            continue
        if s["symbol"] != stock:
            continue
        names = [n for bit, n in ((SLOT_STALE, "STALE"), (SLOT_MAYBE_BAD, "MAYBE_BAD"),
                                  (SLOT_CROSSED, "CROSSED"), (SLOT_BEHIND, "BEHIND"))
                 if s["flags"] & bit]
        out.write(f"{stock} (locate {s['locate']}) state {s['trading_state'] or '-'} "
                  f"{' '.join(names)}\n")
        status = snap.status()
        if status:
            out.write(f"engine: {status}\n")
        for n in range(max(len(s["bids"]), len(s["asks"]))):
            bid = s["bids"][n] if n < len(s["bids"]) else None
            ask = s["asks"][n] if n < len(s["asks"]) else None
            left = f"{bid[1]:>12} {bid[0] / 10_000:>12.4f}" if bid else " " * 25
            right = f"{ask[0] / 10_000:<12.4f} {ask[1]:<12}" if ask else ""
            out.write(f"{n + 1:>3} {left} | {right}\n")
        if s["last_trade"]:
            px, shares, ts = s["last_trade"]
            out.write(f"last trade {shares} @ {px / 10_000:.4f} (ITCH time {ts} ns)\n")
        return True
    if unreadable:
        raise SlotUnreadable(f"{stock} not found in the readable slots; " + "; ".join(unreadable))
    return False


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("snapshot")
    parser.add_argument("stock", nargs="?")
    parser.add_argument("--csv", action="store_true", help="every book as --book-out CSV")
    parser.add_argument("--depth", type=int, help="levels per side (default: the file's)")
    parser.add_argument("--watch", action="store_true",
                        help="print the header's status every interval, following a restart")
    parser.add_argument("--interval-ms", type=int, default=1000, help="--watch's interval")
    parser.add_argument("--iterations", type=int, help="--watch's lines (default: forever)")
    args = parser.parse_args()
    try:
        snap = Snapshot(args.snapshot)
        depth = min(args.depth or snap.depth, snap.depth)
        if args.watch:
            watch(snap, args.interval_ms, args.iterations, sys.stdout)
        elif args.csv:
            unreadable = write_csv(snap, depth, sys.stdout)
            sys.stdout.flush()
            for _slot, reason in unreadable:
                print(f"snapshot_reader: {reason}; its book is left out", file=sys.stderr)
            if unreadable:
                return 1
        elif args.stock:
            if not show(snap, args.stock, sys.stdout):
                print(f"{args.stock}: not in the snapshot", file=sys.stderr)
                return 1
        else:
            parser.error("give a STOCK or --csv")
    except (OSError, SnapshotError, SlotUnreadable) as e:
        print(f"snapshot_reader: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
