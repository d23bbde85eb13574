"""The clients: :class:`Backstop` (sync) and :class:`AsyncBackstop`, one method per route."""

from __future__ import annotations

import asyncio
import time
from typing import (
    Any,
    Awaitable,
    Callable,
    Dict,
    List,
    Literal,
    Mapping,
    Optional,
    Tuple,
    Type,
    Union,
)
from urllib.parse import quote

import httpx

from ._guard import AsyncGuard, Describe, Fallback, Guard, OnStep, _Spec
from ._types import Classification, FailedApproach, Step, ToolHealth
from .errors import BackstopError, Unreachable, error_from_response

__all__ = ["AsyncBackstop", "Backstop", "DEFAULT_URL"]

__version__ = "0.1.0"

DEFAULT_URL = "http://127.0.0.1:7600"
"""Where ``backstop serve`` listens by default."""

_USER_AGENT = f"backstop-client-python/{__version__}"

JSON = Dict[str, Any]


def _segment(value: str) -> str:
    """One path segment, percent-encoded (a ``/`` in a case id stays inside the segment)."""
    return quote(value, safe="")


def _job_list(body: Any) -> List[JSON]:
    jobs = body["jobs"]
    if not isinstance(jobs, list):
        raise TypeError("`jobs` is not a list")
    return jobs


def _approach_list(body: Any) -> List[FailedApproach]:
    approaches = body["approaches"]
    if not isinstance(approaches, list):
        raise TypeError("`approaches` is not a list")
    return [FailedApproach.from_json(a) for a in approaches]


class _Base:
    """What both clients share: the URL, the headers, building requests, reading answers."""

    def __init__(
        self, url: str, key: Optional[str], timeout: float, caller_tool: Optional[str]
    ) -> None:
        self.url = url.rstrip("/")
        self.timeout = timeout
        self.caller_tool = caller_tool
        self._headers = {"User-Agent": _USER_AGENT, "Accept": "application/json"}
        if key:
            self._headers["Authorization"] = f"Bearer {key}"

    def __repr__(self) -> str:
        keyed = "keyed" if "Authorization" in self._headers else "no key"
        return f"{type(self).__name__}({self.url!r}, {keyed})"

    # Requests: (method, path, JSON body, extra headers).

    def _recover_request(
        self,
        task: str,
        report: Mapping[str, Any],
        context: Optional[Mapping[str, Any]],
        idempotency_key: Optional[str],
    ) -> Tuple[str, str, Any, Dict[str, str]]:
        context_out: Optional[Dict[str, Any]] = None if context is None else dict(context)
        if self.caller_tool and "tool" not in report and not (context_out or {}).get("tool"):
            context_out = {**(context_out or {}), "tool": self.caller_tool}
        body: JSON = {"task": task, "report": dict(report)}
        if context_out is not None:
            body["context"] = context_out
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key else {}
        return "POST", "/v1/recover", body, headers

    @staticmethod
    def _outcome_body(
        tool: str, outcome: str, cls: Optional[str], task: Optional[str]
    ) -> JSON:
        body: JSON = {"tool": tool, "outcome": outcome}
        if cls is not None:
            body["class"] = cls
        if task is not None:
            body["task"] = task
        return body

    # Answers.

    @staticmethod
    def _read(response: httpx.Response) -> Any:
        try:
            body = response.json() if response.content else None
        except ValueError:
            body = None
        if response.status_code >= 400:
            raise error_from_response(response.status_code, response.headers, body)
        if body is None:
            raise BackstopError(
                f"backstop answered HTTP {response.status_code} with no JSON body",
                status=response.status_code,
                code="unexpected_answer",
            )
        return body

    @staticmethod
    def _parse(kind: Callable[..., Any], body: Any, **extra: Any) -> Any:
        try:
            return kind(body, **extra)
        except (KeyError, TypeError, ValueError) as exc:
            raise BackstopError(
                f"backstop's answer does not have the expected shape ({exc!r}); is the client "
                "older than the service?",
                status=200,
                code="unexpected_answer",
                body=body if isinstance(body, dict) else None,
            ) from exc

    @staticmethod
    def _unreachable(url: str, exc: httpx.HTTPError) -> Unreachable:
        code = "timeout" if isinstance(exc, httpx.TimeoutException) else "unreachable"
        return Unreachable(f"no answer from {url}: {exc!r}", code=code)

    def _guard_spec(
        self,
        task: str,
        tool: Optional[str],
        operation: Optional[str],
        fallback: Optional[Fallback],
        promoted: Optional[Callable[..., Any]],
        max_attempts: Optional[int],
        exceptions: Tuple[Type[BaseException], ...],
        describe: Optional[Describe],
        on_step: Optional[OnStep],
    ) -> _Spec:
        return _Spec(
            task=task,
            tool=tool or self.caller_tool or "",
            operation=operation,
            fallback=fallback,
            promoted=promoted,
            max_attempts=max_attempts,
            exceptions=exceptions,
            describe=describe,
            on_step=on_step,
        )


class Backstop(_Base):
    """A client of ``backstop serve``.

    ``Backstop(url, key=None, *, timeout=10.0, caller_tool=None, sleep=time.sleep,
    http_client=None)``:

    - ``key``: an API key, sent as ``Authorization: Bearer KEY`` (a service with no keys in
      its config needs none);
    - ``timeout``: seconds for each request to backstop;
    - ``caller_tool``: the tool :meth:`next_step` names in the context when neither the report
      nor the context does, and the default tool of :meth:`guard`;
    - ``sleep``: what guards sleep with (inject a recorder in tests);
    - ``http_client``: an ``httpx.Client`` of your own (proxies, transports); it is not
      closed by :meth:`close`.

    Every refusal raises :class:`~backstop.BackstopError` (a subclass per code); no answer
    raises :class:`~backstop.Unreachable`. Use it as a context manager, or call :meth:`close`.
    """

    def __init__(
        self,
        url: str = DEFAULT_URL,
        key: Optional[str] = None,
        *,
        timeout: float = 10.0,
        caller_tool: Optional[str] = None,
        sleep: Callable[[float], None] = time.sleep,
        http_client: Optional[httpx.Client] = None,
    ) -> None:
        super().__init__(url, key, timeout, caller_tool)
        self.sleep = sleep
        self._own = http_client is None
        self._http = http_client if http_client is not None else httpx.Client(timeout=timeout)

    def close(self) -> None:
        """Closes the HTTP connections (not those of an ``http_client`` you passed)."""
        if self._own:
            self._http.close()

    def __enter__(self) -> Backstop:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _send(
        self,
        method: str,
        path: str,
        body: Any = None,
        headers: Optional[Mapping[str, str]] = None,
    ) -> Tuple[Any, httpx.Response]:
        url = self.url + path
        try:
            response = self._http.request(
                method,
                url,
                json=body,
                headers={**self._headers, **(headers or {})},
                timeout=self.timeout,
            )
        except httpx.TransportError as exc:
            raise self._unreachable(url, exc) from exc
        return self._read(response), response

    def classify(self, report: Mapping[str, Any]) -> Classification:
        """``POST /v1/classify``: what the failure ``report`` describes."""
        body, _ = self._send("POST", "/v1/classify", dict(report))
        result: Classification = self._parse(Classification.from_json, body)
        return result

    def next_step(
        self,
        task: str,
        report: Mapping[str, Any],
        context: Optional[Mapping[str, Any]] = None,
        idempotency_key: Optional[str] = None,
    ) -> Step:
        """``POST /v1/recover``: the next step after a failure of ``task``; counts the attempt.

        ``context`` is ``{"tool", "operation", "error", "request"}``. With an
        ``idempotency_key``, a resend within 24 hours gets the first step
        (``step.replayed``) and counts nothing.
        """
        method, path, body, headers = self._recover_request(task, report, context, idempotency_key)
        answer, response = self._send(method, path, body, headers)
        replayed = response.headers.get("idempotent-replayed", "").lower() == "true"
        step: Step = self._parse(Step.from_json, answer, replayed=replayed)
        return step

    def report_outcome(
        self,
        tool: str,
        outcome: Literal["success", "failure"],
        *,
        cls: Optional[str] = None,
        task: Optional[str] = None,
    ) -> ToolHealth:
        """``POST /v1/outcomes``: a call of ``tool`` ended in ``"success"`` or ``"failure"``
        (of class ``cls``, default ``transient``). A success with ``task`` resets that task's
        failure counters (never a policy denial's stop)."""
        body, _ = self._send("POST", "/v1/outcomes", self._outcome_body(tool, outcome, cls, task))
        health: ToolHealth = self._parse(ToolHealth.from_json, body)
        return health

    def decide(self, job: str, request: Mapping[str, Any]) -> JSON:
        """``POST /v1/jobs/{job}/decisions``: one attempt on a case; the result as JSON."""
        body, _ = self._send("POST", f"/v1/jobs/{_segment(job)}/decisions", dict(request))
        result: JSON = body
        return result

    def jobs(self) -> List[JSON]:
        """``GET /v1/jobs``: the jobs loaded, each ``{"job", "title", ...}``."""
        body, _ = self._send("GET", "/v1/jobs")
        jobs: List[JSON] = self._parse(_job_list, body)
        return jobs

    def failed_approaches(self) -> List[FailedApproach]:
        """``GET /v1/approaches``: the tools and operations on which this caller's tasks spent
        every attempt of a class (kept a day, or until the tool succeeds), the most recent
        first. A new task should not start with one of them."""
        body, _ = self._send("GET", "/v1/approaches")
        approaches: List[FailedApproach] = self._parse(_approach_list, body)
        return approaches

    def job_brief(self, job: str) -> JSON:
        """``GET /v1/jobs/{job}``: what the job asks (questions, related records, attempts,
        escalations), as JSON."""
        body, _ = self._send("GET", f"/v1/jobs/{_segment(job)}")
        brief: JSON = body
        return brief

    def case(self, job: str, case_id: str) -> JSON:
        """``GET /v1/jobs/{job}/cases/{id}``: the caller's case with its attempts and reviews.
        ``case_id`` is the normalized id results show."""
        body, _ = self._send("GET", f"/v1/jobs/{_segment(job)}/cases/{_segment(case_id)}")
        case: JSON = body
        return case

    def guard(
        self,
        task: str,
        tool: Optional[str] = None,
        *,
        fallback: Optional[Fallback] = None,
        promoted: Optional[Callable[..., Any]] = None,
        max_attempts: Optional[int] = None,
        operation: Optional[str] = None,
        exceptions: Union[Type[BaseException], Tuple[Type[BaseException], ...]] = (Exception,),
        describe: Optional[Describe] = None,
        on_step: Optional[OnStep] = None,
        sleep: Optional[Callable[[float], None]] = None,
    ) -> Guard:
        """A guard for calls of ``tool`` on behalf of ``task`` (see the README's table of
        what each action does).

        - ``fallback``: a callable for ``fallback_tool`` (called with the same arguments), or
          ``{tool name: callable}`` for a fallback chain;
        - ``promoted``: a callable for ``retry_promoted`` (a stronger model or tier);
        - ``max_attempts``: a local cap on calls per run, on top of backstop's counters;
        - ``operation``: what was asked of the tool, for hints;
        - ``exceptions``: the exception types that are the tool's failures (others pass);
        - ``describe``: extra report fields for an exception;
        - ``on_step``: called with every step and the exception it answers;
        - ``sleep``: overrides the client's ``sleep``.
        """
        spec = self._guard_spec(
            task,
            tool,
            operation,
            fallback,
            promoted,
            max_attempts,
            exceptions if isinstance(exceptions, tuple) else (exceptions,),
            describe,
            on_step,
        )
        return Guard(self, spec, sleep or self.sleep)


class AsyncBackstop(_Base):
    """The async client: the methods of :class:`Backstop`, awaited. ``sleep`` defaults to
    ``asyncio.sleep``; ``http_client`` is an ``httpx.AsyncClient``. Use ``async with`` or
    ``await client.aclose()``."""

    def __init__(
        self,
        url: str = DEFAULT_URL,
        key: Optional[str] = None,
        *,
        timeout: float = 10.0,
        caller_tool: Optional[str] = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        http_client: Optional[httpx.AsyncClient] = None,
    ) -> None:
        super().__init__(url, key, timeout, caller_tool)
        self.sleep = sleep
        self._own = http_client is None
        self._http = (
            http_client if http_client is not None else httpx.AsyncClient(timeout=timeout)
        )

    async def aclose(self) -> None:
        """Closes the HTTP connections (not those of an ``http_client`` you passed)."""
        if self._own:
            await self._http.aclose()

    async def __aenter__(self) -> AsyncBackstop:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()

    async def _send(
        self,
        method: str,
        path: str,
        body: Any = None,
        headers: Optional[Mapping[str, str]] = None,
    ) -> Tuple[Any, httpx.Response]:
        url = self.url + path
        try:
            response = await self._http.request(
                method,
                url,
                json=body,
                headers={**self._headers, **(headers or {})},
                timeout=self.timeout,
            )
        except httpx.TransportError as exc:
            raise self._unreachable(url, exc) from exc
        return self._read(response), response

    async def classify(self, report: Mapping[str, Any]) -> Classification:
        """``POST /v1/classify``; see :meth:`Backstop.classify`."""
        body, _ = await self._send("POST", "/v1/classify", dict(report))
        result: Classification = self._parse(Classification.from_json, body)
        return result

    async def next_step(
        self,
        task: str,
        report: Mapping[str, Any],
        context: Optional[Mapping[str, Any]] = None,
        idempotency_key: Optional[str] = None,
    ) -> Step:
        """``POST /v1/recover``; see :meth:`Backstop.next_step`."""
        method, path, body, headers = self._recover_request(task, report, context, idempotency_key)
        answer, response = await self._send(method, path, body, headers)
        replayed = response.headers.get("idempotent-replayed", "").lower() == "true"
        step: Step = self._parse(Step.from_json, answer, replayed=replayed)
        return step

    async def report_outcome(
        self,
        tool: str,
        outcome: Literal["success", "failure"],
        *,
        cls: Optional[str] = None,
        task: Optional[str] = None,
    ) -> ToolHealth:
        """``POST /v1/outcomes``; see :meth:`Backstop.report_outcome`."""
        body, _ = await self._send(
            "POST", "/v1/outcomes", self._outcome_body(tool, outcome, cls, task)
        )
        health: ToolHealth = self._parse(ToolHealth.from_json, body)
        return health

    async def decide(self, job: str, request: Mapping[str, Any]) -> JSON:
        """``POST /v1/jobs/{job}/decisions``; see :meth:`Backstop.decide`."""
        body, _ = await self._send("POST", f"/v1/jobs/{_segment(job)}/decisions", dict(request))
        result: JSON = body
        return result

    async def jobs(self) -> List[JSON]:
        """``GET /v1/jobs``; see :meth:`Backstop.jobs`."""
        body, _ = await self._send("GET", "/v1/jobs")
        jobs: List[JSON] = self._parse(_job_list, body)
        return jobs

    async def failed_approaches(self) -> List[FailedApproach]:
        """``GET /v1/approaches``; see :meth:`Backstop.failed_approaches`."""
        body, _ = await self._send("GET", "/v1/approaches")
        approaches: List[FailedApproach] = self._parse(_approach_list, body)
        return approaches

    async def job_brief(self, job: str) -> JSON:
        """``GET /v1/jobs/{job}``; see :meth:`Backstop.job_brief`."""
        body, _ = await self._send("GET", f"/v1/jobs/{_segment(job)}")
        brief: JSON = body
        return brief

    async def case(self, job: str, case_id: str) -> JSON:
        """``GET /v1/jobs/{job}/cases/{id}``; see :meth:`Backstop.case`."""
        body, _ = await self._send(
            "GET", f"/v1/jobs/{_segment(job)}/cases/{_segment(case_id)}"
        )
        case: JSON = body
        return case

    def guard(
        self,
        task: str,
        tool: Optional[str] = None,
        *,
        fallback: Optional[Fallback] = None,
        promoted: Optional[Callable[..., Any]] = None,
        max_attempts: Optional[int] = None,
        operation: Optional[str] = None,
        exceptions: Union[Type[BaseException], Tuple[Type[BaseException], ...]] = (Exception,),
        describe: Optional[Describe] = None,
        on_step: Optional[OnStep] = None,
        sleep: Optional[Callable[[float], Awaitable[None]]] = None,
    ) -> AsyncGuard:
        """An async guard; the arguments of :meth:`Backstop.guard`. ``fallback`` and
        ``promoted`` may be sync or async callables."""
        spec = self._guard_spec(
            task,
            tool,
            operation,
            fallback,
            promoted,
            max_attempts,
            exceptions if isinstance(exceptions, tuple) else (exceptions,),
            describe,
            on_step,
        )
        return AsyncGuard(self, spec, sleep or self.sleep)
