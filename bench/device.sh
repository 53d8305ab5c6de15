#!/usr/bin/env bash
# Every figure a 2-core machine cannot give, measured in one run on a machine with cores to
# spare, written into one folder. Two halves, so that the measuring machine builds nothing:
#
#   bench/device.sh --build          # here: builds, then copies the stripped binaries into
#                                    # target/device/bin (small enough to carry elsewhere)
#   bench/device.sh OUT [--quick]    # there: runs them; every figure lands under OUT
#
# What it measures (each step bounded by `timeout`; the steps are paced rather than bound by
# cores, so the run takes about two minutes (1 min 50 s on the 2-core development VM) and
# --quick about fifteen seconds):
#   machine.txt      the machine: cores, CPU model, kernel, load before and after
#   threads.csv      `replay --threads N --bbo-out` for N = 1, 2, 4, 8 on the full-day profile
#                    (best of 3 wall seconds, messages/s, speed-up over one thread) and the
#                    sha256 of each N's --bbo-out, which must all be equal
#   hop/             `latency --hop-only` on pinned cores with busy-spin: the ring against
#                    rtrb, crossbeam and the disruptor and the cache-line floor, 7 rounds
#   live/            `latency` at 1 M msg/s, pinned, busy-spin, in-process and UDP sources
#   storm.txt        `serve_storm`: the veterans' update latency before and during a storm
#   delivery/        `delivery`: wire to consumer through the snapshot, the subscriber server
#                    and Aeron IPC and UDP, the engine pinned with busy-spin, at 100 k changes/s
#   python.txt       bench/python_batches.py, where $PYTHON imports ticklane, itch_book and
#                    polars (a virtual environment carried along); else it says it skipped
#   device.log       every step's command, exit status and wall time
#
# Cores: the pinned steps use the last two cores (`--cores` a,b with a = nproc-2), away from
# core 0 where the kernel's own work lands. A step that fails is logged and the rest still run;
# the exit status is 1 if any failed.
set -uo pipefail
cd "$(dirname "$0")/.."

# calc EXPRESSION: awk's arithmetic (bc is not on every machine).
calc() { awk "BEGIN { print $1 }"; }
now() { date +%s.%N; }
# The binaries: --build's, or DEVICE_BIN's (CI smoke-runs --quick on target/release's).
bin="${DEVICE_BIN:-target/device/bin}"

if [[ "${1:-}" == --build ]]; then
  bin=target/device/bin
  set -e
  # With Aeron (its C build needs CMake >= 3.30 and libclang here, nothing there).
  cargo build --profile release-lto -p ticklane --features aeron
  cargo build --release -p ticklane-bench --features aeron --bin latency --bin serve_storm \
    --bin delivery
  mkdir -p "$bin"
  strip -o "$bin/ticklane" target/release-lto/ticklane
  strip -o "$bin/latency" target/release/latency
  strip -o "$bin/serve_storm" target/release/serve_storm
  strip -o "$bin/delivery" target/release/delivery
  du -ch "$bin"/* | tail -n 1
  echo "carry $bin (and a venv with ticklane, itch-book and polars for python.txt), then run: bench/device.sh OUT"
  exit 0
fi

out="${1:?usage: bench/device.sh --build | bench/device.sh OUT [--quick]}"
quick=0
[[ "${2:-}" == --quick ]] && quick=1
for b in ticklane latency serve_storm delivery; do
  [[ -x "$bin/$b" ]] || { echo "$bin/$b is missing: run bench/device.sh --build first" >&2; exit 2; }
done
mkdir -p "$out"
log="$out/device.log"
: > "$log"
failed=0

# step NAME LIMIT_S COMMAND...: runs COMMAND under a time limit, logging how it went.
step() {
  local name="$1" limit="$2" started rc
  shift 2
  started=$(now)
  echo "== $name: $*" | tee -a "$log" >&2
  timeout "$limit" "$@"
  rc=$?
  printf '   %s: exit %d after %.1f s\n' "$name" "$rc" "$(calc "$(now) - $started")" \
    | tee -a "$log" >&2
  ((rc == 0)) || failed=1
  return "$rc"
}

cores=$(nproc)
if ((cores >= 4)); then
  pin="$((cores - 2)),$((cores - 1))"
else
  pin="0,1"
fi
{
  echo "cores: $cores (pinned steps on $pin)"
  grep -m1 'model name' /proc/cpuinfo || true
  uname -srm
  echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
} > "$out/machine.txt"

# --threads N on the full-day profile, outputs compared.
if ((quick)); then messages=200000 repeat=1; else messages=5000000 repeat=3; fi
day="$out/full-day-$messages.itch50"
step gen 120 "$bin/ticklane" gen "$day" --profile full-day --messages "$messages" \
  --no-hard-cases --seed 1 > /dev/null
# One untimed run first: the day into the page cache, the binary's pages in.
step warm-up 120 "$bin/ticklane" replay "$day" -q > /dev/null
echo "threads,best_s,msgs_per_s,speedup,bbo_sha256" > "$out/threads.csv"
one=""
for n in 1 2 4 8; do
  best=""
  for ((r = 0; r < repeat; r++)); do
    started=$(now)
    step "threads $n" 120 "$bin/ticklane" replay "$day" --threads "$n" -q \
      --bbo-out "$out/bbo-$n.csv" > /dev/null || break
    took=$(calc "$(now) - $started")
    if [[ -z $best ]] || (($(calc "$took < $best"))); then best=$took; fi
  done
  [[ -n $best ]] || continue
  [[ -n $one ]] || one=$best
  sha=$(sha256sum "$out/bbo-$n.csv" | cut -d' ' -f1)
  printf '%d,%.3f,%.0f,%.2f,%s\n' "$n" "$best" "$(calc "$messages / $best")" \
    "$(calc "$one / $best")" "$sha" >> "$out/threads.csv"
done
if (($(cut -d, -f5 "$out/threads.csv" | tail -n +2 | sort -u | wc -l) != 1)); then
  echo "   threads: the --bbo-out files differ between thread counts" | tee -a "$log" >&2
  failed=1
fi
rm -f "$out"/bbo-*.csv "$day"

# The ring hop against the floor, pinned, busy-spin.
if ((quick)); then hop=(--rounds 1 --hop-frames 20000 --floor-trips 20000); else hop=(--rounds 7); fi
step hop 180 "$bin/latency" --hop-only "${hop[@]}" --cores "$pin" --wait busy-spin \
  --out "$out/hop" > "$out/hop.txt"

# The live pipeline end to end at 1 M msg/s, pinned, busy-spin.
if ((quick)); then live=(--quick); else live=(--messages 1000000 --rates 1M --rounds 3); fi
step live 180 "$bin/latency" "${live[@]}" --cores "$pin" --wait busy-spin \
  --out "$out/live" > "$out/live.txt"

# The subscriber storm: the veterans' latency before and during it.
if ((quick)); then
  storm=(--clients 300 --accept-per-second 60 --burst 20 --retry-after-ms 250-2500
    --policy jittered --deadline-s 25)
else
  storm=(--clients 2000 --accept-per-second 500 --burst 100 --retry-after-ms 2000-5000
    --fixed-retry-after-ms 3500 --deadline-s 40)
fi
step storm 150 "$bin/serve_storm" "${storm[@]}" > "$out/storm.txt"

# Delivery to other processes: the engine pinned, busy-spin.
if ((quick)); then delivery=(--quick); else delivery=(--changes 300000 --rate 100000); fi
step delivery 120 "$bin/delivery" "${delivery[@]}" --ticklane "$bin/ticklane" \
  --wait busy-spin --cores "$pin" --out "$out/delivery" > "$out/delivery.txt"

# The Python path, where the interpreter has what it needs.
python="${PYTHON:-.venv/bin/python}"
if "$python" -c 'import ticklane, itch_book, polars' 2> /dev/null; then
  if ((quick)); then py=(--messages 200000 --repeat 1); else py=(--messages 5000000); fi
  step python 240 "$python" bench/python_batches.py "${py[@]}" --ticklane "$bin/ticklane" \
    > "$out/python.txt"
else
  echo "SKIPPED: $python cannot import ticklane, itch_book and polars (carry a venv, set PYTHON)" \
    | tee "$out/python.txt" | tee -a "$log" >&2
fi

echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" >> "$out/machine.txt"
echo "figures in $out$( ((failed)) && echo '; some steps FAILED, see device.log')" >&2
exit "$failed"
