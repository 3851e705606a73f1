"""The one retry policy, through the real SDK over HTTP: rate limits, 5xx, timeouts and
network errors retry with backoff (honouring Retry-After); authentication errors do not."""

from __future__ import annotations

import random

import pytest
from pydantic import BaseModel

from agents.llm import errors
from agents.runtime.agent import Agent
from agents.runtime.retry import Attempt, RetryPolicy, call_with_retry
from agents.runtime.runner import run_agent
from tests.fakes.llm_servers import error, json_answer, rate_limited, text


class Echo(BaseModel):
    answer: str


echo = Agent(id="test_echo", system_prompt="Echo.", output_model=Echo)
OK = json_answer({"answer": "yes"})


def test_a_429_is_retried_after_at_least_retry_after(fake_openai):
    fake_openai.script(rate_limited(0.2), OK)

    result = run_agent(echo, {"q": 1})

    assert result.ok, result.error
    first, second = fake_openai.requests
    # From the first request's arrival: the fake stamps answered_at after writing the 429, so
    # the client may already be waiting by then (CI once saw 0.1997 s from it).
    assert second.received_at - first.received_at >= 0.2
    assert [(a["attempt"], a["error_type"]) for a in result.attempt_log] == [(1, "rate_limit"), (2, "")]
    assert result.attempt_log[0]["backoff_s"] >= 0.2
    assert result.attempts == 2


def test_a_500_is_retried_then_succeeds(fake_openai):
    fake_openai.script(error(500, "The server had an error"), error(502, "Bad gateway"), OK)

    result = run_agent(echo, {"q": 1})

    assert result.ok, result.error
    assert fake_openai.request_count == 3
    assert [a["error_type"] for a in result.attempt_log] == ["provider", "provider", ""]


def test_500s_past_the_retry_limit_end_in_an_error_result(fake_openai, settings):
    settings.LLM_RATE_LIMIT_RETRIES = 2
    fake_openai.default = error(500, "The server had an error")

    result = run_agent(echo, {"q": 1})

    assert not result.ok
    assert result.error_type == "provider"
    assert "HTTP 500" in result.error
    assert fake_openai.request_count == 3  # the first try and two retries
    assert result.attempts == 3


def test_a_slow_answer_times_out_is_retried_and_ends_in_a_timeout_result(fake_openai, settings):
    settings.LLM_TIMEOUT_SECONDS = 0.2
    settings.LLM_RATE_LIMIT_RETRIES = 1
    # An answer that comes, but far too late: a client that waited for it gets it and succeeds,
    # so only a client that gave up at its timeout ends in a timeout result. No clock bound.
    fake_openai.default = text('{"answer": "late"}', delay=3.0)

    result = run_agent(echo, {"q": 1})

    assert not result.ok
    assert result.error_type == "timeout"
    assert "did not answer in time" in result.error
    assert fake_openai.request_count == 2
    assert [a["error_type"] for a in result.attempt_log] == ["timeout", "timeout"]
    first, second = fake_openai.requests
    # The retry went out while the first answer was still being prepared: the client hung up.
    assert first.answered_at is None or first.answered_at > second.received_at
    assert second.received_at - first.received_at >= 0.2  # after waiting its timeout, not before


def test_a_401_fails_at_once(fake_openai):
    fake_openai.script(error(401, "Incorrect API key provided: sk-...abc."), OK)

    result = run_agent(echo, {"q": 1})

    assert not result.ok
    assert result.error_type == "authentication"
    assert "refused the credentials" in result.error and "Incorrect API key" in result.error
    assert fake_openai.request_count == 1
    assert result.attempt_log == [{"attempt": 1, "error_type": "authentication",
                                   "error": "HTTP 401: Incorrect API key provided: sk-...abc.",
                                   "backoff_s": 0.0, "request": 1}]


def test_a_400_fails_at_once(fake_openai):
    fake_openai.script(error(400, "max_tokens is too large"), OK)

    result = run_agent(echo, {"q": 1})

    assert result.error_type == "validation"
    assert fake_openai.request_count == 1


def test_rate_limits_past_the_limit_end_in_a_rate_limit_result(fake_openai, settings):
    settings.LLM_RATE_LIMIT_RETRIES = 1
    fake_openai.default = rate_limited(0.01)

    result = run_agent(echo, {"q": 1})

    assert result.error_type == "rate_limit"
    assert result.error == "Rate limit reached. Please try again in a minute."
    assert fake_openai.request_count == 2


# --- The policy itself ---------------------------------------------------------------------


class Zero(random.Random):
    def random(self) -> float:
        return 0.0


class One(random.Random):
    def random(self) -> float:
        return 0.999999


def test_backoff_doubles_from_the_initial_delay():
    policy = RetryPolicy(initial_delay=1.0, factor=2.0, max_delay=60.0, jitter=0.25)
    assert [policy.delay(n, None, Zero()) for n in (1, 2, 3, 4)] == [1.0, 2.0, 4.0, 8.0]


def test_backoff_is_capped_at_max_delay_jitter_included():
    policy = RetryPolicy(initial_delay=1.0, factor=2.0, max_delay=5.0, jitter=0.25)
    assert policy.delay(10, None, Zero()) == 5.0
    assert policy.delay(10, None, One()) <= 5.0


def test_jitter_adds_up_to_a_quarter_and_spreads_the_waits():
    policy = RetryPolicy(initial_delay=1.0, factor=2.0, max_delay=60.0, jitter=0.25)
    rng = random.Random(7)
    waits = [policy.delay(2, None, rng) for _ in range(200)]
    assert all(2.0 <= w <= 2.5 for w in waits)
    assert max(waits) - min(waits) > 0.3  # not all the same: a herd is spread
    assert policy.delay(2, None, One()) == pytest.approx(2.5, abs=1e-5)


def test_retry_after_is_a_floor_on_the_wait():
    policy = RetryPolicy(initial_delay=1.0, max_delay=60.0)
    assert policy.delay(1, 7.0, Zero()) == 7.0
    assert policy.delay(4, 2.0, Zero()) == 8.0  # the backoff is already longer


def test_call_with_retry_reports_every_attempt_and_sleeps_between():
    outcomes = [errors.RateLimitError("slow down", retry_after=3.0), errors.NetworkError("reset"), "done"]
    slept: list[float] = []
    attempts: list[Attempt] = []

    def operation():
        outcome = outcomes.pop(0)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    policy = RetryPolicy(max_retries=3, initial_delay=0.5, jitter=0.0)
    assert call_with_retry(operation, policy, on_attempt=attempts.append, sleep=slept.append) == "done"

    assert slept == [3.0, 1.0]
    assert [(a.number, a.error_type) for a in attempts] == [(1, "rate_limit"), (2, "network"), (3, "")]


def test_call_with_retry_gives_up_after_max_retries():
    calls = []

    def operation():
        calls.append(1)
        raise errors.ProviderError("HTTP 503", status_code=503)

    with pytest.raises(errors.ProviderError):
        call_with_retry(operation, RetryPolicy(max_retries=2), sleep=lambda s: None)
    assert len(calls) == 3


def test_an_unexpected_exception_becomes_a_provider_error_without_retry():
    calls = []

    def operation():
        calls.append(1)
        raise KeyError("choices")

    with pytest.raises(errors.ProviderError, match="KeyError"):
        call_with_retry(operation, RetryPolicy(max_retries=3), sleep=lambda s: None)
    assert len(calls) == 1
