#!/usr/bin/env bash
# End-to-end throughput of `backstop classify --jsonl`: a realistic mix of reports (the labeled
# corpus, cycled; each report's message varied so no two lines are alike), through the release
# binary, stdin to stdout. Prints lines per second for the best of several runs.
#
# Usage: bench/classify-jsonl.sh [LINES] [RUNS]     (defaults: 300000 lines, 5 runs)
# BACKSTOP_BIN=path measures that binary instead of building target/release/backstop (to
# compare two builds on the same input).
set -euo pipefail
cd "$(dirname "$0")/.."
lines=${1:-300000}
runs=${2:-5}

if [ -n "${BACKSTOP_BIN:-}" ]; then
  bin=$BACKSTOP_BIN
else
  cargo build --release -q -p backstop
  bin=target/release/backstop
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

python3 - "$lines" "$work/in.jsonl" <<'PY'
import json, sys
n, out = int(sys.argv[1]), sys.argv[2]
reports = [json.loads(l)["report"] for l in open("crates/backstop-core/tests/data/labeled_reports.jsonl") if l.strip()]
with open(out, "w") as f:
    for i in range(n):
        r = dict(reports[i % len(reports)])
        if "message" in r:
            r["message"] = f'{r["message"]} (request req_{i:08x})'
        f.write(json.dumps(r) + "\n")
PY

echo "input: $lines lines, $(du -h "$work/in.jsonl" | cut -f1)"
best=0
for run in $(seq "$runs"); do
  start=$(date +%s.%N)
  "$bin" classify --jsonl --now 2026-01-01T00:00:00Z < "$work/in.jsonl" > "$work/out.jsonl"
  end=$(date +%s.%N)
  got=$(wc -l < "$work/out.jsonl")
  [ "$got" -eq "$lines" ] || { echo "expected $lines output lines, got $got" >&2; exit 1; }
  rate=$(python3 -c "print(int($lines / ($end - $start)))")
  echo "run $run: $rate lines/s"
  [ "$rate" -gt "$best" ] && best=$rate
done
errors=$(grep -c '"error"' "$work/out.jsonl" || true)
echo "errors in output: $errors"
echo "best: $best lines/s"
