#!/usr/bin/env bash
# On demand (not in CI): a real Prometheus server scrapes a running ticklane engine, and
# ticklane_messages_total is read back through Prometheus's HTTP API.
#
#   bench/prometheus_scrape.sh [ENGINE_ADDR]     # default 127.0.0.1:9187
#
# Start the engine first with its admin server on ENGINE_ADDR, e.g. `ticklane run --config
# line.toml --admin 127.0.0.1:9187`. Installs the Debian package `prometheus` if missing
# (about 45 s). Prometheus runs from a temporary directory, on a free loopback port, and is
# stopped (by its own pid) on exit.
set -euo pipefail

engine="${1:-127.0.0.1:9187}"
port="${PROM_PORT:-9390}"
wait_s="${WAIT_S:-30}"

if ! command -v prometheus >/dev/null 2>&1; then
  echo "installing the Debian package prometheus..."
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >/dev/null
fi

curl -fsS "http://$engine/health" >/dev/null || {
  echo "no ticklane admin server answers on $engine (start ticklane run --admin $engine)" >&2
  exit 1
}

dir=$(mktemp -d)
cat >"$dir/prometheus.yml" <<YAML
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: ticklane
    static_configs:
      - targets: ["$engine"]
YAML

prometheus --config.file="$dir/prometheus.yml" --storage.tsdb.path="$dir/data" \
  --web.listen-address="127.0.0.1:$port" >"$dir/prometheus.log" 2>&1 &
prom=$!
cleanup() { kill "$prom" 2>/dev/null || true; wait "$prom" 2>/dev/null || true; rm -rf "$dir"; }
trap cleanup EXIT

api="http://127.0.0.1:$port/api/v1"
deadline=$((SECONDS + wait_s))
# Wait (bounded) for a successful scrape of the engine: its `up` series is 1.
until curl -fsS "$api/query?query=up%7Bjob%3D%22ticklane%22%7D" 2>/dev/null | grep -q '"value":\[[0-9.]*,"1"\]'; do
  if ((SECONDS >= deadline)); then
    echo "Prometheus did not scrape $engine within ${wait_s}s; its log:" >&2
    tail -n 20 "$dir/prometheus.log" >&2
    exit 1
  fi
  sleep 0.5
done

echo "Prometheus $(prometheus --version 2>&1 | head -n 1 | awk '{print $3}') scraped $engine; ticklane_messages_total as it sees it:"
curl -fsS "$api/query?query=ticklane_messages_total"
echo
