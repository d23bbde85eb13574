"""One scenario every transport runs: initialize, list the tools and resources, call each
tool, and see a refusal come back as a tool error."""

from __future__ import annotations

import json
import uuid
from typing import Any

from mcp import ClientSession

from conftest import REPO

EXPECTED_TOOLS = {
    "classify",
    "next_step",
    "report_outcome",
    "job_brief",
    "case_status",
    "decide_vendor-risk",
    "decide_company-classification",
    "decide_po-acknowledgement",
}


def text_of(result: Any) -> list[str]:
    return [block.text for block in result.content if block.type == "text"]


def vendor_request(execution_id: str, case_id: str) -> dict[str, Any]:
    """The README's example request, as a new case."""
    request: dict[str, Any] = json.loads((REPO / "examples" / "request.json").read_text())
    request["execution_id"] = execution_id
    request["case"] = {"id": case_id}
    return request


async def run(session: ClientSession) -> None:
    initialized = await session.initialize()
    assert initialized.server_info.name == "backstop"
    assert "next_step" in (initialized.instructions or "")

    tools = {tool.name: tool for tool in (await session.list_tools()).tools}
    assert EXPECTED_TOOLS <= set(tools), sorted(tools)
    # A decide tool's input is the pack's own request schema.
    decide = tools["decide_vendor-risk"].input_schema
    assert decide["type"] == "object"
    assert "execution_id" in decide["properties"]
    assert "data_access" in json.dumps(decide)
    assert tools["job_brief"].input_schema["properties"]["job"]["enum"]

    # Each job's brief is a resource too.
    resources = {str(r.uri) for r in (await session.list_resources()).resources}
    assert "backstop://jobs/vendor-risk" in resources
    read = await session.read_resource("backstop://jobs/vendor-risk")
    brief = json.loads(read.contents[0].text)
    assert brief["job"] == "vendor-risk"
    assert "request_schema" in brief

    # classify: the JSON and one line.
    classified = await session.call_tool("classify", {"http_status": 503})
    assert not classified.is_error
    assert classified.structured_content["class"] == "transient"
    assert text_of(classified)[0].startswith("transient, retryable")

    # next_step: a rate limit says how long to wait.
    task = f"mcp-{uuid.uuid4()}"
    step = await session.call_tool(
        "next_step",
        {
            "task": task,
            "report": {"http_status": 429, "headers": {"Retry-After": "2"}},
            "context": {"tool": "search"},
        },
    )
    assert not step.is_error
    assert step.structured_content["action"] == "wait"
    # The wait is the server's 2 s plus jitter, rounded up to a tenth: never less than asked.
    waited = step.structured_content["delay_ms"]
    assert waited >= 2000
    assert text_of(step)[0].startswith(f"retry in {-(-waited // 100) / 10:.1f} s:"), text_of(step)

    # A policy denial: stop, and no other tool.
    denied = await session.call_tool(
        "next_step",
        {
            "task": f"{task}-denied",
            "report": {"http_status": 403, "message": "request blocked by content policy"},
            "context": {"tool": "search"},
        },
    )
    assert denied.structured_content["action"] == "stop"
    assert text_of(denied)[0].startswith("stop: policy denial"), text_of(denied)

    # A charge whose answer was lost may have gone through: never resent, checked first.
    lost = await session.call_tool(
        "next_step",
        {
            "task": f"{task}-charge",
            "report": {"exception": "ReadTimeout", "operation": "POST /v1/charges"},
            "context": {"tool": "payments"},
        },
    )
    assert not lost.is_error, text_of(lost)
    assert lost.structured_content["action"] == "reconcile"
    assert text_of(lost)[0].startswith("the outcome is unknown: do not call it again"), text_of(
        lost
    )

    outcome = await session.call_tool(
        "report_outcome", {"tool": "search", "outcome": "success", "task": task}
    )
    assert not outcome.is_error, text_of(outcome)
    assert text_of(outcome)[0].startswith("recorded")

    # A task that spends every attempt on one tool and operation: the caller's next task is
    # told, and so is the next brief.
    spent_report = {"http_status": 503, "tool": f"flaky-{task}", "operation": "GET /items"}
    for _ in range(10):
        spent = await session.call_tool(
            "next_step", {"task": f"{task}-spent", "report": spent_report}
        )
        if spent.structured_content["action"] == "escalate":
            break
    assert spent.structured_content["action"] == "escalate", spent.structured_content
    warned = await session.call_tool(
        "next_step", {"task": f"{task}-after", "report": spent_report}
    )
    assert warned.structured_content["action"] == "change_approach", warned.structured_content
    assert warned.structured_content["failed_approach"]["tool"] == f"flaky-{task}"
    assert "This approach failed before" in text_of(warned)[0], text_of(warned)

    brief_call = await session.call_tool("job_brief", {"job": "vendor-risk"})
    assert not brief_call.is_error
    assert brief_call.structured_content["title"]
    tools_avoided = [a["tool"] for a in brief_call.structured_content["failed_approaches"]]
    assert f"flaky-{task}" in tools_avoided, brief_call.structured_content
    assert "failed approach(es) of yours to avoid" in text_of(brief_call)[0], text_of(brief_call)

    case_id = f"{uuid.uuid4().hex[:8]}.com"
    decided = await session.call_tool(
        "decide_vendor-risk", vendor_request(f"run-{uuid.uuid4()}", case_id)
    )
    assert not decided.is_error, text_of(decided)
    # The example is held for the privacy team: the line names who gets it.
    assert decided.structured_content["status"] == "held", decided.structured_content
    escalation = decided.structured_content["escalation"]
    assert text_of(decided)[0] == f"escalate to {escalation['to']}: {escalation['why']}"

    status = await session.call_tool(
        "case_status", {"job": "vendor-risk", "id": decided.structured_content["case"]["id"]}
    )
    assert not status.is_error, text_of(status)

    # A refusal is a tool error, with the API's refusal as its JSON.
    refused = await session.call_tool(
        "next_step", {"task": task, "report": {"http_status": 503, "body": "nope"}}
    )
    assert refused.is_error
    assert refused.structured_content["error"]["code"] == "malformed"
    assert text_of(refused)[0].startswith("refused (400 malformed)"), text_of(refused)
    assert "report.body" in text_of(refused)[0]

    missing = await session.call_tool("case_status", {"job": "vendor-risk", "id": "never.seen"})
    assert missing.is_error
    assert text_of(missing)[0].startswith("refused (404"), text_of(missing)

    # Every decide tool answers; a request its schema refuses is a tool error that says why.
    for name in sorted(EXPECTED_TOOLS):
        if name.startswith("decide_") and name != "decide_vendor-risk":
            empty = await session.call_tool(name, {})
            assert empty.is_error, (name, text_of(empty))
            assert "execution_id" in text_of(empty)[0], text_of(empty)

    bad_arguments = await session.call_tool("job_brief", {})
    assert bad_arguments.is_error
    assert "`job` is required" in text_of(bad_arguments)[0]
