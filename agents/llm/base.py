"""The provider interface: one shape for every LLM, whatever its wire format."""

from __future__ import annotations

import abc
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass
class ToolCall:
    id: str
    name: str
    arguments: dict[str, Any]
    # What the model sent, for the record, when it was not valid JSON.
    raw_arguments: str = ""


@dataclass
class Message:
    role: str  # system | user | assistant | tool
    content: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    tool_call_id: str = ""
    name: str = ""

    def to_dict(self) -> dict:
        data: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            data["tool_calls"] = [
                {"id": c.id, "name": c.name, "arguments": c.arguments} for c in self.tool_calls
            ]
        if self.tool_call_id:
            data["tool_call_id"] = self.tool_call_id
        if self.name:
            data["name"] = self.name
        return data


@dataclass
class ToolSpec:
    """A tool as the provider sees it: name, description, JSON-schema parameters."""

    name: str
    description: str
    parameters: dict[str, Any]


@dataclass
class ResponseSchema:
    name: str
    schema: dict[str, Any]


@dataclass
class Completion:
    text: str
    tool_calls: list[ToolCall] = field(default_factory=list)
    input_tokens: int = 0
    output_tokens: int = 0
    model: str = ""
    latency_ms: int = 0
    finish_reason: str = ""


@dataclass(frozen=True)
class Capabilities:
    tools: bool
    structured_output: bool
    context_tokens: int


@dataclass
class LLMRequest:
    messages: list[Message]
    tools: list[ToolSpec] = field(default_factory=list)
    response_schema: ResponseSchema | None = None
    temperature: float = 0.0
    max_tokens: int = 1024
    timeout: float = 60.0
    # Which agent asks, and the structured input it was given: the offline provider
    # answers from these; remote providers ignore them.
    agent_id: str = ""
    input_data: dict[str, Any] | None = None
    # Where the request comes from (run, agent, correlation id): sent as X-Casework-* headers
    # so that a provider's own logs can be traced back to the case.
    metadata: dict[str, str] = field(default_factory=dict)
    # Set when the caller shows the answer as it arrives ("Ask the agent"): a provider that
    # streams calls it with each piece of the answer's text, on the event loop's thread.
    on_delta: Callable[[str], None] | None = None

    def headers(self) -> dict[str, str]:
        return {f"X-Casework-{key.replace('_', '-').title()}": str(value)
                for key, value in self.metadata.items() if value not in (None, "")}


class StreamSink(Protocol):
    """Where a caller that shows an answer as it arrives receives it (runner.arun_tool_loop's
    `stream`): begin() before each provider request (a retry or the next turn starts afresh),
    delta(text) for each piece of text, tool(name) before each tool runs. Called on the event
    loop's thread: an implementation only records, it never blocks."""

    def begin(self) -> None: ...

    def delta(self, text: str) -> None: ...

    def tool(self, name: str) -> None: ...


class Provider(abc.ABC):
    name: str = "provider"
    model: str = ""

    @abc.abstractmethod
    def complete(self, request: LLMRequest) -> Completion: ...

    async def acomplete(self, request: LLMRequest) -> Completion:
        """The same request from the runtime's event loop. Providers with an async client
        override this; the default runs the blocking call on the loop's thread pool."""
        from agents.runtime.aio import in_thread

        return await in_thread(self.complete, request)

    async def awarm(self) -> None:
        """Build what the first request would (SDK imports, the event loop's client), so that a
        worker's first runs do not pay for it; called once when a worker starts. Nothing to
        build by default (the offline provider)."""
        return None

    @abc.abstractmethod
    def capabilities(self) -> Capabilities: ...
