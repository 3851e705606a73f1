"""Log lines that say which request or run wrote them (seed 004, "structured logging with
correlation ids").

`ContextFilter`, on the handler, puts on every record the correlation id (the request's
X-Request-ID, or the run's), the current span's trace and span ids, and the fields bound with
audit.context.log_fields (a run's id). `JsonFormatter` writes one JSON object per line
(LOG_FORMAT=json, the default: what production ships to its log store); LOG_FORMAT=plain is
the one-line text `make run` prints. Both come from settings.LOGGING.

JSON through python-json-logger: maintained, a plain logging.Formatter (so dictConfig,
Celery's handlers and pytest's capture take it as it is), every `extra={...}` key becomes a
field, and its orjson variant encodes a line in a few microseconds.
"""

from __future__ import annotations

import logging

from opentelemetry import trace
from pythonjsonlogger.core import RESERVED_ATTRS
from pythonjsonlogger.orjson import OrjsonFormatter

from audit.context import get_correlation_id, get_log_fields


class ContextFilter(logging.Filter):
    """Adds correlation_id (always, "" outside a request or run), trace_id and span_id (when a
    span is current) and the bound log fields to each record; never drops one."""

    def filter(self, record: logging.LogRecord) -> bool:
        correlation_id = get_correlation_id()
        span_context = trace.get_current_span().get_span_context()
        if not correlation_id or not span_context.is_valid:
            # django.request's lines ("Not Found: ...") are written once the middleware have
            # returned, outside the request's context; they carry the request.
            request = getattr(record, "request", None)
            correlation_id = correlation_id or getattr(request, "correlation_id", "")
            if not span_context.is_valid and getattr(request, "trace_id", ""):
                record.trace_id = request.trace_id
        record.correlation_id = correlation_id
        if span_context.is_valid:
            record.trace_id = f"{span_context.trace_id:032x}"
            record.span_id = f"{span_context.span_id:016x}"
        for key, value in get_log_fields().items():
            if not hasattr(record, key):  # what the call itself passed in extra= wins
                setattr(record, key, value)
        return True


class JsonFormatter(OrjsonFormatter):
    """One JSON object per line: time (UTC, RFC 3339), level, logger, message, then
    correlation_id, trace_id, span_id, run_id and whatever the call passed in `extra`."""

    def __init__(self, **kwargs):
        kwargs.setdefault("fmt", ["levelname", "name", "message"])
        kwargs.setdefault("rename_fields", {"levelname": "level", "name": "logger"})
        kwargs.setdefault("timestamp", "time")
        # Django's request lines carry the request object itself: its id is already there.
        kwargs.setdefault("reserved_attrs", [*RESERVED_ATTRS, "request", "taskName"])
        super().__init__(**kwargs)
