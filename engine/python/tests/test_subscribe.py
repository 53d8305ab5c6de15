"""``ticklane.subscribe`` against a real ``ticklane run --serve`` fed a generated day by
``ticklane sim`` over loopback: the books a Python follower rebuilds from images and level
updates are the books the engine's snapshot holds at the end of the session; a server that
is not there is retried with backoff and then given up on; Ctrl-C and ``close`` end it.
Every wait is bounded."""

from __future__ import annotations

import queue
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

import ticklane
from conftest import binary

DEPTH = 1024
WITHIN = 60.0


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
        udp.bind(("127.0.0.1", 0))
        return udp.getsockname()[1]


class Engine:
    """A ``ticklane run`` process whose output lines are read as they come."""

    def __init__(self, *args: object) -> None:
        self.process = subprocess.Popen(
            [str(binary()), *map(str, args)],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.lines: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.process.stdout:
            self.lines.put(line)

    def wait_for(self, text: str) -> None:
        deadline = time.monotonic() + WITHIN
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=0.5)
            except queue.Empty:
                assert self.process.poll() is None, "".join(self.seen)
                continue
            self.seen.append(line)
            if text in line:
                return
        raise AssertionError(f"no {text!r} within {WITHIN} s:\n{''.join(self.seen)}")

    def finish(self) -> int:
        try:
            return self.process.wait(timeout=WITHIN)
        except subprocess.TimeoutExpired:
            self.process.send_signal(signal.SIGINT)
            return self.process.wait(timeout=WITHIN)


def rebuild(book: dict, update: dict) -> None:
    """Applies an image or a level update to ``book`` (``{"B": {price: (qty, orders)}, "S":
    ...}``)."""
    if update["type"] == "image":
        book["B"] = {p: (q, o) for p, q, o in update["bids"]}
        book["S"] = {p: (q, o) for p, q, o in update["asks"]}
    elif update["type"] == "level":
        price, qty, orders = update["level"]
        side = book.setdefault(update["side"], {})
        if qty == 0:
            side.pop(price, None)
        else:
            side[price] = (qty, orders)


def best_first(side: dict, high: bool) -> list:
    return [(p, *side[p]) for p in sorted(side, reverse=high)]


def test_a_follower_rebuilds_the_engines_books(cli, tmp_path):
    day = tmp_path / "day.itch50"
    cli("gen", day, "--messages", 200_000, "--stocks", 6, "--seed", 11)
    snapshot = tmp_path / "books.snap"
    data, serve = free_port(), free_port()
    config = tmp_path / "line.toml"
    config.write_text(
        "[engine]\nmax_orders = 262144\nmax_books = 256\nlevels_per_side = 2048\n\n"
        f'[snapshot]\npath = "{snapshot}"\ndepth = {DEPTH}\ncapacity = 64\n\n'
        f'[feed]\nkind = "moldudp64"\nbind = "127.0.0.1:{data}"\n'
        "silence_timeout_s = 10.0\nmax_duration_s = 120.0\n"
    )
    cli("replay", day, "--book-out", tmp_path / "book.csv")
    rows = (tmp_path / "book.csv").read_text().splitlines()[1:]
    symbols = sorted({row.split(",")[1] for row in rows})
    assert len(symbols) == 6, symbols
    engine = Engine("run", "--config", config, "--serve", f"127.0.0.1:{serve}")
    engine.wait_for("ticklane run: ready (")
    books: dict = {}
    seen: dict = {}
    with ticklane.subscribe(f"127.0.0.1:{serve}", symbols) as subscription:
        sim = subprocess.Popen(
            [str(binary()), "sim", day, "--udp", f"127.0.0.1:{data}", "--rate", "60000"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for update in subscription:
            seen[update["type"]] = seen.get(update["type"], 0) + 1
            assert update["type"] != "gap", update
            if update["type"] == "reconnecting":
                # The session ended: the engine stops at the end of the day, and says so.
                assert "come back" in update["why"], update
                break
            if "symbol" in update:
                rebuild(books.setdefault(update["symbol"], {}), update)
    assert engine.finish() == 0, "".join(engine.seen)
    sim.wait(timeout=WITHIN)
    assert seen.get("connected") == 1 and seen.get("image", 0) >= len(symbols), seen
    assert seen.get("level", 0) > 1000, seen
    for book in ticklane.Snapshot(snapshot).books(depth=DEPTH):
        mine = books[book["symbol"]]
        assert len(book["bids"]) < DEPTH and len(book["asks"]) < DEPTH, "deeper than an image"
        assert best_first(mine.get("B", {}), True) == book["bids"], book["symbol"]
        assert best_first(mine.get("S", {}), False) == book["asks"], book["symbol"]
    assert set(books) == set(symbols)


def test_a_server_that_is_not_there_is_retried_then_given_up_on():
    port = free_port()
    events = []
    subscription = ticklane.subscribe(
        f"127.0.0.1:{port}", ["AAAA"], max_attempts=3, backoff_base_ms=1, backoff_cap_ms=20
    )
    with pytest.raises(ticklane.SubscribeError, match="gave up after 3"):
        for update in subscription:
            events.append(update)
    assert [e["type"] for e in events] == ["reconnecting"] * 2, events
    assert all(e["why"] == "could not connect" and not e["server_asked"] for e in events)
    # The least any reconnect waits (50 ms: no reconnect loop), plus full jitter up to the cap.
    assert all(50 <= e["delay_ms"] <= 70 for e in events), events
    assert list(subscription) == [], "ended for good"


def test_close_ends_the_iteration():
    subscription = ticklane.subscribe(
        f"127.0.0.1:{free_port()}", "AAAA,AAAB".split(","), backoff_base_ms=1,
        backoff_cap_ms=10,
    )
    assert next(subscription)["type"] == "reconnecting"
    assert subscription.symbols == ["AAAA", "AAAB"]
    subscription.close()
    assert list(subscription) == []


@pytest.mark.parametrize(
    "server, symbols",
    [("127.0.0.1", ["AAAA"]), ("127.0.0.1:0", ["AAAA"]), ("127.0.0.1:9", []),
     ("127.0.0.1:9", ["TOOLONGSYM"]), ("127.0.0.1:9", [""])],
)
def test_bad_arguments_are_value_errors(server, symbols):
    with pytest.raises(ValueError):
        ticklane.subscribe(server, symbols)


CTRL_C = """
import sys, time, ticklane
updates = ticklane.subscribe(sys.argv[1], ["AAAA"], backoff_base_ms=60_000, backoff_cap_ms=60_000)
next(updates)  # the first failed attempt; the next waits a minute
print("waiting", flush=True)
started = time.perf_counter()
try:
    next(updates)
    print("finished", time.perf_counter() - started, flush=True)
except KeyboardInterrupt:
    print("interrupted", time.perf_counter() - started, flush=True)
"""


def test_ctrl_c_interrupts_a_wait_for_an_update():
    child = subprocess.Popen(
        [sys.executable, "-c", CTRL_C, f"127.0.0.1:{free_port()}"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert child.stdout.readline().strip() == "waiting"
    time.sleep(0.2)
    child.send_signal(signal.SIGINT)
    out, err = child.communicate(timeout=30)
    assert out.startswith("interrupted"), (out, err)
    assert float(out.split()[1]) < 2.0, out
