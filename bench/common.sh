# Shared by the service benchmarks: sourced, not run.

# Installs wrk from Debian when it is missing.
ensure_wrk() {
  if ! command -v wrk >/dev/null; then
    echo "--- installing wrk (Debian package)"
    apt-get install -y wrk >/dev/null
  fi
}

# Writes DIR/bench.toml: the repository's packs, no per-caller rate limit, and the extra lines
# given (a `db = ...` line, say).
write_bench_config() {
  local dir=$1; shift
  {
    printf '%s\n' "$@"
    echo "packs = [\"$(pwd)/packs\"]"
    echo "[limits]"
    echo "rate_per_second = 1000000000"
    echo "burst = 1000000000"
  } >"$dir/bench.toml"
}

# Waits until the service on PORT answers /healthz (10 s at most); LOG is shown if it never does.
wait_healthy() {
  local port=$1 log=$2
  for _ in $(seq 100); do
    curl -sf -o /dev/null "http://127.0.0.1:$port/healthz" 2>/dev/null && return 0
    sleep 0.1
  done
  echo "the service on $port did not start:"; cat "$log"; exit 1
}
