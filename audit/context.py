"""The correlation id that ties together everything one request or one pipeline run does."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator
from contextvars import ContextVar

_correlation_id: ContextVar[str] = ContextVar("correlation_id", default="")


def get_correlation_id() -> str:
    return _correlation_id.get()


def new_correlation_id() -> str:
    return uuid.uuid4().hex


@contextlib.contextmanager
def correlation(correlation_id: str | None = None) -> Iterator[str]:
    """Run a block under a correlation id (a new one when none is given)."""
    value = correlation_id or new_correlation_id()
    token = _correlation_id.set(value)
    try:
        yield value
    finally:
        _correlation_id.reset(token)


class CorrelationIdMiddleware:
    """Give each request a correlation id, taken from X-Request-ID when the caller sends one."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        incoming = request.headers.get("X-Request-ID", "")[:64]
        with correlation(incoming or None) as value:
            request.correlation_id = value
            response = self.get_response(request)
        response["X-Request-ID"] = value
        return response
