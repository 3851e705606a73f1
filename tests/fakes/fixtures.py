"""pytest fixtures that start the fake LLM servers and point the provider at them.

Import them into a conftest (`from tests.fakes.fixtures import *`). Each fixture overrides
the LLM settings for the test only and forgets the built provider before and after, so the
next `get_provider()` is built from the settings in force.
"""

from __future__ import annotations

import pytest

from agents.llm.registry import reset_provider
from tests.fakes.llm_servers import FakeAnthropicServer, FakeOpenAIServer

__all__ = ["fake_anthropic", "fake_openai"]


@pytest.fixture
def fake_openai(settings):
    """An OpenAI-compatible endpoint on 127.0.0.1, with LLM_PROVIDER=openai pointing at it."""
    with FakeOpenAIServer() as server:
        settings.LLM_PROVIDER = "openai"
        settings.OPENAI_BASE_URL = server.base_url
        settings.OPENAI_API_KEY = "test"
        settings.LLM_MODEL = "fake-model"
        reset_provider()
        try:
            yield server
        finally:
            reset_provider()


@pytest.fixture
def fake_anthropic(settings):
    """An Anthropic Messages endpoint on 127.0.0.1, with LLM_PROVIDER=anthropic pointing at it."""
    with FakeAnthropicServer() as server:
        settings.LLM_PROVIDER = "anthropic"
        settings.ANTHROPIC_BASE_URL = server.base_url
        settings.ANTHROPIC_API_KEY = "test"
        settings.LLM_MODEL = "fake-claude"
        reset_provider()
        try:
            yield server
        finally:
            reset_provider()
