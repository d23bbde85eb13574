"""Fixtures: a real `backstop serve` for the session, open and keyed.

The binary is `BACKSTOP_BIN` (default `<repo>/target/debug/backstop`); each server gets a free
port, a temporary SQLite ledger and the repository's example packs. A missing binary fails the
run: these tests are worth nothing without the service.
"""

from __future__ import annotations

import os
import secrets
import socket
import subprocess
import time
import uuid
from pathlib import Path
from typing import Dict, Iterator, Optional

import httpx
import pytest

from helpers import Server, Sleeps

REPO = Path(__file__).resolve().parents[3]


def _binary() -> Path:
    path = Path(os.environ.get("BACKSTOP_BIN", REPO / "target" / "debug" / "backstop"))
    if not path.is_absolute():
        path = (Path.cwd() / path).resolve()
    if not path.exists():
        pytest.fail(
            f"no backstop binary at {path}: run `cargo build -p backstop` or set BACKSTOP_BIN",
            pytrace=False,
        )
    return path


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _toml_string(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _start(folder: Path, keys: Optional[Dict[str, str]] = None) -> Iterator[Server]:
    binary = _binary()
    config = [
        f"packs = [{_toml_string(str(REPO / 'packs'))}]",
        f"db = {_toml_string(str(folder / 'ledger.db'))}",
    ]
    for role, key in (keys or {}).items():
        digest = subprocess.run(
            [str(binary), "config", "hash-key"],
            input=key,
            capture_output=True,
            text=True,
            check=True,
            timeout=30,
        ).stdout.strip()
        config += ["[[keys]]", f'hash = "{digest}"', f'caller = "py-{role}"', f'role = "{role}"']
    (folder / "backstop.toml").write_text("\n".join(config) + "\n")

    last_error = ""
    for _ in range(3):  # another process may take the free port first
        port = _free_port()
        log = folder / f"serve-{port}.log"
        with open(log, "wb") as out:
            process = subprocess.Popen(
                [
                    str(binary),
                    "serve",
                    "--config",
                    str(folder / "backstop.toml"),
                    "--listen",
                    f"127.0.0.1:{port}",
                    "--log-level",
                    "warn",
                ],
                stdout=out,
                stderr=subprocess.STDOUT,
                cwd=folder,
            )
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        ready = False
        while time.monotonic() < deadline and process.poll() is None:
            try:
                if httpx.get(url + "/healthz", timeout=1).status_code == 200:
                    ready = True
                    break
            except httpx.TransportError:
                pass
            time.sleep(0.05)
        if ready:
            try:
                yield Server(url=url, ledger=folder / "ledger.db", log=log, keys=dict(keys or {}))
            finally:
                process.terminate()
                try:
                    process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
            return
        if process.poll() is None:
            process.kill()
        process.wait()
        last_error = log.read_text(errors="replace")
    pytest.fail(f"backstop serve did not become healthy:\n{last_error}", pytrace=False)


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """An open server: no keys, every caller the local operator."""
    yield from _start(tmp_path_factory.mktemp("open"))


@pytest.fixture(scope="session")
def keyed_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A server with an agent key and an operator key."""
    keys = {role: secrets.token_urlsafe(32) for role in ("agent", "operator")}
    yield from _start(tmp_path_factory.mktemp("keyed"), keys)


@pytest.fixture
def task() -> str:
    """A task name no other test uses: counters are per task and kept for the session."""
    return f"py-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def tool() -> str:
    """A tool name no other test uses: breakers and budgets are per tool."""
    return f"tool-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
