"""Test helpers: the server handle, a recording sleep, failing tools (real httpx errors and a
requests-like one)."""

from __future__ import annotations

import json
import socket
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Union

import httpx


@dataclass
class Server:
    """A running `backstop serve`."""

    url: str
    ledger: Path
    log: Path
    keys: Dict[str, str] = field(default_factory=dict)
    """Role → API key, for a keyed server."""


class Sleeps:
    """An injected sleep that records the delays instead of sleeping."""

    def __init__(self) -> None:
        self.delays: List[float] = []

    def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)

    async def asleep(self, seconds: float) -> None:
        self.delays.append(seconds)


def closed_port_url() -> str:
    """A URL on a loopback port nothing listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def http_error(
    status: int,
    body: Union[str, Dict[str, Any]] = "",
    headers: Optional[Dict[str, str]] = None,
    url: str = "https://api.example.com/v1/search",
) -> httpx.HTTPStatusError:
    """The error `response.raise_for_status()` raises for this answer."""
    request = httpx.Request("GET", url)
    content = json.dumps(body) if isinstance(body, dict) else body
    response = httpx.Response(status, headers=headers or {}, content=content, request=request)
    try:
        response.raise_for_status()
    except httpx.HTTPStatusError as exc:
        return exc
    raise AssertionError(f"{status} is not an error status")


class RequestsLikeResponse:
    """What `requests.Response` offers the report builder: status_code, headers, text."""

    def __init__(self, status_code: int, headers: Dict[str, str], text: str) -> None:
        self.status_code = status_code
        self.headers = headers
        self.text = text


class RequestsLikeHTTPError(IOError):
    """Like `requests.exceptions.HTTPError`: an IOError with `.response`."""

    def __init__(self, message: str, response: RequestsLikeResponse) -> None:
        super().__init__(message)
        self.response = response


class Script:
    """A tool that raises the given exceptions in turn, then returns ``result``; it records
    its calls' arguments."""

    def __init__(self, failures: Sequence[BaseException], result: Any = "ok") -> None:
        self.failures: List[BaseException] = list(failures)
        self.result = result
        self.calls: List[Any] = []

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.calls.append((args, kwargs))
        if self.failures:
            raise self.failures.pop(0)
        return self.result

    async def acall(self, *args: Any, **kwargs: Any) -> Any:
        return self(*args, **kwargs)


class Always:
    """A tool that always raises a fresh copy of an error."""

    def __init__(self, make: Any) -> None:
        self.make = make
        self.calls = 0

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        raise self.make()
