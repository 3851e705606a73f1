"""Independent calls run concurrently, bounded by LLM_MAX_CONCURRENCY for the whole process,
measured where it matters: requests in flight at the fake endpoint.

Counted, not timed: the endpoint holds each request until every call that holds one of the
process's LLM slots has arrived and every other call is queued for a slot (SlotWatch), then
answers that group. So "two in flight" never depends on two requests happening to overlap
within some latency on a busy machine, and a limit that let more through would show them all
at the endpoint at once."""

from __future__ import annotations

import threading

import pytest
from django.db import connection, transaction
from pydantic import BaseModel

from agents.models import AgentCall, AgentRun
from agents.runtime import aio
from agents.runtime.agent import Agent
from agents.runtime.pipeline import CallSpec, Pipeline, Stage, execute_run, register_pipeline
from agents.tasks import pipeline_enqueue, run_pipeline
from casework.cases.services import case_create
from tests.fakes.llm_servers import json_answer

pytestmark = pytest.mark.django_db

# Only a failing test waits this long: a group that never fills (the product sends fewer at
# once than it should) is answered after it, and the test fails on what the endpoint saw.
GIVE_UP_AFTER = 20.0


class Note(BaseModel):
    note: str


FANOUT = [Agent(id=f"test_fan_{i}", system_prompt=f"You are analyst {i}.", output_model=Note) for i in range(1, 7)]
register_pipeline(Pipeline(name="test_fan_six", modes={"full": [
    Stage("all_at_once", lambda ctx: [CallSpec(a.id, a, {"case": ctx.case.reference}) for a in FANOUT]),
]}))


class SlotWatch:
    """Counts the calls at the process's LLM limit (agents.runtime.aio.llm_slots, wrapped, the
    product's own semaphore inside) and holds the endpoint's answers on those counts.

    A request waits at the endpoint until all `expected` calls have asked for a slot and every
    call holding one has its request at the endpoint (the rest are queued for a slot); then the
    held group is answered together. `groups` lists the sizes answered."""

    def __init__(self, expected: int):
        self.expected = expected
        self.asked = 0  # calls that asked for a slot, ever
        self.holding = 0  # calls holding a slot now
        self.held = 0  # requests waiting at the endpoint now
        self.groups: list[int] = []
        self.gave_up = False
        self._generation = 0
        self._cond = threading.Condition()

    def _changed(self, **deltas: int) -> None:
        with self._cond:
            for name, delta in deltas.items():
                setattr(self, name, getattr(self, name) + delta)
            self._cond.notify_all()

    def slots(self, real):
        watch = self

        class CountedSlot:
            async def __aenter__(self):
                watch._changed(asked=1)
                await real.acquire()
                watch._changed(holding=1)

            async def __aexit__(self, *exc):
                watch._changed(holding=-1)
                real.release()

        return CountedSlot()

    def _full(self) -> bool:
        return self.asked == self.expected and 0 < self.held == self.holding

    def answer(self, body: dict):
        """The endpoint's handler: hold this request until its group is full, then answer."""
        with self._cond:
            self.held += 1
            generation = self._generation
            self._cond.notify_all()
            if not self._cond.wait_for(lambda: self._generation != generation or self._full(), timeout=GIVE_UP_AFTER):
                self.gave_up = True
            if self._generation == generation:  # the first of the group to see it full lets the group go
                self.groups.append(self.held)
                self.held = 0
                self._generation += 1
                self._cond.notify_all()
        return json_answer({"note": "nothing unusual"})


@pytest.fixture
def endpoint(fake_openai):
    fake_openai.default = json_answer({"note": "nothing unusual"})
    return fake_openai


@pytest.fixture
def watch_slots(endpoint, monkeypatch):
    """watch_slots(n): a SlotWatch over the next n LLM calls, holding the endpoint's answers."""

    def make(expected: int) -> SlotWatch:
        watch = SlotWatch(expected)
        real_slots = aio.llm_slots
        monkeypatch.setattr(aio, "llm_slots", lambda: watch.slots(real_slots()))
        endpoint.handler = watch.answer
        return watch

    return make


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


def test_at_most_llm_max_concurrency_requests_are_in_flight(endpoint, watch_slots, queued_runs, settings):
    settings.LLM_MAX_CONCURRENCY = 2
    (run,) = queued_runs(1)
    watch = watch_slots(6)

    assert execute_run(run.pk) is not None

    assert not watch.gave_up, watch.groups
    assert endpoint.request_count == 6
    # All six were ready to go; two went out together, the other four waited for a slot.
    assert watch.groups[0] == 2 and sum(watch.groups) == 6
    assert endpoint.max_in_flight == 2
    run.refresh_from_db()
    assert run.status == AgentRun.Status.COMPLETED
    assert AgentCall.objects.filter(run=run, status="ok").count() == 6


def test_independent_calls_all_go_out_together_under_a_higher_limit(endpoint, watch_slots, queued_runs, settings):
    settings.LLM_MAX_CONCURRENCY = 8
    (run,) = queued_runs(1)
    watch = watch_slots(6)

    assert execute_run(run.pk) is not None

    # Not one after another: all six were at the endpoint at once (one after another, the
    # first would have waited alone for the other five and the group would never fill).
    assert not watch.gave_up, watch.groups
    assert watch.groups == [6]
    assert endpoint.max_in_flight == 6


@pytest.mark.django_db(transaction=True)  # two runs, two threads, two connections
def test_the_limit_holds_across_runs_executing_at_the_same_time(endpoint, watch_slots, queued_runs, settings):
    settings.LLM_MAX_CONCURRENCY = 3
    runs = queued_runs(2)
    watch = watch_slots(12)  # the endpoint answers once both runs' twelve calls are in or queued
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
        t.join(timeout=60)

    assert not errors
    assert not watch.gave_up, watch.groups
    assert endpoint.request_count == 12
    # Each run's calls could all go at once (twelve in all), but one process-wide limit of three.
    assert watch.groups[0] == 3
    assert endpoint.max_in_flight == 3
    assert set(AgentRun.objects.filter(pk__in=[r.pk for r in runs]).values_list("status", flat=True)) == {"completed"}


def test_agent_call_delay_paces_the_requests(endpoint, queued_runs, settings):
    settings.LLM_MAX_CONCURRENCY = 1
    settings.AGENT_CALL_DELAY_SECONDS = 0.1
    (run,) = queued_runs(1)

    assert execute_run(run.pk) is not None

    arrivals = [r.received_at for r in endpoint.requests]
    gaps = [later - earlier for earlier, later in zip(arrivals, arrivals[1:], strict=False)]
    assert len(gaps) == 5
    assert min(gaps) >= 0.1
