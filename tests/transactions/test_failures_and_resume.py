"""Tools that fail or time out, a context that cannot be loaded, a worker killed in the
middle, the investigation timeout, resuming, and the seed's metrics on /metrics."""

from __future__ import annotations

import threading
from collections import Counter
from datetime import timedelta

import pytest
from django.db import transaction
from django.utils import timezone

from agents.models import AgentCall, AgentRun
from agents.tasks import run_pipeline
from casework.transactions.agents import tools
from casework.transactions.models import Investigation, ToolExecution
from casework.transactions.services import investigation_resume
from tests.transactions.conftest import investigate, load

pytestmark = pytest.mark.django_db(transaction=True)

CALLS: Counter = Counter()
_lock = threading.Lock()


ORIGINAL = dict(tools.HANDLERS)


def _counting(name: str, before=None):
    def handler(args):
        with _lock:
            CALLS[name] += 1
        if before is not None:
            before()
        return ORIGINAL[name](args)
    return handler


@pytest.fixture(autouse=True)
def counted(monkeypatch):
    """Count every tool's real executions (a killed or failed one included)."""
    CALLS.clear()
    for name in ORIGINAL:
        monkeypatch.setitem(tools.HANDLERS, name, _counting(name))


def replace(monkeypatch, name: str, before) -> None:
    """The tool runs `before` first: it may fail, hang or kill the worker."""
    monkeypatch.setitem(tools.HANDLERS, name, _counting(name, before))


def executions(investigation) -> dict[str, ToolExecution]:
    return {e.tool_name: e for e in ToolExecution.objects.filter(investigation=investigation)}


@pytest.fixture
def hung():
    """An event a hung tool waits on; set when the test ends, so the stuck thread goes away."""
    release = threading.Event()
    yield release
    release.set()


def test_a_failed_tool_and_a_timed_out_tool_count_as_done_and_the_investigation_completes(monkeypatch, settings,
                                                                                          hung):
    # The reasoning tool hangs until the test ends: it times out however fast the machine is.
    # Only it has a short timeout; the others have a minute, so a loaded machine cannot time
    # them out too.
    settings.TXN_TOOL_TIMEOUT_SECONDS = 60

    def boom():
        raise RuntimeError("similarity index unavailable")

    replace(monkeypatch, "similarity_tool", boom)
    replace(monkeypatch, "reasoning_tool", lambda: hung.wait(60))
    investigation = investigate(load("card_testing"), safeguards={"tool_timeouts": {"reasoning_tool": 0.5}})

    assert investigation.status == "COMPLETED", investigation.error
    runs = executions(investigation)
    assert {name: run.status for name, run in runs.items() if name not in ("similarity_tool", "reasoning_tool")} == {
        name: "SUCCESS" for name in ("context_tool", "pattern_tool", "recommendation_tool", "rule_draft_tool")}
    assert runs["similarity_tool"].status == "FAILED"
    assert "similarity index unavailable" in runs["similarity_tool"].error_message
    assert runs["reasoning_tool"].status == "TIMED_OUT"
    assert runs["reasoning_tool"].error_message == "Tool timed out after 0.5s"
    assert CALLS["similarity_tool"] == 1 and CALLS["reasoning_tool"] == 1  # never retried in a loop
    assert "recommendation_tool" in investigation.state["completed_steps"]


class Kill(BaseException):
    """Stands for SIGKILL: nothing between the tool and the worker catches it."""


def test_a_worker_killed_mid_investigation_resumes_with_one_execution_per_tool(monkeypatch):
    dies = {"pattern_tool"}

    def die_once():
        if dies:
            dies.clear()
            raise Kill("worker killed")

    replace(monkeypatch, "pattern_tool", die_once)
    with pytest.raises(Kill), transaction.atomic():
        from casework.transactions.services import investigation_start

        investigation = investigation_start(actor="system", transaction_id=load("card_testing"))
    run = AgentRun.objects.get(pipeline="transactions")
    assert run.status == "running"
    AgentRun.objects.filter(pk=run.pk).update(heartbeat_at=run.heartbeat_at.replace(year=2000))

    run_pipeline.delay(run.pk)

    run.refresh_from_db()
    investigation = Investigation.objects.get(case=run.case)
    assert run.status == "completed", run.error
    assert investigation.status == "COMPLETED"
    assert CALLS["context_tool"] == 1 and CALLS["pattern_tool"] == 2  # the killed run, then once more
    assert Counter(ToolExecution.objects.filter(investigation=investigation)
                   .values_list("tool_name", flat=True)) == Counter(investigation.state["completed_steps"])
    assert len(investigation.state["completed_steps"]) == 6
    assert AgentCall.objects.filter(run=run, kind="tool").count() == 6


class FakeClock:
    """The investigation timeout's clock (casework.transactions.agents.pipeline.clock), moved by hand."""

    def __init__(self):
        self.offset = timedelta(0)

    def __call__(self):
        return timezone.now() + self.offset

    def advance(self, seconds: float) -> None:
        self.offset += timedelta(seconds=seconds)


@pytest.fixture
def clock(monkeypatch):
    from casework.transactions.agents import pipeline

    fake = FakeClock()
    monkeypatch.setattr(pipeline, "clock", fake)
    return fake


def test_the_investigation_timeout_keeps_partial_results_and_a_resume_finishes_it(monkeypatch, settings, clock):
    # pattern_tool takes two minutes on the investigation's clock: past the timeout, however
    # fast or slow the steps before it ran.
    settings.TXN_INVESTIGATION_TIMEOUT_SECONDS = 60
    replace(monkeypatch, "pattern_tool", lambda: clock.advance(120))
    investigation = investigate(load("card_testing"))

    assert investigation.status == "TIMED_OUT"
    assert investigation.state["completed_steps"] == ["context_tool", "pattern_tool"]
    assert investigation.state["pattern_results"]["flagged"]  # what it found is kept
    assert set(executions(investigation)) == {"context_tool", "pattern_tool"}

    with transaction.atomic():
        investigation_resume(actor="system", investigation=investigation)
    investigation.refresh_from_db()

    assert investigation.status == "COMPLETED", investigation.error
    assert CALLS["context_tool"] == 1 and CALLS["pattern_tool"] == 1
    assert ToolExecution.objects.filter(investigation=investigation).count() == 6
    assert investigation.rule_draft is not None
    from casework.errors import Conflict

    with pytest.raises(Conflict):
        investigation_resume(actor="system", investigation=investigation)


def test_the_seed_metrics_appear_on_metrics(client, admin_user):
    investigate(load("card_testing"))
    client.force_login(admin_user)
    body = client.get("/metrics").content.decode()

    for name in ("ops_agent_planner_decisions_total", "ops_agent_tool_execution_latency_seconds_bucket",
                 "ops_agent_investigation_steps_bucket", "ops_agent_investigation_completed_total"):
        assert name in body, name
    assert 'ops_agent_planner_decisions_total{selected_tool="context_tool",used_fallback="false"}' in body


def test_a_run_that_fails_while_writing_results_shows_as_failed_and_can_be_resumed(monkeypatch, alice_client):
    from casework.transactions import progress

    real = progress.investigation_complete

    def broken(**kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr(progress, "investigation_complete", broken)
    investigation = investigate(load("card_testing"))
    # Not "In progress" for good: the pipeline's on_failed says the run failed (issue 22).
    assert investigation.status == "FAILED"
    assert investigation.error == "RuntimeError: disk full"
    assert AgentRun.objects.get(case=investigation.case).status == "failed"
    assert investigation.case.status == "in_progress"

    page = alice_client.get(f"/cases/{investigation.case.reference}/").content.decode()
    assert 'data-testid="txn-status" title="The run failed' in page
    assert "disk full" in page and "Resume the investigation" in page

    monkeypatch.setattr(progress, "investigation_complete", real)
    alice_client.post(f"/transactions/cases/{investigation.case.reference}/resume/")
    investigation.refresh_from_db()
    assert investigation.status == "COMPLETED"
    assert ToolExecution.objects.filter(investigation=investigation).count() == 6
    assert CALLS["context_tool"] == 1 and CALLS["rule_draft_tool"] == 1


def test_a_run_that_failed_before_recording_a_finished_tool_does_not_run_it_again_on_resume(monkeypatch):
    from casework.transactions import progress

    real = progress.investigation_record_progress
    failed = []

    def fails_after_patterns(*, investigation_id, state):
        if "pattern_tool" in state["completed_steps"] and not failed:
            failed.append(True)
            raise RuntimeError("database went away")
        return real(investigation_id=investigation_id, state=state)

    monkeypatch.setattr(progress, "investigation_record_progress", fails_after_patterns)
    investigation = investigate(load("card_testing"))
    assert investigation.status == "FAILED" and "database went away" in investigation.error
    assert investigation.state["completed_steps"] == ["context_tool"]  # the pattern step was never recorded

    with transaction.atomic():
        investigation_resume(actor="system", investigation=investigation)
    investigation.refresh_from_db()

    assert investigation.status == "COMPLETED", investigation.error
    assert CALLS["pattern_tool"] == 1 and CALLS["context_tool"] == 1
    assert ToolExecution.objects.filter(investigation=investigation).count() == 6


def test_a_rerun_from_the_agent_runs_panel_resumes_the_investigation(monkeypatch, settings, clock):
    from agents.services import run_rerun

    settings.TXN_INVESTIGATION_TIMEOUT_SECONDS = 60
    replace(monkeypatch, "pattern_tool", lambda: clock.advance(120))
    investigation = investigate(load("card_testing"))
    assert investigation.status == "TIMED_OUT"
    assert investigation.state["completed_steps"] == ["context_tool", "pattern_tool"]

    with transaction.atomic():
        run_rerun(actor="system", run=AgentRun.objects.get(case=investigation.case))
    investigation.refresh_from_db()

    assert investigation.status == "COMPLETED", investigation.error
    assert CALLS["context_tool"] == 1 and CALLS["pattern_tool"] == 1
    assert ToolExecution.objects.filter(investigation=investigation).count() == 6
