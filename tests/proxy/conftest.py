"""Fixtures for backstop proxy's tests: the binary, the test upstream, and the npm servers.

The binary is `BACKSTOP_BIN` (default `<repo>/target/debug/backstop`). The npm servers are in
tests/proxy/node_modules (`npm ci --prefix tests/proxy`); without them their tests are skipped,
unless BACKSTOP_TEST_NPM=1 (as .ci/run sets) makes a missing install a failure.
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

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


@dataclass
class Served:
    """`backstop serve` with one `[[proxy]]` entry (the test upstream) and one agent key."""

    url: str
    agent_key: str
    folder: Path
    log: Path


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@pytest.fixture()
def served(binary: Path, tmp_path: Path) -> Iterator[Served]:
    key = secrets.token_urlsafe(32)
    digest = subprocess.run(
        [str(binary), "config", "hash-key"], input=key, capture_output=True, text=True,
        check=True, timeout=30,
    ).stdout.strip()
    upstream_log = tmp_path / "upstream.log"
    command = json.dumps([sys.executable, str(UPSTREAM)])
    (tmp_path / "backstop.toml").write_text(
        f'db = "{tmp_path / "ledger.db"}"\n'
        f'[[keys]]\nhash = "{digest}"\ncaller = "proxy-agent"\nrole = "agent"\n'
        f'[[proxy]]\nname = "test"\ncommand = {command}\ntrusted = true\ntimeout_s = 2\n'
    )
    port = _free_port()
    log = open(tmp_path / "serve.log", "wb")
    process = subprocess.Popen(
        [str(binary), "serve", "--config", str(tmp_path / "backstop.toml"),
         "--listen", f"127.0.0.1:{port}"],
        stdout=log, stderr=log, env={**os.environ, "UPSTREAM_LOG": str(upstream_log)},
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                break
        except OSError:
            if process.poll() is not None:
                pytest.fail((tmp_path / "serve.log").read_text(), pytrace=False)
            time.sleep(0.1)
    else:
        process.kill()
        pytest.fail("backstop serve did not start in 30 s", pytrace=False)
    yield Served(url=f"http://127.0.0.1:{port}", agent_key=key, folder=tmp_path, log=upstream_log)
    process.terminate()
    process.wait(timeout=30)
    log.close()
