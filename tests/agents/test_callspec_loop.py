"""A CallSpec sets its tool loop's bounds and context strategy (max_turns, max_tool_calls,
context_strategy), passed through the pipeline executor to runner.arun_tool_loop."""

from __future__ import annotations

import pytest
from django.db import transaction

from agents.models import AgentCall, AgentRun
from agents.runtime.pipeline import CallSpec, Pipeline, Stage, register_pipeline
from agents.tasks import pipeline_enqueue
from casework.cases.services import case_create
from tests.agents.test_context import reader
from tests.fakes.llm_servers import json_answer, text, tool_calls

pytestmark = pytest.mark.django_db

SPECS: dict[str, dict] = {}
register_pipeline(Pipeline(
    name="test_loop_bounds",
    modes={"read": [Stage("read", lambda ctx: [CallSpec("reader", reader, {"book": "ledger"}, **SPECS)])]},
    finish=lambda ctx: None,
))


@pytest.fixture(autouse=True)
def _specs():
    SPECS.clear()
    yield
    SPECS.clear()


def run_reader(alice, capture, **spec) -> AgentRun:
    SPECS.update(spec)
    case = case_create(actor=alice, case_type="fraud_alert", title="Reading the ledger")
    with capture(execute=True), transaction.atomic():
        run = pipeline_enqueue(case=case, pipeline="test_loop_bounds", mode="read", actor="system")
    run.refresh_from_db()
    return run


def pages(fake, n: int) -> None:
    fake.script(*[tool_calls(("read_page", {"page": p})) for p in range(1, n + 1)], json_answer({"pages_read": n}))


def test_max_turns_from_the_call_spec_stops_the_loop(alice, fake_openai, django_capture_on_commit_callbacks):
    pages(fake_openai, 5)

    run = run_reader(alice, django_capture_on_commit_callbacks, max_turns=2)

    reader_call = AgentCall.objects.get(run=run, kind="agent")
    assert reader_call.status != "ok"
    assert "stopped after 2 turns" in reader_call.error
    assert fake_openai.request_count == 2


def test_without_bounds_the_loop_keeps_its_defaults(alice, fake_openai, django_capture_on_commit_callbacks):
    pages(fake_openai, 5)

    run = run_reader(alice, django_capture_on_commit_callbacks)

    reader_call = AgentCall.objects.get(run=run, kind="agent")
    assert reader_call.status == "ok", reader_call.error
    assert reader_call.output == {"pages_read": 5}


def test_max_tool_calls_from_the_call_spec(alice, fake_openai, django_capture_on_commit_callbacks):
    pages(fake_openai, 5)

    run = run_reader(alice, django_capture_on_commit_callbacks, max_tool_calls=3)

    assert "stopped after 3 tool calls" in AgentCall.objects.get(run=run, kind="agent").error


def test_context_strategy_from_the_call_spec(alice, fake_openai, settings, django_capture_on_commit_callbacks):
    settings.LLM_CONTEXT_TOKENS = 1400  # about three pages fit (tests/agents/test_context.py)
    numbers = iter(range(1, 6))

    def script(body):
        if body["messages"][0]["content"].startswith("Summarise the conversation"):
            return text("Pages 1-2 were ledger entries.")
        page = next(numbers, None)
        return tool_calls(("read_page", {"page": page})) if page else json_answer({"pages_read": 5})

    fake_openai.handler = script
    run = run_reader(alice, django_capture_on_commit_callbacks, context_strategy="summarise")

    assert AgentCall.objects.get(run=run, kind="agent").status == "ok"
    assert any(r.messages[0]["content"].startswith("Summarise the conversation") for r in fake_openai.requests)
