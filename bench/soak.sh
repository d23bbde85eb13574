#!/usr/bin/env bash
# A soak test of `backstop serve` (not run in CI): decisions, classify and recover at a steady
# rate for MINUTES, printing every minute the server's RSS, open file descriptors, WAL size, the
# requests sent and their p99. A leak shows as a column that keeps growing.
#
#   bench/soak.sh [MINUTES] [RATE]      defaults: 10 minutes, 300 requests/s (a third of each)
set -euo pipefail
cd "$(dirname "$0")/.."
minutes=${1:-10}
rate=${2:-300}

source bench/common.sh
cargo build --release -q -p backstop
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
write_bench_config "$work" 'db = "ledger.db"'
./target/release/backstop serve --listen 127.0.0.1:7696 --config "$work/bench.toml" \
  >"$work/server.log" 2>&1 &
server=$!
wait_healthy 7696 "$work/server.log"

python3 - "$minutes" "$rate" "$server" "$work/ledger.db-wal" <<'PY'
import http.client, json, os, sys, threading, time

minutes, rate, pid, wal = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
lock = threading.Lock()
latencies, errors, sent = [], 0, 0

def body(kind, n):
    if kind == 0:
        return "/v1/jobs/vendor-risk/decisions", {
            "execution_id": f"soak-{n}", "case": {"id": f"vendor-{n % 5000}.example.com"},
            "questions": {"data_access": {"excerpts": [
                {"source": "dpa.pdf", "locator": "s4", "text": "The vendor does not process any customer data."}]}},
            "related": {"counterparty": {"id": f"acct-{n}"}}}
    if kind == 1:
        return "/v1/classify", {"http_status": 429, "headers": {"Retry-After": "2"}, "message": "rate limited"}
    return "/v1/recover", {"task": f"soak-{n % 2000}", "report": {"http_status": 503}, "context": {"tool": "search"}}

def worker(index, workers):
    global errors, sent
    conn = http.client.HTTPConnection("127.0.0.1", 7696, timeout=10)
    interval = workers / rate
    n, next_at = index, time.monotonic()
    end = time.monotonic() + minutes * 60
    while time.monotonic() < end:
        path, payload = body(n % 3, n)
        started = time.monotonic()
        try:
            conn.request("POST", path, json.dumps(payload), {"Content-Type": "application/json"})
            response = conn.getresponse()
            response.read()
            ok = response.status < 500
        except Exception:
            ok = False
            conn = http.client.HTTPConnection("127.0.0.1", 7696, timeout=10)
        took = time.monotonic() - started
        with lock:
            sent += 1
            latencies.append(took)
            if not ok:
                errors += 1
        n += workers
        next_at += interval
        time.sleep(max(0.0, next_at - time.monotonic()))

workers = 16
threads = [threading.Thread(target=worker, args=(i, workers), daemon=True) for i in range(workers)]
for t in threads:
    t.start()
print(f"{'minute':>6} {'sent':>7} {'errors':>6} {'p99 ms':>7} {'RSS MB':>7} {'fds':>5} {'WAL MB':>7}")
for minute in range(1, minutes + 1):
    time.sleep(60)
    with lock:
        window, count, failed = sorted(latencies), sent, errors
        latencies.clear()
    p99 = window[int(len(window) * 0.99) - 1] * 1000 if window else 0
    rss = next((int(l.split()[1]) for l in open(f"/proc/{pid}/status") if l.startswith("VmRSS")), 0)
    fds = len(os.listdir(f"/proc/{pid}/fd"))
    wal_mb = os.path.getsize(wal) / 1048576 if os.path.exists(wal) else 0
    print(f"{minute:>6} {count:>7} {failed:>6} {p99:>7.1f} {rss / 1024:>7.1f} {fds:>5} {wal_mb:>7.1f}", flush=True)
PY
