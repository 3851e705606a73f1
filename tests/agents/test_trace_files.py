"""Trace files that other tools can read: each line of <TRACE_DIR>/<trace_id>.jsonl is one
OTLP/JSON ExportTraceServiceRequest, as the OpenTelemetry Collector's file exporter writes it,
and the spans carry the OpenTelemetry GenAI attributes beside our own."""

from __future__ import annotations

import base64
import json
import re
import threading
import time
from pathlib import Path

import pytest
from django.conf import settings
from google.protobuf.json_format import Parse
from opentelemetry import trace as otel_trace
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from pydantic import BaseModel

from agents.llm.offline_registry import offline_analyst
from agents.runtime import semconv
from agents.runtime.agent import Agent
from agents.runtime.runner import run_agent
from agents.runtime.tools import Tool
from audit.tracing import TraceFileExporter, flush_trace_files, get_tracer, read_trace, trace_tree
from tests.fakes.llm_servers import FakeToolCall, json_answer, tool_calls

HEX32, HEX16 = re.compile(r"^[0-9a-f]{32}$"), re.compile(r"^[0-9a-f]{16}$")
OTLP_SPAN_FIELDS = {"traceId", "spanId", "parentSpanId", "traceState", "flags", "name", "kind",
                    "startTimeUnixNano", "endTimeUnixNano", "attributes", "droppedAttributesCount", "events",
                    "droppedEventsCount", "links", "droppedLinksCount", "status"}


class Note(BaseModel):
    note: str


class Account(BaseModel):
    account: str


@offline_analyst("test_tf_scribe")
def _scribe(data: dict) -> dict:
    return {"note": f"read {sorted(data)}"}


scribe = Agent(id="test_tf_scribe", system_prompt="You take notes.", output_model=Note,
               temperature=0.2, max_tokens=400)
lookup = Tool("lookup_account", "Look an account up.", Account, lambda args: {"owner": "Ada"}, consequence="read_only")
clerk = Agent(id="test_tf_clerk", system_prompt="You look accounts up.", output_model=Note, tools=(lookup,))


def trace_file(trace_id: str) -> Path:
    flush_trace_files()
    return Path(settings.TRACE_DIR) / f"{trace_id}.jsonl"


def otlp_lines(trace_id: str) -> list[dict]:
    return [json.loads(line) for line in trace_file(trace_id).read_text().splitlines()]


def otlp_spans(line: dict) -> list[dict]:
    return [span for rs in line["resourceSpans"] for ss in rs["scopeSpans"] for span in ss["spans"]]


def as_protobuf(line: dict) -> ExportTraceServiceRequest:
    """The line parsed with the OTLP protobuf classes. OTLP/JSON writes ids as hex, protobuf's
    JSON mapping reads bytes as base64: convert back, as the Collector's receiver does."""
    line = json.loads(json.dumps(line))
    for span in otlp_spans(line):
        for item in (span, *span.get("links", [])):
            for key in ("traceId", "spanId", "parentSpanId"):
                if item.get(key):
                    item[key] = base64.b64encode(bytes.fromhex(item[key])).decode()
    return Parse(json.dumps(line), ExportTraceServiceRequest())


def attributes(span: dict) -> dict:
    return {kv["key"]: kv["value"] for kv in span.get("attributes", [])}


# --- The file format ---------------------------------------------------------------------


def test_every_line_of_an_agents_trace_file_is_an_otlp_json_export_request():
    result = run_agent(scribe, {"case": "C-1"})
    assert result.ok, result.error

    lines = otlp_lines(result.trace_id)
    assert lines
    spans = []
    for line in lines:
        assert set(line) == {"resourceSpans"}
        request = as_protobuf(line)
        (resource,) = request.resource_spans
        assert {a.key: a.value.string_value for a in resource.resource.attributes}["service.name"] == "casework"
        for span in request.resource_spans[0].scope_spans[0].spans:
            assert span.trace_id.hex() == result.trace_id
        spans += otlp_spans(line)

    ids = {s["spanId"] for s in spans}
    for span in spans:
        assert set(span) <= OTLP_SPAN_FIELDS
        assert HEX32.match(span["traceId"]) and HEX16.match(span["spanId"])
        assert span.get("parentSpanId") is None or span["parentSpanId"] in ids  # every parent is in the file
        assert isinstance(span["kind"], int)  # OTLP/JSON: enums as integers
        assert int(span["startTimeUnixNano"]) <= int(span["endTimeUnixNano"])  # int64 as strings
    (agent,) = [s for s in spans if s["name"] == "agent.test_tf_scribe"]
    assert agent["spanId"] == result.span_id and "parentSpanId" not in agent
    (request_span,) = [s for s in spans if s["name"] == "llm.request"]
    assert request_span["parentSpanId"] == agent["spanId"]
    assert attributes(request_span)["llm.max_tokens"] == {"intValue": "400"}
    assert attributes(request_span)["llm.temperature"] == {"doubleValue": 0.2}
    assert attributes(request_span)["llm.provider"] == {"stringValue": "offline"}


def test_read_trace_gives_the_trace_page_plain_values_back():
    result = run_agent(scribe, {"case": "C-2"})

    spans = read_trace(result.trace_id)

    (request_span,) = [s for s in spans if s["name"] == "llm.request"]
    assert request_span["trace_id"] == result.trace_id
    assert request_span["status"] == "UNSET"
    assert request_span["end_ns"] > request_span["start_ns"] > 0
    assert request_span["duration_ms"] == round((request_span["end_ns"] - request_span["start_ns"]) / 1e6, 3)
    assert request_span["attributes"]["llm.max_tokens"] == 400
    assert request_span["attributes"]["llm.temperature"] == 0.2
    assert request_span["attributes"]["agent.id"] == "test_tf_scribe"
    tree = trace_tree(spans)
    assert [(s["name"], s["depth"]) for s in tree] == [("agent.test_tf_scribe", 0), ("llm.request", 1)]


def test_a_batch_with_two_traces_goes_to_two_files_one_line_each():
    tracer = get_tracer("tests.trace_files")
    with tracer.start_as_current_span("first") as first:
        with tracer.start_as_current_span("first.child"):
            pass
    with tracer.start_as_current_span("second") as second:
        pass
    first_id = format(first.get_span_context().trace_id, "032x")
    second_id = format(second.get_span_context().trace_id, "032x")

    (first_line,) = otlp_lines(first_id)
    (second_line,) = otlp_lines(second_id)

    assert sorted(s["name"] for s in otlp_spans(first_line)) == ["first", "first.child"]
    assert [s["name"] for s in otlp_spans(second_line)] == ["second"]


def test_a_span_under_a_remote_parent_keeps_the_parents_id():
    # A resumed run hangs its spans under a stand-in parent with span id 1 in the old trace.
    trace_id = 0x0123456789ABCDEF0123456789ABCDEF
    parent = otel_trace.set_span_in_context(otel_trace.NonRecordingSpan(otel_trace.SpanContext(
        trace_id=trace_id, span_id=0x1, is_remote=True,
        trace_flags=otel_trace.TraceFlags(otel_trace.TraceFlags.SAMPLED))))
    with get_tracer("tests.trace_files").start_as_current_span("resumed", context=parent) as span:
        span.set_status(otel_trace.Status(otel_trace.StatusCode.ERROR, "worker died"))
        span.add_event("resume", {"stage": 1})

    lines = otlp_lines(f"{trace_id:032x}")
    (written,) = otlp_spans(lines[-1])
    assert written["parentSpanId"] == "0000000000000001"
    assert written["status"] == {"code": 2, "message": "worker died"}
    (spans,) = [[s for s in read_trace(f"{trace_id:032x}") if s["span_id"] == written["spanId"]]]
    assert spans[0]["parent_id"] == "0000000000000001"
    assert spans[0]["status"] == "ERROR" and spans[0]["status_description"] == "worker died"
    assert spans[0]["events"] == [{"name": "resume", "attributes": {"stage": 1}}]
    assert trace_tree(spans)[0]["depth"] == 0  # the missing parent makes it a root on the page


def test_spans_reach_their_file_from_the_background_thread_without_a_flush(monkeypatch):
    writers: list[str] = []
    original = TraceFileExporter.export

    def export(self, spans):
        writers.append(threading.current_thread().name)
        return original(self, spans)

    monkeypatch.setattr(TraceFileExporter, "export", export)
    with get_tracer("tests.trace_files").start_as_current_span("unflushed") as span:
        pass
    path = Path(settings.TRACE_DIR) / f"{span.get_span_context().trace_id:032x}.jsonl"

    deadline = time.monotonic() + 5
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.05)

    assert path.exists()
    assert threading.current_thread().name not in writers


def test_read_trace_skips_lines_it_cannot_read_and_still_reads_the_old_format():
    trace_id = "00000000000000000000000000abcdef"
    old = {"name": "agent.old", "trace_id": trace_id, "span_id": "00000000000000aa", "parent_id": None,
           "start_ns": 1, "end_ns": 2, "duration_ms": 0.0, "status": "OK", "status_description": "",
           "attributes": {"agent.id": "old"}, "events": []}
    new = {"resourceSpans": [{"scopeSpans": [{"spans": [{
        "traceId": trace_id, "spanId": "00000000000000bb", "parentSpanId": "00000000000000aa",
        "name": "llm.request", "kind": 1, "startTimeUnixNano": "3", "endTimeUnixNano": "2000003",
        "attributes": [{"key": "gen_ai.response.finish_reasons",
                        "value": {"arrayValue": {"values": [{"stringValue": "stop"}]}}},
                       {"key": "llm.tokens.input", "value": {"intValue": "12"}},
                       {"key": "tool.success", "value": {"boolValue": True}}],
        "status": {}}]}]}]}
    path = Path(settings.TRACE_DIR) / f"{trace_id}.jsonl"
    path.write_text("\n".join([json.dumps(old), "not json", "[1, 2]", "", json.dumps(new)]) + "\n")
    try:
        spans = read_trace(trace_id)
    finally:
        path.unlink()

    assert [s["name"] for s in spans] == ["agent.old", "llm.request"]
    assert spans[1]["parent_id"] == "00000000000000aa" and spans[1]["duration_ms"] == 2.0
    assert spans[1]["attributes"] == {"gen_ai.response.finish_reasons": ["stop"], "llm.tokens.input": 12,
                                      "tool.success": True}
    assert [s["depth"] for s in trace_tree(spans)] == [0, 1]


# --- GenAI semantic conventions on the runtime's spans ----------------------------------------


def test_an_llm_request_span_carries_the_gen_ai_attributes():
    result = run_agent(scribe, {"case": "C-3"})

    spans = read_trace(result.trace_id)

    (request_span,) = [s for s in spans if s["name"] == "llm.request"]
    attrs = request_span["attributes"]
    assert attrs["gen_ai.operation.name"] == "chat"
    assert attrs["gen_ai.provider.name"] == "casework.offline"
    assert attrs["gen_ai.request.model"] == attrs["llm.model"] != ""
    assert attrs["gen_ai.request.temperature"] == 0.2
    assert attrs["gen_ai.request.max_tokens"] == 400
    assert attrs["gen_ai.usage.input_tokens"] == attrs["llm.tokens.input"] == result.input_tokens
    assert attrs["gen_ai.usage.output_tokens"] == attrs["llm.tokens.output"] == result.output_tokens
    assert attrs["gen_ai.response.model"] == attrs["llm.response_model"]
    assert attrs["gen_ai.response.finish_reasons"] == [attrs["llm.finish_reason"]]
    (agent,) = [s for s in spans if s["name"] == "agent.test_tf_scribe"]
    assert agent["attributes"]["gen_ai.operation.name"] == "invoke_agent"
    assert agent["attributes"]["gen_ai.agent.name"] == "test_tf_scribe"


def test_a_tool_span_is_an_execute_tool_span(fake_openai):
    fake_openai.script(tool_calls(FakeToolCall("lookup_account", {"account": "ACC-1"}, id="call_7")),
                       json_answer({"note": "Ada owns it"}))

    result = run_agent(clerk, {"account": "ACC-1"})

    assert result.ok, result.error
    spans = read_trace(result.trace_id)
    (tool,) = [s for s in spans if s["name"] == "tool.lookup_account"]
    assert tool["attributes"]["gen_ai.operation.name"] == "execute_tool"
    assert tool["attributes"]["gen_ai.tool.name"] == "lookup_account"
    assert tool["attributes"]["gen_ai.tool.call.id"] == "call_7"
    assert tool["attributes"]["tool.success"] is True
    assert "error.type" not in tool["attributes"]
    requests = [s for s in spans if s["name"] == "llm.request"]
    assert len(requests) == 2
    assert {s["attributes"]["gen_ai.provider.name"] for s in requests} == {"openai"}
    assert {s["attributes"]["gen_ai.request.model"] for s in requests} == {"fake-model"}


# --- semconv, unit by unit -------------------------------------------------------------------


def test_request_attributes_keep_our_names_and_add_the_gen_ai_ones():
    attrs = semconv.llm_request_attributes(provider="gemini", model="gemini-2.0-flash", agent_id="transaction",
                                           temperature=0.3, max_tokens=800, message_count=2, tool_count=1,
                                           run_id=42)

    assert attrs == {
        "llm.provider": "gemini", "llm.model": "gemini-2.0-flash", "agent.id": "transaction",
        "llm.temperature": 0.3, "llm.max_tokens": 800, "llm.message_count": 2, "llm.tools": 1, "run.id": 42,
        "gen_ai.operation.name": "chat", "gen_ai.provider.name": "gcp.gemini",
        "gen_ai.request.model": "gemini-2.0-flash", "gen_ai.request.temperature": 0.3,
        "gen_ai.request.max_tokens": 800,
    }


@pytest.mark.parametrize(("ours", "theirs"), [("offline", "casework.offline"), ("openai", "openai"),
                                              ("gemini", "gcp.gemini"), ("anthropic", "anthropic"),
                                              ("ollama", "ollama")])
def test_provider_names_map_to_the_conventions_names(ours, theirs):
    assert semconv.agent_attributes(agent_id="a", provider=ours)["gen_ai.provider.name"] == theirs


def test_response_attributes_count_tokens_and_list_the_finish_reason():
    attrs = semconv.llm_response_attributes(input_tokens=120, output_tokens=8, response_model="gpt-4o-2024-08-06",
                                            finish_reason="stop", context_tokens=128000)

    assert attrs == {
        "llm.tokens.input": 120, "llm.tokens.output": 8, "llm.tokens.total": 128,
        "llm.response_model": "gpt-4o-2024-08-06", "llm.finish_reason": "stop",
        "llm.context.tokens_used": 120, "llm.context.tokens_available": 128000,
        "gen_ai.usage.input_tokens": 120, "gen_ai.usage.output_tokens": 8,
        "gen_ai.response.model": "gpt-4o-2024-08-06", "gen_ai.response.finish_reasons": ["stop"],
    }
    no_reason = semconv.llm_response_attributes(input_tokens=1, output_tokens=1, response_model="m",
                                                finish_reason="", context_tokens=10)
    assert "gen_ai.response.finish_reasons" not in no_reason


def test_tool_attributes_name_the_error_only_when_the_tool_failed():
    ok = semconv.tool_attributes(tool_name="lookup", call_id="call_1", success=True, duration_ms=12, error_type="")
    failed = semconv.tool_attributes(tool_name="lookup", call_id="", success=False, duration_ms=3,
                                     error_type="InvalidArguments")

    assert ok == {"tool.name": "lookup", "tool.success": True, "tool.duration_ms": 12, "tool.error_type": "",
                  "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup",
                  "gen_ai.tool.type": "function", "gen_ai.tool.call.id": "call_1"}
    assert failed["error.type"] == failed["tool.error_type"] == "InvalidArguments"
    assert "gen_ai.tool.call.id" not in failed
    assert semconv.tool_attributes(tool_name="t", call_id="c", success=False, duration_ms=0,
                                   error_type="")["error.type"] == "_OTHER"


def test_agent_attributes_name_the_agent():
    assert semconv.agent_attributes(agent_id="transaction", provider="anthropic", run_id=7) == {
        "agent.id": "transaction", "llm.provider": "anthropic", "run.id": 7,
        "gen_ai.operation.name": "invoke_agent", "gen_ai.provider.name": "anthropic",
        "gen_ai.agent.name": "transaction",
    }
    assert "run.id" not in semconv.agent_attributes(agent_id="a", provider="offline")
