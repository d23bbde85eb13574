"""The report built from an exception, checked against what the service accepts."""

from __future__ import annotations

import subprocess
import urllib.error
from email.message import Message

import pytest

import backstop
from backstop import Backstop, report_from_exception

from helpers import RequestsLikeHTTPError, RequestsLikeResponse, Server, http_error


def test_an_httpx_error(server: Server) -> None:
    error = http_error(
        503,
        '{"error": {"code": "overloaded_error", "message": "Overloaded"}}',
        {"Retry-After": "3", "Set-Cookie": "session=secret", "X-Request-Id": "r-1"},
    )
    report = report_from_exception(error)
    assert report["exception"] == "httpx.HTTPStatusError"
    assert report["http_status"] == 503
    assert report["headers"]["retry-after"] == "3"
    assert report["headers"]["x-request-id"] == "r-1"
    assert "set-cookie" not in report["headers"]
    first, body = report["message"].split("\n", 1)
    assert "503 Service Unavailable" in first
    assert "overloaded_error" in body
    with Backstop(server.url) as bs:
        classified = bs.classify(report)
    assert classified.class_ == "transient"
    assert classified.retry_after_ms == 3000


def test_a_requests_like_error_is_duck_typed() -> None:
    error = RequestsLikeHTTPError(
        "404 Client Error", RequestsLikeResponse(404, {"Content-Type": "text/html"}, "<p>gone</p>")
    )
    report = report_from_exception(error, tool="wiki", operation="GET /page", elapsed_ms=12)
    assert report["http_status"] == 404
    assert report["headers"] == {"content-type": "text/html"}
    assert report["message"] == "404 Client Error\n<p>gone</p>"
    assert report["exception"].endswith("RequestsLikeHTTPError")
    assert (report["tool"], report["operation"], report["elapsed_ms"]) == ("wiki", "GET /page", 12)


def test_an_unread_streamed_body_is_left_alone() -> None:
    class Unread:
        status_code = 500
        headers = {"content-type": "application/json"}

        @property
        def text(self) -> str:
            raise RuntimeError("ResponseNotRead")

    error = RuntimeError("boom")
    error.response = Unread()  # type: ignore[attr-defined]
    report = report_from_exception(error)
    assert report["http_status"] == 500 and report["message"] == "boom"


def test_urllib_http_error() -> None:
    headers = Message()
    headers["Retry-After"] = "7"
    error = urllib.error.HTTPError("https://x.example", 429, "Too Many Requests", headers, None)
    report = report_from_exception(error)
    assert report["http_status"] == 429
    assert report["headers"] == {"retry-after": "7"}


def test_a_process_failure() -> None:
    killed = report_from_exception(subprocess.CalledProcessError(-9, ["make"]))
    assert killed["signal"] == "SIGKILL" and "exit_code" not in killed
    failed = report_from_exception(subprocess.CalledProcessError(2, ["make"]))
    assert failed["exit_code"] == 2


def test_library_codes() -> None:
    class SerializationFailure(Exception):
        sqlstate = "40001"

    class APIError(Exception):
        code = "insufficient_quota"

    assert report_from_exception(SerializationFailure())["sqlstate"] == "40001"
    assert report_from_exception(APIError("quota"))["error_code"] == "insufficient_quota"


def test_caps_keep_any_report_acceptable(server: Server) -> None:
    long = "x" * 100_000
    error = http_error(500, long, {"X-Long": "v" * 9000, "X-Ok": "fine"})
    error.args = (long,)
    report = report_from_exception(error, operation=long)
    assert "x-long" not in report["headers"] and report["headers"]["x-ok"] == "fine"
    assert len(report["message"]) <= 1024 + 1 + 4096
    with Backstop(server.url) as bs:
        assert bs.classify(report).class_ == "transient"


def test_an_empty_message_is_left_out(server: Server) -> None:
    report = report_from_exception(TimeoutError())
    assert report == {"exception": "TimeoutError"}
    with Backstop(server.url) as bs:
        assert bs.classify(report).class_ == "transient"


@pytest.mark.parametrize(("status", "taken"), [(429, True), (599, True), (600, False), (True, False)])
def test_only_http_statuses_are_taken(status: object, taken: bool) -> None:
    error = RequestsLikeHTTPError("x", RequestsLikeResponse(status, {}, ""))  # type: ignore[arg-type]
    assert ("http_status" in report_from_exception(error)) is taken


def test_backstop_error_str_lists_issues() -> None:
    error = backstop.Malformed(
        "bad", status=400, code="malformed", issues=(backstop.Issue("a.b", "too_long", "long"),)
    )
    assert str(error) == "HTTP 400 malformed: bad\n  a.b: too_long: long"
