"""The case's agent, offline: a fixed set of intents answered from the case's stored results
(the fenced context it was given), and a plain "this needs a language model" for the rest."""

from __future__ import annotations

import json
import re

from agents.chat.assistant import ASSISTANT_ID
from agents.llm.offline_registry import offline_analyst
from agents.runtime.prompting import unfence_data

NEEDS_LLM = ("That question needs a language model. Without one (LLM_PROVIDER=offline) I answer a fixed "
             "set of questions from this case's stored results: what was found, why this severity or "
             "priority, which tools ran, the case's timeline{own}.")
HELP = ("Ask me what was found, why this severity (or priority), which tools ran, what happened on the "
        "case (its timeline){own}.")
INTENTS = [
    ("tests", re.compile(r"\btests?\b", re.I)),
    ("timeline", re.compile(r"timeline|history|who (did|decided|changed)|audit", re.I)),
    ("tools", re.compile(r"\btools?\b|\bcall(s|ed)?\b|\bran\b|\bsteps?\b", re.I)),
    ("why", re.compile(r"\bwhy\b|severity|\brisk|priorit|\brated?\b|\bscore", re.I)),
    ("found", re.compile(r"found|finding|result|what (did|was|were)|summar|conclu|recommend", re.I)),
    ("help", re.compile(r"^\s*(hi|hello|help)\b|what can you", re.I)),
]
SKIP_PREFIXES = ("<case-data", "Summary of the earlier conversation", "Finish by calling")
KEYS = ("summary", "findings", "concerns", "message", "reasoning", "recommendation", "recommended_action",
        "severity", "risk_level", "risk_score", "decision", "category")


def question_of(messages) -> str:
    for message in reversed(messages or []):
        if message.role == "user" and not message.content.startswith(SKIP_PREFIXES):
            return message.content
    return ""


def intent_of(question: str) -> str:
    return next((name for name, pattern in INTENTS if pattern.search(question)), "")


def _text(value) -> str:
    if isinstance(value, list):
        return "; ".join(_text(v) for v in value[:6])
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False)[:300]
    return str(value)[:400]


def _agent_lines(data: dict, keys=KEYS) -> list[str]:
    lines = []
    for run in data.get("agent_runs", []):
        for entry in run["results"].values():
            output = entry.get("output")
            if entry.get("error"):
                lines.append(f"{entry['agent']} ({run['pipeline']}) failed: {entry['error'][:200]}")
            elif isinstance(output, dict):
                picked = [f"{k}: {_text(output[k])}" for k in keys if output.get(k) not in (None, "", [])]
                if picked:
                    lines.append(f"{entry['agent']}: " + " | ".join(picked[:3]))
    return lines


def found(data: dict) -> str:
    lines = _agent_lines(data)
    return ("From the agents' results:\n" + "\n".join(f"- {line}" for line in lines[:8])) if lines else \
        "No agent has reported anything on this case yet."


def why(data: dict) -> str:
    case = data["case"]
    lines = _agent_lines(data, keys=("severity", "risk_level", "risk_score", "priority", "reasoning", "summary"))
    return (f"The case's priority is {case['priority']}.\n" + "\n".join(f"- {line}" for line in lines[:6])).strip()


def tools_ran(data: dict) -> str:
    parts = []
    for run in data.get("agent_runs", []):
        calls = [f"{c['tool']}({', '.join(f'{k}={v}' for k, v in (c['arguments'] or {}).items())})"
                 + ("" if c["ok"] else " failed") for c in run.get("tool_calls", [])]
        agents = sorted({e["agent"] for e in run["results"].values()})
        parts.append(f"{run['pipeline']} run ({run['status']}): agents {', '.join(agents) or 'none'}; tools "
                     + (", ".join(calls) if calls else "none") + ".")
    return "\n".join(parts) or "No agent run has happened on this case yet."


def _tool_result(messages, name: str):
    """This question's result of a tool (the history holds no earlier turn's tool results)."""
    for message in reversed(messages or []):
        if message.role == "tool" and message.name == name:
            try:
                return unfence_data(message.content)
            except ValueError:
                return {"error": "unparseable", "message": message.content[:200]}
    return None


def timeline(data: dict, messages):
    result = _tool_result(messages, "get_case_timeline")
    if result is None:
        return [{"id": "get_case_timeline-1", "name": "get_case_timeline",
                 "arguments": {"reference": data["case"]["reference"], "limit": 10}}]
    if "error" in result and "message" in result:
        return f"The timeline could not be read: {result['message']}"
    return "The case's latest entries (from get_case_timeline), newest first:\n" + "\n".join(
        f"- {e['at'][:16].replace('T', ' ')} {e['actor']}: {e['action']}" for e in result["entries"])


@offline_analyst(ASSISTANT_ID)
def case_assistant(data: dict, messages=None):
    question = question_of(messages)
    # The case type's own read-only tools answer it first (Chat.offline, from the type's package).
    from casework.cases.types import CASE_TYPES

    case_type = CASE_TYPES.get(data["case"].get("case_type", ""))
    chat = getattr(case_type, "chat", None)
    made = chat.offline(question, data, messages) if chat is not None and chat.offline else None
    if made is not None:
        return made if isinstance(made, list) else {"answer": made}
    intent = intent_of(question)
    if intent == "timeline":
        made = timeline(data, messages)
        if made is not None:
            return made if isinstance(made, list) else {"answer": made}
    if intent in ("tests", "timeline"):  # a case without tests of its own (its type answers above)
        intent = "found"
    answer = {"found": found, "why": why, "tools": tools_ran}.get(intent)
    if answer is not None:
        return {"answer": answer(data)}
    # What this type's own tools answer offline, in its own words (Chat.offline_help).
    own = getattr(chat, "offline_help", "")
    if intent == "help":
        return {"answer": HELP.format(own=f", or {own}" if own else "")}
    return {"answer": NEEDS_LLM.format(own=f", and from the case's own records: {own}" if own else "")}
