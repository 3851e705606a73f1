"""OpenTelemetry set-up: one OTLP/JSON file per trace under TRACE_DIR, plus OTLP export when
OTEL_EXPORTER_OTLP_ENDPOINT is set. Configured once per process, at start-up when HTTP requests
are traced (instrument_django), else on first use.

Each line of `<TRACE_DIR>/<trace_id>.jsonl` is one `ExportTraceServiceRequest` in the OTLP/JSON
encoding, as the OpenTelemetry Collector's file exporter writes it, so the Collector's
`otlpjsonfile` receiver (and from there Jaeger, Tempo, Phoenix ...) can load the file as it is.
"""

from __future__ import annotations

import base64
import json
import os
import threading
from collections.abc import Callable, Collection, Sequence
from pathlib import Path

import orjson
from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

# Spans wait this long in memory before a background thread writes them, so an LLM call's thread
# never opens a file; read_trace flushes first, so a page never misses the last few.
FILE_EXPORT_DELAY_MS = 250
FLUSH_TIMEOUT_MS = 2000

_STATUS_NAMES = {0: "UNSET", 1: "OK", 2: "ERROR"}
_configured = False
_lock = threading.Lock()
_file_processor: BatchSpanProcessor | None = None


def otlp_json(spans: Sequence[ReadableSpan]) -> dict:
    """An ExportTraceServiceRequest for the spans, as an OTLP/JSON object: camelCase names,
    trace and span ids as lower-case hex, int64 values as strings, enums as integers.

    Built directly rather than through the protobuf classes and their JSON printer, which
    cost about a millisecond of CPU per span on the worker (a tenth of a fraud alert's). The
    attribute lists are already encoded (orjson Fragments, `_kv_list`): write it with orjson."""
    by_resource: dict[int, tuple] = {}
    for span in spans:
        resource = span.resource
        scope = span.instrumentation_scope
        entry = by_resource.setdefault(id(resource), (resource, {}))
        key = (scope.name, scope.version or "") if scope else ("", "")
        entry[1].setdefault(key, []).append(_span_json(span))
    return {"resourceSpans": [
        {"resource": {"attributes": _resource_attributes(resource)},
         "scopeSpans": [{"scope": {"name": name, **({"version": version} if version else {})}, "spans": items}
                        for (name, version), items in scopes.items()]}
        for resource, scopes in by_resource.values()]}


def _resource_attributes(resource) -> orjson.Fragment:
    """A process has one resource, the same in every batch: encoded once."""
    held = _resources.get(id(resource))
    if held is None or held[0] is not resource:
        held = _resources[id(resource)] = (resource, _kv_list(resource.attributes))
    return held[1]


_resources: dict[int, tuple] = {}


def _span_json(span: ReadableSpan) -> dict:
    ctx = span.get_span_context()
    data = {"traceId": f"{ctx.trace_id:032x}", "spanId": f"{ctx.span_id:016x}"}
    if span.parent is not None:
        data["parentSpanId"] = f"{span.parent.span_id:016x}"
    data.update(name=span.name, kind=span.kind.value + 1,  # OTLP counts SPAN_KIND_INTERNAL as 1
                startTimeUnixNano=str(span.start_time or 0), endTimeUnixNano=str(span.end_time or 0))
    # The span's own BoundedAttributes rather than the read-only view `attributes` wraps it in
    # (same pairs, one mapping layer less); the public view if the SDK's private name changes.
    attributes = getattr(span, "_attributes", None) or span.attributes
    if attributes:
        data["attributes"] = _kv_list(attributes)
    if span.events:
        data["events"] = [{"timeUnixNano": str(e.timestamp), "name": e.name,
                           **({"attributes": _kv_list(e.attributes)} if e.attributes else {})}
                          for e in span.events]
    if span.links:
        data["links"] = [{"traceId": f"{link.context.trace_id:032x}", "spanId": f"{link.context.span_id:016x}",
                          **({"attributes": _kv_list(link.attributes)} if link.attributes else {})}
                         for link in span.links]
    status = {"code": span.status.status_code.value} if span.status.status_code.value else {}
    if span.status.description:
        status["message"] = span.status.description
    data["status"] = status
    return data


def _kv_list(attributes) -> orjson.Fragment:
    """The attributes as an OTLP/JSON KeyValue list, already encoded. Most of a span's attributes
    repeat from span to span (the provider, the model, the agent, the operation), so each
    (key, value) pair of a str, bool or int is encoded once per process and its bytes reused:
    building two dicts per attribute for orjson was most of the exporter's CPU."""
    parts = []
    # The SDK's BoundedAttributes is a MutableMapping whose items() looks each key up again
    # through __getitem__; the dict it wraps gives the same pairs directly.
    for key, value in getattr(attributes, "_dict", attributes or {}).items():
        if value.__class__ in _CACHED_TYPES:
            # The class is part of the key: True == 1 and hash(True) == hash(1), but they
            # encode differently.
            cache_key = (key, value.__class__, value)
            part = _encoded.get(cache_key)
            if part is None:
                if len(_encoded) >= _ENCODED_MAX:
                    _encoded.clear()  # counters (tokens, run ids) would otherwise fill it
                part = _encoded[cache_key] = _kv_bytes(key, value)
        else:
            part = _kv_bytes(key, value)
        parts.append(part)
    return orjson.Fragment(b"[" + b",".join(parts) + b"]")


def _kv_bytes(key: str, value) -> bytes:
    return orjson.dumps({"key": key, "value": _any_value(value)})


# Floats are left out: -0.0 == 0.0 with the same hash, and they encode differently.
_CACHED_TYPES = frozenset({str, bool, int})
_ENCODED_MAX = 4096
_encoded: dict[tuple, bytes] = {}


def _any_value(value) -> dict:
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, str):
        return {"stringValue": value}
    if isinstance(value, bytes):
        return {"bytesValue": base64.b64encode(value).decode()}
    if isinstance(value, tuple | list):
        return {"arrayValue": {"values": [_any_value(v) for v in value]}}
    return {"stringValue": str(value)}


# The HTTP request spans' instrumentation scope (instrument_django).
REQUEST_SCOPE = "opentelemetry.instrumentation.django"


class TraceFileExporter(SpanExporter):
    """Appends each batch of finished spans to <TRACE_DIR>/<trace_id>.jsonl, one OTLP/JSON line
    per trace in the batch; spans of the instrumentation scopes `skip_scopes` names (a
    collection, or a function giving one, asked at each batch) are left out."""

    def __init__(self, directory: Path, *, skip_scopes: Collection[str] | Callable[[], Collection[str]] = ()):
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self._prefix = os.path.join(self.directory, "")  # a str join per file, not a PurePath
        self._lock = threading.Lock()
        self._skip_scopes = skip_scopes

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        skip = self._skip_scopes() if callable(self._skip_scopes) else self._skip_scopes
        if skip:
            spans = [s for s in spans if s.instrumentation_scope is None or s.instrumentation_scope.name not in skip]
        by_trace: dict[int, list[ReadableSpan]] = {}
        for span in spans:
            by_trace.setdefault(span.get_span_context().trace_id, []).append(span)
        with self._lock:
            for trace_id, group in by_trace.items():
                # orjson: json.dumps of these batches was ~5% of a busy worker's CPU (bench/README.md).
                line = orjson.dumps(otlp_json(group), option=orjson.OPT_APPEND_NEWLINE)
                # One write() on an O_APPEND descriptor, so a resumed run's worker appending to
                # the same file from another process does not interleave with this line.
                fd = os.open(f"{self._prefix}{trace_id:032x}.jsonl", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
                try:
                    os.write(fd, line)
                finally:
                    os.close(fd)
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        return None


def configure_tracing() -> None:
    global _configured, _file_processor
    if _configured:
        return
    with _lock:
        if _configured:
            return
        from django.conf import settings

        provider = TracerProvider(resource=Resource.create({"service.name": "casework"}))
        _file_processor = BatchSpanProcessor(TraceFileExporter(settings.TRACE_DIR, skip_scopes=_unfiled_scopes),
                                             schedule_delay_millis=FILE_EXPORT_DELAY_MS)
        provider.add_span_processor(_file_processor)
        if settings.OTEL_EXPORTER_OTLP_ENDPOINT:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

            provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
        trace.set_tracer_provider(provider)
        _configured = True


def _unfiled_scopes() -> tuple[str, ...]:
    """A request is a trace, and a file, of its own: where traces go to OTLP as well, request
    spans go there only (TRACE_FILE_REQUESTS), not a file per page view under TRACE_DIR. Read
    at each batch, so a test can turn it on."""
    from django.conf import settings

    return () if settings.TRACE_FILE_REQUESTS else (REQUEST_SCOPE,)


def instrument_django() -> None:
    """HTTP request spans (seed 004: "HTTP request spans, auto-instrumented"), through
    opentelemetry-instrumentation-django: its middleware, put first in MIDDLEWARE, starts one
    SERVER span per request, named by the route (`GET cases/<str:reference>/`), continuing the
    caller's trace when a `traceparent` header comes, into this module's tracer provider (the
    trace files, and OTLP when set). Called from AuditConfig.ready, before a handler loads the
    middleware. Its HTTP metrics are left off: /metrics has Prometheus' request histogram
    (casework.ops.metrics). OTEL_PYTHON_DJANGO_INSTRUMENT=False turns it off."""
    from django.conf import settings
    from opentelemetry.instrumentation.django import DjangoInstrumentor
    from opentelemetry.metrics import NoOpMeterProvider

    instrumentor = DjangoInstrumentor()
    if instrumentor.is_instrumented_by_opentelemetry:
        return
    configure_tracing()
    instrumentor.instrument(tracer_provider=trace.get_tracer_provider(), meter_provider=NoOpMeterProvider(),
                            excluded_urls=settings.OTEL_PYTHON_DJANGO_EXCLUDED_URLS)


_tracers: dict[str, trace.Tracer] = {}


def get_tracer(name: str = "casework.agents") -> trace.Tracer:
    # The SDK builds a new tracer object on every get_tracer call (5-17% of a worker's CPU in
    # bench/runtime_throughput.py); one per name per process is all a name needs.
    tracer = _tracers.get(name)
    if tracer is None:
        configure_tracing()
        tracer = _tracers[name] = trace.get_tracer(name)
    return tracer


def flush_trace_files() -> None:
    """Writes the spans still queued in this process to their files (only the file exporter's
    queue: a slow OTLP endpoint must not hold up a page)."""
    if _file_processor is not None:
        _file_processor.force_flush(timeout_millis=FLUSH_TIMEOUT_MS)


def _value(any_value: dict):
    """A plain Python value from an OTLP/JSON AnyValue."""
    if "stringValue" in any_value:
        return any_value["stringValue"]
    if "boolValue" in any_value:
        return any_value["boolValue"]
    if "intValue" in any_value:
        return int(any_value["intValue"])  # int64 travels as a string
    if "doubleValue" in any_value:
        return float(any_value["doubleValue"])
    if "arrayValue" in any_value:
        return [_value(v) for v in any_value["arrayValue"].get("values", [])]
    if "kvlistValue" in any_value:
        return _attributes(any_value["kvlistValue"].get("values", []))
    if "bytesValue" in any_value:
        return any_value["bytesValue"]
    return None


def _attributes(key_values: list[dict]) -> dict:
    return {kv["key"]: _value(kv.get("value", {})) for kv in key_values}


def _status_name(code) -> str:
    if isinstance(code, str):  # protobuf's default JSON mapping writes enum names
        return code.removeprefix("STATUS_CODE_")
    return _STATUS_NAMES.get(code, "UNSET")


def _span_from_otlp(span: dict) -> dict:
    start, end = int(span.get("startTimeUnixNano", 0)), int(span.get("endTimeUnixNano", 0))
    status = span.get("status", {})
    return {
        "name": span.get("name", ""),
        "trace_id": span.get("traceId", ""),
        "span_id": span.get("spanId", ""),
        "parent_id": span.get("parentSpanId") or None,
        "start_ns": start,
        "end_ns": end,
        "duration_ms": round((end - start) / 1e6, 3),
        "status": _status_name(status.get("code", 0)),
        "status_description": status.get("message", ""),
        "attributes": _attributes(span.get("attributes", [])),
        "events": [{"name": e.get("name", ""), "attributes": _attributes(e.get("attributes", []))}
                   for e in span.get("events", [])],
    }


def _spans_from_line(line: str) -> list[dict]:
    try:
        data = json.loads(line)
    except ValueError:
        return []
    if not isinstance(data, dict):
        return []
    if "resourceSpans" not in data:
        # A line in the format written before OTLP/JSON: already one span dict.
        return [data] if {"name", "span_id", "start_ns"} <= data.keys() else []
    return [_span_from_otlp(span)
            for resource_spans in data["resourceSpans"]
            for scope_spans in resource_spans.get("scopeSpans", [])
            for span in scope_spans.get("spans", [])]


def read_trace(trace_id: str) -> list[dict]:
    """The spans of one trace, in start order, from its file (empty if none)."""
    from django.conf import settings

    if not trace_id or not all(c in "0123456789abcdef" for c in trace_id):
        return []
    flush_trace_files()
    path = Path(settings.TRACE_DIR) / f"{trace_id}.jsonl"
    if not path.exists():
        return []
    spans = [span for line in path.read_text(encoding="utf-8").splitlines() if line.strip()
             for span in _spans_from_line(line)]
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
