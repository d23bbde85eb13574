"""The guard against a real `backstop serve`: every delay, stop, fallback and escalation here
is the service's answer to the failures the fake tools raise."""

from __future__ import annotations

import errno
from typing import Any, Dict, List

import httpx
import pytest

import backstop
from backstop import Action, AsyncBackstop, Backstop, Step

from helpers import (
    Always,
    RequestsLikeHTTPError,
    RequestsLikeResponse,
    Script,
    Server,
    Sleeps,
    closed_port_url,
    http_error,
)

POLICY_BODY = {
    "error": {
        "code": "content_policy_violation",
        "message": "Your request was rejected as a result of our safety system.",
    }
}


def task_view(server: Server, task: str) -> Dict[str, Any]:
    view: Dict[str, Any] = httpx.get(f"{server.url}/v1/tasks/{task}").json()
    return view


def tool_views(server: Server) -> Dict[str, Dict[str, Any]]:
    tools = httpx.get(f"{server.url}/v1/tools").json()["tools"]
    return {t["tool"]: t for t in tools}


def open_reviews(server: Server) -> List[Dict[str, Any]]:
    reviews: List[Dict[str, Any]] = httpx.get(
        f"{server.url}/v1/reviews", params={"status": "open"}
    ).json()["reviews"]
    return reviews


class Steps:
    """An ``on_step`` that records each step."""

    def __init__(self) -> None:
        self.steps: List[Step] = []

    def __call__(self, step: Step, error: BaseException) -> None:
        self.steps.append(step)

    @property
    def actions(self) -> List[Action]:
        return [s.action for s in self.steps]


# --- the decorator --------------------------------------------------------------------------


def test_retry_then_success(server: Server, task: str, tool: str, sleeps: Sleeps) -> None:
    seen = Steps()
    search = Script(
        [http_error(503, "upstream overloaded", {"content-type": "text/plain"})],
        result={"hits": 3},
    )
    with Backstop(server.url, sleep=sleeps) as bs:
        guarded = bs.guard(task, tool, on_step=seen)(search)
        assert guarded("q", limit=3) == {"hits": 3}

    assert search.calls == [(("q",), {"limit": 3})] * 2
    assert seen.actions == [Action.RETRY_SAME]
    assert seen.steps[0].class_ == "transient"
    # The guard slept exactly the delay backstop chose.
    assert sleeps.delays == [seen.steps[0].delay]
    assert 0 <= sleeps.delays[0] <= 20.0
    # The success was reported: the task's counters are reset and the tool saw two calls.
    assert task_view(server, task)["task_used"] == 0
    breaker = tool_views(server)[tool]["breaker"]
    assert (breaker["calls"], breaker["failures"]) == (2, 1)


def test_policy_denial_stops_and_never_calls_again(
    server: Server, task: str, tool: str, sleeps: Sleeps
) -> None:
    denial = http_error(403, POLICY_BODY, {"content-type": "application/json"})
    generate = Script([denial])
    fallback = Script([], result="workaround")
    with Backstop(server.url, sleep=sleeps) as bs:
        with pytest.raises(backstop.Stop) as caught:
            bs.guard(task, tool, fallback=fallback).call(generate, "prompt")
        stop = caught.value
        assert len(generate.calls) == 1 and fallback.calls == [] and sleeps.delays == []
        assert stop.action is Action.STOP
        assert stop.step.class_ == "policy_denied"
        assert stop.error is denial and stop.__cause__ is denial
        assert stop.report["http_status"] == 403
        assert stop.report["exception"] == "httpx.HTTPStatusError"
        assert "content_policy_violation" in stop.report["message"]
        assert stop.task == task and stop.tool == tool
        assert "do not work around it" in stop.hint
        # The rule's own sentence, not the strategy's internals.
        assert stop.explanation and "strategy 1 of" not in stop.explanation

        # The stop is the task's, not the call's: another tool of the same task stops too.
        other = Script([http_error(503)])
        with pytest.raises(backstop.Stop) as again:
            bs.guard(task, "another-tool").call(other)
        assert len(other.calls) == 1
        assert "policy denial" in again.value.reason
        # A person reads the sentence: what stopped the task, in words, in the message too.
        assert "earlier policy denial" in again.value.explanation
        assert again.value.explanation in str(again.value)
        assert "strategy 1 of" not in again.value.explanation
    assert task_view(server, task)["stopped_by"] is not None


def test_fallback(server: Server, task: str, tool: str, sleeps: Sleeps) -> None:
    seen = Steps()
    primary = Always(lambda: http_error(503))
    fallback_calls: List[str] = []

    def search_b(query: str) -> str:
        fallback_calls.append(query)
        return f"from search_b: {query}"

    with Backstop(server.url, sleep=sleeps) as bs:
        result = bs.guard(task, tool, fallback=search_b, on_step=seen).call(primary, "q")

    assert result == "from search_b: q"
    assert seen.actions == [Action.RETRY_SAME] * 3 + [Action.FALLBACK_TOOL]
    assert primary.calls == 4 and fallback_calls == ["q"]
    assert sleeps.delays == [s.delay for s in seen.steps]
    # The success is the fallback's, reported under its name.
    fallback_breaker = tool_views(server)["search_b"]["breaker"]
    assert fallback_breaker["failures"] == 0 and fallback_breaker["calls"] >= 1


def test_fallback_by_name(server: Server, task: str, tool: str, sleeps: Sleeps) -> None:
    """A mapping of fallbacks: the first one not used yet (no chain names one here)."""
    primary = Always(lambda: http_error(503))
    with Backstop(server.url, sleep=sleeps) as bs:
        result = bs.guard(task, tool, fallback={"mirror": lambda q: f"mirror {q}"}).call(
            primary, "q"
        )
    assert result == "mirror q"
    assert "mirror" in tool_views(server)


def test_escalate_when_every_strategy_is_spent(
    server: Server, task: str, tool: str, sleeps: Sleeps
) -> None:
    seen = Steps()
    primary = Always(lambda: http_error(503))
    fallback = Always(lambda: http_error(502))

    def backup(*args: Any) -> Any:
        return fallback()

    with Backstop(server.url, sleep=sleeps) as bs:
        with pytest.raises(backstop.Escalate) as caught:
            bs.guard(task, tool, fallback=backup, on_step=seen).call(primary)

    escalate = caught.value
    assert seen.actions == [Action.RETRY_SAME] * 3 + [Action.FALLBACK_TOOL, Action.ESCALATE]
    assert primary.calls == 4 and fallback.calls == 1
    assert escalate.tool == "backup"
    assert escalate.escalation.to == "the operator on call"
    assert "every strategy for transient is spent" in escalate.escalation.why
    assert escalate.step.attempts.class_used == escalate.step.attempts.class_max == 4
    assert len(sleeps.delays) == 4
    # The service opened a review item for the task: a person sees it.
    items = [r for r in open_reviews(server) if r["case_id"] == task]
    assert len(items) == 1 and items[0]["kind"] == "task"


def test_rate_limit_waits_the_servers_hint_then_escalates(
    server: Server, task: str, tool: str, sleeps: Sleeps
) -> None:
    seen = Steps()
    limited = Always(
        lambda: RequestsLikeHTTPError(
            "429 Client Error: Too Many Requests for url: https://api.example.com/v1",
            RequestsLikeResponse(429, {"Retry-After": "1"}, '{"error": "slow down"}'),
        )
    )
    with Backstop(server.url, sleep=sleeps) as bs:
        with pytest.raises(backstop.Escalate) as caught:
            bs.guard(task, tool, on_step=seen).call(limited)
    assert seen.actions == [Action.WAIT] * 3 + [Action.ESCALATE]
    assert all(s.class_ == "rate_limited" for s in seen.steps)
    assert len(sleeps.delays) == 3 and all(d >= 1.0 for d in sleeps.delays)
    assert limited.calls == 4
    assert caught.value.report["headers"] == {"retry-after": "1"}


def test_oserror_errno_is_reported(server: Server, task: str, tool: str, sleeps: Sleeps) -> None:
    seen = Steps()
    refused = ConnectionRefusedError(errno.ECONNREFUSED, "Connection refused")
    connect = Script([refused], result="connected")
    with Backstop(server.url, sleep=sleeps) as bs:
        assert bs.guard(task, tool, on_step=seen).call(connect) == "connected"
        report = backstop.report_from_exception(refused)
        classified = bs.classify(report)
    assert report["errno"] == "ECONNREFUSED"
    assert report["exception"] == "ConnectionRefusedError"
    assert seen.steps[0].class_ == "transient" and seen.actions == [Action.RETRY_SAME]
    assert any(e.field == "errno" and e.value == "ECONNREFUSED" for e in classified.evidence)


def test_errno_is_found_through_the_cause_chain() -> None:
    try:
        try:
            raise ConnectionResetError(errno.ECONNRESET, "reset by peer")
        except OSError as inner:
            raise httpx.ReadError("read failed") from inner
    except httpx.ReadError as outer:
        report = backstop.report_from_exception(outer)
    assert report["errno"] == "ECONNRESET"
    assert report["exception"] == "httpx.ReadError"


def test_fix_input_then_change_approach(
    server: Server, task: str, tool: str, sleeps: Sleeps
) -> None:
    bad = Always(lambda: http_error(400, {"error": {"message": "invalid parameter `limit`"}}))
    with Backstop(server.url, sleep=sleeps) as bs:
        guard = bs.guard(task, tool)
        with pytest.raises(backstop.FixInput) as first:
            guard.call(bad)
        with pytest.raises(backstop.ChangeApproach) as second:
            guard.call(bad)
    assert isinstance(first.value, backstop.ActionRequired)
    assert first.value.step.class_ == "invalid_input"
    assert second.value.action is Action.CHANGE_APPROACH
    assert bad.calls == 2 and sleeps.delays == []


def test_max_attempts_is_a_local_cap(server: Server, task: str, tool: str, sleeps: Sleeps) -> None:
    failing = Always(lambda: http_error(503))
    with Backstop(server.url, sleep=sleeps) as bs:
        with pytest.raises(backstop.AttemptsExhausted) as caught:
            bs.guard(task, tool, max_attempts=2).call(failing)
    assert failing.calls == 2 and len(sleeps.delays) == 1
    assert caught.value.step.action is Action.RETRY_SAME


def test_describe_adds_report_fields(server: Server, task: str, tool: str, sleeps: Sleeps) -> None:
    seen = Steps()
    query = Script([RuntimeError("could not serialize access")], result=1)
    with Backstop(server.url, sleep=sleeps) as bs:
        guard = bs.guard(task, tool, describe=lambda e: {"sqlstate": "40001"}, on_step=seen)
        assert guard.call(query) == 1
    assert seen.steps[0].class_ == "transient"


def test_other_exceptions_pass_through_unreported(
    server: Server, task: str, tool: str, sleeps: Sleeps
) -> None:
    with Backstop(server.url, sleep=sleeps) as bs:
        with pytest.raises(KeyboardInterrupt):
            bs.guard(task, tool).call(Script([KeyboardInterrupt()]))
        with pytest.raises(KeyError):
            bs.guard(task, tool, exceptions=httpx.HTTPError).call(Script([KeyError("k")]))
    assert task_view(server, task)["task_used"] == 0


def test_backstop_unreachable(task: str, sleeps: Sleeps) -> None:
    failure = http_error(503)
    with Backstop(closed_port_url(), timeout=1, sleep=sleeps) as bs:
        with pytest.raises(backstop.Unreachable) as caught:
            bs.guard(task, "search").call(Script([failure]))
    # Asked three times with one Idempotency-Key, then the tool's failure is the cause.
    assert sleeps.delays == [0.5, 0.5]
    assert caught.value.__cause__ is failure


def test_a_coroutine_function_needs_the_async_guard(server: Server, task: str) -> None:
    async def fetch() -> None:
        pass

    with Backstop(server.url) as bs, pytest.raises(TypeError):
        bs.guard(task, "t")(fetch)


def test_a_guard_needs_a_tool(server: Server, task: str) -> None:
    with Backstop(server.url) as bs, pytest.raises(ValueError):
        bs.guard(task)
    with Backstop(server.url, caller_tool="agent-tool") as bs:
        assert bs.guard(task).tool == "agent-tool"


# --- the loop of attempts and the single attempt -------------------------------------------


def test_attempts_loop(server: Server, task: str, tool: str, sleeps: Sleeps) -> None:
    flaky = Script([http_error(503), http_error(502)], result="done")
    numbers: List[int] = []
    result = None
    with Backstop(server.url, sleep=sleeps) as bs:
        for attempt in bs.guard(task, tool):
            with attempt:
                numbers.append(attempt.number)
                result = flaky()
    assert result == "done" and numbers == [1, 2, 3]
    assert len(sleeps.delays) == 2
    assert task_view(server, task)["task_used"] == 0


def test_attempts_loop_switches_to_the_fallback(
    server: Server, task: str, tool: str, sleeps: Sleeps
) -> None:
    primary = Always(lambda: http_error(503))
    used: List[str] = []
    with Backstop(server.url, sleep=sleeps) as bs:
        for attempt in bs.guard(task, tool, fallback={"mirror": lambda: "mirrored"}):
            with attempt:
                used.append(attempt.tool)
                result = attempt.fn() if attempt.fn is not None else primary()
    assert result == "mirrored"
    assert used == [tool] * 4 + ["mirror"]


def test_attempts_loop_raises_the_stop(
    server: Server, task: str, tool: str, sleeps: Sleeps
) -> None:
    numbers: List[int] = []
    with Backstop(server.url, sleep=sleeps) as bs:
        with pytest.raises(backstop.Stop):
            for attempt in bs.guard(task, tool):
                with attempt:
                    numbers.append(attempt.number)
                    raise http_error(400, POLICY_BODY)
    assert numbers == [1]


def test_single_attempt_raises_every_step(server: Server, task: str, tool: str) -> None:
    with Backstop(server.url) as bs:
        guard = bs.guard(task, tool)
        with pytest.raises(backstop.Retry) as caught:
            with guard as attempt:
                raise http_error(503)
        assert attempt.step is not None and attempt.step.action is Action.RETRY_SAME
        assert caught.value.step is attempt.step
        assert caught.value.delay == attempt.step.delay
        assert task_view(server, task)["task_used"] == 1

        with guard as attempt:
            pass  # a success is reported
        assert attempt.step is None
        assert task_view(server, task)["task_used"] == 0


# --- async ----------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_async_retry_then_success(
    server: Server, task: str, tool: str, sleeps: Sleeps
) -> None:
    seen = Steps()
    search = Script([http_error(503)], result=["a", "b"])
    async with AsyncBackstop(server.url, sleep=sleeps.asleep) as bs:

        @bs.guard(task, tool, on_step=seen)
        async def guarded(query: str) -> Any:
            return await search.acall(query)

        assert await guarded("q") == ["a", "b"]
    assert len(search.calls) == 2 and sleeps.delays == [seen.steps[0].delay]
    assert task_view(server, task)["task_used"] == 0


@pytest.mark.anyio
async def test_async_policy_denial_and_fallback(
    server: Server, task: str, tool: str, sleeps: Sleeps
) -> None:
    denied = Script([http_error(403, POLICY_BODY)])
    async with AsyncBackstop(server.url, sleep=sleeps.asleep) as bs:
        with pytest.raises(backstop.Stop):
            await bs.guard(task, tool, fallback=lambda: "never").call(denied.acall)
        assert len(denied.calls) == 1

        primary = Always(lambda: http_error(503))

        async def mirror() -> str:
            return "mirrored"

        other_task = task + "-b"
        result = await bs.guard(other_task, tool, fallback=mirror).call(_async(primary))
    assert result == "mirrored" and primary.calls == 4 and len(sleeps.delays) == 4


@pytest.mark.anyio
async def test_async_attempts_and_single(
    server: Server, task: str, tool: str, sleeps: Sleeps
) -> None:
    flaky = Script([http_error(503)], result="ok")
    numbers: List[int] = []
    async with AsyncBackstop(server.url, sleep=sleeps.asleep) as bs:
        async for attempt in bs.guard(task, tool):
            async with attempt:
                numbers.append(attempt.number)
                flaky()
        with pytest.raises(backstop.Escalate) as caught:
            async with bs.guard(task, tool) as single:
                raise http_error(402, {"error": {"code": "insufficient_quota"}})
    assert numbers == [1, 2] and len(sleeps.delays) == 1
    assert single.step is not None and single.step.class_ == "quota_exhausted"
    assert caught.value.escalation.to == "the operator on call"


def _async(fn: Any) -> Any:
    async def call(*args: Any, **kwargs: Any) -> Any:
        return fn(*args, **kwargs)

    return call


# --- calls that may have taken effect ---------------------------------------------------------


def read_timeout(method: str, headers: Dict[str, str] | None = None) -> httpx.ReadTimeout:
    """The error httpx raises when the answer to a sent request never came."""
    request = httpx.Request(method, "https://pay.example.com/v1/charges", headers=headers or {})
    return httpx.ReadTimeout("The read operation timed out", request=request)


def test_a_post_whose_answer_was_lost_is_never_sent_again(
    server: Server, task: str, tool: str, sleeps: Sleeps
) -> None:
    charge = Script([read_timeout("POST")], result={"id": "ch_1"})
    with Backstop(server.url, sleep=sleeps) as bs:
        guarded = bs.guard(task, tool)(charge)
        with pytest.raises(backstop.Reconcile) as caught:
            guarded(amount=500)

    # The tool ran once: the guard did not resend a charge that may have gone through.
    assert len(charge.calls) == 1
    assert sleeps.delays == []
    step = caught.value.step
    assert step.action is Action.RECONCILE and step.class_ == "transient"
    assert caught.value.report["idempotent"] is False
    assert "check whether it took effect" in step.hint
    assert "not idempotent" in step.reason


def test_a_post_under_an_idempotency_key_is_resent_with_that_key(
    server: Server, task: str, tool: str, sleeps: Sleeps
) -> None:
    seen = Steps()
    charge = Script(
        [read_timeout("POST", {"Idempotency-Key": "order-7-charge"})], result={"id": "ch_1"}
    )
    with Backstop(server.url, sleep=sleeps) as bs:
        guarded = bs.guard(task, tool, on_step=seen)(charge)
        assert guarded(amount=500) == {"id": "ch_1"}

    assert len(charge.calls) == 2
    assert seen.actions == [Action.RETRY_SAME]
    assert "same idempotency key (`order-7-charge`)" in seen.steps[0].hint


def test_a_get_whose_answer_was_lost_is_resent(
    server: Server, task: str, tool: str, sleeps: Sleeps
) -> None:
    seen = Steps()
    lookup = Script([read_timeout("GET")], result={"id": "ch_1"})
    with Backstop(server.url, sleep=sleeps) as bs:
        assert bs.guard(task, tool, on_step=seen)(lookup)() == {"id": "ch_1"}
    assert seen.actions == [Action.RETRY_SAME]
    assert len(lookup.calls) == 2


# --- failed approaches --------------------------------------------------------------------------


def test_a_spent_approach_is_told_to_the_callers_next_task(
    server: Server, task: str, tool: str, sleeps: Sleeps
) -> None:
    failing = Always(lambda: http_error(503, "upstream overloaded", {"content-type": "text/plain"}))
    with Backstop(server.url, sleep=sleeps) as bs:
        # Retries, then a fallback (none given: raised), then a person: every attempt spent.
        for _ in range(10):
            try:
                bs.guard(task, tool, operation="GET /v1/search")(failing)()
            except backstop.FallbackTool:
                continue
            except backstop.Escalate:
                break
        else:
            raise AssertionError("the task never escalated")
        # The service is shared with other tests of the same caller: this tool's only.
        approaches = [a for a in bs.failed_approaches() if a.tool == tool]
        assert len(approaches) == 1
        assert approaches[0].operation == "GET /v1/search"
        assert approaches[0].class_ == "transient"

        # The next task of the same caller does not resend: it changes approach first.
        again = Always(lambda: http_error(503, "upstream overloaded", {"content-type": "text/plain"}))
        with pytest.raises(backstop.ChangeApproach) as caught:
            bs.guard(f"{task}-next", tool, operation="GET /v1/search")(again)()
    assert again.calls == 1
    step = caught.value.step
    assert step.failed_approach is not None
    assert step.failed_approach.tool == tool
    assert step.failed_approach.failures == failing.calls
    assert step.hint.startswith("This approach failed before")
