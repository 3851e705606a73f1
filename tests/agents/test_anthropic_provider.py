"""The Anthropic provider through the real `anthropic` SDK against the fake Messages
endpoint: a provider with a different shape (system apart, content blocks, tool_use /
tool_result) behind the same interface."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, Field

from agents.llm import errors
from agents.llm.base import LLMRequest, Message, ResponseSchema, ToolCall, ToolSpec
from agents.llm.registry import get_provider
from agents.runtime.agent import Agent
from agents.runtime.runner import run_agent
from tests.fakes.llm_servers import FakeToolCall, error, fenced_json, rate_limited, text, tool_calls


class Triage(BaseModel):
    priority: str = Field(description="low, medium or high")
    reason: str = Field(description="One sentence.")


triage = Agent(id="test_triage", system_prompt="Triage the ticket.", output_model=Triage)


def ask(**kw) -> LLMRequest:
    messages = kw.pop("messages", None) or [Message("system", "You are terse."), Message("user", "Say hi.")]
    return LLMRequest(messages=messages, timeout=5, **kw)


def test_it_returns_a_plain_answer_with_usage_and_stop_reason(fake_anthropic):
    fake_anthropic.script(text("Hello.", input_tokens=20, output_tokens=2))

    completion = get_provider().complete(ask(max_tokens=50, temperature=0.2))

    assert completion.text == "Hello."
    assert (completion.input_tokens, completion.output_tokens) == (20, 2)
    assert completion.model == "fake-claude"
    assert completion.finish_reason == "end_turn"
    (request,) = fake_anthropic.requests
    assert request.path == "/v1/messages"
    # SDK 2.x: the key as a bearer token, API version 2026-10-21 ...
    assert request.headers["authorization"] == "Bearer test"
    assert request.headers["anthropic-version"] >= "2026-10-21"
    assert request.json["max_tokens"] == 50
    # ... which answers 400 to any temperature, so none is sent.
    assert "temperature" not in request.json


def test_the_system_prompt_travels_apart_from_the_messages(fake_anthropic):
    get_provider().complete(ask())

    (request,) = fake_anthropic.requests
    assert request.json["system"] == "You are terse."
    assert request.json["messages"] == [{"role": "user", "content": "Say hi."}]


def test_it_sends_tools_with_input_schema_and_no_response_format(fake_anthropic):
    spec = ToolSpec("lookup", "Look a customer up.", {"type": "object", "properties": {"id": {"type": "string"}}})
    get_provider().complete(ask(tools=[spec], response_schema=ResponseSchema("x", {"type": "object"})))

    (request,) = fake_anthropic.requests
    assert request.json["tools"] == [{"name": "lookup", "description": "Look a customer up.",
                                      "input_schema": spec.parameters}]
    assert "response_format" not in request.json
    assert get_provider().capabilities().structured_output is False


def test_it_reads_tool_use_blocks_as_tool_calls(fake_anthropic):
    fake_anthropic.script(tool_calls(FakeToolCall("lookup", {"id": "C-1"}, id="toolu_1"), content="Let me check."))

    completion = get_provider().complete(ask())

    assert completion.text == "Let me check."
    (call,) = completion.tool_calls
    assert (call.id, call.name, call.arguments) == ("toolu_1", "lookup", {"id": "C-1"})
    assert completion.finish_reason == "tool_use"


def test_tool_results_go_back_as_one_user_turn_of_tool_result_blocks(fake_anthropic):
    messages = [
        Message("system", "s"), Message("user", "u"),
        Message("assistant", "Checking both.", tool_calls=[ToolCall("toolu_1", "lookup", {"id": "C-1"}),
                                                            ToolCall("toolu_2", "lookup", {"id": "C-2"})]),
        Message("tool", '{"name": "Ada"}', tool_call_id="toolu_1"),
        Message("tool", '{"name": "Bob"}', tool_call_id="toolu_2"),
    ]
    get_provider().complete(ask(messages=messages))

    sent = fake_anthropic.requests[0].json["messages"]
    assert sent[1] == {"role": "assistant", "content": [
        {"type": "text", "text": "Checking both."},
        {"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {"id": "C-1"}},
        {"type": "tool_use", "id": "toolu_2", "name": "lookup", "input": {"id": "C-2"}},
    ]}
    assert sent[2] == {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": '{"name": "Ada"}'},
        {"type": "tool_result", "tool_use_id": "toolu_2", "content": '{"name": "Bob"}'},
    ]}


def test_a_429_is_a_rate_limit_with_its_retry_after(fake_anthropic):
    fake_anthropic.script(rate_limited(0.4))

    with pytest.raises(errors.RateLimitError) as caught:
        get_provider().complete(ask())

    assert caught.value.retry_after == 0.4
    assert caught.value.retryable


def test_a_401_is_an_authentication_error(fake_anthropic):
    fake_anthropic.script(error(401, "invalid x-api-key"))

    with pytest.raises(errors.AuthenticationError) as caught:
        get_provider().complete(ask())

    assert "invalid x-api-key" in caught.value.message
    assert not caught.value.retryable


@pytest.mark.parametrize("status", [500, 529])
def test_server_errors_and_overload_are_retryable_provider_errors(fake_anthropic, status):
    fake_anthropic.script(error(status, "Overloaded"))

    with pytest.raises(errors.ProviderError) as caught:
        get_provider().complete(ask())

    assert caught.value.retryable


def test_an_agent_runs_on_anthropic_with_json_in_text(fake_anthropic):
    fake_anthropic.script(fenced_json({"priority": "high", "reason": "Payments are down."}))

    result = run_agent(triage, {"ticket": "Nobody can pay."})

    assert result.ok, result.error
    assert result.output == {"priority": "high", "reason": "Payments are down."}
    assert result.provider == "anthropic"
    # No JSON mode on this API: the schema travels in the system prompt.
    assert '"priority"' in fake_anthropic.requests[0].json["system"]


def test_an_agent_retries_a_rate_limited_anthropic_call(fake_anthropic):
    fake_anthropic.script(rate_limited(0.05), text('{"priority": "low", "reason": "Cosmetic."}'))

    result = run_agent(triage, {"ticket": "Logo is blurry."})

    assert result.ok, result.error
    assert fake_anthropic.request_count == 2
    assert [a["error_type"] for a in result.attempt_log] == ["rate_limit", ""]
