"""A worker builds its provider's async client when it starts, on the runtime's loop, so its
first runs do not wait while the SDK is imported and the client built."""

from __future__ import annotations

import pytest

from agents.llm import registry
from agents.tasks import _warm_up_provider


@pytest.fixture
def fresh_provider():
    registry.reset_provider()
    yield
    registry.reset_provider()


def test_the_openai_provider_has_its_loop_client_before_the_first_call(settings, fresh_provider):
    settings.LLM_PROVIDER = "openai"
    settings.OPENAI_API_KEY = "sk-test"
    settings.OPENAI_BASE_URL = "http://127.0.0.1:9/v1"
    _warm_up_provider()
    provider = registry.get_provider()
    client = provider._aclient
    assert client is not None and provider._aclient_loop is not None
    registry.provider_warm_up()  # a second warm-up keeps the same client
    assert provider._aclient is client


def test_the_anthropic_provider_too(settings, fresh_provider):
    settings.LLM_PROVIDER = "anthropic"
    settings.ANTHROPIC_API_KEY = "sk-ant-test"
    provider = registry.provider_warm_up()
    assert provider._aclient is not None


def test_a_provider_that_cannot_be_built_does_not_stop_the_worker(settings, fresh_provider, caplog):
    settings.LLM_PROVIDER = "nonsense"
    _warm_up_provider()
    assert "LLM provider warm-up failed" in caplog.text
