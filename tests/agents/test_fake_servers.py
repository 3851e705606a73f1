"""The fake LLM servers' own guarantee: a test whose script raised fails, even where the
product's fallbacks absorbed the 500 that the fake answered, however the server was started
(the fixtures, `with FakeOpenAIServer()`, or start()/stop()): tests/fakes/guard.py."""

from __future__ import annotations

import httpx
import pytest

from tests.fakes.fixtures import anthropic_endpoint, openai_endpoint
from tests.fakes.guard import FakeServerError
from tests.fakes.llm_servers import FakeAnthropicServer, FakeOpenAIServer


def _post(server, body: dict) -> httpx.Response:
    return httpx.post(f"http://127.0.0.1:{server.port}{server.route}", json=body, timeout=10)


def _a_script_that_raises(body):
    assert body["model"] == "another-model", "the script's own check"


@pytest.mark.parametrize("endpoint", [openai_endpoint, anthropic_endpoint], ids=["openai", "anthropic"])
def test_a_script_that_raised_fails_the_test_at_teardown(settings, endpoint):
    with pytest.raises(FakeServerError, match="(?s)1 time.*AssertionError: the script's own check"):
        with endpoint(settings) as server:
            server.handler = _a_script_that_raises
            answer = _post(server, {"model": "fake-model", "messages": [], "max_tokens": 10})
            assert answer.status_code == 500 and "the script's own check" in answer.text


def test_a_script_that_did_not_raise_passes_and_points_the_provider_at_the_fake(settings):
    with openai_endpoint(settings) as server:
        assert settings.LLM_PROVIDER == "openai" and settings.OPENAI_BASE_URL == server.base_url
        assert _post(server, {"model": "fake-model", "messages": []}).status_code == 200
    assert not server.errors


@pytest.mark.parametrize("kind", [FakeOpenAIServer, FakeAnthropicServer], ids=["openai", "anthropic"])
def test_a_server_started_directly_fails_on_exit_when_its_handler_raised(kind):
    """The evals tests' way (`with FakeOpenAIServer() as server`): no fixture, the same failure."""
    with pytest.raises(FakeServerError, match="(?s)1 time.*AssertionError: the script's own check"):
        with kind() as server:
            server.handler = _a_script_that_raises
            assert _post(server, {"model": "fake-model", "messages": [], "max_tokens": 10}).status_code == 500


def test_stop_raises_too_and_each_error_is_reported_once():
    server = FakeOpenAIServer().start()
    server.handler = _a_script_that_raises
    _post(server, {"model": "fake-model", "messages": []})
    with pytest.raises(FakeServerError):
        server.stop()
    server.stop()  # reported already: a second stop() is quiet


def test_a_test_already_failing_keeps_its_own_failure():
    with pytest.raises(ZeroDivisionError):
        with FakeOpenAIServer() as server:
            server.handler = _a_script_that_raises
            _post(server, {"model": "fake-model", "messages": []})
            1 / 0  # noqa: B018 - the test's own failure, which the fake's must not hide
    assert len(server.errors) == 1
    with pytest.raises(FakeServerError):  # still unreported: the guard's plugin would name it
        server.raise_recorded_errors()
