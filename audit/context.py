"""The correlation id that ties together everything one request or one pipeline run does, and
the other fields a log line carries for the block it was written in (agents.runtime binds a
run's id). audit.logs puts them on every log record; the request's span carries the id too."""

from __future__ import annotations

import contextlib
import re
import uuid
from collections.abc import Iterator
from contextvars import ContextVar

from opentelemetry import trace

_correlation_id: ContextVar[str] = ContextVar("correlation_id", default="")
_log_fields: ContextVar[dict | None] = ContextVar("log_fields", default=None)  # replaced, never mutated

# An X-Request-ID taken as it comes: what proxies and load balancers send (a UUID, hex, a
# ULID ...), at most the 64 characters a correlation id column holds. Anything else (empty,
# too long, spaces, quotes, control characters) gets an id of ours instead, so a caller cannot
# write into the logs or a response header through it.
REQUEST_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:+/=-]{0,63}")


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


def get_log_fields() -> dict:
    return _log_fields.get() or {}


@contextlib.contextmanager
def log_fields(**fields) -> Iterator[None]:
    """Every log line written in the block carries these fields too (a run's id ...)."""
    token = _log_fields.set(get_log_fields() | fields)
    try:
        yield
    finally:
        _log_fields.reset(token)


def request_id_from(value: str) -> str | None:
    """The caller's X-Request-ID when it is well-formed, else None."""
    return value if value and REQUEST_ID.fullmatch(value) else None


class CorrelationIdMiddleware:
    """Give each request a correlation id, taken from X-Request-ID when the caller sends a
    well-formed one, and send it back in X-Request-ID.

    Placed first in MIDDLEWARE, so that it runs inside the request's span (the OpenTelemetry
    middleware is put before everything, audit.tracing.instrument_django) and around every
    other middleware's log lines. The span gets the id as `correlation.id`; the request keeps
    it and the trace id, for the log lines Django writes after the middleware have returned
    (django.request's "Not Found: ...", which carry the request)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        with correlation(request_id_from(request.headers.get("X-Request-ID", ""))) as value:
            request.correlation_id = value
            span = trace.get_current_span()
            if span.is_recording():
                span.set_attribute("correlation.id", value)
            context = span.get_span_context()
            request.trace_id = f"{context.trace_id:032x}" if context.is_valid else ""
            response = self.get_response(request)
        response["X-Request-ID"] = value
        return response
