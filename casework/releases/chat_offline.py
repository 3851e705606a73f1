"""The offline assistant's question the release's read-only tools answer (casework/releases/chat_tools.py):
which tests failed, from get_test_details. Registered as Chat.offline."""

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


release_chat_offline = intent_answer(INTENTS, failed_tests)
