"""The detective, offline: a real tool-calling analyst. It reads the summary, fetches the test
details when anything failed, and files the report; its findings quote only tool results,
which it reads back from the conversation as a model would (never from the database)."""

from __future__ import annotations

from agents.llm.offline_registry import offline_analyst
from agents.pipelines.releases_agents.rules import assess
from agents.runtime.prompting import unfence_data


def tool_results(messages) -> dict[str, list]:
    """Tool name -> what it returned so far, in order ({"error", "message"} for a failure)."""
    seen: dict[str, list] = {}
    for message in messages or []:
        if message.role != "tool":
            continue
        try:
            content = unfence_data(message.content)
        except (TypeError, ValueError):
            content = {"error": "unparseable", "message": str(message.content)[:200]}
        seen.setdefault(message.name, []).append(content)
    return seen


def failed(result) -> bool:
    return isinstance(result, dict) and set(result) == {"error", "message"}


def _call(name: str, n: int, **arguments) -> dict:
    return {"id": f"{name}-{n}", "name": name, "arguments": arguments}


@offline_analyst("detective")
def detective(data: dict, messages=None):
    release_id = data["release_id"]
    seen = tool_results(messages)
    if "get_release_summary" not in seen:
        return [_call("get_release_summary", 1, release_id=release_id)]
    summary = seen["get_release_summary"][-1]
    summary_error = summary["message"] if failed(summary) else ""
    summary = None if summary_error else summary
    if summary and summary["tests"]["failed"] and "get_test_details" not in seen:
        return [_call("get_test_details", 1, release_id=release_id)]
    details = (seen.get("get_test_details") or [None])[-1]
    details_error = details["message"] if failed(details) else ""
    severity, findings, _ = assess(summary, None if details_error else details, summary_error=summary_error,
                                   details_error=details_error)
    filed = seen.get("file_risk_report", [])
    if len(filed) >= 2:  # refused twice: say so in the last try's findings instead of looping
        findings = [*findings, f"Filing failed before: {filed[-1].get('message', '')}"[:500]]
    return [_call("file_risk_report", len(filed) + 1, release_id=release_id, severity=severity,
                  findings=findings[:20])]
