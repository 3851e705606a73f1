"""The OpenAI-compatible provider through the real `openai` SDK against the fake endpoint:
what it sends, what it makes of the answers, and how it names each failure."""

from __future__ import annotations

import json
import socket

import pytest

from agents.llm import errors
from agents.llm.base import LLMRequest, Message, ResponseSchema, ToolCall, ToolSpec
from agents.llm.openai_provider import OpenAICompatibleProvider
from agents.llm.registry import get_provider
from tests.fakes.llm_servers import FakeToolCall, error, rate_limited, text, tool_calls


@pytest.fixture(params=["sync", "async"])
def complete(request):
    """Both ways the provider is called: `complete` (SDK) and the runtime's `acomplete` (aiohttp)."""
    if request.param == "sync":
        return lambda provider, req: provider.complete(req)
    from agents.runtime import aio

    return lambda provider, req: aio.run(provider.acomplete(req))


def ask(**kw) -> LLMRequest:
    messages = kw.pop("messages", None) or [Message("system", "You are terse."), Message("user", "Say hi.")]
    return LLMRequest(messages=messages, timeout=5, **kw)


def test_it_returns_a_plain_answer_with_usage_and_model(complete, fake_openai):
    fake_openai.script(text("Hello there.", input_tokens=11, output_tokens=3))

    completion = complete(get_provider(), ask())

    assert completion.text == "Hello there."
    assert completion.tool_calls == []
    assert (completion.input_tokens, completion.output_tokens) == (11, 3)
    assert completion.model == "fake-model"
    assert completion.finish_reason == "stop"
    assert completion.latency_ms >= 0


def test_it_sends_model_messages_temperature_and_max_tokens(complete, fake_openai):
    complete(get_provider(), ask(temperature=0.3, max_tokens=77))

    (request,) = fake_openai.requests
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer test"
    assert request.json["model"] == "fake-model"
    assert request.json["temperature"] == 0.3
    assert request.json["max_tokens"] == 77
    assert request.messages == [{"role": "system", "content": "You are terse."},
                                {"role": "user", "content": "Say hi."}]


def test_it_asks_for_json_schema_output_when_given_a_schema(complete, fake_openai):
    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}}
    complete(get_provider(), ask(response_schema=ResponseSchema("verdict", schema)))

    (request,) = fake_openai.requests
    assert request.json["response_format"] == {"type": "json_schema",
                                               "json_schema": {"name": "verdict", "schema": schema}}


def test_it_falls_back_to_json_in_text_when_the_endpoint_refuses_response_format(complete, fake_openai):
    def llama_server(body):
        if "response_format" in body:
            return error(400, "Unrecognized request argument supplied: response_format")
        return text('{"ok": true}')

    fake_openai.handler = llama_server
    provider = get_provider()
    schema = ResponseSchema("verdict", {"type": "object"})

    first = complete(provider, ask(response_schema=schema))
    second = complete(provider, ask(response_schema=schema))

    assert first.text == second.text == '{"ok": true}'
    sent = [("response_format" in r.json) for r in fake_openai.requests]
    # Refused once, then remembered: the second call does not try again.
    assert sent == [True, False, False]
    assert provider.capabilities().structured_output is False


def test_it_sends_tools_in_openai_function_format_and_leaves_out_response_format(complete, fake_openai):
    spec = ToolSpec("lookup", "Look a customer up.", {"type": "object", "properties": {"id": {"type": "string"}}})
    complete(get_provider(), ask(tools=[spec], response_schema=ResponseSchema("x", {"type": "object"})))

    (request,) = fake_openai.requests
    assert request.json["tools"] == [{"type": "function", "function": {
        "name": "lookup", "description": "Look a customer up.", "parameters": spec.parameters}}]
    assert "response_format" not in request.json


def test_it_parses_tool_calls_and_keeps_broken_arguments_raw(complete, fake_openai):
    fake_openai.script(tool_calls(FakeToolCall("lookup", {"id": "C-1"}, id="call_a"),
                                  FakeToolCall("lookup", '{"id": "C-2"', id="call_b")))

    completion = complete(get_provider(), ask())

    good, broken = completion.tool_calls
    assert (good.id, good.name, good.arguments, good.raw_arguments) == ("call_a", "lookup", {"id": "C-1"}, "")
    assert (broken.arguments, broken.raw_arguments) == ({}, '{"id": "C-2"')
    assert completion.finish_reason == "tool_calls"


def test_it_serialises_an_assistant_tool_turn_and_its_results(complete, fake_openai):
    messages = [
        Message("system", "s"), Message("user", "u"),
        Message("assistant", "", tool_calls=[ToolCall("call_1", "lookup", {"id": "C-1"})]),
        Message("tool", '{"name": "Ada"}', tool_call_id="call_1", name="lookup"),
    ]
    complete(get_provider(), ask(messages=messages))

    sent = fake_openai.requests[0].messages
    assert sent[2] == {"role": "assistant", "content": "", "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "lookup", "arguments": json.dumps({"id": "C-1"})}}]}
    assert sent[3] == {"role": "tool", "tool_call_id": "call_1", "content": '{"name": "Ada"}'}


@pytest.mark.parametrize(
    ("reply", "expected", "retryable"),
    [
        (error(401, "Incorrect API key provided."), errors.AuthenticationError, False),
        (error(403, "Project does not have access."), errors.AuthenticationError, False),
        (error(400, "max_tokens is too large."), errors.ValidationError, False),
        (rate_limited(0.5), errors.RateLimitError, True),
        (error(500, "The server had an error."), errors.ProviderError, True),
        (error(503, "Overloaded."), errors.ProviderError, True),
        (error(404, "The model does not exist."), errors.ProviderError, False),
    ],
)
def test_it_normalises_http_errors(complete, fake_openai, reply, expected, retryable):
    fake_openai.script(reply)

    with pytest.raises(expected) as caught:
        complete(get_provider(), ask())

    assert caught.value.retryable is retryable
    assert caught.value.status_code == reply.status
    # The endpoint's own message, not the SDK's wrapper, is what a person reads.
    assert reply.error_message in caught.value.message


def test_it_reads_retry_after_from_a_429(complete, fake_openai):
    fake_openai.script(rate_limited(0.5))

    with pytest.raises(errors.RateLimitError) as caught:
        complete(get_provider(), ask())

    assert caught.value.retry_after == 0.5


def test_a_slow_answer_is_a_timeout(complete, fake_openai):
    fake_openai.script(text("late", delay=1.0))

    with pytest.raises(errors.TimeoutError):
        complete(get_provider(), LLMRequest(messages=[Message("user", "hi")], timeout=0.2))


def test_an_unreachable_endpoint_is_a_network_error(complete):
    with socket.socket() as s:  # a port that nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    provider = OpenAICompatibleProvider(api_key="k", base_url=f"http://127.0.0.1:{port}/v1", model="m",
                                        context_tokens=1000)

    with pytest.raises(errors.NetworkError) as caught:
        complete(provider, ask())

    assert caught.value.retryable


def test_the_sdk_does_not_retry_on_its_own(complete, fake_openai):
    fake_openai.script(error(500, "boom"), text("never asked for"))

    with pytest.raises(errors.ProviderError):
        complete(get_provider(), ask())

    assert fake_openai.request_count == 1
