#!/usr/bin/env bash
# Builds ticklane (release-lto) and times it against itch-book and itchcpp on FILE.
# Usage: bench/compare_throughput.sh FILE [--rounds 5]   (other flags: see compare_throughput.py)
#        bench/compare_throughput.sh --profiles [--messages N] [--dir DIR] [flags for the .py]
#   --profiles generates one day per `ticklane gen --profile` (small: 50 stocks; full-day:
#   8,900 stocks, Zipf-like activity, a Nasdaq day's mix, live orders climbing through the
#   morning to about 5% of the day's messages and draining at the close) of N messages
#   (default 2,000,000; 50,000,000 is a whole day's scale, about 1.5 GB each and about
#   2.5 million live orders at the peak, inside replay's default --max-orders of 8 Mi, so no
#   capacity flag is passed) into DIR (default target/profiles, kept and reused: delete a
#   full-day file made before the day had its shape), times each, and prints one table with
#   a profile column.
# Runs from the repository root: give FILE as an absolute path or relative to the root.
# The Python side needs a venv with itch-book and itchcpp: $ORACLE_PY, default .venv/bin/python (itch-book and itchcpp installed).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --profile release-lto -p ticklane
PY="${ORACLE_PY:-.venv/bin/python}"
if [[ "${1:-}" != --profiles ]]; then
  exec "$PY" bench/compare_throughput.py "$@"   # default --ticklane: target/release-lto/ticklane
fi
shift
messages=2000000 dir=target/profiles rest=()
while (($#)); do
  case "$1" in
    --messages) messages="$2"; shift 2 ;;
    --dir) dir="$2"; shift 2 ;;
    *) rest+=("$1"); shift ;;
  esac
done
mkdir -p "$dir"
table=""
for profile in small full-day; do
  file="$dir/$profile-$messages.itch50"
  stocks=()
  [[ $profile == small ]] && stocks=(--stocks 50)
  [[ -s $file ]] || target/release-lto/ticklane gen "$file" --profile "$profile" \
    --messages "$messages" --no-hard-cases "${stocks[@]}"
  out=$("$PY" bench/compare_throughput.py "$file" "${rest[@]}")
  echo "$out" >&2
  # The engine rows (after the header line), with the profile in front.
  table+=$(echo "$out" | awk -v p="$profile" 'seen { printf "%-10s %s\n", p, $0 } /^engine/ { seen = 1 }')$'\n'
done
printf '%-10s %-12s %8s %12s   %s\n' profile engine best_s msgs_per_s ticklane_ratio
printf '%s' "$table"
