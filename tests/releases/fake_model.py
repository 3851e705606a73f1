"""A fake model for the fake OpenAI and Anthropic servers that plays the detective: it reads
the tool results back from the request, in either wire format, and decides with the offline
analyst's rules, so a whole run goes over HTTP with real tool calls and real severities."""

from __future__ import annotations

from agents.llm.base import Message
from agents.runtime.prompting import unfence_data
from casework.releases.agents.offline import detective
from tests.fakes.llm_servers import Reply, tool_calls


def _text_of(content) -> str:
    if isinstance(content, str):
        return content
    return "".join(block.get("text", "") for block in content if isinstance(block, dict))


def conversation(body: dict) -> tuple[dict, list[Message]]:
    """(the task's fenced data, the tool results as Messages), from an OpenAI or Anthropic body."""
    names: dict[str, str] = {}
    data, messages = None, []
    for m in body["messages"]:
        content = m.get("content")
        if m["role"] == "assistant":
            for call in m.get("tool_calls") or []:  # OpenAI
                names[call["id"]] = call["function"]["name"]
            for block in content if isinstance(content, list) else []:  # Anthropic
                if block.get("type") == "tool_use":
                    names[block["id"]] = block["name"]
        elif m["role"] == "tool":
            messages.append(Message("tool", _text_of(content), name=names.get(m["tool_call_id"], "")))
        elif m["role"] == "user":
            blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
            for block in blocks:
                if block.get("type") == "tool_result":
                    messages.append(Message("tool", _text_of(block["content"]), name=names.get(block["tool_use_id"], "")))
                elif data is None and block.get("text", "").startswith("<case-data"):
                    data = unfence_data(block["text"])
    return data, messages


def tool_results(body: dict) -> list:
    return [unfence_data(m.content) for m in conversation(body)[1]]


def play_detective(body: dict) -> Reply:
    data, messages = conversation(body)
    calls = detective(data, messages)
    return tool_calls(*[(c["name"], c["arguments"]) for c in calls])
