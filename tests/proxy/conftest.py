"""Fixtures for backstop proxy's tests: the binary, the test upstream, and the npm servers.

The binary is `BACKSTOP_BIN` (default `<repo>/target/debug/backstop`). The npm servers are in
tests/proxy/node_modules (`npm ci --prefix tests/proxy`); without them their tests are skipped,
unless BACKSTOP_TEST_NPM=1 (as .ci/run sets) makes a missing install a failure.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
UPSTREAM = HERE / "upstream_server.py"
NODE_MODULES = HERE / "node_modules" / "@modelcontextprotocol"


@pytest.fixture(scope="session")
def binary() -> Path:
    path = Path(os.environ.get("BACKSTOP_BIN", REPO / "target" / "debug" / "backstop"))
    if not path.is_absolute():
        path = (Path.cwd() / path).resolve()
    if not path.exists():
        pytest.fail(f"no backstop binary at {path}: run `cargo build -p backstop`", pytrace=False)
    return path


@pytest.fixture()
def upstream_command() -> list[str]:
    """The test upstream, run by this interpreter (it has the MCP SDK)."""
    return [sys.executable, str(UPSTREAM)]


def npm_server(package: str) -> Path:
    """The entry point of an npm-installed MCP server, or skip (fail under BACKSTOP_TEST_NPM)."""
    entry = NODE_MODULES / package / "dist" / "index.js"
    if not entry.exists():
        why = f"{entry} is missing: run `npm ci --prefix tests/proxy`"
        if os.environ.get("BACKSTOP_TEST_NPM"):
            pytest.fail(why, pytrace=False)
        pytest.skip(why)
    return entry
