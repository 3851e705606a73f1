"""An agent is a plain object: an id, a system prompt, a Pydantic output model, tools."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING

from pydantic import BaseModel

if TYPE_CHECKING:
    from agents.runtime.tools import Tool


@dataclass(frozen=True)
class Agent:
    id: str
    system_prompt: str
    output_model: type[BaseModel]
    tools: tuple[Tool, ...] = field(default_factory=tuple)
    temperature: float = 0.0
    max_tokens: int = 1024
    # A tool-calling agent ends its loop by calling this tool (e.g. file_risk_report);
    # empty means the agent answers with its output model as JSON.
    final_tool: str = ""
    # This agent's own per-request timeout and retry count; None takes LLM_TIMEOUT_SECONDS and
    # LLM_RATE_LIMIT_RETRIES (a planner that falls back on a timeout wants a short one, no retry).
    timeout: float | None = None
    max_retries: int | None = None
    # The output key whose value (a short enumerated word, e.g. a risk level) is kept in clear
    # on the call (AgentCall.output_verdict) for reports to count: the rest of the output is
    # encrypted at rest. Empty: none.
    verdict_key: str = ""

    def output_schema(self) -> dict:
        return _schema_of(self.output_model)


@dataclass
class AgentResult:
    """What one agent produced: its validated output, or an error (never both)."""

    agent_id: str
    output: dict | None = None
    error: str = ""
    error_type: str = ""
    attempts: int = 1
    input_tokens: int = 0
    output_tokens: int = 0
    latency_ms: int = 0
    model: str = ""
    provider: str = ""
    cost_usd: float = 0.0
    # Every provider request made for this result (retries included) and every tool call.
    attempt_log: list[dict] = field(default_factory=list)
    tool_calls: list[dict] = field(default_factory=list)
    context_events: list[dict] = field(default_factory=list)
    trace_id: str = ""
    span_id: str = ""
    # Set when the call stopped to wait for a person (agents.runtime.pause): what it waits for
    # ({"kind", "tool", "arguments", "reason", "rule", "snapshot"}); the pipeline pauses the run.
    pending: dict | None = None

    @property
    def ok(self) -> bool:
        return self.output is not None and not self.error


@cache
def _schema_of(model: type[BaseModel]) -> dict:
    # Pydantic walks the model on every call (several ms for the fraud agents' outputs), and
    # every request of every agent sends it; a model's schema never changes in a process.
    return model.model_json_schema()
