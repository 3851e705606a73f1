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


def test_a_worker_builds_its_provider_before_it_consumes(settings, fresh_provider):
    # worker_init (sent before the consumer starts) in a threads worker; a prefork parent leaves
    # it to each child (worker_process_init), whose event loop is its own.
    from types import SimpleNamespace

    from casework.celery import _warm_up_before_consuming, _warm_up_child

    settings.LLM_PROVIDER = "anthropic"
    settings.ANTHROPIC_API_KEY = "sk-ant-test"
    _warm_up_before_consuming(sender=SimpleNamespace(pool_cls="prefork"))
    assert registry._provider is None
    _warm_up_child()
    assert registry._provider is not None and registry._provider._aclient is not None
    registry.reset_provider()
    _warm_up_before_consuming(sender=SimpleNamespace(pool_cls="threads"))
    assert registry._provider is not None and registry._provider._aclient is not None
