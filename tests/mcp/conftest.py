"""Fixtures: the backstop binary, a folder with a ledger, and a `backstop serve` with keys.

The binary is `BACKSTOP_BIN` (default `<repo>/target/debug/backstop`). A missing binary fails
the run: these tests are worth nothing without it.
"""

from __future__ import annotations

import os
import secrets
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def binary() -> Path:
    path = Path(os.environ.get("BACKSTOP_BIN", REPO / "target" / "debug" / "backstop"))
    if not path.is_absolute():
        path = (Path.cwd() / path).resolve()
    if not path.exists():
        pytest.fail(f"no backstop binary at {path}: run `cargo build -p backstop`", pytrace=False)
    return path


@dataclass
class Service:
    url: str
    agent_key: str
    folder: Path


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@pytest.fixture(scope="session")
def service(binary: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    """`backstop serve` with one agent key, on a fresh SQLite ledger and the example packs."""
    folder = tmp_path_factory.mktemp("serve")
    key = secrets.token_urlsafe(32)
    digest = subprocess.run(
        [str(binary), "config", "hash-key"], input=key, capture_output=True, text=True,
        check=True, timeout=30,
    ).stdout.strip()
    (folder / "backstop.toml").write_text(
        f'packs = ["{REPO / "packs"}"]\n'
        f'db = "{folder / "ledger.db"}"\n'
        f'[[keys]]\nhash = "{digest}"\ncaller = "mcp-agent"\nrole = "agent"\n'
    )
    port = _free_port()
    log = open(folder / "serve.log", "wb")
    process = subprocess.Popen(
        [str(binary), "serve", "--config", str(folder / "backstop.toml"),
         "--listen", f"127.0.0.1:{port}"],
        stdout=log, stderr=log,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                break
        except OSError:
            if process.poll() is not None:
                pytest.fail((folder / "serve.log").read_text(), pytrace=False)
            time.sleep(0.1)
    else:
        process.kill()
        pytest.fail("backstop serve did not start in 30 s", pytrace=False)
    yield Service(url=url, agent_key=key, folder=folder)
    process.terminate()
    process.wait(timeout=30)
    log.close()
