"""The process's LLM event loop (agents/runtime/aio.py) is uvloop's by default and CPython's
with LLM_EVENT_LOOP=asyncio; the runtime's request to an OpenAI-compatible endpoint works on
either, against the fake HTTP server."""

from __future__ import annotations

import asyncio
import threading

import pytest
import uvloop
from django.test import override_settings

from agents.llm.base import LLMRequest, Message
from agents.llm.openai_provider import OpenAICompatibleProvider
from agents.runtime import aio
from tests.fakes.llm_servers import text


def ask() -> LLMRequest:
    return LLMRequest(messages=[Message("system", "You are terse."), Message("user", "Say hi.")], timeout=5)


def test_the_process_loop_is_uvloops_by_default():
    assert isinstance(aio.get_loop(), uvloop.Loop)

    async def where() -> str:
        return threading.current_thread().name

    assert aio.run(where()) == "llm-loop"


@pytest.mark.parametrize(("kind", "loop_class"), [("uvloop", uvloop.Loop), ("asyncio", asyncio.BaseEventLoop)])
def test_a_request_is_answered_on_either_loop(kind, loop_class, fake_openai):
    fake_openai.script(text("Hello from the fake."))
    with override_settings(LLM_EVENT_LOOP=kind):
        loop = aio.new_event_loop()
    # A provider of its own: its aiohttp session belongs to this loop and is closed with it.
    provider = OpenAICompatibleProvider(api_key="test", base_url=fake_openai.base_url, model="fake-model",
                                        context_tokens=8000)
    try:
        assert isinstance(loop, loop_class)
        assert not isinstance(loop, uvloop.Loop) or kind == "uvloop"
        completion = loop.run_until_complete(provider.acomplete(ask()))
    finally:
        loop.run_until_complete(provider._endpoint.close())  # noqa: SLF001
        loop.close()

    assert completion.text == "Hello from the fake."
    (request,) = fake_openai.requests
    assert request.path == "/v1/chat/completions"


def test_an_unknown_loop_is_refused_at_start_up(tmp_path):
    from tests.ops.test_ops import _django

    result = _django(["check"], tmp_path, SECRET_KEY="x" * 50, DEBUG="true", LLM_EVENT_LOOP="trio")

    assert result.returncode != 0
    assert "LLM_EVENT_LOOP='trio': use uvloop or asyncio." in result.stderr
