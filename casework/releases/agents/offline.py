"""The detective, offline: a real tool-calling analyst. It reads the summary, fetches the test
details when anything failed, and files the report; its findings quote only tool results,
which it reads back from the conversation as a model would (never from the database)."""

from __future__ import annotations

from agents.llm.offline_registry import offline_analyst, tool_call, tool_failed, tool_results
from casework.releases.agents.rules import assess


@offline_analyst("detective")
def detective(data: dict, messages=None):
    release_id = data["release_id"]
    seen = tool_results(messages)
    if "get_release_summary" not in seen:
        return [tool_call("get_release_summary", 1, release_id=release_id)]
    summary = seen["get_release_summary"][-1]
    summary_error = summary["message"] if tool_failed(summary) else ""
    summary = None if summary_error else summary
    if summary and summary["tests"]["failed"] and "get_test_details" not in seen:
        return [tool_call("get_test_details", 1, release_id=release_id)]
    details = (seen.get("get_test_details") or [None])[-1]
    details_error = details["message"] if tool_failed(details) else ""
    severity, findings, _ = assess(summary, None if details_error else details, summary_error=summary_error,
                                   details_error=details_error)
    filed = seen.get("file_risk_report", [])
    if len(filed) >= 2:  # refused twice: say so in the last try's findings instead of looping
        findings = [*findings, f"Filing failed before: {filed[-1].get('message', '')}"[:500]]
    return [tool_call("file_risk_report", len(filed) + 1, release_id=release_id, severity=severity,
                  findings=findings[:20])]
