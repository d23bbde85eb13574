#!/usr/bin/env bash
# The SQLite WAL under sustained load: `backstop serve` on a fresh ledger, counted decisions with
# wrk for SECONDS at CONNECTIONS, the WAL file's size sampled every 0.2 s. Prints the decision
# rate, the WAL's peak size, and what is left of the WAL after a clean stop (SIGTERM).
#
#   bench/serve-wal.sh [SECONDS] [CONNECTIONS]      defaults: 60 s, 64 connections
#
# BACKSTOP_BIN=path measures that binary instead of building target/release/backstop (to
# compare two builds). Needs wrk (Debian package `wrk`; installed here if missing and apt-get is available).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
connections=${2:-64}

source bench/common.sh
ensure_wrk
if [ -n "${BACKSTOP_BIN:-}" ]; then
  bin=$(realpath "$BACKSTOP_BIN")
else
  cargo build --release -q -p backstop
  bin=./target/release/backstop
fi

work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
write_bench_config "$work" 'db = "ledger.db"'

"$bin" serve --listen 127.0.0.1:7694 --config "$work/bench.toml" \
  >"$work/server.log" 2>&1 &
server=$!
wait_healthy 7694 "$work/server.log"

wal="$work/ledger.db-wal"
(
  peak=0
  while true; do
    size=$(stat -c %s "$wal" 2>/dev/null || echo 0)
    [ "$size" -gt "$peak" ] && peak=$size && echo "$peak" >"$work/peak"
    sleep 0.2
  done
) &
sampler=$!

wrk -t2 -c"$connections" -d"${seconds}s" -s bench/wrk/decisions.lua \
  http://127.0.0.1:7694 >"$work/wrk.txt"
kill "$sampler" 2>/dev/null || true

kill -TERM "$server"
wait "$server" || true
rate=$(awk '/^Requests\/sec/ {print $2}' "$work/wrk.txt")
peak=$(cat "$work/peak" 2>/dev/null || echo 0)
left=$(stat -c %s "$wal" 2>/dev/null || echo 0)
echo "decisions: $rate/s over ${seconds}s at $connections connections"
echo "WAL peak: $((peak / 1024 / 1024)) MB ($peak bytes); after a clean stop: $left bytes"
