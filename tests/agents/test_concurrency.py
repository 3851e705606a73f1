"""Independent calls run concurrently, bounded by LLM_MAX_CONCURRENCY for the whole process,
measured where it matters: requests in flight at the fake endpoint (0.2 s per answer)."""

from __future__ import annotations

import threading
import time

import pytest
from django.db import connection, transaction
from pydantic import BaseModel

from agents.models import AgentCall, AgentRun
from agents.runtime.agent import Agent
from agents.runtime.pipeline import CallSpec, Pipeline, Stage, execute_run, register_pipeline
from agents.tasks import pipeline_enqueue, run_pipeline
from casework.cases.services import case_create
from tests.fakes.llm_servers import json_answer

pytestmark = pytest.mark.django_db

LATENCY = 0.2


class Note(BaseModel):
    note: str


FANOUT = [Agent(id=f"test_fan_{i}", system_prompt=f"You are analyst {i}.", output_model=Note) for i in range(1, 7)]
register_pipeline(Pipeline(name="test_fan_six", modes={"full": [
    Stage("all_at_once", lambda ctx: [CallSpec(a.id, a, {"case": ctx.case.reference}) for a in FANOUT]),
]}))


@pytest.fixture
def endpoint(fake_openai):
    fake_openai.latency = LATENCY
    fake_openai.default = json_answer({"note": "nothing unusual"})
    return fake_openai


@pytest.fixture
def queued_runs(alice, monkeypatch):
    """Queued runs, held back from the (eager) broker so each test executes them itself."""
    monkeypatch.setattr(run_pipeline, "delay", lambda run_id: None)

    def make(n: int) -> list[AgentRun]:
        runs = []
        for i in range(n):
            case = case_create(actor=alice, case_type="fraud_alert", title=f"Fan-out {i}")
            with transaction.atomic():
                runs.append(pipeline_enqueue(case=case, pipeline="test_fan_six", mode="full", actor="system"))
        return runs

    return make


def timed_run(run: AgentRun) -> float:
    started = time.monotonic()
    assert execute_run(run.pk) is not None
    return time.monotonic() - started


def test_at_most_llm_max_concurrency_requests_are_in_flight(endpoint, queued_runs, settings):
    settings.LLM_MAX_CONCURRENCY = 2
    (run,) = queued_runs(1)

    elapsed = timed_run(run)

    assert endpoint.request_count == 6
    assert endpoint.max_in_flight == 2
    assert elapsed >= 3 * LATENCY  # three waves of two
    run.refresh_from_db()
    assert run.status == AgentRun.Status.COMPLETED
    assert AgentCall.objects.filter(run=run, status="ok").count() == 6


def test_independent_calls_all_go_out_together_under_a_higher_limit(endpoint, queued_runs, settings):
    settings.LLM_MAX_CONCURRENCY = 8
    (run,) = queued_runs(1)

    elapsed = timed_run(run)

    assert endpoint.max_in_flight == 6
    assert elapsed < 6 * LATENCY  # not one after another (loose: shared CI machines are slow)


@pytest.mark.django_db(transaction=True)  # two runs, two threads, two connections
def test_the_limit_holds_across_runs_executing_at_the_same_time(endpoint, queued_runs, settings):
    settings.LLM_MAX_CONCURRENCY = 3
    runs = queued_runs(2)
    barrier = threading.Barrier(len(runs))
    errors: list[BaseException] = []

    def worker(run: AgentRun) -> None:
        try:
            barrier.wait(timeout=10)
            execute_run(run.pk)
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=worker, args=(run,)) for run in runs]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)

    assert not errors
    assert endpoint.request_count == 12
    # Each run's pool has three threads (six in all), but one process-wide limit of three.
    assert endpoint.max_in_flight == 3
    assert set(AgentRun.objects.filter(pk__in=[r.pk for r in runs]).values_list("status", flat=True)) == {"completed"}


def test_agent_call_delay_paces_the_requests(endpoint, queued_runs, settings):
    endpoint.latency = 0.0
    settings.LLM_MAX_CONCURRENCY = 1
    settings.AGENT_CALL_DELAY_SECONDS = 0.1
    (run,) = queued_runs(1)

    timed_run(run)

    arrivals = [r.received_at for r in endpoint.requests]
    gaps = [later - earlier for earlier, later in zip(arrivals, arrivals[1:], strict=False)]
    assert len(gaps) == 5
    assert min(gaps) >= 0.1
