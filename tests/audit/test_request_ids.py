"""Every HTTP request is a span (opentelemetry-instrumentation-django, into the trace files) and
has an id (X-Request-ID, taken from the caller when well-formed, sent back): its JSON log lines
carry that id and the span's trace id, so a line leads to its trace and back."""

from __future__ import annotations

import re
import secrets

import pytest
from django.test import Client
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from audit.tracing import REQUEST_SCOPE, TraceFileExporter, read_trace
from tests.log_lines import json_log_lines

pytestmark = pytest.mark.django_db

HEX32 = re.compile(r"[0-9a-f]{32}")


@pytest.fixture(autouse=True)
def _request_spans_in_files(settings):
    settings.TRACE_FILE_REQUESTS = True  # off for the rest of the suite (pyproject.toml)


def server_span(trace_id: str) -> dict:
    (span,) = [s for s in read_trace(trace_id) if "http.status_code" in s["attributes"]]
    return span


def test_a_request_s_log_lines_and_its_span_carry_the_same_ids(alice_client):
    with json_log_lines() as logs:
        response = alice_client.get("/cases/FRA-999999/", HTTP_X_REQUEST_ID="req-4711")

    assert response.status_code == 404
    assert response["X-Request-ID"] == "req-4711"
    # Django's "Not Found" line, written once the middleware have returned: it still has both.
    (line,) = logs.where(logger="django.request")
    assert line["correlation_id"] == "req-4711" and line["level"] == "WARNING"
    assert HEX32.fullmatch(line["trace_id"])
    span = server_span(line["trace_id"])
    assert span["name"] == "GET cases/<str:reference>/"
    assert span["attributes"]["correlation.id"] == "req-4711"
    assert span["attributes"]["http.status_code"] == 404


def test_a_line_written_inside_the_request_names_the_request_s_span(alice):
    client = Client(enforce_csrf_checks=True)
    client.force_login(alice)
    with json_log_lines() as logs:
        response = client.post("/cases/", HTTP_X_REQUEST_ID="req-csrf-1")

    assert response.status_code == 403
    (line,) = logs.where(logger="django.security.csrf")
    assert line["correlation_id"] == "req-csrf-1"
    span = server_span(line["trace_id"])
    assert line["span_id"] == span["span_id"]  # written by CsrfViewMiddleware, inside the span
    assert span["attributes"]["correlation.id"] == "req-csrf-1"


@pytest.mark.parametrize("sent", ["", "has space", "x" * 65, "<script>", "-leading-dash", "naïve"])
def test_a_missing_or_malformed_x_request_id_is_replaced_by_one_of_ours(client, sent):
    response = client.get("/login/", HTTP_X_REQUEST_ID=sent)

    assert HEX32.fullmatch(response["X-Request-ID"])
    assert response.wsgi_request.correlation_id == response["X-Request-ID"]


def test_a_caller_s_trace_context_is_continued(client):
    # New ids each time: the trace files outlive a test run.
    parent_trace, parent_span = secrets.token_hex(16), secrets.token_hex(8)

    response = client.get("/login/", HTTP_TRACEPARENT=f"00-{parent_trace}-{parent_span}-01")

    assert response.wsgi_request.trace_id == parent_trace
    assert server_span(parent_trace)["parent_id"] == parent_span


def test_probes_and_scrapes_are_not_traced(client):
    response = client.get("/healthz")

    assert response.wsgi_request.trace_id == ""  # no span was current
    assert response["X-Request-ID"]  # an id all the same


def test_with_otlp_a_request_s_spans_are_not_also_a_file_each(tmp_path):
    # TRACE_FILE_REQUESTS is off by default when OTEL_EXPORTER_OTLP_ENDPOINT is set.
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(TraceFileExporter(tmp_path, skip_scopes=[REQUEST_SCOPE])))

    with provider.get_tracer(REQUEST_SCOPE).start_as_current_span("GET cases/"):
        with provider.get_tracer("casework.agents").start_as_current_span("agent.inline") as inner:
            pass

    (path,) = tmp_path.iterdir()
    assert path.name == f"{inner.get_span_context().trace_id:032x}.jsonl"
    assert "agent.inline" in path.read_text() and "GET cases/" not in path.read_text()
