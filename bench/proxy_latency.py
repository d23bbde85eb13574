"""Added latency of `backstop proxy`: the same tool of the same upstream, called directly and
through the proxy, in one run. Prints p50 and p99 of each and of the difference, and calls
per second through one proxy with several callers at once.

Usage: proxy_latency.py BACKSTOP_BIN WORK_DIR [CALLS] [ROUNDS]
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

UPSTREAM = Path(__file__).resolve().parents[1] / "tests" / "proxy" / "upstream_server.py"
CALLERS = 8


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def measure(params: StdioServerParameters, calls: int) -> tuple[list[float], float]:
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            for _ in range(50):
                await session.call_tool("echo", {"text": "warm"})
            latencies = []
            for _ in range(calls):
                started = time.perf_counter()
                result = await session.call_tool("echo", {"text": "x"})
                latencies.append(time.perf_counter() - started)
                assert not result.is_error, result
            per_caller = calls // CALLERS

            async def caller() -> None:
                for _ in range(per_caller):
                    await session.call_tool("echo", {"text": "y"})

            started = time.perf_counter()
            async with anyio.create_task_group() as group:
                for _ in range(CALLERS):
                    group.start_soon(caller)
            rate = per_caller * CALLERS / (time.perf_counter() - started)
            return latencies, rate


async def main() -> None:
    binary, work = sys.argv[1], Path(sys.argv[2])
    calls = int(sys.argv[3]) if len(sys.argv) > 3 else 2000
    rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 3
    upstream = [sys.executable, str(UPSTREAM)]
    direct = StdioServerParameters(command=upstream[0], args=upstream[1:])
    proxied = StdioServerParameters(
        command=binary,
        args=["proxy", "--name", "bench", "--db", str(work / "bench.db"), "--", *upstream],
    )
    results: dict[str, tuple[list[float], list[float]]] = {"direct": ([], []), "proxy": ([], [])}
    for _ in range(rounds):
        for name, params in (("direct", direct), ("proxy", proxied)):
            latencies, rate = await measure(params, calls)
            results[name][0].extend(latencies)
            results[name][1].append(rate)
    print(f"{calls} sequential calls x {rounds} rounds, direct and proxied alternately; "
          f"then {CALLERS} callers at once")
    print(f"{'':8} {'p50 ms':>8} {'p99 ms':>8} {'calls/s (1 caller)':>19} {f'calls/s ({CALLERS} callers)':>19}")
    for name, (latencies, rates) in results.items():
        p50, p99 = percentile(latencies, 0.5) * 1e3, percentile(latencies, 0.99) * 1e3
        print(f"{name:8} {p50:8.3f} {p99:8.3f} {1 / statistics.mean(latencies):19.0f} {max(rates):19.0f}")
    d50 = (percentile(results["proxy"][0], 0.5) - percentile(results["direct"][0], 0.5)) * 1e3
    d99 = (percentile(results["proxy"][0], 0.99) - percentile(results["direct"][0], 0.99)) * 1e3
    print(f"added by the proxy: p50 {d50:+.3f} ms, p99 {d99:+.3f} ms")


anyio.run(main)
