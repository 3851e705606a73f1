"""What a case type's offline answers share (casework.cases.types.Chat.offline): its intents
matched against the question, the tool calls it asks for, the results that came back.

A type's offline answer asks for its tools on the first turn and answers from their results on
the next, quoting only what the tools returned (the history holds no earlier question's tool
results). agents.chat.offline asks the case's type first, then answers what every case shares.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any


def tool_results(messages, name: str) -> list:
    """This question's results of a tool, in the order they were asked for."""
    from agents.runtime.prompting import unfence_data

    found = []
    for message in messages or []:
        if message.role == "tool" and message.name == name:
            try:
                found.append(unfence_data(message.content))
            except ValueError:
                found.append({"error": "unparseable", "message": message.content[:200]})
    return found


def tool_call(name: str, number: int, **arguments) -> dict:
    return {"id": f"{name}-{number}", "name": name, "arguments": arguments}


def tool_failed(result) -> str | None:
    """A tool's error message, when its result is one."""
    if isinstance(result, dict) and "error" in result and "message" in result:
        return str(result["message"])
    return None


def intent_answer(intents: list[tuple[str, re.Pattern]],
                  answer: Callable[[str, dict, Any], Any]) -> Callable[[str, dict, Any], Any]:
    """Chat.offline from a type's (intent, pattern) list and its answer(intent, data, messages):
    the first intent whose pattern the question matches is answered; None when none does."""
    def offline(question: str, data: dict, messages) -> Any:
        intent = next((name for name, pattern in intents if pattern.search(question)), "")
        return answer(intent, data, messages) if intent else None

    return offline
