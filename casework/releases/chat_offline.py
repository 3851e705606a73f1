"""The offline assistant's answers on a release (Chat.offline): which tests failed, from its
read-only tool get_test_details (casework/releases/chat_tools.py); and what was found and why
this severity, from the filed risk report in the conversation's context (release_chat_context).
Any other question, or a release without a report, is left to what every case answers
(agents.chat.offline)."""

from __future__ import annotations

import re

from agents.chat.offline_domain import intent_answer, tool_call, tool_failed, tool_results

INTENTS = [("tests", re.compile(r"\btests?\b", re.I))]


def failed_tests(intent: str, data: dict, messages):
    """A list of tool calls to make, or the answer's text once their results are in; None on a
    case without its release."""
    release = ((data.get("record") or {}).get("release") or {})
    if not release:
        return None
    results = tool_results(messages, "get_test_details")
    if not results:
        return [tool_call("get_test_details", 1, release_id=release["release_id"])]
    result = results[-1]
    if tool_failed(result):
        return f"The test details could not be read: {tool_failed(result)}"
    failed = [t for t in result["tests"] if t["status"] == "failed"]
    if not failed:
        counts = release["tests"]
        return (f"get_test_details lists no failed test ({counts['failed']} failed in the summary, "
                f"{len(result['tests'])} tests with details).")
    return "Failed tests (from get_test_details):\n" + "\n".join(
        f"- {t['name']} ({t['area'] or 'no area'}{', critical' if t['critical'] else ''})"
        + (f": {t['message']}" if t["message"] else "") for t in failed[:20])


def _from_report(intent: str, data: dict) -> str | None:
    record = data.get("record") or {}
    report = record.get("risk_report")
    if intent == "found" and report:
        return (f"The detective filed {report['report_id']} ({report['severity']}). Findings:\n"
                + "\n".join(f"- {f}" for f in report["findings"]))
    if intent == "why" and report:
        parts = [f"The release is rated {report['severity']} because:"] + [f"- {f}" for f in report["findings"]]
        if report.get("adjusted_from"):
            parts.append(f"It was filed as {report['adjusted_from']} and raised, as data was missing.")
        return "\n".join(parts)
    if intent == "why" and record.get("assessment_error"):
        return f"There is no severity: the detective failed ({record['assessment_error']})."
    return None


_tests = intent_answer(INTENTS, failed_tests)


def release_chat_offline(question: str, data: dict, messages):
    made = _tests(question, data, messages)
    if made is not None:
        return made
    # "What was found?", "Why this severity?" as the shared intents read the question (their order decides).
    from agents.chat.offline import intent_of

    intent = intent_of(question)
    return _from_report(intent, data) if intent in ("found", "why") else None
