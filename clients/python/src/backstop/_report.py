"""A report built from an exception, by duck typing: no HTTP library is imported.

The fields are the ones ``POST /v1/classify`` takes (docs/rules.md): ``exception``,
``message``, ``http_status``, ``headers``, ``errno``, ``exit_code``, ``signal``, ``sqlstate``,
``grpc_code``, ``error_code``, ``tool``, ``operation``, ``elapsed_ms``. Every cap the service
enforces is kept here, so a report built from any exception is never refused.
"""

from __future__ import annotations

import errno as errno_module
import re
import signal as signal_module
from typing import Any, Dict, Iterator, Mapping, Optional, Set

__all__ = ["report_from_exception"]

# The service's caps (docs/service.md, "String fields").
_ID_CHARS = 200
_HEADER_VALUE_CHARS = 8192
_OPERATION_CHARS = 2000
# Only the first 4,096 bytes of a message are read; the body gets its own share after the
# exception's text.
_MESSAGE_CHARS = 1024
_BODY_CHARS = 4096
# Response headers never sent: they say nothing about the failure and may carry secrets.
_DROPPED_HEADERS = frozenset({"set-cookie", "set-cookie2", "authorization", "proxy-authorization"})
_SQLSTATE = re.compile(r"^[0-9A-Za-z]{5}$")


def _type_name(exc: BaseException) -> str:
    kind = type(exc)
    module = kind.__module__
    name = kind.__qualname__
    if module in ("builtins", "__main__") or not module:
        return name
    return f"{module}.{name}"[-_ID_CHARS:]


def _chain(exc: BaseException) -> Iterator[BaseException]:
    """The exception, then its causes and contexts (at most 8, no cycles)."""
    seen: Set[int] = set()
    current: Optional[BaseException] = exc
    while current is not None and id(current) not in seen and len(seen) < 8:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def _response_fields(response: Any, report: Dict[str, Any]) -> Optional[str]:
    """Status and headers of an httpx- or requests-like response into ``report``; returns the
    body text, if it can be read without side effects."""
    if isinstance(response, Mapping):
        # botocore's ClientError: response = {"Error": {"Code"}, "ResponseMetadata": {...}}
        err = response.get("Error")
        if isinstance(err, Mapping) and isinstance(err.get("Code"), str):
            report.setdefault("error_code", err["Code"][:_ID_CHARS])
        meta = response.get("ResponseMetadata")
        if isinstance(meta, Mapping):
            status = meta.get("HTTPStatusCode")
            if isinstance(status, int) and 100 <= status <= 599:
                report.setdefault("http_status", status)
        return None
    try:
        status = getattr(response, "status_code", None)
    except Exception:
        status = None
    if isinstance(status, int) and not isinstance(status, bool) and 100 <= status <= 599:
        report["http_status"] = status
    try:
        headers = getattr(response, "headers", None)
    except Exception:
        headers = None
    _headers_into(headers, report)
    try:
        # httpx raises ResponseNotRead for an unread streamed body: then there is no text.
        body = getattr(response, "text", None)
    except Exception:
        body = None
    return body if isinstance(body, str) else None


def _headers_into(headers: Any, report: Dict[str, Any]) -> None:
    """Response headers (anything with ``items()``) into ``report["headers"]``, within caps."""
    try:
        items = list(headers.items()) if headers is not None else []
    except Exception:
        items = []
    collected: Dict[str, str] = {}
    for name, value in items:
        name_text = str(name).strip()
        value_text = str(value)
        lower = name_text.lower()
        if (
            not name_text
            or lower in _DROPPED_HEADERS
            or len(name_text) > _ID_CHARS
            or len(value_text) > _HEADER_VALUE_CHARS
        ):
            continue
        collected[lower] = (
            f"{collected[lower]}, {value_text}" if lower in collected else value_text
        )
        if len(collected[lower]) > _HEADER_VALUE_CHARS:
            del collected[lower]
    if collected:
        report["headers"] = collected


_IDEMPOTENT_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE"})
_NON_IDEMPOTENT_METHODS = frozenset({"POST", "PATCH"})


def _request_of(exc: BaseException) -> Any:
    """The HTTP request an httpx- or requests-like exception (or its response) was for."""
    for holder in (exc, getattr(exc, "response", None)):
        if holder is None:
            continue
        try:
            request = getattr(holder, "request", None)
        except Exception:  # httpx raises RuntimeError when an error was made without one
            request = None
        if request is not None and isinstance(getattr(request, "method", None), str):
            return request
    return None


def _request_into(exc: BaseException, report: Dict[str, Any]) -> None:
    """``idempotency_key`` and ``idempotent`` from the request the exception was for: its
    ``Idempotency-Key`` header, and its method as RFC 9110 defines them (GET, HEAD, OPTIONS,
    TRACE, PUT, DELETE are idempotent; POST and PATCH are not, unless sent under a key)."""
    request = _request_of(exc)
    if request is None:
        return
    headers = getattr(request, "headers", None)
    key = None
    if headers is not None:
        try:
            key = headers.get("Idempotency-Key")
        except Exception:
            key = None
    if isinstance(key, bytes):
        key = key.decode("utf-8", "replace")
    if isinstance(key, str) and key.strip():
        report["idempotency_key"] = key.strip()[:_ID_CHARS]
    method = request.method.upper()
    if method in _IDEMPOTENT_METHODS:
        report["idempotent"] = True
    elif method in _NON_IDEMPOTENT_METHODS:
        report["idempotent"] = False


def report_from_exception(
    exc: BaseException,
    *,
    tool: Optional[str] = None,
    operation: Optional[str] = None,
    elapsed_ms: Optional[int] = None,
) -> Dict[str, Any]:
    """The report backstop classifies, built from a tool's exception.

    - ``exception``: the type, qualified by its module (``httpx.HTTPStatusError``; builtins
      bare: ``ConnectionRefusedError``);
    - ``message``: ``str(exc)``, then the response body's text on the next line (the service's
      extractors read provider error codes out of a JSON body there);
    - from ``exc.response`` when it has ``status_code`` / ``headers`` / ``text`` (httpx,
      requests, the OpenAI and Anthropic SDKs): ``http_status``, ``headers`` (``Set-Cookie``
      dropped), and the body; from a botocore-style ``response`` dict: ``error_code`` and
      ``http_status``;
    - ``errno`` by name (``ECONNREFUSED``) from the first ``OSError`` with an errno in the
      exception's cause/context chain;
    - ``exit_code`` or ``signal`` from ``subprocess.CalledProcessError``-like ``returncode``;
    - ``sqlstate`` from ``exc.sqlstate`` / ``exc.pgcode`` (psycopg), ``grpc_code`` from a
      callable ``exc.code()`` whose result has a ``name`` (grpc), ``error_code`` from a string
      ``exc.code`` (OpenAI SDK errors);
    - ``idempotent`` from the request's method (httpx, requests: POST and PATCH are not;
      GET, HEAD, OPTIONS, TRACE, PUT and DELETE are) and ``idempotency_key`` from its
      ``Idempotency-Key`` header, so backstop never answers ``retry_same`` to a POST whose
      answer was lost (the step is ``reconcile``); a ``describe`` callable may say otherwise;
    - ``tool``, ``operation`` and ``elapsed_ms`` as given.
    """
    report: Dict[str, Any] = {"exception": _type_name(exc)}
    try:
        message = str(exc)
    except Exception:
        message = ""
    message = message[:_MESSAGE_CHARS]

    body: Optional[str] = None
    response = getattr(exc, "response", None)
    if response is not None:
        body = _response_fields(response, report)
    if "http_status" not in report:
        # urllib.error.HTTPError: code and headers on the exception itself.
        status = getattr(exc, "code", None) if hasattr(exc, "getcode") else None
        if isinstance(status, int) and 100 <= status <= 599:
            report["http_status"] = status
            _headers_into(getattr(exc, "headers", None), report)

    parts = [p for p in (message.strip(), (body or "").strip()[:_BODY_CHARS]) if p]
    if parts:
        report["message"] = "\n".join(parts)

    for link in _chain(exc):
        number = getattr(link, "errno", None) if isinstance(link, OSError) else None
        if isinstance(number, int) and number in errno_module.errorcode:
            report["errno"] = errno_module.errorcode[number]
            break

    returncode = getattr(exc, "returncode", None)
    if isinstance(returncode, int) and not isinstance(returncode, bool):
        if returncode < 0:
            try:
                report["signal"] = signal_module.Signals(-returncode).name
            except ValueError:
                report["exit_code"] = returncode
        else:
            report["exit_code"] = returncode

    for attr in ("sqlstate", "pgcode"):
        value = getattr(exc, attr, None)
        if isinstance(value, str) and _SQLSTATE.match(value):
            report["sqlstate"] = value.upper()
            break

    code = getattr(exc, "code", None)
    if callable(code) and "grpc" in type(exc).__module__:
        try:
            name = getattr(code(), "name", None)
        except Exception:
            name = None
        if isinstance(name, str) and name:
            report["grpc_code"] = name
    elif isinstance(code, str) and code.strip() and "error_code" not in report:
        report["error_code"] = code.strip()[:_ID_CHARS]

    _request_into(exc, report)
    if tool:
        report["tool"] = tool
    if operation:
        report["operation"] = operation[:_OPERATION_CHARS]
    if elapsed_ms is not None:
        report["elapsed_ms"] = max(0, int(elapsed_ms))
    return report
