"""Rule-based analysts that the offline provider runs in place of an LLM, one per agent id.

An analyst is a deterministic function of the agent's input data (the same dict the LLM
would see fenced in its user message). It returns a dict matching the agent's output model
and explains itself in that output. Register with:

    @offline_analyst("transaction")
    def transaction(data: dict) -> dict: ...
"""

from __future__ import annotations

from collections.abc import Callable

OFFLINE_ANALYSTS: dict[str, Callable[[dict], dict]] = {}


def offline_analyst(agent_id: str):
    def register(fn: Callable[[dict], dict]) -> Callable[[dict], dict]:
        if agent_id in OFFLINE_ANALYSTS and OFFLINE_ANALYSTS[agent_id] is not fn:
            raise ValueError(f"An offline analyst for {agent_id!r} is already registered.")
        OFFLINE_ANALYSTS[agent_id] = fn
        return fn

    return register
