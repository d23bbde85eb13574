#!/usr/bin/env bash
# The contract run: schemathesis (pinned, in a fresh venv) against `backstop serve` on loopback,
# with every check on: no 5xx, responses that match the document, nothing the schema allows
# refused and nothing it forbids accepted. Usage: .ci/schemathesis/run.sh BINARY [DB]
# (DB: a postgres:// URL, or empty for a SQLite file). Run from the repository root.
set -euo pipefail

binary=$1
db=${2:-}
here=.ci/schemathesis
work=$(mktemp -d)
trap 'kill "${server:-0}" 2>/dev/null || true; rm -rf "$work"' EXIT

# CPython 3.11.7 can fail inside hypothesis with "AST constructor recursion depth mismatch";
# a newer interpreter is used where the machine has one.
python=""
for candidate in python3.13 python3.12 /root/.pyenv/versions/3.13.0/bin/python3 python3; do
  if "$candidate" -c 'import sys; assert sys.version_info >= (3, 10)' >/dev/null 2>&1; then
    python=$candidate
    break
  fi
done
# Made once per CI run (.ci/run removes it first), then used by the SQLite and PostgreSQL runs.
venv=target/schemathesis-venv
if [ ! -x "$venv/bin/schemathesis" ]; then
  "$python" -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$here/requirements.txt"
fi

key="contract-operator-key-0123456789abcdef"
hash=$("$binary" config hash-key "$key")
port=$("$python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat >"$work/config.toml" <<TOML
listen = "127.0.0.1:$port"
db = "${db:-$work/ledger.db}"
packs = ["$PWD/packs"]
[limits]
rate_per_second = 1000000
burst = 1000000
# The coverage phase sends every operation without a key, and expects 401 each time.
auth_failures_per_second = 1000000
auth_failures_burst = 1000000
[[keys]]
hash = "$hash"
caller = "contract"
role = "operator"
TOML
"$binary" serve --config "$work/config.toml" >"$work/serve.log" 2>&1 &
server=$!
for _ in $(seq 50); do
  curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && break
  sleep 0.2
done

status=0
PYTHONPATH="$here" SCHEMATHESIS_HOOKS=backstop_hooks "$venv/bin/schemathesis" run \
  "http://127.0.0.1:$port/openapi.json" \
  -H "Authorization: Bearer $key" \
  --checks all --max-examples 60 --seed 1 --workers 2 \
  --generation-database none --no-color --output-sanitize false || status=$?
if ! kill -0 "$server" 2>/dev/null; then
  echo "backstop serve died during the run:" >&2
  cat "$work/serve.log" >&2
  status=1
fi
exit "$status"
