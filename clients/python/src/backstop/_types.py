"""The answers backstop gives, as frozen dataclasses.

Each answer keeps the JSON it was read from in ``raw`` (left out of ``repr`` and of
comparisons), so a field a newer server adds is never lost. Wire names that are Python
keywords get a trailing underscore: ``class`` is ``class_``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Dict, Mapping, Optional, Tuple

__all__ = [
    "Action",
    "Attempts",
    "Breaker",
    "Budget",
    "Classification",
    "Escalation",
    "Evidence",
    "Issue",
    "Step",
    "ToolHealth",
]

JSON = Dict[str, Any]


class Action(str, Enum):
    """What backstop tells the agent to do next (the ``action`` of a :class:`Step`).

    A ``str`` enum: ``Action.STOP == "stop"`` holds, and ``str(Action.STOP)`` is ``"stop"``.
    """

    RETRY_SAME = "retry_same"
    """Send the same call again, after ``step.delay``."""
    RETRY_PROMOTED = "retry_promoted"
    """Send it again to a stronger model or tier."""
    WAIT = "wait"
    """Wait ``step.delay`` (or, with ``defer_until``, park the task until then), then retry."""
    FIX_INPUT = "fix_input"
    """Correct the input, then send it again."""
    CHANGE_APPROACH = "change_approach"
    """Reach the goal another way."""
    BROADEN_QUERY = "broaden_query"
    """Widen the query."""
    REDUCE_SCOPE = "reduce_scope"
    """Ask for less."""
    FALLBACK_TOOL = "fallback_tool"
    """Use another tool that can do the same (``step.fallback_tool`` names it, when known)."""
    LOCAL_ONLY = "local_only"
    """Work with what is available locally."""
    INCREASE_BUDGET = "increase_budget"
    """Ask for a larger budget."""
    COMPENSATE = "compensate"
    """Undo or finish what a partial call left: resend only the failed part."""
    RECONCILE = "reconcile"
    """The call may have taken effect and is not safe to send again: check whether it did
    (``step.hint`` says how), and send it again only if it did not, under an idempotency key."""
    SKIP_AND_LOG = "skip_and_log"
    """Skip this step and record why."""
    STOP = "stop"
    """Stop and report (a policy denial stops the whole task)."""
    ESCALATE = "escalate"
    """Hand the task to a person (``step.escalation`` says who and why)."""

    def __str__(self) -> str:
        return str(self.value)


def _opt_str(data: Mapping[str, Any], key: str) -> Optional[str]:
    value = data.get(key)
    return None if value is None else str(value)


def _opt_int(data: Mapping[str, Any], key: str) -> Optional[int]:
    value = data.get(key)
    return None if value is None else int(value)


@dataclass(frozen=True)
class Issue:
    """One problem with a request: where (``path``, like ``report.http_status``), a code, words."""

    path: str
    code: str
    message: str

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Issue:
        return cls(
            path=str(data.get("path", "")),
            code=str(data.get("code", "")),
            message=str(data.get("message", "")),
        )


@dataclass(frozen=True)
class FailedApproach:
    """A tool and operation on which an earlier task of this caller spent every attempt of a
    class (``step.failed_approach``, ``GET /v1/approaches``): change approach first."""

    tool: str
    operation: Optional[str]
    class_: str
    """The class whose attempts were spent."""
    evidence: str
    """What the last failure said."""
    failures: int
    tasks: int
    first_at: str
    last_at: str
    expires_at: str
    """When it is forgotten unless it fails again (or sooner, when the tool succeeds)."""
    summary: str
    """In words: what failed, how often, over how long."""
    raw: JSON = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> FailedApproach:
        return cls(
            tool=str(data.get("tool", "")),
            operation=_opt_str(data, "operation"),
            class_=str(data.get("class", "")),
            evidence=str(data.get("evidence", "")),
            failures=int(data.get("failures") or 0),
            tasks=int(data.get("tasks") or 0),
            first_at=str(data.get("first_at", "")),
            last_at=str(data.get("last_at", "")),
            expires_at=str(data.get("expires_at", "")),
            summary=str(data.get("summary", "")),
            raw=dict(data),
        )


@dataclass(frozen=True)
class Escalation:
    """A hand-off to a person.

    A step's escalation (``POST /v1/recover``) has ``to`` and ``why``; a case's (a decision
    result or an ``attempt_limit_reached`` refusal) also has the pack's ``id``, the
    ``next_step`` (``nextStep`` on the wire) and the ``trigger``.
    """

    to: str
    why: str
    id: Optional[str] = None
    next_step: Optional[str] = None
    trigger: Optional[str] = None
    raw: JSON = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Escalation:
        return cls(
            to=str(data.get("to", "")),
            why=str(data.get("why", "")),
            id=_opt_str(data, "id"),
            next_step=_opt_str(data, "nextStep"),
            trigger=_opt_str(data, "trigger"),
            raw=dict(data),
        )


@dataclass(frozen=True)
class Evidence:
    """One piece of evidence: a report field, its value, and the rule or note it bears on."""

    field: str
    value: str
    extracted: Optional[str] = None
    rule: Optional[str] = None
    note: Optional[str] = None
    by: Optional[str] = None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Evidence:
        return cls(
            field=str(data.get("field", "")),
            value=str(data.get("value", "")),
            extracted=_opt_str(data, "extracted"),
            rule=_opt_str(data, "rule"),
            note=_opt_str(data, "note"),
            by=_opt_str(data, "by"),
        )


@dataclass(frozen=True)
class Classification:
    """What backstop concluded about one failed call (``POST /v1/classify``)."""

    class_: str
    """``transient``, ``rate_limited``, ``quota_exhausted``, ``invalid_input``, ``auth``,
    ``policy_denied``, ``capability_missing``, ``schema_violation``, ``empty_results``,
    ``business``, ``partial_success``, ``model_error`` or ``unclassified``."""
    retryable: bool
    fallback_allowed: bool
    rule: Optional[str]
    evidence: Tuple[Evidence, ...]
    retry_after_ms: Optional[int]
    reason: str
    raw: JSON = field(default_factory=dict, repr=False, compare=False)

    @property
    def retry_after(self) -> Optional[float]:
        """The server's retry hint in seconds, when the report carried one."""
        return None if self.retry_after_ms is None else self.retry_after_ms / 1000.0

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Classification:
        return cls(
            class_=str(data["class"]),
            retryable=bool(data["retryable"]),
            fallback_allowed=bool(data["fallback_allowed"]),
            rule=_opt_str(data, "rule"),
            evidence=tuple(Evidence.from_json(e) for e in data.get("evidence") or ()),
            retry_after_ms=_opt_int(data, "retry_after_ms"),
            reason=str(data.get("reason", "")),
            raw=dict(data),
        )


@dataclass(frozen=True)
class Attempts:
    """Attempts used and allowed, for the failure's class and for the whole task."""

    class_used: int
    class_max: int
    task_used: int
    task_max: int
    #: This step's attempt of its strategy and the attempts the strategy allows; both 0 when
    #: the step is no strategy's attempt (a stop, an escalation, a breaker's wait).
    strategy_used: int = 0
    strategy_max: int = 0

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Attempts:
        return cls(
            class_used=int(data["class_used"]),
            class_max=int(data["class_max"]),
            task_used=int(data["task_used"]),
            task_max=int(data["task_max"]),
            strategy_used=int(data.get("strategy_used", 0)),
            strategy_max=int(data.get("strategy_max", 0)),
        )


@dataclass(frozen=True)
class Breaker:
    """A tool's circuit breaker: ``closed``, ``open`` or ``half_open``."""

    state: str
    calls: int
    failures: int
    failure_rate: float
    open_until: Optional[str]
    probes_left: int

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Breaker:
        return cls(
            state=str(data["state"]),
            calls=int(data["calls"]),
            failures=int(data["failures"]),
            failure_rate=float(data["failure_rate"]),
            open_until=_opt_str(data, "open_until"),
            probes_left=int(data.get("probes_left", 0)),
        )


@dataclass(frozen=True)
class Budget:
    """A tool's retry budget (a token bucket)."""

    tokens: float
    capacity: float
    retries_allowed: bool

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Budget:
        return cls(
            tokens=float(data["tokens"]),
            capacity=float(data["capacity"]),
            retries_allowed=bool(data["retries_allowed"]),
        )


@dataclass(frozen=True)
class Step:
    """The next step after a failed call (``POST /v1/recover``)."""

    class_: str
    """The failure's class (see :attr:`Classification.class_`)."""
    action: Action
    hint: str
    """What to do, in words, filled from the context."""
    delay_ms: int
    """How long to wait before acting, in milliseconds."""
    defer_until: Optional[str]
    """For a long wait: do not sleep; park the task and come back at this RFC 3339 time."""
    attempts: Attempts
    breaker: Optional[Breaker]
    """The tool's breaker, when a tool was named."""
    budget: Optional[Budget]
    """The tool's retry budget, when a tool was named."""
    escalation: Optional[Escalation]
    """Who to hand the task to, when the action is ``escalate``."""
    fallback_tool: Optional[str]
    """The tool to fall back to, when the failing tool has a fallback chain."""
    reason: str
    """Why this step, for machines and logs: the class, the strategy and the counts."""
    explanation: str = ""
    """Why this step, in the sentence a person reads: what the failure means, and what about
    the task decided the step when that, not the failure, did."""
    replayed: bool = False
    """True when the answer is the stored step of an earlier request with the same
    ``Idempotency-Key`` (nothing was counted this time)."""
    failed_approach: Optional[FailedApproach] = None
    """The approach an earlier task of this caller spent every attempt on (the same tool and
    operation), given with this task's failure of it; a resend becomes ``change_approach``."""
    raw: JSON = field(default_factory=dict, repr=False, compare=False)

    @property
    def delay(self) -> float:
        """:attr:`delay_ms` in seconds."""
        return self.delay_ms / 1000.0

    @classmethod
    def from_json(cls, data: Mapping[str, Any], *, replayed: bool = False) -> Step:
        breaker = data.get("breaker")
        budget = data.get("budget")
        escalation = data.get("escalation")
        approach = data.get("failed_approach")
        return cls(
            class_=str(data["class"]),
            action=Action(data["action"]),
            hint=str(data.get("hint", "")),
            delay_ms=int(data.get("delay_ms") or 0),
            defer_until=_opt_str(data, "defer_until"),
            attempts=Attempts.from_json(data["attempts"]),
            breaker=None if breaker is None else Breaker.from_json(breaker),
            budget=None if budget is None else Budget.from_json(budget),
            escalation=None if escalation is None else Escalation.from_json(escalation),
            fallback_tool=_opt_str(data, "fallback_tool"),
            reason=str(data.get("reason", "")),
            explanation=str(data.get("explanation", "")),
            replayed=replayed,
            failed_approach=None if approach is None else FailedApproach.from_json(approach),
            raw=dict(data),
        )


@dataclass(frozen=True)
class ToolHealth:
    """A tool's breaker and budget, as ``POST /v1/outcomes`` answers them."""

    tool: str
    breaker: Optional[Breaker]
    budget: Optional[Budget]
    raw: JSON = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ToolHealth:
        breaker = data.get("breaker")
        budget = data.get("budget")
        return cls(
            tool=str(data["tool"]),
            breaker=None if breaker is None else Breaker.from_json(breaker),
            budget=None if budget is None else Budget.from_json(budget),
            raw=dict(data),
        )
