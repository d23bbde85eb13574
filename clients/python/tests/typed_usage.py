"""Not a test module: `test_typing.py` runs mypy --strict over it, so the public API's types
are checked from a user's side (the decorator keeps the signature, answers are typed)."""

from __future__ import annotations

from typing import Awaitable, Callable, List, Optional

from typing_extensions import assert_type

import backstop
from backstop import Action, AsyncBackstop, Backstop, Classification, Step, ToolHealth


def sync_usage(bs: Backstop) -> None:
    @bs.guard("task-1", "search", max_attempts=5)
    def search(query: str, limit: int = 10) -> List[str]:
        return [query] * limit

    same: Callable[[str, int], List[str]] = search  # the signature survives the decorator
    del same
    assert_type(search("q", 3), List[str])
    assert_type(bs.guard("t", "s").call(search, "q", limit=2), List[str])
    assert_type(bs.classify({"http_status": 503}), Classification)
    step = bs.next_step("t", {"http_status": 503}, {"tool": "s"}, idempotency_key="k")
    assert_type(step, Step)
    assert_type(step.action, Action)
    assert_type(step.delay, float)
    assert_type(bs.report_outcome("s", "success", task="t"), ToolHealth)
    for attempt in bs.guard("t", "s"):
        with attempt:
            assert_type(attempt.number, int)
            assert_type(attempt.step, Optional[Step])
    try:
        search("q")
    except backstop.Escalate as escalate:
        assert_type(escalate.escalation.to, str)
    except backstop.GuardSignal as signal:
        assert_type(signal.step, Step)
    except backstop.BackstopError as error:
        assert_type(error.status, Optional[int])


async def async_usage(bs: AsyncBackstop) -> None:
    @bs.guard("task-1", "search")
    async def search(query: str) -> int:
        return len(query)

    assert_type(await search("q"), int)
    assert_type(await bs.guard("t", "s").call(search, "q"), int)
    assert_type(await bs.next_step("t", {"errno": "ECONNRESET"}), Step)
    async for attempt in bs.guard("t", "s"):
        async with attempt:
            pass
    fn: Callable[[str], Awaitable[int]] = search
    del fn
