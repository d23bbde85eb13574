#!/usr/bin/env bash
# Two `backstop serve` processes on one ledger, `POST /v1/recover` on both at once with wrk:
# first on one SQLite file, then on one PostgreSQL database. Prints requests/s (both servers
# together) and each server's latency percentiles.
#
#   bench/serve-fleet.sh [SECONDS] [CONNECTIONS] [POSTGRES_URL]
#   defaults: 10 s, 64 connections (half to each server),
#             postgres://postgres@127.0.0.1:5432/test (skipped if it does not answer)
#
# BACKSTOP_BIN=path measures that binary instead of building target/release/backstop (to
# compare two builds). Needs wrk (Debian package `wrk`; installed here if missing and apt-get is available).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-10}
connections=${2:-64}
postgres=${3:-postgres://postgres@127.0.0.1:5432/test}
half=$((connections / 2))

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
write_bench_config "$work"

start() { # $1: port, $2: ledger
  "$bin" serve --listen "127.0.0.1:$1" --config "$work/bench.toml" \
    --db "$2" >"$work/server-$1.log" 2>&1 &
  wait_healthy "$1" "$work/server-$1.log"
}

percentile() { awk -v p="$1" '$1 == p {print $2}' "$2"; }

fleet() { # $1: name, $2: ledger
  start 7692 "$2"
  start 7693 "$2"
  wrk -t1 -c"$half" -d"${seconds}s" --latency -s bench/wrk/recover.lua http://127.0.0.1:7692 >"$work/a.txt" &
  local first=$!
  wrk -t1 -c"$half" -d"${seconds}s" --latency -s bench/wrk/recover.lua http://127.0.0.1:7693 >"$work/b.txt"
  wait "$first"
  local a b
  a=$(awk '/^Requests\/sec/ {print $2}' "$work/a.txt")
  b=$(awk '/^Requests\/sec/ {print $2}' "$work/b.txt")
  printf '%-10s %10.0f req/s   A: p50 %-8s p99 %-8s   B: p50 %-8s p99 %-8s %s\n' "$1" \
    "$(echo "$a + $b" | bc)" "$(percentile 50% "$work/a.txt")" "$(percentile 99% "$work/a.txt")" \
    "$(percentile 50% "$work/b.txt")" "$(percentile 99% "$work/b.txt")" \
    "$(cat "$work/a.txt" "$work/b.txt" | awk '/Non-2xx|Socket errors/' | tr '\n' ' ')"
  kill $(jobs -p) 2>/dev/null || true
  wait 2>/dev/null || true
}

echo "wrk: $connections connections ($half to each server), ${seconds}s, on $(nproc) cores"
fleet "SQLite" "$work/ledger.db"
if pg_isready -q -d "$postgres" 2>/dev/null; then
  schema="backstop_bench_$$"
  psql -q "$postgres" -c "SET client_min_messages = warning; DROP SCHEMA IF EXISTS $schema CASCADE; CREATE SCHEMA $schema"
  fleet "PostgreSQL" "$postgres?options=-c%20search_path%3D$schema"
  psql -q "$postgres" -c "SET client_min_messages = warning; DROP SCHEMA IF EXISTS $schema CASCADE"
else
  echo "PostgreSQL: $postgres does not answer; skipped"
fi
