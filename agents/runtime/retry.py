"""The one retry policy for LLM calls (the SDKs' own retries are off).

Rate limits, network errors, timeouts and 5xx answers are retried with exponential backoff
plus up to 25% jitter (1 s, 2 s, 4 s ... capped at max_delay, jitter included), waiting at
least what Retry-After asks (up to max_delay);
authentication and validation errors fail at once. Every attempt is reported to `on_attempt`.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

from agents.llm.errors import LLMError, ProviderError

T = TypeVar("T")


@dataclass(frozen=True)
class RetryPolicy:
    max_retries: int = 3
    initial_delay: float = 1.0
    max_delay: float = 60.0
    factor: float = 2.0
    jitter: float = 0.25  # up to +25% of the delay, to spread a thundering herd

    @classmethod
    def from_settings(cls) -> RetryPolicy:
        from django.conf import settings

        return cls(max_retries=settings.LLM_RATE_LIMIT_RETRIES, initial_delay=settings.LLM_RETRY_INITIAL_DELAY,
                   max_delay=settings.LLM_RETRY_MAX_DELAY)

    def delay(self, retry_number: int, retry_after: float | None, rng: random.Random | None = None) -> float:
        base = min(self.max_delay, self.initial_delay * self.factor ** (retry_number - 1))
        # The cap holds with the jitter added (it used to overshoot max_delay by up to 25%).
        base = min(self.max_delay, base + base * self.jitter * (rng or random).random())
        if retry_after is not None:
            base = max(base, min(retry_after, self.max_delay))
        return base


@dataclass
class Attempt:
    number: int
    error_type: str = ""
    error: str = ""
    backoff_s: float = 0.0

    def as_dict(self) -> dict:
        return {"attempt": self.number, "error_type": self.error_type, "error": self.error,
                "backoff_s": round(self.backoff_s, 3)}


def call_with_retry(
    operation: Callable[[], T],
    policy: RetryPolicy,
    *,
    on_attempt: Callable[[Attempt], None] | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> T:
    number = 0
    while True:
        number += 1
        try:
            result = operation()
        except Exception as exc:  # noqa: BLE001 - _decide re-raises what is not retried
            sleep(_decide(exc, number, policy, on_attempt))
            continue
        if on_attempt:
            on_attempt(Attempt(number))
        return result


async def acall_with_retry(
    operation: Callable[[], Awaitable[T]],
    policy: RetryPolicy,
    *,
    on_attempt: Callable[[Attempt], None] | None = None,
) -> T:
    """The same policy for a coroutine: the backoff waits on the event loop, not a thread."""
    number = 0
    while True:
        number += 1
        try:
            result = await operation()
        except Exception as exc:  # noqa: BLE001 - _decide re-raises what is not retried
            await asyncio.sleep(_decide(exc, number, policy, on_attempt))
            continue
        if on_attempt:
            on_attempt(Attempt(number))
        return result


def _decide(exc: Exception, number: int, policy: RetryPolicy, on_attempt) -> float:
    """How long to wait before the next attempt; raises when there is none."""
    if not isinstance(exc, LLMError):
        # An unexpected SDK failure is a provider error.
        if on_attempt:
            on_attempt(Attempt(number, "provider", str(exc)))
        raise ProviderError(f"{type(exc).__name__}: {exc}") from exc
    # A Retry-After beyond our longest wait would only be retried too early: give up now.
    too_long = exc.retry_after is not None and exc.retry_after > policy.max_delay
    retry = exc.retryable and number <= policy.max_retries and not too_long
    wait = policy.delay(number, exc.retry_after) if retry else 0.0
    if on_attempt:
        on_attempt(Attempt(number, exc.kind, exc.message, wait))
    if not retry:
        raise exc
    return wait
