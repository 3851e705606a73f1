"""OpenTelemetry set-up: one JSON file per trace under TRACE_DIR, plus OTLP export when
OTEL_EXPORTER_OTLP_ENDPOINT is set. Configured once per process, on first use."""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from pathlib import Path

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor, SpanExporter, SpanExportResult

_configured = False
_lock = threading.Lock()


def span_to_dict(span: ReadableSpan) -> dict:
    ctx = span.get_span_context()
    return {
        "name": span.name,
        "trace_id": format(ctx.trace_id, "032x"),
        "span_id": format(ctx.span_id, "016x"),
        "parent_id": format(span.parent.span_id, "016x") if span.parent else None,
        "start_ns": span.start_time,
        "end_ns": span.end_time,
        "duration_ms": round(((span.end_time or 0) - (span.start_time or 0)) / 1e6, 3),
        "status": span.status.status_code.name,
        "status_description": span.status.description or "",
        "attributes": {k: (list(v) if isinstance(v, tuple) else v) for k, v in (span.attributes or {}).items()},
        "events": [{"name": e.name, "attributes": dict(e.attributes or {})} for e in span.events],
    }


class TraceFileExporter(SpanExporter):
    """Appends each finished span, as one JSON line, to <TRACE_DIR>/<trace_id>.jsonl."""

    def __init__(self, directory: Path):
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        with self._lock:
            for span in spans:
                data = span_to_dict(span)
                with open(self.directory / f"{data['trace_id']}.jsonl", "a", encoding="utf-8") as fh:
                    fh.write(json.dumps(data, default=str) + "\n")
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        return None


def configure_tracing() -> None:
    global _configured
    if _configured:
        return
    with _lock:
        if _configured:
            return
        from django.conf import settings

        provider = TracerProvider(resource=Resource.create({"service.name": "casework"}))
        provider.add_span_processor(SimpleSpanProcessor(TraceFileExporter(settings.TRACE_DIR)))
        if settings.OTEL_EXPORTER_OTLP_ENDPOINT:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

            provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
        trace.set_tracer_provider(provider)
        _configured = True


def get_tracer(name: str = "casework.agents") -> trace.Tracer:
    configure_tracing()
    return trace.get_tracer(name)


def read_trace(trace_id: str) -> list[dict]:
    """The spans of one trace, parents before children, from its file (empty if none)."""
    from django.conf import settings

    if not trace_id or not all(c in "0123456789abcdef" for c in trace_id):
        return []
    path = Path(settings.TRACE_DIR) / f"{trace_id}.jsonl"
    if not path.exists():
        return []
    spans = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return sorted(spans, key=lambda s: s["start_ns"] or 0)


def trace_tree(spans: list[dict]) -> list[dict]:
    """Spans with a depth, in depth-first order, for an indented view."""
    children: dict[str | None, list[dict]] = {}
    ids = {s["span_id"] for s in spans}
    for s in spans:
        parent = s["parent_id"] if s["parent_id"] in ids else None
        children.setdefault(parent, []).append(s)
    ordered: list[dict] = []

    def walk(parent: str | None, depth: int) -> None:
        for s in children.get(parent, []):
            ordered.append({**s, "depth": depth})
            walk(s["span_id"], depth + 1)

    walk(None, 0)
    return ordered
