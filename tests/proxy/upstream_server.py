"""A small MCP server for backstop proxy's tests: tools that fail, hang, die, take effect, wait.

Every execution of a tool is appended to `$UPSTREAM_LOG` (one line: the tool and its key), so
a test counts how often the upstream really ran a call. Run over stdio by `backstop proxy`.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations

LOG = Path(os.environ.get("UPSTREAM_LOG", "upstream.log"))

server = MCPServer("backstop-test-upstream")

READ_ONLY = ToolAnnotations(readOnlyHint=True)
NOT_IDEMPOTENT = ToolAnnotations(readOnlyHint=False, idempotentHint=False, destructiveHint=True)


def record(tool: str, key: str) -> int:
    """Logs one execution; returns how many executions of (tool, key) there have been."""
    with LOG.open("a") as log:
        log.write(f"{tool} {key}\n")
    return sum(1 for line in LOG.read_text().splitlines() if line == f"{tool} {key}")


@server.tool(annotations=READ_ONLY)
def flaky(key: str, failures: int) -> str:
    """Fails the first `failures` calls for `key` with a 503, then answers."""
    runs = record("flaky", key)
    if runs <= failures:
        raise ToolError("HTTP 503 Service Unavailable: the backend is overloaded, try again")
    return f"ok after {runs} runs"


@server.tool(annotations=READ_ONLY)
def slow(key: str, seconds: float) -> str:
    """Answers after `seconds`."""
    record("slow", key)
    time.sleep(seconds)
    return "done"


@server.tool()
def die(key: str) -> str:
    """The process exits in the middle of the call."""
    record("die", key)
    sys.stdout.flush()
    os._exit(3)


@server.tool(annotations=NOT_IDEMPOTENT)
def charge(key: str, amount: int) -> str:
    """Takes the charge (the effect happens), then hangs past any timeout."""
    record("charge", key)
    time.sleep(120)
    return f"charged {amount}"


@server.tool(annotations=READ_ONLY)
def lookup(key: str, limit: int) -> str:
    """Refuses a bad argument: the tool's own error, nothing wrong with the server."""
    record("lookup", key)
    if limit < 1:
        raise ToolError("invalid argument: limit must be a positive integer (got %d)" % limit)
    return f"{limit} rows"


@server.tool(annotations=READ_ONLY)
async def wait_for_cancel(key: str) -> str:
    """Waits until cancelled, and logs the cancellation."""
    record("wait_for_cancel", key)
    try:
        await anyio.sleep(60)
    except anyio.get_cancelled_exc_class():
        record("cancelled", key)
        raise
    return "never cancelled"


@server.tool(annotations=READ_ONLY)
def echo(text: str) -> str:
    """Answers at once: the latency benchmark's tool."""
    return text


if __name__ == "__main__":
    server.run("stdio")
