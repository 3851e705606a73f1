"""A circuit breaker per LLM provider: an endpoint down for minutes costs runs latency, not
their retries.

Closed (normal): requests go through. After LLM_BREAKER_THRESHOLD connection failures in a
row (the endpoint refused, reset, or a proxy answered 502/503/504), it opens: for
LLM_BREAKER_COOLDOWN_SECONDS no request is sent; each one fails at once with CircuitOpen
(not retried), and the pipeline executor puts the run back in the queue to wait for the
model (agents.runtime.pipeline), spending none of its retries. Then half-open: one request
(whichever comes first, across all processes) is let through as a probe; its success closes
the breaker and the waiting runs go on as they wake; its failure opens it again.

The state is shared by every process through Django's cache (CACHE_URL: Redis in production,
so that the workers and the web's /healthz all see it; the default per-process memory cache
keeps it per process). The clock is injectable (`breaker_clock`), so tests drive the cool-off
by time they set, never by waiting.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime

from django.conf import settings
from django.core.cache import DEFAULT_CACHE_ALIAS, caches
from django.core.signals import setting_changed

from agents.llm import errors

logger = logging.getLogger(__name__)

# The clock the breaker reads (seconds since the epoch); tests replace it.
breaker_clock: Callable[[], float] = time.time
# Cache entries outlive any cool-off by far; they are removed when the breaker closes.
_KEEP_SECONDS = 24 * 3600


class CircuitOpen(errors.LLMError):
    """No request was sent: the endpoint failed repeatedly and its breaker is open."""

    kind = "circuit_open"
    retryable = False


def is_connection_failure(exc: errors.LLMError) -> bool:
    """Failures that say the endpoint is not there (as opposed to a bad request or a slow model)."""
    if isinstance(exc, errors.NetworkError):
        return True
    return isinstance(exc, errors.ProviderError) and exc.status_code in (502, 503, 504)


_local = threading.local()
_generation = [0]


def _cache():
    """The cache, resolved once per thread. `django.core.cache.cache` is looked up per
    asyncio task (asgiref's context-local storage), and the breaker is read by every LLM
    request, each its own task on the worker's event loop: through the proxy each request
    built a new cache backend (with CACHE_URL=redis://, a new client and connection pool)."""
    held = getattr(_local, "held", None)
    if held is None or held[0] != _generation[0]:
        held = _local.held = (_generation[0], caches[DEFAULT_CACHE_ALIAS])
    return held[1]


def _caches_changed(setting=None, **_kwargs) -> None:
    if setting == "CACHES":
        _generation[0] += 1


setting_changed.connect(_caches_changed, weak=False)


class Breaker:
    def __init__(self, key: str):
        self.key = key
        self._state_key = f"casework:llm-breaker:{key}"
        self._probe_key = f"casework:llm-breaker-probe:{key}"

    @staticmethod
    def enabled() -> bool:
        return settings.LLM_BREAKER_THRESHOLD > 0

    def state(self) -> dict | None:
        """None when closed with no failure counted; else {"failures", "opened_at", "error"}.
        A cache that does not answer (Redis restarting) reads as closed: the breaker never
        fails a call of its own."""
        try:
            return _cache().get(self._state_key)
        except Exception:  # noqa: BLE001 - fail open: the request goes as if there were no breaker
            logger.warning("LLM breaker %s: the cache did not answer; treated as closed.", self.key, exc_info=True)
            return None

    def _write(self, action, *args, **kwargs):
        try:
            return action(*args, **kwargs)
        except Exception:  # noqa: BLE001 - fail open, as state() does
            logger.warning("LLM breaker %s: the cache did not answer; state not recorded.", self.key, exc_info=True)
            return True

    def before_request(self) -> dict | None:
        """Raise CircuitOpen when no request may be sent now; return the state read (for
        after_success). Half-open lets one probe through per cool-off."""
        state = self.state()
        if not state or state.get("opened_at") is None:
            return state
        now = breaker_clock()
        retry_at = state["opened_at"] + settings.LLM_BREAKER_COOLDOWN_SECONDS
        if now < retry_at or not self._write(_cache().add, self._probe_key, now,
                                             timeout=settings.LLM_BREAKER_COOLDOWN_SECONDS):
            raise CircuitOpen(
                f"The {self.key} endpoint is unreachable ({state.get('error') or 'connection failures'}); "
                f"its circuit breaker opened at {_iso(state['opened_at'])} after {state['failures']} failure(s). "
                f"No request was sent; the next try is after {_iso(retry_at)}.")
        logger.info("LLM breaker %s half-open: sending one probe request.", self.key)
        return state

    def after_success(self, state: dict | None) -> None:
        if state:  # a failure had been counted (or the breaker was open): the endpoint answers
            self._write(_cache().delete_many, [self._state_key, self._probe_key])
            if state.get("opened_at") is not None:
                logger.warning("LLM breaker %s closed: the endpoint answers again.", self.key)

    def after_failure(self, exc: errors.LLMError) -> None:
        if not is_connection_failure(exc):
            return
        state = self.state() or {"failures": 0, "opened_at": None, "error": ""}
        state["failures"] += 1
        state["error"] = exc.message[:300]
        now = breaker_clock()
        if state["opened_at"] is not None:
            # A failed probe (or a request in flight when it opened): open for another cool-off.
            if self._write(_cache().get, self._probe_key) is not None:
                state["opened_at"] = now
                self._write(_cache().delete, self._probe_key)
        elif state["failures"] >= settings.LLM_BREAKER_THRESHOLD:
            state["opened_at"] = now
            state["since"] = now
            logger.error("LLM breaker %s opened after %d connection failures: %s", self.key, state["failures"],
                         state["error"])
            from agents import metrics

            metrics.LLM_BREAKER_OPENED.labels(self.key).inc()
        self._write(_cache().set, self._state_key, state, timeout=_KEEP_SECONDS)

    def status(self) -> dict | None:
        """What /healthz and the run panel say: None when closed, else the state and times."""
        state = self.state()
        if not state or state.get("opened_at") is None:
            return None
        retry_at = state["opened_at"] + settings.LLM_BREAKER_COOLDOWN_SECONDS
        return {"provider": self.key, "state": "open" if breaker_clock() < retry_at else "half_open",
                "failures": state["failures"], "error": state.get("error", ""),
                "since": _iso(state.get("since", state["opened_at"])), "retry_at": _iso(retry_at),
                "retry_in_seconds": max(0.0, retry_at - breaker_clock())}

    def reset(self) -> None:
        _cache().delete_many([self._state_key, self._probe_key])


def breaker_for(provider_name: str) -> Breaker:
    return Breaker(provider_name)


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, tz=UTC).isoformat(timespec="seconds")
