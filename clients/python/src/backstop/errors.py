"""Exceptions: refusals from the service (:class:`BackstopError` and its subclasses) and the
guard's typed next steps (:class:`GuardSignal` and its subclasses).

The two families are separate on purpose. A :class:`BackstopError` means backstop refused or
could not answer a request; a :class:`GuardSignal` means backstop answered, and the answer is
something the guard does not do by itself (stop, escalate, fix the input, ...).
"""

from __future__ import annotations

from typing import Any, Dict, Mapping, Optional, Tuple, Type

from ._types import Action, Escalation, Issue, Step

__all__ = [
    "ActionRequired",
    "AttemptLimitReached",
    "AttemptsExhausted",
    "BackstopError",
    "BroadenQuery",
    "CaseInReview",
    "ChangeApproach",
    "Compensate",
    "Reconcile",
    "Conflict",
    "Deferred",
    "Escalate",
    "ExecutionIdConflict",
    "FallbackTool",
    "FixInput",
    "Forbidden",
    "GuardSignal",
    "IdempotencyKeyConflict",
    "IncreaseBudget",
    "LocalOnly",
    "Malformed",
    "NotFound",
    "RateLimited",
    "ReduceScope",
    "Retry",
    "RetryPromoted",
    "ServiceUnavailable",
    "SkipAndLog",
    "Stop",
    "Unauthorized",
    "Unreachable",
]


# --- refusals -----------------------------------------------------------------------------


class BackstopError(Exception):
    """backstop refused a request, or could not be reached.

    Every refusal has the shape ``{"error": {"code", "message", "issues", "escalation"}}``;
    its fields are the attributes here. ``status`` is the HTTP status (``None`` when no answer
    came: :class:`Unreachable`); ``retry_after`` is the ``Retry-After`` header in seconds
    (429 and 503 answers).
    """

    status: Optional[int]
    code: str
    message: str
    issues: Tuple[Issue, ...]
    escalation: Optional[Escalation]
    retry_after: Optional[float]
    body: Optional[Dict[str, Any]]

    def __init__(
        self,
        message: str,
        *,
        status: Optional[int] = None,
        code: str = "error",
        issues: Tuple[Issue, ...] = (),
        escalation: Optional[Escalation] = None,
        retry_after: Optional[float] = None,
        body: Optional[Dict[str, Any]] = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.issues = issues
        self.escalation = escalation
        self.retry_after = retry_after
        self.body = body

    def __str__(self) -> str:
        where = f"HTTP {self.status} " if self.status is not None else ""
        text = f"{where}{self.code}: {self.message}"
        for issue in self.issues:
            text += f"\n  {issue.path or '(body)'}: {issue.code}: {issue.message}"
        return text

    def __repr__(self) -> str:
        return f"{type(self).__name__}(status={self.status!r}, code={self.code!r}, message={self.message!r})"


class Malformed(BackstopError):
    """400 ``malformed``: every problem is in :attr:`issues`, each with its path."""


class Unauthorized(BackstopError):
    """401: no key, an unknown key, or a bad webhook signature."""


class Forbidden(BackstopError):
    """403 ``forbidden``: the caller's role may not do this."""


class NotFound(BackstopError):
    """404: ``not_found`` (no such route), ``unknown_job``, ``unknown_case``, ..."""


class Conflict(BackstopError):
    """409: the request conflicts with what the ledger holds."""


class AttemptLimitReached(Conflict):
    """409 ``attempt_limit_reached``: the case's attempts are spent; make :attr:`escalation`."""


class CaseInReview(Conflict):
    """409 ``case_in_review``: the case is held for a person (see :attr:`escalation`)."""


class ExecutionIdConflict(Conflict):
    """409 ``execution_id_conflict``: the same ``execution_id`` came with another request."""


class IdempotencyKeyConflict(Conflict):
    """409 ``idempotency_key_conflict``: the same ``Idempotency-Key`` came with another request."""


class RateLimited(BackstopError):
    """429: wait :attr:`retry_after` seconds (``rate_limited``), or ``issued_case_limit``."""


class ServiceUnavailable(BackstopError):
    """5xx: ``busy`` (wait :attr:`retry_after`), ``timeout``, ``not_ready``, ``internal``."""


class Unreachable(BackstopError):
    """No answer: the connection failed or timed out (``code`` is ``unreachable`` or
    ``timeout``; ``status`` is ``None``). The httpx exception is the ``__cause__``."""


_BY_CODE: Dict[str, Type[BackstopError]] = {
    "malformed": Malformed,
    "attempt_limit_reached": AttemptLimitReached,
    "case_in_review": CaseInReview,
    "execution_id_conflict": ExecutionIdConflict,
    "idempotency_key_conflict": IdempotencyKeyConflict,
}

_BY_STATUS: Dict[int, Type[BackstopError]] = {
    400: Malformed,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    429: RateLimited,
}


def _retry_after(headers: Mapping[str, str]) -> Optional[float]:
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value.strip()))
    except ValueError:
        return None


def error_from_response(
    status: int, headers: Mapping[str, str], body: Any
) -> BackstopError:
    """The exception for a refusal: ``status``, the response headers and the parsed body
    (``None`` when it was not JSON)."""
    retry_after = _retry_after(headers)
    refusal = body.get("error") if isinstance(body, dict) else None
    if not isinstance(refusal, dict):
        # A refusal the HTTP library wrote (431, a bad request line) has no body.
        kind = ServiceUnavailable if status >= 500 else _BY_STATUS.get(status, BackstopError)
        return kind(
            f"backstop answered HTTP {status} without a refusal body",
            status=status,
            code=f"http_{status}",
            retry_after=retry_after,
            body=body if isinstance(body, dict) else None,
        )
    code = str(refusal.get("code", f"http_{status}"))
    issues = tuple(
        Issue.from_json(i) for i in refusal.get("issues") or () if isinstance(i, dict)
    )
    escalation_json = refusal.get("escalation")
    escalation = (
        Escalation.from_json(escalation_json) if isinstance(escalation_json, dict) else None
    )
    kind = _BY_CODE.get(code) or (
        ServiceUnavailable if status >= 500 else _BY_STATUS.get(status, BackstopError)
    )
    return kind(
        str(refusal.get("message", "")),
        status=status,
        code=code,
        issues=issues,
        escalation=escalation,
        retry_after=retry_after,
        body=body,
    )


# --- the guard's next steps -----------------------------------------------------------------


class GuardSignal(Exception):
    """backstop answered a guarded call's failure with a step the guard does not carry out
    itself. The tool's own exception is :attr:`error` (and ``__cause__``).

    Attributes: :attr:`step` (the full :class:`~backstop.Step`), :attr:`action`,
    :attr:`task`, :attr:`tool` (the tool that failed), :attr:`report` (the report sent),
    :attr:`error`.
    """

    step: Step
    task: str
    tool: Optional[str]
    report: Dict[str, Any]
    error: BaseException

    def __init__(
        self,
        step: Step,
        *,
        task: str,
        tool: Optional[str],
        report: Dict[str, Any],
        error: BaseException,
    ) -> None:
        message = f"{step.action.value}: {step.hint}"
        if step.explanation:
            message = f"{message} Why: {step.explanation}"
        super().__init__(message)
        self.step = step
        self.task = task
        self.tool = tool
        self.report = report
        self.error = error

    @property
    def action(self) -> Action:
        return self.step.action

    @property
    def reason(self) -> str:
        """Why backstop chose this step, for machines and logs (class, strategy, counts)."""
        return self.step.reason

    @property
    def explanation(self) -> str:
        """Why backstop chose this step, in the sentence a person reads."""
        return self.step.explanation or self.step.reason

    @property
    def hint(self) -> str:
        """What to do, in words."""
        return self.step.hint


class Stop(GuardSignal):
    """``stop``: do not retry, do not try another tool, do not work around it; report
    :attr:`reason`. After a policy denial every later failure of the task stops too, until a
    person resets it."""


class Escalate(GuardSignal):
    """``escalate``: hand the task to a person. :attr:`escalation` says to whom and why; the
    service has opened a review item for the task."""

    @property
    def escalation(self) -> Escalation:
        return self.step.escalation or Escalation(to="", why=self.step.reason)


class Deferred(GuardSignal):
    """``wait`` with ``defer_until``: the wait is too long to sleep through. Park the task and
    come back at :attr:`defer_until` (RFC 3339)."""

    @property
    def defer_until(self) -> str:
        return self.step.defer_until or ""


class Retry(GuardSignal):
    """Only from the single-shot form ``with client.guard(...) as attempt:``, which cannot run
    its block again: backstop says retry (``retry_same`` or ``wait``) after :attr:`delay`
    seconds. The decorator, :meth:`~backstop.Guard.call` and the ``for attempt in guard``
    loop retry by themselves and never raise this."""

    @property
    def delay(self) -> float:
        return self.step.delay


class AttemptsExhausted(GuardSignal):
    """The guard's own ``max_attempts`` is spent while backstop still says retry (or fall
    back). backstop's counters are the authority; this is a local cap on top of them."""


class ActionRequired(GuardSignal):
    """backstop asks for something only the caller's code can do. Each such action has its own
    subclass, so ``except backstop.FixInput`` reads as the step it is."""


class RetryPromoted(ActionRequired):
    """``retry_promoted`` with no ``promoted`` callable given: send it again to a stronger
    model or tier (after :attr:`step.delay <backstop.Step.delay>`)."""


class FixInput(ActionRequired):
    """``fix_input``: correct the input (the hint says what failed), then call again."""


class ChangeApproach(ActionRequired):
    """``change_approach``: reach the goal another way."""


class BroadenQuery(ActionRequired):
    """``broaden_query``: widen the query (fewer filters, other terms)."""


class ReduceScope(ActionRequired):
    """``reduce_scope``: ask for less (a smaller input, fewer items)."""


class FallbackTool(ActionRequired):
    """``fallback_tool`` and the guard has no fallback for it (none was given, the one given
    was used already, or the step names a tool the mapping lacks). :attr:`fallback_tool` is
    the tool the step names, if any."""

    @property
    def fallback_tool(self) -> Optional[str]:
        return self.step.fallback_tool


class LocalOnly(ActionRequired):
    """``local_only``: work with what is available locally."""


class IncreaseBudget(ActionRequired):
    """``increase_budget``: ask for a larger budget."""


class Compensate(ActionRequired):
    """``compensate``: a partial call; resend only the part that failed, never the whole."""


class Reconcile(ActionRequired):
    """``reconcile``: the call may have taken effect (its answer was lost after it was sent)
    and it is not idempotent, so the guard never resends it. Check whether it happened (the
    hint says how); send it again only if it did not, under the same idempotency key."""


class SkipAndLog(ActionRequired):
    """``skip_and_log``: skip this step and record why (:attr:`reason`)."""


SIGNAL_FOR_ACTION: Dict[Action, Type[GuardSignal]] = {
    Action.RETRY_SAME: Retry,
    Action.WAIT: Retry,
    Action.RETRY_PROMOTED: RetryPromoted,
    Action.FIX_INPUT: FixInput,
    Action.CHANGE_APPROACH: ChangeApproach,
    Action.BROADEN_QUERY: BroadenQuery,
    Action.REDUCE_SCOPE: ReduceScope,
    Action.FALLBACK_TOOL: FallbackTool,
    Action.LOCAL_ONLY: LocalOnly,
    Action.INCREASE_BUDGET: IncreaseBudget,
    Action.COMPENSATE: Compensate,
    Action.RECONCILE: Reconcile,
    Action.SKIP_AND_LOG: SkipAndLog,
    Action.STOP: Stop,
    Action.ESCALATE: Escalate,
}
"""The exception each action raises when the guard does not carry it out itself."""
