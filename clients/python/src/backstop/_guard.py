"""The guard: a tool call wrapped so that backstop decides what happens after each failure.

Three forms, sync (:class:`Guard`) and async (:class:`AsyncGuard`):

- a decorator, and :meth:`Guard.call`: the guard calls the function, and on a failure asks
  backstop, then retries, waits, switches to the fallback, or raises a typed signal;
- a loop of attempts, like tenacity's: ``for attempt in guard: with attempt: ...``; the guard
  re-runs the block as the decorator re-runs the function;
- a single attempt, ``with guard as attempt: ...``: a block cannot be run again, so every step
  (also ``retry_same`` and ``wait``, as :class:`~backstop.Retry`) is raised as a signal, and
  ``attempt.step`` holds the step.
"""

from __future__ import annotations

import contextvars
import functools
import inspect
import logging
import time
import uuid
from typing import (
    TYPE_CHECKING,
    Any,
    AsyncIterator,
    Awaitable,
    Callable,
    Coroutine,
    Dict,
    Iterator,
    Mapping,
    Optional,
    Set,
    Tuple,
    Type,
    TypeVar,
    Union,
)

from ._report import report_from_exception
from ._types import Action, Step
from .errors import (
    SIGNAL_FOR_ACTION,
    AttemptsExhausted,
    BackstopError,
    Deferred,
    FallbackTool,
    GuardSignal,
    Retry,
    RetryPromoted,
    ServiceUnavailable,
    Unreachable,
)

if TYPE_CHECKING:
    from typing_extensions import ParamSpec

    from ._client import AsyncBackstop, Backstop

    P = ParamSpec("P")

__all__ = ["AsyncAttempt", "AsyncGuard", "Attempt", "Guard"]

T = TypeVar("T")

logger = logging.getLogger("backstop")

Fallback = Union[Callable[..., Any], Mapping[str, Callable[..., Any]]]
"""A fallback: one callable (called with the guarded call's arguments), or callables by tool
name, for a fallback chain whose steps name the tool (``step.fallback_tool``)."""

Describe = Callable[[BaseException], Mapping[str, Any]]
"""Extra report fields for an exception (``{"sqlstate": "40001"}``), merged over the guard's."""

OnStep = Callable[[Step, BaseException], None]
"""Called with each step the guard gets, and the exception it answers, before acting on it."""

# How often the guard asks backstop again, with the same Idempotency-Key, when the answer was
# lost (a connection failure) or the ledger was busy: a resend is never counted twice.
_ASK_TRIES = 3
_ASK_PAUSE = 0.5

# The single-shot `with guard as attempt` blocks open in this context: (guard id, attempt).
_OPEN: contextvars.ContextVar[Tuple[Tuple[int, Any], ...]] = contextvars.ContextVar(
    "backstop_guard_open", default=()
)


class _Spec:
    """What a guard was made with."""

    def __init__(
        self,
        *,
        task: str,
        tool: str,
        operation: Optional[str],
        fallback: Optional[Fallback],
        promoted: Optional[Callable[..., Any]],
        max_attempts: Optional[int],
        exceptions: Tuple[Type[BaseException], ...],
        describe: Optional[Describe],
        on_step: Optional[OnStep],
    ) -> None:
        if not task:
            raise ValueError("a guard needs a task: the counters backstop keeps are per task")
        if not tool:
            raise ValueError(
                "a guard needs a tool (or the client's caller_tool): breakers and retry "
                "budgets are per tool, and a success is reported for it"
            )
        if max_attempts is not None and max_attempts < 1:
            raise ValueError("max_attempts is at least 1")
        self.task = task
        self.tool = tool
        self.operation = operation
        self.fallback = fallback
        self.promoted = promoted
        self.max_attempts = max_attempts
        self.exceptions = exceptions
        self.describe = describe
        self.on_step = on_step

    def handles(self, exc: BaseException) -> bool:
        """Whether a failure is the tool's, to report: not a signal or refusal of backstop's
        own (a nested guard's), and one of the exception types the guard takes."""
        return isinstance(exc, self.exceptions) and not isinstance(
            exc, (GuardSignal, BackstopError)
        )


class _Run:
    """One guarded run: the tool in use, the calls made, the fallbacks spent."""

    def __init__(self, spec: _Spec, fn: Optional[Callable[..., Any]]) -> None:
        self.spec = spec
        self.fn = fn
        self.tool = spec.tool
        self.calls = 0
        self.used: Set[str] = {spec.tool}
        self.fallback_used = False
        self.promoted = False
        self.step: Optional[Step] = None

    def report(self, exc: BaseException, elapsed_ms: int) -> Dict[str, Any]:
        report = report_from_exception(exc, elapsed_ms=elapsed_ms)
        if self.spec.describe is not None:
            report.update(self.spec.describe(exc))
        return report

    def context(self) -> Dict[str, Any]:
        context: Dict[str, Any] = {"tool": self.tool}
        if self.spec.operation:
            context["operation"] = self.spec.operation
        return context

    def signal(
        self, kind: Type[GuardSignal], step: Step, exc: BaseException, report: Dict[str, Any]
    ) -> GuardSignal:
        return kind(step, task=self.spec.task, tool=self.tool, report=report, error=exc)

    def _pick_fallback(self, step: Step) -> Optional[Tuple[str, Callable[..., Any]]]:
        fallback = self.spec.fallback
        if fallback is None:
            return None
        if isinstance(fallback, Mapping):
            if step.fallback_tool is not None:
                fn = fallback.get(step.fallback_tool)
                if fn is None or step.fallback_tool in self.used:
                    return None
                return step.fallback_tool, fn
            for name, fn in fallback.items():
                if name not in self.used:
                    return name, fn
            return None
        if self.fallback_used:
            return None
        if step.fallback_tool is not None:
            return step.fallback_tool, fallback
        own = getattr(fallback, "__name__", "")
        return (own if own and own.isidentifier() else f"{self.spec.tool}-fallback"), fallback

    def plan(
        self, step: Step, exc: BaseException, report: Dict[str, Any], *, single: bool
    ) -> float:
        """Acts on a step: returns the seconds to sleep before the next call (having switched
        to the fallback or promoted callable when the step says so), or raises its signal."""
        self.step = step
        action = step.action
        if action in (Action.RETRY_SAME, Action.WAIT):
            if step.defer_until:
                raise self.signal(Deferred, step, exc, report) from exc
            if single:
                raise self.signal(Retry, step, exc, report) from exc
            self._may_call_again(step, exc, report)
            return step.delay
        if action is Action.RETRY_PROMOTED:
            if single or self.spec.promoted is None:
                raise self.signal(RetryPromoted, step, exc, report) from exc
            self._may_call_again(step, exc, report)
            self.fn = self.spec.promoted
            self.promoted = True
            return step.delay
        if action is Action.FALLBACK_TOOL:
            choice = None if single else self._pick_fallback(step)
            if choice is None:
                raise self.signal(FallbackTool, step, exc, report) from exc
            self._may_call_again(step, exc, report)
            self.tool, self.fn = choice
            self.used.add(self.tool)
            self.fallback_used = True
            self.promoted = False
            return step.delay
        raise self.signal(SIGNAL_FOR_ACTION[action], step, exc, report) from exc

    def _may_call_again(self, step: Step, exc: BaseException, report: Dict[str, Any]) -> None:
        limit = self.spec.max_attempts
        if limit is not None and self.calls >= limit:
            raise self.signal(AttemptsExhausted, step, exc, report) from exc


def _elapsed_ms(started: float) -> int:
    return int((time.monotonic() - started) * 1000)


def _should_resend(error: BackstopError) -> bool:
    return isinstance(error, Unreachable) or (
        isinstance(error, ServiceUnavailable) and error.code in ("busy", "timeout")
    )


# --- sync ----------------------------------------------------------------------------------


class Attempt:
    """One call of a guarded block (``for attempt in guard: with attempt: ...``, or the
    single-shot ``with guard as attempt:``).

    - :attr:`number`: 1 for the first call;
    - :attr:`tool`: the tool this call is for (the fallback's name after a switch);
    - :attr:`fn`: ``None`` for your own code, or the callable to call instead: the fallback
      after ``fallback_tool``, the ``promoted`` callable after ``retry_promoted``;
    - :attr:`step`: the step that led to this call (``None`` on the first), and in the
      single-shot form, after a failure, the step backstop answered it with.
    """

    def __init__(self, guard: Guard, run: _Run, *, single: bool) -> None:
        self._guard = guard
        self._run = run
        self._single = single
        self.number = run.calls
        self.tool = run.tool
        self.fn = run.fn
        self.promoted = run.promoted
        self.step: Optional[Step] = run.step
        self._started = 0.0
        self._delay: Optional[float] = None
        self._done = False

    def __enter__(self) -> Attempt:
        self._started = time.monotonic()
        return self

    def __exit__(self, kind: Any, exc: Optional[BaseException], tb: Any) -> bool:
        self._done = True
        if exc is None:
            self._guard._succeeded(self._run)
            return False
        if not self._run.spec.handles(exc):
            return False
        try:
            self._delay = self._guard._failed(
                self._run, exc, _elapsed_ms(self._started), single=self._single
            )
        finally:
            self.step = self._run.step
        return True


class Guard:
    """A sync guard; make one with :meth:`backstop.Backstop.guard`. See the module's forms."""

    def __init__(self, client: Backstop, spec: _Spec, sleep: Callable[[float], None]) -> None:
        self._client = client
        self._spec = spec
        self._sleep = sleep

    @property
    def task(self) -> str:
        return self._spec.task

    @property
    def tool(self) -> str:
        return self._spec.tool

    # The decorator and call.

    def __call__(self, fn: Callable[P, T]) -> Callable[P, T]:
        if inspect.iscoroutinefunction(fn):
            raise TypeError(
                f"{fn.__qualname__} is a coroutine function: guard it with AsyncBackstop.guard"
            )

        @functools.wraps(fn)
        def guarded(*args: P.args, **kwargs: P.kwargs) -> T:
            return self.call(fn, *args, **kwargs)

        return guarded

    def call(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """Calls ``fn(*args, **kwargs)`` under the guard; a fallback or promoted callable is
        called with the same arguments."""
        run = _Run(self._spec, fn)
        while True:
            run.calls += 1
            started = time.monotonic()
            target: Callable[..., T] = run.fn if run.fn is not None else fn
            try:
                result = target(*args, **kwargs)
            except BaseException as exc:
                if not self._spec.handles(exc):
                    raise
                delay = self._failed(run, exc, _elapsed_ms(started), single=False)
            else:
                self._succeeded(run)
                return result
            self._sleep(delay)

    # The loop of attempts.

    def __iter__(self) -> Iterator[Attempt]:
        run = _Run(self._spec, None)
        while True:
            run.calls += 1
            attempt = Attempt(self, run, single=False)
            yield attempt
            if not attempt._done:
                raise RuntimeError("use each attempt as a context manager: `with attempt: ...`")
            if attempt._delay is None:
                return
            self._sleep(attempt._delay)

    def attempts(self) -> Iterator[Attempt]:
        """The attempts, as ``iter(guard)``: ``for attempt in guard.attempts(): with attempt:``."""
        return iter(self)

    # The single attempt.

    def __enter__(self) -> Attempt:
        run = _Run(self._spec, None)
        run.calls = 1
        attempt = Attempt(self, run, single=True)
        _OPEN.set(_OPEN.get() + ((id(self), attempt),))
        return attempt.__enter__()

    def __exit__(self, kind: Any, exc: Optional[BaseException], tb: Any) -> None:
        stack = _OPEN.get()
        for i in range(len(stack) - 1, -1, -1):
            if stack[i][0] == id(self):
                attempt: Attempt = stack[i][1]
                _OPEN.set(stack[:i] + stack[i + 1 :])
                # A single attempt never swallows the failure: `plan` raises its signal.
                attempt.__exit__(kind, exc, tb)
                return
        raise RuntimeError("Guard.__exit__ without its __enter__")

    # What the forms share.

    def _failed(self, run: _Run, exc: BaseException, elapsed_ms: int, *, single: bool) -> float:
        report = run.report(exc, elapsed_ms)
        step = self._ask(run, report, exc)
        if self._spec.on_step is not None:
            self._spec.on_step(step, exc)
        return run.plan(step, exc, report, single=single)

    def _ask(self, run: _Run, report: Dict[str, Any], exc: BaseException) -> Step:
        key = uuid.uuid4().hex
        for attempt in range(_ASK_TRIES):
            try:
                return self._client.next_step(
                    self._spec.task, report, run.context(), idempotency_key=key
                )
            except BackstopError as error:
                if attempt + 1 < _ASK_TRIES and _should_resend(error):
                    self._sleep(error.retry_after or _ASK_PAUSE)
                    continue
                raise error from exc
        raise AssertionError("unreachable")  # pragma: no cover

    def _succeeded(self, run: _Run) -> None:
        try:
            self._client.report_outcome(run.tool, "success", task=self._spec.task)
        except BackstopError as error:
            logger.warning("backstop: could not report the success of %s: %s", run.tool, error)


# --- async ---------------------------------------------------------------------------------


class AsyncAttempt:
    """:class:`Attempt` for :class:`AsyncGuard`: ``async for attempt in guard: async with
    attempt: ...``. :attr:`fn` may be a sync or an async callable."""

    def __init__(self, guard: AsyncGuard, run: _Run, *, single: bool) -> None:
        self._guard = guard
        self._run = run
        self._single = single
        self.number = run.calls
        self.tool = run.tool
        self.fn = run.fn
        self.promoted = run.promoted
        self.step: Optional[Step] = run.step
        self._started = 0.0
        self._delay: Optional[float] = None
        self._done = False

    async def __aenter__(self) -> AsyncAttempt:
        self._started = time.monotonic()
        return self

    async def __aexit__(self, kind: Any, exc: Optional[BaseException], tb: Any) -> bool:
        self._done = True
        if exc is None:
            await self._guard._succeeded(self._run)
            return False
        if not self._run.spec.handles(exc):
            return False
        try:
            self._delay = await self._guard._failed(
                self._run, exc, _elapsed_ms(self._started), single=self._single
            )
        finally:
            self.step = self._run.step
        return True


class AsyncGuard:
    """An async guard; make one with :meth:`backstop.AsyncBackstop.guard`."""

    def __init__(
        self,
        client: AsyncBackstop,
        spec: _Spec,
        sleep: Callable[[float], Awaitable[None]],
    ) -> None:
        self._client = client
        self._spec = spec
        self._sleep = sleep

    @property
    def task(self) -> str:
        return self._spec.task

    @property
    def tool(self) -> str:
        return self._spec.tool

    def __call__(self, fn: Callable[P, Awaitable[T]]) -> Callable[P, Coroutine[Any, Any, T]]:
        @functools.wraps(fn)
        async def guarded(*args: P.args, **kwargs: P.kwargs) -> T:
            return await self.call(fn, *args, **kwargs)

        return guarded

    async def call(self, fn: Callable[P, Awaitable[T]], *args: P.args, **kwargs: P.kwargs) -> T:
        """Awaits ``fn(*args, **kwargs)`` under the guard; a fallback or promoted callable may
        be sync or async and is called with the same arguments."""
        run = _Run(self._spec, fn)
        while True:
            run.calls += 1
            started = time.monotonic()
            target: Callable[..., Any] = run.fn if run.fn is not None else fn
            try:
                result: Any = target(*args, **kwargs)
                if inspect.isawaitable(result):
                    result = await result
            except BaseException as exc:
                if not self._spec.handles(exc):
                    raise
                delay = await self._failed(run, exc, _elapsed_ms(started), single=False)
            else:
                await self._succeeded(run)
                return result  # type: ignore[no-any-return]
            await self._sleep(delay)

    async def __aiter__(self) -> AsyncIterator[AsyncAttempt]:
        run = _Run(self._spec, None)
        while True:
            run.calls += 1
            attempt = AsyncAttempt(self, run, single=False)
            yield attempt
            if not attempt._done:
                raise RuntimeError(
                    "use each attempt as an async context manager: `async with attempt: ...`"
                )
            if attempt._delay is None:
                return
            await self._sleep(attempt._delay)

    def attempts(self) -> AsyncIterator[AsyncAttempt]:
        """The attempts: ``async for attempt in guard.attempts(): async with attempt:``."""
        return self.__aiter__()

    async def __aenter__(self) -> AsyncAttempt:
        run = _Run(self._spec, None)
        run.calls = 1
        attempt = AsyncAttempt(self, run, single=True)
        _OPEN.set(_OPEN.get() + ((id(self), attempt),))
        return await attempt.__aenter__()

    async def __aexit__(self, kind: Any, exc: Optional[BaseException], tb: Any) -> None:
        stack = _OPEN.get()
        for i in range(len(stack) - 1, -1, -1):
            if stack[i][0] == id(self):
                attempt: AsyncAttempt = stack[i][1]
                _OPEN.set(stack[:i] + stack[i + 1 :])
                await attempt.__aexit__(kind, exc, tb)
                return
        raise RuntimeError("AsyncGuard.__aexit__ without its __aenter__")

    async def _failed(
        self, run: _Run, exc: BaseException, elapsed_ms: int, *, single: bool
    ) -> float:
        report = run.report(exc, elapsed_ms)
        step = await self._ask(run, report, exc)
        if self._spec.on_step is not None:
            self._spec.on_step(step, exc)
        return run.plan(step, exc, report, single=single)

    async def _ask(self, run: _Run, report: Dict[str, Any], exc: BaseException) -> Step:
        key = uuid.uuid4().hex
        for attempt in range(_ASK_TRIES):
            try:
                return await self._client.next_step(
                    self._spec.task, report, run.context(), idempotency_key=key
                )
            except BackstopError as error:
                if attempt + 1 < _ASK_TRIES and _should_resend(error):
                    await self._sleep(error.retry_after or _ASK_PAUSE)
                    continue
                raise error from exc
        raise AssertionError("unreachable")  # pragma: no cover

    async def _succeeded(self, run: _Run) -> None:
        try:
            await self._client.report_outcome(run.tool, "success", task=self._spec.task)
        except BackstopError as error:
            logger.warning("backstop: could not report the success of %s: %s", run.tool, error)
