#!/usr/bin/env bash
# The release binary's size: builds `target/release/backstop` with the shipped profile and
# prints its size in bytes, exiting 1 when it is over the budget (default 15,000,000 bytes).
#
# Usage: bench/binary-size.sh [BUDGET_BYTES]
set -euo pipefail
cd "$(dirname "$0")/.."
budget=${1:-15000000}
if ! [[ "$budget" =~ ^[0-9]+$ ]]; then
  echo "bench/binary-size.sh: BUDGET_BYTES must be a whole number of bytes, not '$budget'" >&2
  exit 2
fi
cargo build --release -q -p backstop
size=$(stat -c %s target/release/backstop)
printf 'target/release/backstop: %d bytes (budget %d)\n' "$size" "$budget"
if [ "$size" -gt "$budget" ]; then
  echo "over budget by $((size - budget)) bytes; bench/README.md, \"Under 15 MB\", says what moved it"
  exit 1
fi
