#!/usr/bin/env bash
# The latency `backstop proxy` adds to a tools/call on stdio, and the calls per second one proxy
# carries: the test upstream's `echo` tool called directly and through the proxy (release
# binary, a SQLite ledger), alternately, in one run, by the official MCP Python SDK's client.
#
# Usage: bench/proxy-latency.sh [CALLS] [ROUNDS]     (default: 2000 calls, 3 rounds)
set -euo pipefail
cd "$(dirname "$0")/.."
calls=${1:-2000}
rounds=${2:-3}

cargo build --release -q -p backstop
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 -m venv "$work/venv"
"$work/venv/bin/pip" install -q -r tests/mcp/requirements.txt
"$work/venv/bin/python" bench/proxy_latency.py "$PWD/target/release/backstop" "$work" "$calls" "$rounds"
