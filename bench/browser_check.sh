#!/usr/bin/env bash
# On demand: the browser view in a real browser. Runs the engine's headless-Chromium test
# (engine/cli/tests/it/browser_view.rs: `ticklane sim` feeds `ticklane run --web`, Chromium opens the
# page, and its table and ladder must show the snapshot's prices), installing Chromium first
# if it is missing (Debian package `chromium`: about 35 s, 124 MB download, 414 MB on disk).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v chromium >/dev/null 2>&1; then
  as_root=""
  if [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1; then as_root="sudo"; fi
  echo "installing chromium (Debian package)…"
  $as_root apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $as_root apt-get install -y -qq --no-install-recommends chromium >/dev/null
fi
chromium --version
# CI=true: a missing browser fails instead of skipping.
CI=true cargo test --release -p ticklane --test it browser_view -- --nocapture
