"""A fake OpenAI-compatible endpoint that plays a model doing its job: each request is answered
as the offline provider's analyst for that agent would answer it (agents.llm.offline_registry),
so a whole pipeline runs over real HTTP, through the real `openai` SDK, with real tool calls.

The agent is told by its system prompt (the request carries no agent id in its body); its
input is the fenced user message; earlier tool results are the conversation's tool messages,
named from the assistant's tool calls they answer. Tests read `server.requests` for what the
model was sent (a denial, say, as a tool result).
"""

from __future__ import annotations

import inspect
import json

from agents.llm.base import Message
from agents.llm.offline_registry import OFFLINE_ANALYSTS
from agents.runtime.pipeline import PIPELINES
from agents.runtime.prompting import unfence_data
from tests.fakes.llm_servers import FakeToolCall, Reply, json_answer


def agent_of(body: dict) -> str:
    system = body["messages"][0]["content"]
    matches = [agent.id for pipeline in PIPELINES.values() for agent in pipeline.agents.values()
               if system.startswith(agent.system_prompt.strip())]
    if not matches:
        raise AssertionError(f"No registered agent's prompt in: {system[:100]!r}")
    return max(matches, key=len)


def messages_of(body: dict) -> list[Message]:
    """The wire messages as the runtime's, each tool result named after the call it answers."""
    names = {}
    out = []
    for m in body["messages"]:
        for call in m.get("tool_calls") or []:
            names[call["id"]] = call["function"]["name"]
        out.append(Message(role=m["role"], content=m.get("content") or "", tool_call_id=m.get("tool_call_id", ""),
                           name=names.get(m.get("tool_call_id", ""), "")))
    return out


class OfflineModel:
    """server.handler: answers every request as the agent's offline analyst."""

    def __init__(self, server):
        self.server = server
        self.agents: list[str] = []
        server.handler = self

    def __call__(self, body: dict) -> Reply:
        agent = agent_of(body)
        self.agents.append(agent)
        data = unfence_data(body["messages"][1]["content"])
        analyst = OFFLINE_ANALYSTS[agent]
        two = len(inspect.signature(analyst).parameters) >= 2
        answer = analyst(data, messages_of(body)) if two else analyst(data)
        if isinstance(answer, list):
            return Reply(tool_calls=[FakeToolCall(name=c["name"], arguments=c["arguments"], id=c["id"])
                                     for c in answer], text=f"I need {', '.join(c['name'] for c in answer)}.")
        return json_answer(json.loads(json.dumps(answer, default=str)))
