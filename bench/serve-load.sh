#!/usr/bin/env bash
# Load on `backstop serve` over loopback with wrk: counted decisions, classify, and a bare
# axum JSON echo in the same run for the ratio. Prints requests/s and latency percentiles.
#
#   bench/serve-load.sh [SECONDS] [CONNECTIONS]      defaults: 10 s, 64 connections
#
# BACKSTOP_BIN=path measures that binary instead of building target/release/backstop (to
# compare two builds). Needs wrk (Debian package `wrk`; installed here if missing and apt-get
# is available).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-10}
connections=${2:-64}

if ! command -v wrk >/dev/null; then
  echo "--- installing wrk (Debian package)"
  apt-get install -y wrk >/dev/null
fi
if [ -n "${BACKSTOP_BIN:-}" ]; then
  bin=$(realpath "$BACKSTOP_BIN")
else
  cargo build --release -q -p backstop
  bin=./target/release/backstop
fi
cargo build --release -q -p backstop-server --example echo

work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
cat > "$work/bench.toml" <<TOML
db = "ledger.db"
packs = ["$(pwd)/packs"]
[limits]
rate_per_second = 1000000000
burst = 1000000000
TOML

start() { # $1: port, rest: command
  local port=$1; shift
  "$@" >"$work/server-$port.log" 2>&1 &
  for _ in $(seq 100); do
    curl -sf -o /dev/null "http://127.0.0.1:$port/healthz" 2>/dev/null && return 0
    curl -s -o /dev/null -X POST -d '{}' "http://127.0.0.1:$port/echo" 2>/dev/null && return 0
    sleep 0.1
  done
  echo "server on $port did not start:"; cat "$work/server-$port.log"; exit 1
}

run() { # $1: name, rest: wrk arguments
  local name=$1; shift
  wrk -t2 -c"$connections" -d"${seconds}s" --latency "$@" >"$work/$name.txt"
  local rps p50 p99
  rps=$(awk '/^Requests\/sec/ {print $2}' "$work/$name.txt")
  p50=$(awk '$1 == "50%" {print $2}' "$work/$name.txt")
  p99=$(awk '$1 == "99%" {print $2}' "$work/$name.txt")
  local errors
  errors=$(awk '/Non-2xx|Socket errors/' "$work/$name.txt")
  printf '%-28s %12s req/s   p50 %-9s p99 %-9s %s\n' "$name" "$rps" "$p50" "$p99" "$errors"
  echo "$rps" >"$work/$name.rps"
}

start 7690 "$bin" serve --listen 127.0.0.1:7690 --config "$work/bench.toml"
start 7691 ./target/release/examples/echo 127.0.0.1:7691

echo "wrk: 2 threads, $connections connections, ${seconds}s each, on $(nproc) cores"
run "decisions (counted)" -s bench/wrk/decisions.lua http://127.0.0.1:7690
run "classify" -s bench/wrk/post.lua http://127.0.0.1:7690 -- /v1/classify \
  '{"http_status": 429, "headers": {"Retry-After": "2"}, "message": "rate limited"}'
run "axum echo (baseline)" -s bench/wrk/post.lua http://127.0.0.1:7691 -- /echo \
  '{"http_status": 429, "headers": {"Retry-After": "2"}, "message": "rate limited"}'

counted=$(sqlite3 "$work/ledger.db" 'SELECT count(*) FROM attempts' 2>/dev/null || echo "?")
echo "attempts stored in the ledger: $counted"
awk -v d="$(cat "$work/decisions (counted).rps")" -v c="$(cat "$work/classify.rps")" \
    -v e="$(cat "$work/axum echo (baseline).rps")" \
    'BEGIN { printf "ratio to the echo: decisions %.2f, classify %.2f\n", d / e, c / e }'
