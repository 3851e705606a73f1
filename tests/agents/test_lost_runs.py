"""No run is ever lost: the database says which runs need a worker, the broker only wakes one.

A broker can lose a run's message (the filesystem broker deletes it on fetch; Redis gives an
unacked one back only after its visibility timeout), leaving the run `queued` with nobody to
start it. The sweeper (agents.tasks.resume_stale_runs) sends a new wake-up to every run queued
past RUN_QUEUED_STALE_AFTER_SECONDS, oldest first, and /healthz and /metrics show runs that
wait too long. A lost message is a `run_pipeline.delay` that does nothing.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.conf import settings
from django.db import transaction
from django.utils import timezone
from prometheus_client import REGISTRY
from pydantic import BaseModel, Field

from agents import tasks
from agents.llm.offline_registry import offline_analyst
from agents.models import AgentCall, AgentRun
from agents.runtime.agent import Agent
from agents.runtime.pipeline import CallSpec, Pipeline, RunContext, Stage, register_pipeline
from agents.tasks import pipeline_enqueue, resume_stale_runs, run_pipeline
from audit.models import AuditEntry
from casework.cases.services import case_create

pytestmark = pytest.mark.django_db

PIPELINE = "test_lost_runs"
CALLS: list[str] = []


class Note(BaseModel):
    summary: str = Field(description="What the agent saw.")


@offline_analyst("test_lost_reader")
def read_case(data: dict) -> dict:
    CALLS.append(data["case"])
    return {"summary": f"read {data['case']}"}


reader = Agent(id="test_lost_reader", system_prompt="Read the case.", output_model=Note)


def read(ctx: RunContext) -> list[CallSpec]:
    return [CallSpec("reader", reader, {"case": ctx.case.reference})]


register_pipeline(Pipeline(name=PIPELINE, modes={"full": [Stage("read", read)]}, description="One agent."))


@pytest.fixture(autouse=True)
def _no_calls_yet():
    CALLS.clear()


@pytest.fixture
def case(alice):
    return case_create(actor=alice, case_type="fraud_alert", title="Card testing on ACC-7")


@pytest.fixture
def enqueue_lost(case, monkeypatch, django_capture_on_commit_callbacks):
    """Enqueue a run the way a domain service does, on a broker that drops the message."""

    def make() -> AgentRun:
        with monkeypatch.context() as broker:
            broker.setattr(run_pipeline, "delay", lambda run_id: None)
            with django_capture_on_commit_callbacks(execute=True), transaction.atomic():
                run = pipeline_enqueue(case=case, pipeline=PIPELINE, mode="full", actor="system")
        run.refresh_from_db()
        assert run.status == AgentRun.Status.QUEUED
        return run

    return make


def queued_for(run: AgentRun, seconds: float) -> None:
    """As if the run had been created this many seconds ago."""
    AgentRun.objects.filter(pk=run.pk).update(created_at=timezone.now() - timedelta(seconds=seconds))


def past_deadline() -> float:
    return settings.RUN_QUEUED_STALE_AFTER_SECONDS + 5


def redelivered(reason: str) -> float:
    return REGISTRY.get_sample_value("casework_agent_runs_redelivered_total", {"reason": reason}) or 0.0


# --- the sweeper -----------------------------------------------------------------------------


def test_a_run_whose_message_was_lost_is_redelivered_after_its_deadline_and_completes(enqueue_lost, case):
    run = enqueue_lost()
    before = redelivered("queued")
    queued_for(run, past_deadline())

    assert resume_stale_runs.delay().get() == 1

    run.refresh_from_db()
    assert run.status == AgentRun.Status.COMPLETED, run.error
    assert run.redelivered_at is not None
    assert run.results["reader"]["output"] == {"summary": f"read {case.reference}"}
    assert CALLS == [case.reference]
    assert redelivered("queued") == before + 1


def test_a_freshly_queued_run_is_left_alone(enqueue_lost):
    run = enqueue_lost()
    queued_for(run, settings.RUN_QUEUED_STALE_AFTER_SECONDS - 5)  # its worker may just be busy

    assert resume_stale_runs() == 0

    run.refresh_from_db()
    assert run.status == AgentRun.Status.QUEUED and run.redelivered_at is None
    assert CALLS == []


def started(case, *, started_ago: float, created_ago: float) -> AgentRun:
    """A run a worker took, created and started this many seconds ago."""
    now = timezone.now()
    run = AgentRun.objects.create(case=case, pipeline=PIPELINE, mode="full", status=AgentRun.Status.COMPLETED,
                                  started_at=now - timedelta(seconds=started_ago))
    AgentRun.objects.filter(pk=run.pk).update(created_at=now - timedelta(seconds=created_ago))
    return run


def test_a_backlog_waiting_its_turn_is_not_resent_while_workers_are_busy(enqueue_lost, case, monkeypatch):
    """Workers busy on older runs; the queued ones behind them were created long ago but
    nothing newer has started: they wait their turn, they are not lost."""
    backlog = [enqueue_lost() for _ in range(3)]
    for run in backlog:
        queued_for(run, past_deadline() + 60)
    started(case, started_ago=past_deadline() + 30, created_ago=past_deadline() + 130)  # older than all
    started(case, started_ago=1, created_ago=past_deadline() + 120)  # the queue is moving
    sent: list[int] = []
    monkeypatch.setattr(run_pipeline, "apply_async", resent_to(sent))

    assert resume_stale_runs() == 0 and sent == []


def test_a_queued_run_overtaken_by_a_newer_started_run_is_resent(enqueue_lost, case, monkeypatch):
    lost, waiting = enqueue_lost(), enqueue_lost()
    queued_for(lost, past_deadline() + 120)
    queued_for(waiting, past_deadline() + 20)  # created after the overtaking run: still in line
    # Created after `lost`, started a deadline ago: the queue moved past `lost`'s message.
    started(case, started_ago=past_deadline(), created_ago=past_deadline() + 60)
    started(case, started_ago=1, created_ago=past_deadline() + 50)
    sent: list[int] = []
    monkeypatch.setattr(run_pipeline, "apply_async", resent_to(sent))

    assert resume_stale_runs() == 1 and sent == [lost.pk]


def resent_to(sent: list[int]):
    """A broker that records the runs re-sent, each on the "resume" queue (not behind new runs)."""

    def apply_async(args, queue=None, **_options):
        assert queue == "resume"
        sent.append(args[0])

    return apply_async


def test_a_redelivered_run_waits_a_full_deadline_before_it_is_sent_again(enqueue_lost, monkeypatch):
    run = enqueue_lost()
    queued_for(run, past_deadline())
    sent: list[int] = []
    monkeypatch.setattr(run_pipeline, "apply_async", resent_to(sent))  # the broker loses this one too

    assert resume_stale_runs() == 1
    assert resume_stale_runs() == 0  # the next scan, moments later: not again yet
    AgentRun.objects.filter(pk=run.pk).update(redelivered_at=timezone.now() - timedelta(seconds=past_deadline()))
    assert resume_stale_runs() == 1

    assert sent == [run.pk, run.pk]


def test_the_sweeper_sends_the_oldest_runs_first_and_a_bounded_number_per_scan(enqueue_lost, monkeypatch):
    runs = [enqueue_lost() for _ in range(3)]
    for run, age in zip(runs, (past_deadline(), past_deadline() + 60, past_deadline() + 30), strict=True):
        queued_for(run, age)
    monkeypatch.setattr(tasks, "SCAN_LIMIT", 2)
    sent: list[int] = []
    monkeypatch.setattr(run_pipeline, "apply_async", resent_to(sent))

    assert resume_stale_runs() == 2
    assert sent == [runs[1].pk, runs[2].pk]
    assert resume_stale_runs() == 1  # the rest, on the next scan
    assert sent[2:] == [runs[0].pk]


def test_a_run_whose_worker_died_is_redelivered_as_stale_heartbeat(enqueue_lost, monkeypatch):
    run = enqueue_lost()
    # Claimed by a worker that then died: running, heartbeat long past.
    AgentRun.objects.filter(pk=run.pk).update(
        status=AgentRun.Status.RUNNING,
        heartbeat_at=timezone.now() - timedelta(seconds=settings.RUN_STALE_AFTER_SECONDS + 5))
    before = redelivered("stale_heartbeat")

    assert resume_stale_runs() == 1

    run.refresh_from_db()
    assert run.status == AgentRun.Status.COMPLETED, run.error
    assert redelivered("stale_heartbeat") == before + 1


def test_a_duplicate_wake_up_of_a_completed_run_does_nothing(enqueue_lost):
    run = enqueue_lost()
    queued_for(run, past_deadline())
    assert resume_stale_runs() == 1
    run.refresh_from_db()
    assert run.status == AgentRun.Status.COMPLETED
    before = (len(CALLS), AgentCall.objects.count(), AuditEntry.objects.count(), run.finished_at)

    # The lost message turns up after all, and the sweeper looks again.
    run_pipeline.delay(run.pk)
    queued_for(run, past_deadline())
    assert resume_stale_runs() == 0

    run.refresh_from_db()
    assert (len(CALLS), AgentCall.objects.count(), AuditEntry.objects.count(), run.finished_at) == before
    assert run.status == AgentRun.Status.COMPLETED


# --- /healthz and /metrics -------------------------------------------------------------------


def test_healthz_says_degraded_with_200_while_a_run_waits_twice_its_deadline(enqueue_lost, client):
    threshold = 2 * settings.RUN_QUEUED_STALE_AFTER_SECONDS
    waiting = enqueue_lost()
    queued_for(waiting, settings.RUN_QUEUED_STALE_AFTER_SECONDS + 5)  # the sweeper's business, not yet an alarm
    assert client.get("/healthz").json()["status"] == "ok"

    stuck = enqueue_lost()
    queued_for(stuck, threshold + 100)
    response = client.get("/healthz")

    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "degraded"
    assert body["checks"]["database"] == "ok" and body["checks"]["broker"] == "ok"
    assert body["checks"]["runs"].startswith(f"degraded: 1 agent run(s) queued for more than {threshold} s")
    assert "no worker is taking runs" in body["checks"]["runs"]
    assert body["runs"]["queued_too_long"] == 1
    assert body["runs"]["threshold_seconds"] == threshold
    assert threshold + 100 <= body["runs"]["oldest_queued_seconds"] < threshold + 160

    resume_stale_runs()  # both are sent again and complete
    healthy = client.get("/healthz").json()
    assert healthy["status"] == "ok" and "runs" not in healthy and "runs" not in healthy["checks"]


def test_metrics_show_the_oldest_queued_run_and_the_redeliveries(enqueue_lost, client):
    def scrape() -> str:
        return client.get("/metrics").content.decode()

    assert "casework_agent_runs_queued_oldest_seconds 0.0" in scrape()
    run = enqueue_lost()
    queued_for(run, 500)

    text = scrape()
    assert "# TYPE casework_agent_runs_queued_oldest_seconds gauge" in text
    (line,) = [ln for ln in text.splitlines() if ln.startswith("casework_agent_runs_queued_oldest_seconds ")]
    assert 500 <= float(line.split()[1]) < 560

    resume_stale_runs()

    text = scrape()
    assert "casework_agent_runs_queued_oldest_seconds 0.0" in text
    assert "# TYPE casework_agent_runs_redelivered_total counter" in text
    assert 'casework_agent_runs_redelivered_total{reason="queued"}' in text
