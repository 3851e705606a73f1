"""Rule-based analysts that the offline provider runs in place of an LLM, one per agent id.

An analyst is a deterministic function of the agent's input data (the same dict the LLM
would see fenced in its user message). It returns a dict matching the agent's output model
and explains itself in that output. Register with:

    @offline_analyst("transaction")
    def transaction(data: dict) -> dict: ...
"""

from __future__ import annotations

import re
from collections.abc import Callable

OFFLINE_ANALYSTS: dict[str, Callable[[dict], dict]] = {}


def offline_analyst(agent_id: str):
    def register(fn: Callable[[dict], dict]) -> Callable[[dict], dict]:
        if agent_id in OFFLINE_ANALYSTS and OFFLINE_ANALYSTS[agent_id] is not fn:
            raise ValueError(f"An offline analyst for {agent_id!r} is already registered.")
        OFFLINE_ANALYSTS[agent_id] = fn
        return fn

    return register


# --- What a tool-calling analyst needs: the tool results so far, and a way to ask for more ---

def tool_results(messages) -> dict[str, list]:
    """Tool name -> what it returned so far, in order ({"error", "message"} for a failure).

    Tool results come back fenced like case data (agents.runtime.prompting), as a model
    reads them; one that cannot be read counts as a failure."""
    from agents.runtime.prompting import unfence_data

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


def tool_failed(result) -> bool:
    """A tool result that is the runtime's {"error", "message"} failure."""
    return isinstance(result, dict) and set(result) == {"error", "message"}


def tool_call(name: str, n: int, **arguments) -> dict:
    """Ask for a tool (an analyst returns a list of these instead of an answer)."""
    return {"id": f"{name}-{n}", "name": name, "arguments": arguments}


_RUNTIME_PREFIX = re.compile(r"^\w+ failed: (?:[A-Z]\w*(?:Error|Exception|Unavailable|Timeout)\w*: )?")


def readable_error(message: str) -> str:
    """A tool failure as a person reads it: the runtime's "<tool> failed: <ExceptionType>: "
    prefix (there for the model and the logs) dropped, the tool's own sentence kept."""
    return _RUNTIME_PREFIX.sub("", str(message or "").strip()) or "no reason was given"
