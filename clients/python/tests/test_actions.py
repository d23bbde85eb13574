"""Every action of backstop's enum has one documented behaviour in each form of the guard.

The table is checked against the service's own contract (`GET /openapi.json`): a new action
in the service fails here until the guard maps it. The per-action behaviour uses a stub client
that answers with a chosen step, since the service cannot be made to answer every action on
demand.
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Tuple, Type

import httpx
import pytest

import backstop
from backstop import Action, Backstop, Step, ToolHealth
from backstop.errors import SIGNAL_FOR_ACTION

from helpers import Script, Server, Sleeps, http_error


def step_json(action: str, **extra: Any) -> Dict[str, Any]:
    body: Dict[str, Any] = {
        "class": "transient",
        "action": action,
        "hint": f"do {action}",
        "delay_ms": 250,
        "defer_until": None,
        "attempts": {"class_used": 1, "class_max": 3, "task_used": 1, "task_max": 12},
        "breaker": None,
        "budget": None,
        "escalation": None,
        "reason": f"because {action}",
    }
    body.update(extra)
    return body


class Stub(Backstop):
    """A client whose `next_step` answers the queued steps and records what it was sent."""

    def __init__(self, *steps: Dict[str, Any], sleep: Sleeps) -> None:
        super().__init__("http://stub.invalid", sleep=sleep)
        self.queue = [Step.from_json(s) for s in steps]
        self.sent: List[Tuple[str, Dict[str, Any], Dict[str, Any], Optional[str]]] = []
        self.outcomes: List[Tuple[str, str, Optional[str]]] = []

    def next_step(
        self,
        task: str,
        report: Mapping[str, Any],
        context: Optional[Mapping[str, Any]] = None,
        idempotency_key: Optional[str] = None,
    ) -> Step:
        self.sent.append((task, dict(report), dict(context or {}), idempotency_key))
        return self.queue.pop(0)

    def report_outcome(
        self, tool: str, outcome: Any, *, cls: Optional[str] = None, task: Optional[str] = None
    ) -> ToolHealth:
        self.outcomes.append((tool, outcome, task))
        return ToolHealth(tool=tool, breaker=None, budget=None)


def test_the_action_enum_is_the_services(server: Server) -> None:
    schemas = httpx.get(f"{server.url}/openapi.json").json()["components"]["schemas"]
    assert [a.value for a in Action] == schemas["Action"]["enum"]
    assert set(SIGNAL_FOR_ACTION) == set(Action)
    wire = {"class_": "class"}
    fields = {wire.get(f, f) for f in Step.__dataclass_fields__} - {"raw", "replayed"}
    assert fields == set(schemas["Step"]["properties"])


# (action, extra step fields) → what the decorator does: "retry" (sleeps, calls the same
# function), "promoted", "fallback" (calls those instead), or the signal it raises.
DECORATOR: List[Tuple[str, Dict[str, Any], Any]] = [
    ("retry_same", {}, "retry"),
    ("wait", {}, "retry"),
    ("wait", {"defer_until": "2030-01-01T00:00:00Z"}, backstop.Deferred),
    ("retry_promoted", {}, "promoted"),
    ("fallback_tool", {}, "fallback"),
    ("fix_input", {}, backstop.FixInput),
    ("change_approach", {}, backstop.ChangeApproach),
    ("broaden_query", {}, backstop.BroadenQuery),
    ("reduce_scope", {}, backstop.ReduceScope),
    ("local_only", {}, backstop.LocalOnly),
    ("increase_budget", {}, backstop.IncreaseBudget),
    ("compensate", {}, backstop.Compensate),
    ("reconcile", {}, backstop.Reconcile),
    ("skip_and_log", {}, backstop.SkipAndLog),
    ("stop", {}, backstop.Stop),
    ("escalate", {"escalation": {"to": "on call", "why": "spent"}}, backstop.Escalate),
]


def test_the_table_covers_every_action() -> None:
    assert {a for a, _, _ in DECORATOR} == {a.value for a in Action}


@pytest.mark.parametrize(("action", "extra", "expected"), DECORATOR)
def test_decorator_acts_on_each_action(
    action: str, extra: Dict[str, Any], expected: Any, sleeps: Sleeps
) -> None:
    failure = http_error(503)
    primary = Script([failure], result="primary")
    client = Stub(step_json(action, **extra), sleep=sleeps)
    guard = client.guard(
        "t", "search", fallback=lambda: "fallback", promoted=lambda: "promoted"
    )
    if isinstance(expected, type):
        with pytest.raises(expected) as caught:
            guard.call(primary)
        signal = caught.value
        assert isinstance(signal, backstop.GuardSignal)
        assert signal.step.action.value == action and signal.__cause__ is failure
        assert len(primary.calls) == 1 and sleeps.delays == []
        assert client.outcomes == []
        return
    result = guard.call(primary)
    assert sleeps.delays == [0.25]
    if expected == "retry":
        assert result == "primary" and len(primary.calls) == 2
        assert client.outcomes == [("search", "success", "t")]
    elif expected == "promoted":
        assert result == "promoted" and len(primary.calls) == 1
        assert client.outcomes == [("search", "success", "t")]
    else:
        assert result == "fallback" and len(primary.calls) == 1
        assert client.outcomes == [("search-fallback", "success", "t")]


@pytest.mark.parametrize("action", ["retry_promoted", "fallback_tool"])
def test_without_a_callable_the_action_is_raised(action: str, sleeps: Sleeps) -> None:
    client = Stub(step_json(action), sleep=sleeps)
    expected: Type[backstop.GuardSignal] = (
        backstop.RetryPromoted if action == "retry_promoted" else backstop.FallbackTool
    )
    with pytest.raises(expected):
        client.guard("t", "search").call(Script([http_error(503)]))


@pytest.mark.parametrize(("action", "extra", "expected"), DECORATOR)
def test_single_attempt_raises_each_action(
    action: str, extra: Dict[str, Any], expected: Any, sleeps: Sleeps
) -> None:
    client = Stub(step_json(action, **extra), sleep=sleeps)
    single: Type[backstop.GuardSignal]
    if expected == "retry":
        single = backstop.Retry
    elif expected == "promoted":
        single = backstop.RetryPromoted
    elif expected == "fallback":
        single = backstop.FallbackTool
    else:
        single = expected
    guard = client.guard("t", "search", fallback=lambda: "x", promoted=lambda: "y")
    with pytest.raises(single):
        with guard as attempt:
            raise http_error(503)
    assert attempt.step is not None and attempt.step.action.value == action
    assert sleeps.delays == []


def test_a_fallback_chain_names_the_tool(sleeps: Sleeps) -> None:
    client = Stub(
        step_json("fallback_tool", fallback_tool="search-c"),
        step_json("fallback_tool", fallback_tool="search-b"),
        sleep=sleeps,
    )
    chain = {"search-b": Script([], "b"), "search-c": Script([http_error(503)], "c")}
    result = client.guard("t", "search", fallback=chain).call(Script([http_error(503)]))
    # The first step named search-c (which failed once), the second search-b.
    assert result == "b"
    assert [c[2]["tool"] for c in client.sent] == ["search", "search-c"]
    assert client.outcomes == [("search-b", "success", "t")]


def test_a_used_fallback_is_not_used_twice(sleeps: Sleeps) -> None:
    client = Stub(step_json("fallback_tool"), step_json("fallback_tool"), sleep=sleeps)
    with pytest.raises(backstop.FallbackTool):
        client.guard("t", "search", fallback=Script([http_error(503)])).call(
            Script([http_error(503)])
        )


def test_each_failure_is_sent_with_its_own_idempotency_key(sleeps: Sleeps) -> None:
    client = Stub(step_json("retry_same"), step_json("retry_same"), sleep=sleeps)
    guard = client.guard("t", "search", operation="search: q")
    guard.call(Script([http_error(503), http_error(503)]))
    keys = [sent[3] for sent in client.sent]
    assert len(set(keys)) == 2 and all(keys)
    assert client.sent[0][2] == {"tool": "search", "operation": "search: q"}
    assert client.sent[0][1]["http_status"] == 503
    assert "elapsed_ms" in client.sent[0][1]
