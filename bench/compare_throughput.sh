#!/usr/bin/env bash
# Builds ticklane (release-lto) and times it against itch-book and itchcpp on FILE.
# Usage: bench/compare_throughput.sh FILE [--rounds 5]   (other flags: see compare_throughput.py)
# Runs from the repository root: give FILE as an absolute path or relative to the root.
# The Python side needs a venv with itch-book and itchcpp: $ORACLE_PY, default .venv/bin/python (itch-book and itchcpp installed).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --profile release-lto -p ticklane-engine
exec "${ORACLE_PY:-.venv/bin/python}" bench/compare_throughput.py "$@"   # default --ticklane: target/release-lto/ticklane
