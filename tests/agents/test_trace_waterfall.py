"""The trace page for people: spans as a waterfall (bars placed by start offset, sized by
duration, nested under their parent), readable names and statuses, raw attributes folded."""

from __future__ import annotations

import json
import re
import uuid

import pytest

from agents.models import AgentRun
from agents.trace_waterfall import MIN_WIDTH_PCT, span_label, waterfall
from casework.cases.services import case_create

MS = 1_000_000  # nanoseconds
T0 = 1_700_000_000_000 * MS


def span(span_id, name, start_ms, end_ms, parent=None, status="UNSET", **attributes):
    return {"name": name, "trace_id": "t", "span_id": span_id, "parent_id": parent,
            "start_ns": T0 + int(start_ms * MS), "end_ns": T0 + int(end_ms * MS), "duration_ms": end_ms - start_ms,
            "status": status, "status_description": "boom" if status == "ERROR" else "", "attributes": attributes,
            "events": []}


SPANS = [  # as read_trace gives them: in start order, children after their parents
    span("p", "pipeline.fraud", 0, 200, **{"run.id": 7}),
    span("a", "agent.transaction", 10, 110, parent="p", **{"agent.id": "transaction"}),
    span("l", "llm.request", 20, 60, parent="a", **{"llm.provider": "offline", "llm.model": "rules"}),
    span("b", "agent.geo", 10, 50, parent="p"),
    span("t", "tool.get_release_summary", 120, 120.001, parent="p", **{"tool.success": False,
                                                                      "tool.error_type": "timeout"}),
    span("o", "agent.orchestrator", 150, 200, parent="p", status="ERROR"),
]


def test_bars_are_placed_by_start_offset_and_sized_by_duration():
    wf = waterfall(SPANS)
    rows = {r.span_id: r for r in wf.rows}

    assert wf.total_ms == 200
    assert (rows["p"].offset_pct, rows["p"].width_pct) == (0, 100)
    assert (rows["a"].offset_pct, rows["a"].width_pct, rows["a"].offset_ms, rows["a"].duration_ms) == (5, 50, 10, 100)
    assert (rows["l"].offset_pct, rows["l"].width_pct) == (10, 20)
    assert (rows["o"].offset_pct, rows["o"].width_pct) == (75, 25)
    assert rows["t"].width_pct == MIN_WIDTH_PCT  # a microsecond still shows where it happened
    assert wf.ticks == [(0, 0), (25, 50), (50, 100), (75, 150), (100, 200)]


def test_spans_nest_under_their_parent_depth_first():
    wf = waterfall(list(reversed(SPANS)))  # whatever order the file had
    assert [(r.span_id, r.depth) for r in wf.rows][:3] == [("p", 0), ("a", 1), ("l", 2)]
    assert {r.span_id: r.depth for r in wf.rows} == {"p": 0, "a": 1, "l": 2, "b": 1, "t": 1, "o": 1}
    assert next(r for r in wf.rows if r.span_id == "p").children == 4
    orphan = waterfall([span("x", "agent.lost", 0, 5, parent="gone")])
    assert orphan.rows[0].depth == 0  # a parent outside the file: shown at the top


def test_names_and_statuses_read_as_words():
    wf = waterfall(SPANS)
    rows = {r.span_id: r for r in wf.rows}
    assert rows["p"].label == "Pipeline: fraud" and rows["a"].label == "Agent: transaction"
    assert rows["l"].label == "Model request (offline · rules)"
    assert rows["t"].label == "Tool: get release summary"
    assert (rows["t"].status, rows["t"].status_text) == ("error", "timeout")
    assert (rows["o"].status, rows["o"].status_text) == ("error", "boom")
    assert rows["a"].status == "" and wf.errors == 2
    assert span_label("agent.tool.context_tool", {}) == ("tool", "Tool: context tool")
    assert span_label("context.window", {}) == ("context", "Context: window")
    assert waterfall([]).rows == []


def otlp_line(s: dict, trace_id: str) -> str:
    attributes = [{"key": k, "value": {"stringValue": str(v)}} for k, v in s["attributes"].items()]
    otlp = {"traceId": trace_id, "spanId": s["span_id"], "name": s["name"], "startTimeUnixNano": str(s["start_ns"]),
            "endTimeUnixNano": str(s["end_ns"]), "attributes": attributes,
            "status": {"code": 2 if s["status"] == "ERROR" else 0, "message": s["status_description"]}}
    if s["parent_id"]:
        otlp["parentSpanId"] = s["parent_id"]
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [otlp]}]}]})


@pytest.mark.django_db
def test_the_run_trace_page_draws_the_waterfall(alice_client, alice, settings, tmp_path):
    settings.TRACE_DIR = tmp_path
    trace_id = uuid.uuid4().hex
    (tmp_path / f"{trace_id}.jsonl").write_text("\n".join(otlp_line(s, trace_id) for s in SPANS) + "\n")
    case = case_create(actor=alice, case_type="fraud_alert", title="Traced")
    run = AgentRun.objects.create(case=case, pipeline="fraud", mode="alert_creation", status="completed",
                                  trace_id=trace_id)

    page = alice_client.get(f"/cases/{case.reference}/runs/{run.pk}/trace/").content.decode()

    bars = re.findall(r'class="wf-bar" style="left: ([\d.]+)%; width: ([\d.]+)%"', page)
    assert bars[:3] == [("0.00", "100.00"), ("5.00", "50.00"), ("10.00", "20.00")]
    assert len(bars) == len(SPANS)
    assert 'data-span="l" data-depth="2"' in page
    assert "Agent: transaction" in page and "Model request (offline · rules)" in page
    assert page.count('badge badge-error">failed') == 2 and "timeout" in page
    # The raw attributes are there, folded away under each span.
    details = re.findall(r'<details class="wf-attrs"><summary>(.*?)</summary>', page)
    assert "llm.request: 2 attributes" in details
    assert "<dt>llm.model</dt><dd>rules</dd>" in page
    assert "200.0 ms" in page and "6 spans over 200.0 ms" in page
