""""Budget reached" is a pause like an approval's (agents.runtime.pause, kind budget): a tool loop
refused in its second turn waits with its conversation saved, and when a lead raises the budget
it goes on from that turn: the tool it already ran is not run again, and the request that was
refused is the first one made. Counted, never timed."""

from __future__ import annotations

import pytest
from django.db import transaction
from pydantic import BaseModel

from agents.models import AgentCall, AgentRun, RunPause
from agents.runtime import charging
from agents.runtime.agent import Agent
from agents.runtime.pipeline import CallSpec, Pipeline, Stage, register_pipeline
from agents.runtime.tools import Tool
from agents.tasks import pipeline_enqueue
from audit.models import AuditEntry
from casework.budgets.services import budget_set
from casework.cases.services import case_create
from tests.fakes.llm_servers import json_answer, tool_calls

pytestmark = pytest.mark.django_db(transaction=True)

READ: list[int] = []


class PageArgs(BaseModel):
    page: int


class Pages(BaseModel):
    pages_read: int


def read_page(args: PageArgs) -> dict:
    """Read one page of the case file."""
    READ.append(args.page)
    return {"page": args.page, "text": "nothing unusual"}


READER = Agent(id="budget_reader", system_prompt="You read pages.", output_model=Pages, max_tokens=200,
               tools=(Tool("read_page", read_page.__doc__.strip(), PageArgs, read_page, consequence="read_only"),))
register_pipeline(Pipeline(name="test_budget_loop", modes={"full": [
    Stage("read", lambda ctx: [CallSpec("reader", READER, {"file": "the case file"})]),
]}))


def test_a_tool_loop_refused_mid_way_goes_on_from_its_turn_once_the_budget_is_raised(fake_openai, budgets_on,
                                                                                      lena):
    READ.clear()
    # The first answer spends far past the limit: the loop's second request is refused.
    fake_openai.script(tool_calls(("read_page", {"page": 1}), input_tokens=100, output_tokens=1_000_000),
                       json_answer({"pages_read": 1}))
    case = case_create(actor=lena, case_type="fraud_alert", title="Read, then wait")
    budget_set(actor=lena, case=case, limit_usd=None, limit_tokens=50_000, reason="A small budget, for the test.")
    with transaction.atomic():
        run = pipeline_enqueue(case=case, pipeline="test_budget_loop", mode="full", actor="system")

    run.refresh_from_db()
    assert run.status == AgentRun.Status.BUDGET_REACHED and run.claim_token == ""
    assert READ == [1] and fake_openai.request_count == 1
    (pause,) = RunPause.objects.filter(run=run)
    assert pause.kind == "budget" and pause.status == "pending" and pause.step == "read"
    saved = pause.snapshot["calls"]["reader"]
    assert saved["turn"] == 1 and any(m["role"] == "tool" for m in saved["messages"])
    assert "budget_reached" not in run.state and "reached its budget of 50,000 tokens" in run.status_label

    budget_set(actor=lena, case=case, limit_usd=None, limit_tokens=None, reason="Let it finish.")  # eager: runs

    run.refresh_from_db()
    charging.flush()
    assert run.status == AgentRun.Status.COMPLETED, (run.status, run.error)
    assert READ == [1]  # the page read before the wait is not read again
    assert fake_openai.request_count == 2
    assert any(m["role"] == "tool" for m in fake_openai.requests[1].messages)  # it went on from its turn
    call = AgentCall.objects.get(run=run, kind=AgentCall.Kind.AGENT)
    assert call.output == {"pages_read": 1} and call.output_tokens >= 1_000_000  # both turns' spend
    pause.refresh_from_db()
    assert pause.status == "approved" and pause.resumed_at is not None and pause.decided_by == "lena"
    actions = list(AuditEntry.objects.filter(case_id=case.pk).values_list("action", flat=True))
    for action in ("agent.budget_requested", "agent.run_budget_reached", "agent.budget_released",
                   "agent.run_resumed", "agent.run_completed"):
        assert action in actions, action


def test_a_run_that_waited_under_the_old_flag_waits_on_a_pause_after_the_migration(lena):
    import importlib

    from django.apps import apps

    migration = importlib.import_module("agents.migrations.0013_budget_waits_as_pauses")
    case = case_create(actor=lena, case_type="fraud_alert", title="Waited before the pauses")
    run = AgentRun.objects.create(case=case, pipeline="test_budget_loop", mode="full",
                                  status=AgentRun.Status.BUDGET_REACHED, state={"budget_reached": {
                                      "since": "2026-11-29T08:00:00+00:00", "message": "This case has reached "
                                      "its budget of $1.00; a lead can raise it.", "step": "read", "calls": ["reader"]}})

    migration.forwards(apps, None)

    run.refresh_from_db()
    (pause,) = RunPause.objects.filter(run=run)
    assert (pause.kind, pause.status, pause.call_key, pause.step) == ("budget", "pending", "reader", "read")
    assert pause.snapshot == {"calls": {"reader": {}}} and "$1.00" in pause.reason
    assert run.state == {"paused": True}
    migration.forwards(apps, None)  # twice: nothing more
    assert RunPause.objects.filter(run=run).count() == 1
