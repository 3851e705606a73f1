"""A run's log lines (seed 004, "Logs": retry attempts with reasons, context window pruning
events), as JSON with the run's correlation id, its id and its trace id, so that a line in the
log store leads to the run and its trace; and the context window's span."""

from __future__ import annotations

import pytest
from django.db import transaction
from pydantic import BaseModel

from agents.runtime.agent import Agent
from agents.runtime.pipeline import CallSpec, Pipeline, Stage, register_pipeline
from agents.runtime.runner import run_tool_loop
from agents.runtime.tools import Tool
from agents.tasks import pipeline_enqueue
from audit.context import correlation
from audit.tracing import read_trace
from casework.cases.services import case_create
from tests.agents.test_context import filler
from tests.fakes.llm_servers import error, json_answer, rate_limited, tool_calls
from tests.log_lines import json_log_lines

pytestmark = pytest.mark.django_db


class Note(BaseModel):
    note: str


noter = Agent(id="test_logged_noter", system_prompt="Write a note.", output_model=Note)
register_pipeline(Pipeline(name="test_logged", modes={"full": [
    Stage("note", lambda ctx: [CallSpec(noter.id, noter, {"case": ctx.case.reference})]),
]}))


def run_queued_by_request(alice, capture, request_id: str):
    """A run queued inside a request, as a view queues it: it takes the request's id."""
    case = case_create(actor=alice, case_type="fraud_alert", title="Logged")
    with correlation(request_id), capture(execute=True), transaction.atomic():
        run = pipeline_enqueue(case=case, pipeline="test_logged", mode="full", actor="alice")
    run.refresh_from_db()
    return run


@pytest.mark.parametrize("failure", [error(500, "The server had an error"), rate_limited(0.01)],
                         ids=["500", "429"])
def test_a_retried_llm_call_logs_the_retry_with_the_run_s_ids(alice, fake_openai, failure,
                                                               django_capture_on_commit_callbacks):
    fake_openai.script(failure, json_answer({"note": "ok"}))

    with json_log_lines() as logs:
        run = run_queued_by_request(alice, django_capture_on_commit_callbacks, "req-retry-1")

    assert run.status == "completed", run.error
    assert run.correlation_id == "req-retry-1"
    (line,) = logs.where(event="llm.retry")
    assert line["level"] == "WARNING"
    assert line["correlation_id"] == "req-retry-1"
    assert line["run_id"] == run.pk
    assert line["trace_id"] == run.trace_id
    assert line["agent"] == "test_logged_noter" and line["attempt"] == 1
    assert line["error_type"] == ("provider" if failure.status == 500 else "rate_limit")
    assert line["backoff_s"] > 0
    # The same retry is a span in the run's trace, and the log line names it.
    (retry_span,) = [s for s in read_trace(run.trace_id) if s["name"] == "llm.retry"]
    assert line["span_id"] == retry_span["span_id"]


def test_a_request_that_is_not_retried_logs_why(alice, fake_openai, django_capture_on_commit_callbacks):
    fake_openai.script(error(401, "Incorrect API key provided"))

    with json_log_lines() as logs:
        run = run_queued_by_request(alice, django_capture_on_commit_callbacks, "req-auth-1")

    (line,) = logs.where(event="llm.failed")
    assert line["error_type"] == "authentication" and line["attempt"] == 1
    assert line["correlation_id"] == "req-auth-1" and line["run_id"] == run.pk
    assert not logs.where(event="llm.retry")


# --- the context window ------------------------------------------------------------------------


class Page(BaseModel):
    page: int


class Pages(BaseModel):
    pages_read: int


reader = Agent(id="test_logged_reader", system_prompt="Read pages, then say how many you read.", output_model=Pages,
               tools=(Tool("read_page", "Read one page.", Page, lambda args: {"text": filler(300)},
                                  consequence="read_only"),), max_tokens=200)


def test_pruning_the_context_window_logs_a_line_and_is_a_span(fake_openai, settings):
    settings.LLM_CONTEXT_TOKENS = 1400  # budget (1400 - 200) x 0.9 = 1080: about three pages
    fake_openai.script(*[tool_calls(("read_page", {"page": n})) for n in range(1, 6)], json_answer({"pages_read": 5}))

    with json_log_lines() as logs, correlation("chat-7"):
        result = run_tool_loop(reader, {"book": "ledger"})

    assert result.ok, result.error
    lines = logs.where(event="context.pruned")
    assert len(lines) == len(result.context_events) > 0
    first = lines[0]
    assert first["level"] == "INFO" and first["strategy"] == "truncate" and first["budget"] == 1080
    assert first["removed_messages"] > 0 and first["tokens_after"] <= 1080 < first["tokens_before"]
    assert first["correlation_id"] == "chat-7" and first["trace_id"] == result.trace_id

    windows = [s for s in read_trace(result.trace_id) if s["name"] == "context.window"]
    assert len(windows) == 6  # one per turn, pruned or not
    pruned = [s["attributes"] for s in windows if s["attributes"]["context.pruned"]]
    assert len(pruned) == len(lines)
    assert all(a["context.tokens_after"] <= a["context.budget"] < a["context.tokens_before"] for a in pruned)
    assert all(a["context.messages_after"] == a["context.messages_before"] - a["context.messages_pruned"]
               for a in pruned)
    assert {s["span_id"] for s in windows if s["attributes"]["context.pruned"]} == {ln["span_id"] for ln in lines}
    untouched = windows[0]["attributes"]
    assert untouched["context.pruned"] is False and untouched["context.messages_pruned"] == 0
    assert untouched["context.tokens_after"] == untouched["context.tokens_before"]
