"""The offline provider: deterministic rule-based analysts in place of an LLM.

It answers each agent with that agent's registered analyst (agents.llm.offline_registry),
computed from the structured input the agent was given, and returns it as JSON text, so the
rest of the runtime (parsing, validation, recording) runs exactly as it does for a real model.
"""

from __future__ import annotations

import inspect
import json
import time

from agents.llm.base import Capabilities, Completion, LLMRequest, Provider, ToolCall
from agents.llm.errors import ProviderError, ValidationError
from agents.llm.offline_registry import OFFLINE_ANALYSTS
from agents.llm.tokens import estimate_messages_tokens, estimate_text_tokens

OFFLINE_MODEL = "offline-rules-v1"


class OfflineProvider(Provider):
    name = "offline"
    model = OFFLINE_MODEL

    def capabilities(self) -> Capabilities:
        return Capabilities(tools=True, structured_output=True, context_tokens=1_000_000)

    async def acomplete(self, request: LLMRequest) -> Completion:
        # The analysts are pure functions of the request (tools, which may read the database,
        # run on their own pool), so they answer on the loop: no thread hand-off per call.
        if request.on_delta is not None:  # "Ask the agent": the same answer, word by word
            from django.conf import settings

            from agents.llm.streaming import offline_stream

            return await offline_stream(self.complete(request), request.on_delta,
                                        settings.OFFLINE_STREAM_DELAY_SECONDS)
        return self.complete(request)

    def complete(self, request: LLMRequest) -> Completion:
        started = time.perf_counter()
        analyst = OFFLINE_ANALYSTS.get(request.agent_id)
        if analyst is None and request.agent_id.endswith(".summary"):
            analyst = summarise_conversation
        if analyst is None:
            raise ProviderError(f"The offline provider has no analyst for agent {request.agent_id!r}.")
        if request.input_data is None:
            raise ValidationError(f"The offline analyst for {request.agent_id!r} needs structured input.")
        if len(inspect.signature(analyst).parameters) >= 2:
            answer = analyst(request.input_data, request.messages)
        else:
            answer = analyst(request.input_data)
        input_tokens = estimate_messages_tokens(request.messages)
        if isinstance(answer, list):  # a tool-calling analyst asks for tools
            calls = [c if isinstance(c, ToolCall) else ToolCall(**c) for c in answer]
            return Completion(text="", tool_calls=calls, input_tokens=input_tokens,
                              output_tokens=estimate_text_tokens(json.dumps([c.arguments for c in calls])),
                              model=OFFLINE_MODEL, latency_ms=_ms(started), finish_reason="tool_calls")
        text = json.dumps(answer, ensure_ascii=False)
        return Completion(text=text, input_tokens=input_tokens, output_tokens=estimate_text_tokens(text),
                          model=OFFLINE_MODEL, latency_ms=_ms(started), finish_reason="stop")


def _ms(started: float) -> int:
    return int((time.perf_counter() - started) * 1000)


def summarise_conversation(data: dict) -> dict:
    """The context manager's summariser, offline: keep the first line of each message and
    every tool result's first 300 characters, most recent last, within about 1,500 characters."""
    lines = []
    for line in str(data.get("conversation", "")).splitlines():
        line = line.strip()
        if line and line.split(":", 1)[0] in ("user", "assistant", "tool", "system"):
            lines.append(line[:300])
    text = "\n".join(lines)
    return {"summary": text[-1500:] or "Nothing to summarise."}
