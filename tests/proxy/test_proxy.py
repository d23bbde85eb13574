"""backstop proxy in front of MCP servers, driven by the official MCP Python SDK over stdio.

The upstreams: a test server of our own (tools that fail with a 503, time out, die mid-call,
take effect and then hang), and two servers nobody here wrote, installed with npm:
@modelcontextprotocol/server-filesystem and @modelcontextprotocol/server-everything.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, AsyncIterator

import anyio
import httpx2
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

from conftest import Served, npm_server


class Proxy:
    """One proxy session: the client, and where its upstream logs executions."""

    def __init__(self, session: ClientSession, log: Path) -> None:
        self.session = session
        self.log = log

    async def call(self, tool: str, **arguments: Any) -> tuple[bool, list[str], dict[str, Any]]:
        result = await self.session.call_tool(tool, arguments)
        texts = [block.text for block in result.content if hasattr(block, "text")]
        return bool(result.is_error), texts, result.structured_content or {}

    def runs(self, tool: str, key: str) -> int:
        if not self.log.exists():
            return 0
        return self.log.read_text().splitlines().count(f"{tool} {key}")


@asynccontextmanager
async def proxied(
    binary: Path, folder: Path, command: list[str], *flags: str
) -> AsyncIterator[Proxy]:
    log = folder / "upstream.log"
    params = StdioServerParameters(
        command=str(binary),
        args=["proxy", "--name", "test", "--db", str(folder / "ledger.db"), *flags, "--", *command],
        env={**os.environ, "UPSTREAM_LOG": str(log)},
    )
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            yield Proxy(session, log)


def run(test: Any) -> None:
    anyio.run(test)


def test_tools_pass_through_and_a_success_is_the_upstreams_result_unchanged(
    binary: Path, tmp_path: Path, upstream_command: list[str]
) -> None:
    async def main() -> None:
        async with proxied(binary, tmp_path, upstream_command) as proxy:
            listed = await proxy.session.list_tools()
            names = {tool.name for tool in listed.tools}
            assert names == {"flaky", "slow", "die", "charge", "lookup", "wait_for_cancel", "echo"}
            flaky = next(tool for tool in listed.tools if tool.name == "flaky")
            assert flaky.annotations is not None and flaky.annotations.read_only_hint is True
            failed, texts, structured = await proxy.call("echo", text="hello")
            assert not failed
            assert texts == ["hello"]
            assert structured == {"result": "hello"}

    run(main)


def test_a_trusted_read_only_tool_that_fails_with_a_503_is_resent_by_the_proxy(
    binary: Path, tmp_path: Path, upstream_command: list[str]
) -> None:
    async def main() -> None:
        async with proxied(binary, tmp_path, upstream_command, "--trusted") as proxy:
            failed, texts, _ = await proxy.call("flaky", key="a", failures=2)
            assert not failed, texts
            assert texts == ["ok after 3 runs"]
            assert proxy.runs("flaky", "a") == 3

    run(main)


def test_an_untrusted_hint_is_not_believed_the_model_is_told_when_to_retry(
    binary: Path, tmp_path: Path, upstream_command: list[str]
) -> None:
    async def main() -> None:
        async with proxied(binary, tmp_path, upstream_command) as proxy:
            failed, texts, structured = await proxy.call("flaky", key="b", failures=1)
            assert failed
            assert texts[0].startswith("backstop: retry in "), texts[0]
            assert "503" in texts[1]
            assert structured["action"] == "retry_same"
            assert structured["class"] == "transient"
            assert structured["tool"] == "flaky"
            assert proxy.runs("flaky", "b") == 1

    run(main)


def test_a_non_idempotent_call_that_timed_out_after_taking_effect_runs_once(
    binary: Path, tmp_path: Path, upstream_command: list[str]
) -> None:
    async def main() -> None:
        async with proxied(binary, tmp_path, upstream_command, "--trusted", "--timeout", "2") as proxy:
            failed, texts, structured = await proxy.call("charge", key="c", amount=100)
            assert failed
            assert structured["action"] == "reconcile", structured
            assert "the outcome is unknown: do not call it again" in texts[0]
            await anyio.sleep(1)
            assert proxy.runs("charge", "c") == 1

    run(main)


def test_a_server_that_dies_mid_call_is_an_unknown_outcome_and_is_started_again(
    binary: Path, tmp_path: Path, upstream_command: list[str]
) -> None:
    async def main() -> None:
        async with proxied(binary, tmp_path, upstream_command, "--trusted") as proxy:
            failed, texts, structured = await proxy.call("die", key="d")
            assert failed
            assert structured["action"] == "reconcile", structured
            assert proxy.runs("die", "d") == 1
            failed, texts, _ = await proxy.call("echo", text="still here")
            assert not failed and texts == ["still here"]

    run(main)


def test_a_tools_complaint_about_its_arguments_never_opens_its_breaker(
    binary: Path, tmp_path: Path, upstream_command: list[str]
) -> None:
    async def main() -> None:
        async with proxied(binary, tmp_path, upstream_command, "--trusted") as proxy:
            for _ in range(8):
                failed, texts, structured = await proxy.call("lookup", key="e", limit=0)
                assert failed
                if "breaker" in structured:
                    assert structured["breaker"]["state"] == "closed", structured
                    assert structured["breaker"]["failures"] == 0, structured
            failed, texts, _ = await proxy.call("lookup", key="f", limit=3)
            assert not failed, texts

    run(main)


def test_the_same_failing_call_again_and_again_is_counted_and_stopped(
    binary: Path, tmp_path: Path, upstream_command: list[str]
) -> None:
    async def main() -> None:
        async with proxied(binary, tmp_path, upstream_command) as proxy:
            actions = []
            for _ in range(15):
                failed, texts, structured = await proxy.call("flaky", key="g", failures=1000)
                assert failed
                actions.append(structured.get("action") or structured.get("refused"))
            runs = proxy.runs("flaky", "g")
            # Counted until the class's attempts are spent and the call handed off; from then
            # on the same call is refused without reaching the server.
            assert "escalate" in actions, actions
            first_refusal = actions.index("approach_spent")
            assert runs == first_refusal, (runs, actions)
            assert set(actions[first_refusal:]) == {"approach_spent"}, actions

    run(main)


def test_a_task_named_in_meta_is_the_task(
    binary: Path, tmp_path: Path, upstream_command: list[str]
) -> None:
    async def main() -> None:
        async with proxied(binary, tmp_path, upstream_command) as proxy:
            result = await proxy.session.call_tool(
                "flaky", {"key": "h", "failures": 1}, meta={"backstop/task": "job-7"}
            )
            assert result.is_error
            assert (result.structured_content or {})["task"] == "job-7"

    run(main)


def test_an_upstream_that_never_answers_initialize_leaves_the_proxy_up(
    binary: Path, tmp_path: Path
) -> None:
    silent = [sys.executable, "-c", "import time; time.sleep(600)"]

    async def main() -> None:
        async with proxied(binary, tmp_path, silent, "--start-timeout", "1") as proxy:
            for _ in range(2):
                failed, texts, structured = await proxy.call("anything", x=1)
                assert failed
                assert "did not answer initialize within 1 s" in " ".join(texts), texts
                assert structured["class"] in {"network", "transient"}, structured

    run(main)


def test_an_upstream_that_answers_garbage_leaves_the_proxy_up(
    binary: Path, tmp_path: Path
) -> None:
    garbage = [
        sys.executable,
        "-c",
        "import sys, time\nfor line in sys.stdin:\n    print('{not json', flush=True)\n",
    ]

    async def main() -> None:
        async with proxied(binary, tmp_path, garbage, "--start-timeout", "2") as proxy:
            failed, texts, _ = await proxy.call("anything", x=1)
            assert failed, texts
            listed = None
            try:
                listed = await proxy.session.list_tools()
            except Exception as error:  # noqa: BLE001 - a JSON-RPC error is the answer wanted
                assert "initialize" in str(error) or "MCP server" in str(error), error
            assert listed is None

    run(main)


def test_filesystem_server_a_path_outside_its_sandbox_stops_the_session_until_reset(
    binary: Path, tmp_path: Path
) -> None:
    entry = npm_server("server-filesystem")
    data = tmp_path / "data"
    data.mkdir()
    (data / "a.txt").write_text("hello\n")

    async def main() -> str:
        async with proxied(binary, tmp_path, ["node", str(entry), str(data)], "--trusted") as proxy:
            failed, texts, structured = await proxy.call("read_text_file", path=str(data / "missing.txt"))
            assert failed
            assert structured["class"] == "business", structured
            assert structured["breaker"]["failures"] == 0, "a missing file is not the server failing"
            failed, texts, _ = await proxy.call("read_text_file", path=str(data / "a.txt"))
            assert not failed and texts == ["hello\n"]
            failed, texts, structured = await proxy.call("read_text_file", path="/etc/passwd")
            assert failed
            assert structured["class"] == "policy_denied", structured
            assert texts[0].startswith("backstop: stop: policy denial"), texts[0]
            task = structured["task"]
            failed, texts, structured = await proxy.call("read_text_file", path=str(data / "a.txt"))
            assert failed
            assert structured["refused"] == "task_stopped", structured
            reset = subprocess.run(
                [str(binary), "task", "reset", task, "--db", str(tmp_path / "ledger.db"), "--json"],
                capture_output=True, text=True, timeout=60,
            )
            assert reset.returncode == 0, reset.stderr
            # The proxy reads the task's state at most once a second (docs/proxy.md).
            await anyio.sleep(1.2)
            failed, texts, _ = await proxy.call("read_text_file", path=str(data / "a.txt"))
            assert not failed and texts == ["hello\n"], texts
            return task

    anyio.run(main)


def test_everything_server_passes_tools_prompts_and_resources_through(
    binary: Path, tmp_path: Path
) -> None:
    entry = npm_server("server-everything")

    async def main() -> None:
        direct = StdioServerParameters(command="node", args=[str(entry), "stdio"])
        async with stdio_client(direct) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                expected_tools = sorted(t.name for t in (await session.list_tools()).tools)
                expected_prompts = sorted(p.name for p in (await session.list_prompts()).prompts)
        async with proxied(binary, tmp_path, ["node", str(entry), "stdio"]) as proxy:
            tools = sorted(t.name for t in (await proxy.session.list_tools()).tools)
            assert tools == expected_tools
            prompts = sorted(p.name for p in (await proxy.session.list_prompts()).prompts)
            assert prompts == expected_prompts
            resources = (await proxy.session.list_resources()).resources
            assert resources, "server-everything lists resources"
            read = await proxy.session.read_resource(resources[0].uri)
            assert read.contents
            failed, texts, _ = await proxy.call("echo", message="through the proxy")
            assert not failed, texts
            assert "through the proxy" in " ".join(texts)

    run(main)


@asynccontextmanager
async def proxied_over_http(served: Served, key: str | None) -> AsyncIterator[ClientSession]:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    async with httpx2.AsyncClient(headers=headers, timeout=60) as client:
        async with streamable_http_client(f"{served.url}/proxy/test/mcp", http_client=client) as (
            read,
            write,
            *_,
        ):
            async with ClientSession(read, write) as session:
                await session.initialize()
                yield session


def test_a_proxy_entry_is_served_on_streamable_http_behind_the_keys(served: Served) -> None:
    async def main() -> None:
        async with proxied_over_http(served, served.agent_key) as session:
            names = {tool.name for tool in (await session.list_tools()).tools}
            assert "flaky" in names and "charge" in names
            # A trusted read-only tool is resent by the proxy until it works.
            result = await session.call_tool("flaky", {"key": "h1", "failures": 2})
            assert not result.is_error, result
            assert [block.text for block in result.content] == ["ok after 3 runs"]
            # A non-idempotent call that timed out after taking effect runs once.
            result = await session.call_tool("charge", {"key": "h2", "amount": 5})
            assert result.is_error
            step = result.structured_content or {}
            assert step["action"] == "reconcile", step
            assert step["task"].startswith("test-"), step
        await anyio.sleep(1)
        runs = served.log.read_text().splitlines()
        assert runs.count("flaky h1") == 3
        assert runs.count("charge h2") == 1

    anyio.run(main)


def test_a_proxy_entry_refuses_a_client_without_a_key(served: Served) -> None:
    answer = httpx2.post(
        f"{served.url}/proxy/test/mcp",
        json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}}},
        headers={"Accept": "application/json, text/event-stream"},
        timeout=30,
    )
    assert answer.status_code == 401, answer.text
    assert not served.log.exists(), "the upstream never ran for a refused client"


def test_two_proxies_on_one_service_see_one_breaker(
    binary: Path, served: Served, upstream_command: list[str]
) -> None:
    key_file = served.folder / "agent.key"
    key_file.write_text(served.agent_key + "\n")
    flags = ["--server", served.url, "--key-file", str(key_file)]

    @asynccontextmanager
    async def fleet_proxy(name: str) -> AsyncIterator[Proxy]:
        params = StdioServerParameters(
            command=str(binary),
            args=["proxy", "--name", name, *flags, "--", *upstream_command],
            env={**os.environ, "UPSTREAM_LOG": str(served.log)},
        )
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                yield Proxy(session, served.log)

    async def main() -> None:
        async with fleet_proxy("first") as first:
            opened = False
            for attempt in range(40):
                failed, texts, structured = await first.call("flaky", key=f"f{attempt}", failures=1000)
                assert failed
                state = (structured.get("breaker") or {}).get("state")
                if structured.get("refused") == "breaker_open" or state == "open":
                    opened = True
                    break
            assert opened, structured
        runs_before = served.log.read_text().splitlines().count("flaky other")
        async with fleet_proxy("second") as second:
            failed, texts, structured = await second.call("flaky", key="other", failures=0)
            assert failed, texts
            assert structured["refused"] == "breaker_open", structured
            assert texts[0].startswith("backstop: wait: flaky is failing too often"), texts[0]
        assert served.log.read_text().splitlines().count("flaky other") == runs_before == 0

    anyio.run(main)


def test_progress_resets_the_timeout_up_to_its_hard_maximum_and_reaches_the_client(
    binary: Path, tmp_path: Path
) -> None:
    entry = npm_server("server-everything")
    tool = "trigger-long-running-operation"

    async def main() -> None:
        limits = ["--timeout", "1", "--max-timeout", "5"]
        async with proxied(binary, tmp_path, ["node", str(entry), "stdio"], *limits) as proxy:
            seen: list[float] = []

            async def progress(done: float, total: float | None, message: str | None) -> None:
                seen.append(done)

            # 3 s in all, progress every 0.5 s: never 1 s without a word, so it completes.
            result = await proxy.session.call_tool(
                tool, {"duration": 3, "steps": 6}, progress_callback=progress
            )
            assert not result.is_error, result
            assert seen == [1, 2, 3, 4, 5, 6], seen
            # 2 s without progress: the idle timeout.
            failed, texts, structured = await proxy.call(tool, duration=2, steps=1)
            assert failed and "within 1 s" in texts[1], texts
            # Progress every 0.5 s for 8 s: cut at the hard maximum, 5 s.
            failed, texts, structured = await proxy.call(tool, duration=8, steps=16)
            assert failed and "within 5 s" in texts[1], texts
            # Neither is known to be safe to resend: unknown outcomes.
            assert structured["action"] == "reconcile", structured

    anyio.run(main)


def test_a_clients_cancellation_is_passed_to_the_server(
    binary: Path, tmp_path: Path, upstream_command: list[str]
) -> None:
    async def main() -> None:
        async with proxied(binary, tmp_path, upstream_command) as proxy:
            with anyio.move_on_after(1):
                await proxy.session.call_tool("wait_for_cancel", {"key": "k"})
            for _ in range(50):
                if proxy.runs("cancelled", "k"):
                    break
                await anyio.sleep(0.1)
            assert proxy.runs("wait_for_cancel", "k") == 1
            assert proxy.runs("cancelled", "k") == 1, proxy.log.read_text()
            # The proxy goes on serving.
            failed, texts, _ = await proxy.call("echo", text="after")
            assert not failed and texts == ["after"]

    anyio.run(main)


def test_calls_that_work_in_between_do_not_hide_a_call_that_keeps_failing(
    binary: Path, tmp_path: Path, upstream_command: list[str]
) -> None:
    async def main() -> None:
        async with proxied(binary, tmp_path, upstream_command) as proxy:
            actions = []
            for _ in range(12):
                failed, texts, structured = await proxy.call("flaky", key="i", failures=1000)
                assert failed
                actions.append(structured.get("action") or structured.get("refused"))
                ok, texts, _ = await proxy.call("echo", text="fine")
                assert not ok, texts
            # Counted across the successes: handed off, then refused before the server.
            assert "escalate" in actions, actions
            assert actions[-1] == "approach_spent", actions
            assert proxy.runs("flaky", "i") < 12

    anyio.run(main)


def test_the_failing_call_working_again_starts_the_sessions_counters_again(
    binary: Path, tmp_path: Path, upstream_command: list[str]
) -> None:
    async def main() -> str:
        async with proxied(binary, tmp_path, upstream_command) as proxy:
            failed, _, structured = await proxy.call("flaky", key="j", failures=1)
            assert failed and structured["attempts"]["task_used"] == 1, structured
            task = structured["task"]
            ok, texts, _ = await proxy.call("echo", text="another call")
            assert not ok, texts
            failed, texts, _ = await proxy.call("flaky", key="j", failures=1)
            assert not failed, texts
            await anyio.sleep(0.5)
            return task

    task = anyio.run(main)
    shown = subprocess.run(
        [str(binary), "task", "show", task, "--db", str(tmp_path / "ledger.db"), "--json"],
        capture_output=True, text=True, timeout=60,
    )
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["task_used"] == 0, shown.stdout
