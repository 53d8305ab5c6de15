"""Fixtures for the package's tests: the ``ticklane`` command they compare against, and the
days it generates.

The command is the one the workspace builds (``target/release/ticklane``, or the path in
``TICKLANE_BIN``); the tests compare what the package gives with what that command writes
for the same file, so the two must come from the same tree.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


def binary() -> Path:
    """The ``ticklane`` command the tests compare against."""
    path = Path(os.environ.get("TICKLANE_BIN", ROOT / "target" / "release" / "ticklane"))
    if not path.is_file():
        pytest.fail(
            f"{path} is not built: run `cargo build --release -p ticklane` first "
            "(or set TICKLANE_BIN)",
            pytrace=False,
        )
    return path


@pytest.fixture(scope="session")
def cli():
    """Runs the ``ticklane`` command with the given arguments; returns the finished process."""
    path = binary()

    def run(*args: object, check: bool = True) -> subprocess.CompletedProcess:
        done = subprocess.run(
            [str(path), *map(str, args)], capture_output=True, text=True, timeout=300
        )
        if check and done.returncode != 0:
            raise AssertionError(
                f"ticklane {' '.join(map(str, args))} exited {done.returncode}:\n{done.stderr}"
            )
        return done

    return run


@pytest.fixture(scope="session")
def day(cli, tmp_path_factory) -> Path:
    """A generated small-profile day with its hard cases (reused references, extreme prices,
    a mid-day start), 300,000 messages."""
    path = tmp_path_factory.mktemp("days") / "day.itch50"
    cli("gen", "--messages", 300_000, "--seed", 7, path)
    return path


@pytest.fixture(scope="session")
def long_day(cli, tmp_path_factory) -> Path:
    """A 3,000,000-message full-day-shaped day: long enough that its rows outweigh any
    bound a test puts on memory."""
    path = tmp_path_factory.mktemp("days") / "long.itch50"
    cli("gen", "--messages", 3_000_000, "--profile", "full-day", "--seed", 3, path)
    return path


def shared_data() -> Path | None:
    """``../shared/data`` beside the repository, if it is there; under CI its absence fails
    the test that needs it, elsewhere that test skips and says so."""
    path = ROOT.parent / "shared" / "data"
    if path.is_dir():
        return path
    if os.environ.get("CI"):
        pytest.fail(f"{path} is missing (CI has ../shared)", pytrace=False)
    pytest.skip(f"SKIPPED: {path} is missing: the real-capture test did not run")
    return None
