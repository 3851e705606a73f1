"""Span attributes for LLM requests, tool calls and agents, under two sets of names.

The `llm.*`, `agent.*` and `tool.*` names are ours (the trace page, tests and dashboards read
them). The `gen_ai.*` names follow the OpenTelemetry GenAI semantic conventions
(https://opentelemetry.io/docs/specs/semconv/gen-ai/), so trace viewers that know them (Phoenix,
Langfuse, Grafana, Datadog ...) show model calls, token usage and tool calls as such. Those
conventions are still in "Development": when they change, this module is the one place to follow.
"""

from __future__ import annotations

# Our provider names -> gen_ai.provider.name. A provider not listed passes through unchanged.
PROVIDER_NAMES = {
    "offline": "casework.offline",  # our rule-based stand-in; no well-known value fits
    "openai": "openai",
    "gemini": "gcp.gemini",
    "anthropic": "anthropic",
}


def gen_ai_provider_name(provider: str) -> str:
    return PROVIDER_NAMES.get(provider, provider)


def _with_run(attributes: dict, run_id: int | None) -> dict:
    if run_id is not None:
        attributes["run.id"] = run_id
    return attributes


def llm_request_attributes(*, provider: str, model: str, agent_id: str, temperature: float, max_tokens: int,
                           message_count: int, tool_count: int, run_id: int | None = None) -> dict:
    """Attributes of an `llm.request` span, known before the request is sent."""
    return _with_run({
        "llm.provider": provider,
        "llm.model": model,
        "agent.id": agent_id,
        "llm.temperature": temperature,
        "llm.max_tokens": max_tokens,
        "llm.message_count": message_count,
        "llm.tools": tool_count,
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": gen_ai_provider_name(provider),
        "gen_ai.request.model": model,
        "gen_ai.request.temperature": temperature,
        "gen_ai.request.max_tokens": max_tokens,
    }, run_id)


def llm_response_attributes(*, input_tokens: int, output_tokens: int, response_model: str, finish_reason: str,
                            context_tokens: int) -> dict:
    """Attributes of an `llm.request` span once the response is in; `context_tokens` is the
    size of the model's context window."""
    attributes = {
        "llm.tokens.input": input_tokens,
        "llm.tokens.output": output_tokens,
        "llm.tokens.total": input_tokens + output_tokens,
        "llm.response_model": response_model,
        "llm.finish_reason": finish_reason,
        "llm.context.tokens_used": input_tokens,
        "llm.context.tokens_available": context_tokens,
        "gen_ai.usage.input_tokens": input_tokens,
        "gen_ai.usage.output_tokens": output_tokens,
        "gen_ai.response.model": response_model,
    }
    if finish_reason:
        attributes["gen_ai.response.finish_reasons"] = [finish_reason]
    return attributes


def tool_attributes(*, tool_name: str, call_id: str, success: bool, duration_ms: int, error_type: str) -> dict:
    """Attributes of a `tool.<name>` span."""
    attributes = {
        "tool.name": tool_name,
        "tool.success": success,
        "tool.duration_ms": duration_ms,
        "tool.error_type": error_type,
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": tool_name,
        "gen_ai.tool.type": "function",  # our tools are functions run in this process
    }
    if call_id:
        attributes["gen_ai.tool.call.id"] = call_id
    if not success:
        # The conventions' fallback when the failure has no name of its own.
        attributes["error.type"] = error_type or "_OTHER"
    return attributes


def agent_attributes(*, agent_id: str, provider: str, run_id: int | None = None) -> dict:
    """Attributes of an `agent.<id>` span."""
    return _with_run({
        "agent.id": agent_id,
        "llm.provider": provider,
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.provider.name": gen_ai_provider_name(provider),
        "gen_ai.agent.name": agent_id,
    }, run_id)
