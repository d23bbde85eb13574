#!/usr/bin/env bash
# The cost of one `backstop classify` process, as an agent's hook pays it: one report per
# process, the default rules, measured with hyperfine against `backstop --version` in the same
# run (the process start itself). Installs hyperfine from Debian if it is missing.
#
# Usage: bench/classify-oneshot.sh [RUNS]     (default: 200 runs per command)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-200}

if ! command -v hyperfine >/dev/null; then
  apt-get install -y -qq hyperfine >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq hyperfine; }
fi
cargo build --release -q -p backstop
bin=$PWD/target/release/backstop
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

hyperfine -N --warmup 20 --runs "$runs" --export-markdown "$work/table.md" \
  --command-name "backstop --version" "$bin --version" \
  --command-name "classify --status 503" "$bin classify --status 503 --json" \
  --command-name "classify a botocore message" \
  "$bin classify --json --message 'An error occurred (ThrottlingException) when calling the Query operation: Rate exceeded'" \
  --command-name "classify a JSON body" \
  "$bin classify --json --status 200 --output '{\"ok\":false,\"error\":\"ratelimited\"}'" \
  --command-name "classify a Go error" \
  "$bin classify --json --message 'dial tcp 10.0.0.5:5432: connect: connection refused'"
echo
cat "$work/table.md"
