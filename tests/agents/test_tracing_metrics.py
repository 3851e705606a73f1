"""Observability of a run: one OTLP/JSON-lines file per trace under TRACE_DIR with the run, agent,
LLM request, retry and tool spans and their attributes; Prometheus metrics on /metrics.
(The file format itself is checked in test_trace_files.py.)"""

from __future__ import annotations

from pathlib import Path

import pytest
from django.conf import settings
from django.db import transaction
from pydantic import BaseModel

from agents.models import AgentCall
from agents.runtime.agent import Agent
from agents.runtime.pipeline import CallSpec, Pipeline, Stage, register_pipeline
from agents.runtime.tools import Tool
from agents.tasks import pipeline_enqueue
from audit.tracing import read_trace, trace_tree
from casework.cases.services import case_create
from tests.fakes.llm_servers import json_answer, rate_limited, tool_calls

pytestmark = pytest.mark.django_db


class Note(BaseModel):
    note: str


class Account(BaseModel):
    account: str


lookup = Tool("lookup_account", "Look an account up.", Account, lambda args: {"owner": "Ada"}, consequence="read_only")
first = Agent(id="test_tr_a", system_prompt="You are A.", output_model=Note)
second = Agent(id="test_tr_b", system_prompt="You are B.", output_model=Note, tools=(lookup,))
last = Agent(id="test_tr_c", system_prompt="You are C.", output_model=Note, temperature=0.1, max_tokens=300)
register_pipeline(Pipeline(name="test_traced", modes={"full": [
    Stage("gather", lambda ctx: [CallSpec(a.id, a, {"case": ctx.case.reference}) for a in (first, second)]),
    Stage("conclude", lambda ctx: [CallSpec(last.id, last, {"a": ctx.output("test_tr_a"), "b": ctx.output("test_tr_b")})]),
]}))


def answers(body: dict):
    system = body["messages"][0]["content"]
    if system.startswith("You are B.") and not any(m["role"] == "tool" for m in body["messages"]):
        return tool_calls(("lookup_account", {"account": "ACC-1"}))
    return json_answer({"note": system[:10]}, input_tokens=120, output_tokens=8)


@pytest.fixture
def run(alice, fake_openai, django_capture_on_commit_callbacks):
    fake_openai.handler = answers
    case = case_create(actor=alice, case_type="fraud_alert", title="Traced")
    with django_capture_on_commit_callbacks(execute=True), transaction.atomic():
        run = pipeline_enqueue(case=case, pipeline="test_traced", mode="full", actor="system")
    run.refresh_from_db()
    assert run.status == "completed", run.error
    return run


def spans_named(spans: list[dict], prefix: str) -> list[dict]:
    return [s for s in spans if s["name"].startswith(prefix)]


def test_a_run_writes_one_trace_file_with_pipeline_agent_and_llm_spans(run):
    spans = read_trace(run.trace_id)  # flushes the spans still queued for the file
    assert (Path(settings.TRACE_DIR) / f"{run.trace_id}.jsonl").exists()
    assert {s["trace_id"] for s in spans} == {run.trace_id}

    (pipeline,) = spans_named(spans, "pipeline.")
    assert pipeline["name"] == "pipeline.test_traced"
    assert pipeline["attributes"]["run.id"] == run.pk
    agents = {s["name"]: s for s in spans_named(spans, "agent.")}
    assert set(agents) == {"agent.test_tr_a", "agent.test_tr_b", "agent.test_tr_c"}
    # Agents fanned out on worker threads still hang under the run's span.
    assert {s["parent_id"] for s in agents.values()} == {pipeline["span_id"]}

    requests = spans_named(spans, "llm.request")
    assert len(requests) == 4  # A, B twice (tool turn), C
    for span in requests:
        assert span["parent_id"] in {s["span_id"] for s in agents.values()}
        assert span["attributes"]["llm.provider"] == "openai"
        assert span["attributes"]["llm.model"] == "fake-model"
        assert "llm.tokens.input" in span["attributes"]
    (c_request,) = [s for s in requests if s["attributes"]["agent.id"] == "test_tr_c"]
    assert c_request["attributes"]["llm.tokens.input"] == 120
    assert c_request["attributes"]["llm.tokens.output"] == 8
    assert c_request["attributes"]["llm.temperature"] == 0.1
    assert c_request["attributes"]["llm.max_tokens"] == 300
    assert c_request["attributes"]["llm.context.tokens_available"] == settings.LLM_CONTEXT_TOKENS

    (tool,) = spans_named(spans, "tool.")
    assert tool["name"] == "tool.lookup_account"
    assert tool["parent_id"] == agents["agent.test_tr_b"]["span_id"]
    assert tool["attributes"]["tool.success"] is True

    # Each AgentCall row points at its agent's span; the tree view puts the run first.
    call = AgentCall.objects.get(run=run, key="test_tr_c", kind="agent")
    assert (call.trace_id, call.span_id) == (run.trace_id, agents["agent.test_tr_c"]["span_id"])
    tree = trace_tree(spans)
    assert tree[0]["name"] == "pipeline.test_traced" and tree[0]["depth"] == 0
    assert {s["depth"] for s in tree if s["name"] == "llm.request"} == {2}


def test_a_retried_request_leaves_an_error_span_and_a_retry_span(alice, fake_openai, django_capture_on_commit_callbacks):
    fake_openai.handler = answers
    fake_openai.script(rate_limited(0.05))
    case = case_create(actor=alice, case_type="fraud_alert", title="Rate limited")
    with django_capture_on_commit_callbacks(execute=True), transaction.atomic():
        run = pipeline_enqueue(case=case, pipeline="test_traced", mode="full", actor="system")
    run.refresh_from_db()

    spans = read_trace(run.trace_id)
    failed = [s for s in spans_named(spans, "llm.request") if s["status"] == "ERROR"]
    assert [s["attributes"]["error.type"] for s in failed] == ["rate_limit"]
    (retry,) = spans_named(spans, "llm.retry")
    assert retry["attributes"]["retry.attempt"] == 1
    assert retry["attributes"]["retry.backoff_s"] >= 0.05
    assert retry["attributes"]["error.type"] == "rate_limit"
    assert sum(c.attempts for c in AgentCall.objects.filter(run=run, kind="agent")) == 5


def test_metrics_show_llm_call_durations_tokens_and_tool_calls(run, client):
    response = client.get("/metrics")

    assert response.status_code == 200
    body = response.content.decode()
    assert "# TYPE casework_llm_call_duration_seconds histogram" in body
    assert 'casework_llm_call_duration_seconds_count{agent="test_tr_c",model="fake-model",provider="openai"}' in body
    assert "casework_llm_tokens_total{" in body
    assert 'tool="lookup_account"' in body
    assert "casework_context_utilisation_ratio_bucket{" in body


def test_a_resumed_run_joins_the_trace_it_started(run):
    from datetime import timedelta

    from django.utils import timezone

    from agents.models import AgentRun
    from agents.runtime.pipeline import execute_run

    # As if the worker had died before its last step: resume from the saved stage.
    AgentRun.objects.filter(pk=run.pk).update(
        status="running", heartbeat_at=timezone.now() - timedelta(seconds=settings.RUN_STALE_AFTER_SECONDS + 1))
    run.state["stage_index"] = 1
    AgentRun.objects.filter(pk=run.pk).update(state=run.state)

    execute_run(run.pk)

    pipelines = spans_named(read_trace(run.trace_id), "pipeline.")
    assert len(pipelines) == 2
    assert [p["attributes"]["run.resumed"] for p in sorted(pipelines, key=lambda p: p["start_ns"])] == [False, True]
