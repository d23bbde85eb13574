"""backstop's MCP server, driven by the official MCP Python SDK over stdio and over HTTP."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

import scenario
from conftest import REPO, Service


def test_stdio_on_the_local_ledger(binary: Path, tmp_path: Path) -> None:
    async def main() -> None:
        params = StdioServerParameters(
            command=str(binary),
            args=["mcp", "--db", str(tmp_path / "ledger.db"), "--packs", str(REPO / "packs")],
        )
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                await scenario.run(session)

    anyio.run(main)


@pytest.mark.skipif(
    not os.environ.get("BACKSTOP_TEST_MCP_POSTGRES"),
    reason="set BACKSTOP_TEST_MCP_POSTGRES to a postgres:// URL (.ci/run does)",
)
def test_stdio_on_a_postgresql_ledger(binary: Path) -> None:
    async def main() -> None:
        params = StdioServerParameters(
            command=str(binary),
            args=[
                "mcp",
                "--db",
                os.environ["BACKSTOP_TEST_MCP_POSTGRES"],
                "--packs",
                str(REPO / "packs"),
            ],
        )
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                await scenario.run(session)

    anyio.run(main)


def test_the_readme_config_entry(binary: Path, tmp_path: Path) -> None:
    """README.md's MCP config entry, with its placeholder paths made real, serves the tools."""
    readme = (REPO / "README.md").read_text()
    section = readme.split("### MCP", 1)[1]
    found = re.search(r"```json\n(.*?)```", section, re.S)
    assert found, "README.md's `### MCP` section has a ```json block"
    entry = json.loads(found.group(1))["mcpServers"]["backstop"]
    assert entry["command"] == "backstop"
    args = [
        arg.replace("/path/to/backstop/backstop.db", str(tmp_path / "backstop.db")).replace(
            "/path/to/backstop", str(REPO)
        )
        for arg in entry["args"]
    ]

    async def main() -> None:
        params = StdioServerParameters(command=str(binary), args=args)
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                await scenario.run(session)

    anyio.run(main)
    assert (tmp_path / "backstop.db").exists()


def test_stdio_forwarding_to_a_running_service(
    binary: Path, service: Service, tmp_path: Path
) -> None:
    key_file = tmp_path / "key"
    key_file.write_text(service.agent_key + "\n")

    async def main() -> None:
        params = StdioServerParameters(
            command=str(binary), args=["mcp", "--server", service.url, "--key-file", str(key_file)]
        )
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                await scenario.run(session)

    anyio.run(main)


def test_streamable_http_behind_the_service_keys(service: Service) -> None:
    async def main() -> None:
        headers = {"Authorization": f"Bearer {service.agent_key}"}
        async with httpx2.AsyncClient(headers=headers, timeout=30) as client:
            async with streamable_http_client(f"{service.url}/mcp", http_client=client) as (
                read,
                write,
            ):
                async with ClientSession(read, write) as session:
                    await scenario.run(session)

    anyio.run(main)


def test_streamable_http_without_a_key_is_refused(service: Service) -> None:
    answer = httpx2.post(
        f"{service.url}/mcp",
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        headers={"Accept": "application/json, text/event-stream"},
    )
    assert answer.status_code == 401
    assert answer.json()["error"]["code"] == "unauthorized"


def test_a_bad_key_file_is_a_clear_error(binary: Path, tmp_path: Path) -> None:
    empty = tmp_path / "empty-key"
    empty.write_text("\n")
    ran = subprocess.run(
        [str(binary), "mcp", "--server", "http://127.0.0.1:9", "--key-file", str(empty)],
        capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL,
    )
    assert ran.returncode == 2
    assert f"--key-file {empty}" in ran.stderr
    assert "one API key" in ran.stderr
    assert ran.stdout == ""
