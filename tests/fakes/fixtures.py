"""pytest fixtures that start the fake LLM servers and point the provider at them.

Import them into a conftest (`from tests.fakes.fixtures import *`). Each fixture overrides
the LLM settings for the test only and forgets the built provider before and after, so the
next `get_provider()` is built from the settings in force. A test whose script raised (an
assertion inside a handler included) fails at teardown, even where the product's fallbacks
absorbed the 500 the fake answered.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest

from agents.llm.registry import reset_provider
from tests.fakes.llm_servers import FakeAnthropicServer, FakeLLMServer, FakeOpenAIServer

__all__ = ["fake_anthropic", "fake_openai"]


@contextlib.contextmanager
def serving(server: FakeLLMServer, settings, **llm_settings) -> Iterator[FakeLLMServer]:
    """Run `server`, with the provider's settings pointing at it; its exit fails on its script's errors."""
    from agents.llm.breaker import breaker_for

    with server:
        for name, value in llm_settings.items():
            setattr(settings, name, value(server) if callable(value) else value)
        reset_provider()
        # Each test's endpoint starts with a closed circuit breaker, and leaves none open behind.
        breaker_for(settings.LLM_PROVIDER).reset()
        try:
            yield server
        finally:
            breaker_for(settings.LLM_PROVIDER).reset()
            reset_provider()
    # Leaving `with server:` raised FakeServerError if the script failed (tests/fakes/guard.py).


def openai_endpoint(settings):
    """An OpenAI-compatible endpoint on 127.0.0.1, with LLM_PROVIDER=openai pointing at it."""
    return serving(FakeOpenAIServer(), settings, LLM_PROVIDER="openai", OPENAI_BASE_URL=lambda s: s.base_url,
                   OPENAI_API_KEY="test", LLM_MODEL="fake-model")


def anthropic_endpoint(settings):
    """An Anthropic Messages endpoint on 127.0.0.1, with LLM_PROVIDER=anthropic pointing at it."""
    return serving(FakeAnthropicServer(), settings, LLM_PROVIDER="anthropic",
                   ANTHROPIC_BASE_URL=lambda s: s.base_url, ANTHROPIC_API_KEY="test", LLM_MODEL="fake-claude")


@pytest.fixture
def fake_openai(settings):
    with openai_endpoint(settings) as server:
        yield server


@pytest.fixture
def fake_anthropic(settings):
    with anthropic_endpoint(settings) as server:
        yield server
