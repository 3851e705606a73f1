"""Durable pipeline runs (agents.runtime.pipeline): enqueued on commit, claimed once, saved
after every step, resumed after a dead worker without repeating a finished call, ended
timed_out with what they have, and never failed by one agent's error.

A two-stage test pipeline: test_a and test_b, independent, then test_c on their outputs.
The agents run on the offline provider with analysts registered here, which count their
calls; one test goes through the fake OpenAI endpoint and counts requests there instead.
"""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone
from pydantic import BaseModel, Field

from agents.llm import registry
from agents.llm.base import LLMRequest, Provider
from agents.llm.offline_registry import offline_analyst
from agents.models import AgentCall, AgentRun
from agents.runtime import pipeline as pipeline_module
from agents.runtime.agent import Agent
from agents.runtime.pipeline import CallSpec, Pipeline, RunContext, Stage, execute_run, register_pipeline
from agents.tasks import pipeline_enqueue, resume_stale_runs, run_pipeline
from audit.models import AuditEntry
from audit.services import audit_verify_chain
from casework.cases.services import case_create
from tests.fakes.llm_servers import json_answer

# The fan-out threads make LLM calls only (the executor writes on its own thread), so the
# test transaction and django_capture_on_commit_callbacks do; real commits only where two
# threads use the database.
pytestmark = pytest.mark.django_db

PIPELINE = "test_two_stage"


class WorkerKilled(BaseException):
    """Stands for SIGKILL: not an Exception, so nothing between the call and the worker catches it."""


class Finding(BaseModel):
    summary: str = Field(description="What the agent found.")
    score: int = Field(ge=0, le=100)


# --- Analysts that count their calls and can be told to fail or to "kill the worker" -------

CALLS: list[str] = []
KILL_ON: set[str] = set()  # agents whose next call kills the worker (once)
SNAPSHOTS: list[dict] = []  # the run's saved state, read from the database when stage 2 starts
FINISHED: list[int] = []
SLOW_UNTIL = threading.Event()  # a "slow" agent thinks until the test sets this
_lock = threading.Lock()


def _register(agent_id: str) -> Agent:
    @offline_analyst(agent_id)
    def analyse(data: dict) -> dict:
        with _lock:
            CALLS.append(agent_id)
            if agent_id in KILL_ON:
                KILL_ON.discard(agent_id)
                raise WorkerKilled(agent_id)
        if data.get("fail") == agent_id:
            raise RuntimeError(f"{agent_id} analyst crashed")
        if data.get("slow") == agent_id:
            SLOW_UNTIL.wait(timeout=60)  # only a failing test leaves it waiting that long
        inputs = [v for k, v in data.items() if k in ("a", "b") and v]
        score = 10 + sum(v["score"] for v in inputs)
        return {"summary": f"{agent_id} on {data['case']} ({len(inputs)} inputs)", "score": min(score, 100)}

    return Agent(id=agent_id, system_prompt=f"You are {agent_id}.", output_model=Finding)


agent_a, agent_b, agent_c = (_register(i) for i in ("test_a", "test_b", "test_c"))


def independent(ctx: RunContext) -> list[CallSpec]:
    flags = ctx.state.get("input", {})
    if flags.get("backdate_start"):
        # As if the run had been going for longer than RUN_TIMEOUT_SECONDS by the end of this stage
        # (the worker reads started_at once, when it claims the run).
        ctx.run.started_at = timezone.now() - timedelta(seconds=settings.RUN_TIMEOUT_SECONDS + 5)
        AgentRun.objects.filter(pk=ctx.run.pk).update(started_at=ctx.run.started_at)
    data = {"case": ctx.case.reference, **flags}
    return [CallSpec("test_a", agent_a, data), CallSpec("test_b", agent_b, data)]


def combine(ctx: RunContext) -> list[CallSpec]:
    SNAPSHOTS.append(AgentRun.objects.get(pk=ctx.run.pk).state)
    data = {"case": ctx.case.reference, "a": ctx.output("test_a"), "b": ctx.output("test_b"),
            **ctx.state.get("input", {})}
    return [CallSpec("test_c", agent_c, data)]


def finish(ctx: RunContext) -> None:
    FINISHED.append(ctx.run.pk)


register_pipeline(Pipeline(name=PIPELINE, modes={"full": [Stage("independent", independent), Stage("combine", combine)]},
                           finish=finish, description="Two independent agents, then one on their outputs."))


@pytest.fixture(autouse=True)
def _clean_slate():
    CALLS.clear()
    KILL_ON.clear()
    SNAPSHOTS.clear()
    FINISHED.clear()
    SLOW_UNTIL.clear()


@pytest.fixture
def case(alice):
    return case_create(actor=alice, case_type="fraud_alert", title="Card testing on ACC-1")


def enqueue(case, capture, **flags) -> AgentRun:
    """Start a run the way a domain service does: in its transaction, run on commit (eager Celery)."""
    with capture(execute=True), transaction.atomic():
        run = pipeline_enqueue(case=case, pipeline=PIPELINE, mode="full", actor="system",
                               initial_state={"input": flags})
    run.refresh_from_db()
    return run


def actions(case) -> list[str]:
    return list(AuditEntry.objects.filter(case_id=case.pk, action__startswith="agent.").values_list("action", flat=True))


def make_stale(run: AgentRun) -> None:
    AgentRun.objects.filter(pk=run.pk).update(
        heartbeat_at=timezone.now() - timedelta(seconds=settings.RUN_STALE_AFTER_SECONDS + 1))


# --- The tests -------------------------------------------------------------------------------


def test_a_run_completes_with_one_call_per_agent_saved_and_audited(case, django_capture_on_commit_callbacks):
    run = enqueue(case, django_capture_on_commit_callbacks)

    assert run.status == AgentRun.Status.COMPLETED, run.error
    assert run.started_at and run.finished_at and run.heartbeat_at
    assert sorted(CALLS[:2]) == ["test_a", "test_b"] and CALLS[2:] == ["test_c"]
    calls = list(AgentCall.objects.filter(run=run).order_by("id"))
    assert len(calls) == 3
    assert {(c.key, c.stage, c.status) for c in calls} == {
        ("test_a", "independent", "ok"), ("test_b", "independent", "ok"), ("test_c", "combine", "ok")}
    c_call = calls[-1]
    assert c_call.input["a"]["score"] == 10 and c_call.input["b"]["score"] == 10
    assert c_call.output == {"summary": f"test_c on {case.reference} (2 inputs)", "score": 30}
    assert c_call.provider == "offline" and c_call.trace_id == run.trace_id
    # State is saved after each stage: stage 2 found stage 1's results in the database.
    (at_stage_two,) = SNAPSHOTS
    assert at_stage_two["stage_index"] == 1 and set(at_stage_two["results"]) == {"test_a", "test_b"}
    assert run.state["stage_index"] == 2 and run.step_count == 2
    assert set(run.results) == {"test_a", "test_b", "test_c"}
    assert run.input_tokens == sum(c.input_tokens for c in calls) > 0
    assert FINISHED == [run.pk]
    assert actions(case) == ["agent.run_queued", "agent.call_completed", "agent.call_completed",
                             "agent.call_completed", "agent.run_completed"]
    assert audit_verify_chain()[1] is None


def test_a_duplicate_delivery_does_nothing(case, django_capture_on_commit_callbacks):
    run = enqueue(case, django_capture_on_commit_callbacks)
    before = (len(CALLS), AgentCall.objects.count(), AuditEntry.objects.count())

    assert execute_run(run.pk) is None
    run_pipeline.delay(run.pk)
    run_pipeline(run.pk)

    assert (len(CALLS), AgentCall.objects.count(), AuditEntry.objects.count()) == before
    run.refresh_from_db()
    assert run.status == AgentRun.Status.COMPLETED and FINISHED == [run.pk]


@pytest.mark.django_db(transaction=True)
def test_two_deliveries_at_once_run_the_pipeline_once(case, monkeypatch):
    delivered: list[int] = []
    monkeypatch.setattr(run_pipeline, "delay", delivered.append)  # a broker that holds the message
    with transaction.atomic():
        run = pipeline_enqueue(case=case, pipeline=PIPELINE, mode="full", actor="system")
    assert delivered == [run.pk]
    barrier = threading.Barrier(2)
    outcomes: list = []

    def worker():
        try:
            barrier.wait(timeout=10)
            outcomes.append(execute_run(run.pk))
        finally:
            connection.close()

    threads = [threading.Thread(target=worker) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)

    assert sorted(o is None for o in outcomes) == [False, True]
    assert sorted(CALLS) == ["test_a", "test_b", "test_c"]
    assert AgentCall.objects.filter(run=run).count() == 3
    run.refresh_from_db()
    assert run.status == AgentRun.Status.COMPLETED


def test_a_worker_killed_between_calls_resumes_without_repeating_them(case, django_capture_on_commit_callbacks):
    KILL_ON.add("test_c")
    with pytest.raises(WorkerKilled):
        enqueue(case, django_capture_on_commit_callbacks)

    run = AgentRun.objects.get(case=case, pipeline=PIPELINE)
    assert run.status == AgentRun.Status.RUNNING  # nobody was left to say otherwise
    assert run.state["stage_index"] == 1 and set(run.results) == {"test_a", "test_b"}
    assert AgentCall.objects.filter(run=run).count() == 2
    # While its heartbeat is fresh the run may still have a live worker: a redelivery leaves it.
    assert execute_run(run.pk) is None

    make_stale(run)
    run_pipeline.delay(run.pk)

    run.refresh_from_db()
    assert run.status == AgentRun.Status.COMPLETED, run.error
    # test_a and test_b ran once; test_c's first call died with the worker and ran again.
    assert sorted(CALLS) == ["test_a", "test_b", "test_c", "test_c"]
    assert AgentCall.objects.filter(run=run).count() == 3
    assert run.step_count == 2
    assert actions(case).count("agent.call_completed") == 3


def test_a_killed_run_resumes_without_repeating_requests_to_the_endpoint(
        case, fake_openai, monkeypatch, django_capture_on_commit_callbacks):
    fake_openai.default = json_answer({"summary": "seen", "score": 5})

    class DiesOnThirdCall(Provider):
        def __init__(self, inner: Provider):
            self.inner, self.name, self.model, self.calls = inner, inner.name, inner.model, 0

        def capabilities(self):
            return self.inner.capabilities()

        def complete(self, request: LLMRequest):
            with _lock:
                self.calls += 1
                dies = self.calls == 3
            if dies:
                raise WorkerKilled("SIGKILL")
            return self.inner.complete(request)

    monkeypatch.setattr(registry, "_provider", DiesOnThirdCall(registry.get_provider()))
    with pytest.raises(WorkerKilled):
        enqueue(case, django_capture_on_commit_callbacks)
    assert fake_openai.request_count == 2
    run = AgentRun.objects.get(case=case, pipeline=PIPELINE)

    assert resume_stale_runs.delay().get() == 0  # its heartbeat is fresh: left alone
    make_stale(run)
    assert resume_stale_runs.delay().get() == 1  # the sweeper re-delivers runs whose worker went quiet

    run.refresh_from_db()
    assert run.status == AgentRun.Status.COMPLETED, run.error
    asked = sorted(r.messages[0]["content"].split(".")[0] for r in fake_openai.requests)
    assert asked == ["You are test_a", "You are test_b", "You are test_c"]  # each agent asked once
    assert set(AgentCall.objects.filter(run=run).values_list("provider", flat=True)) == {"openai"}


def test_a_run_past_its_time_limit_ends_timed_out_keeping_its_results(case, django_capture_on_commit_callbacks):
    run = enqueue(case, django_capture_on_commit_callbacks, backdate_start=True)

    assert run.status == AgentRun.Status.TIMED_OUT
    assert f"Stopped after {settings.RUN_TIMEOUT_SECONDS} s" in run.error
    assert set(run.results) == {"test_a", "test_b"}  # stage 1 kept, stage 2 never started
    assert sorted(CALLS) == ["test_a", "test_b"]
    assert AgentCall.objects.filter(run=run).count() == 2
    assert FINISHED == [run.pk]  # finish() still wrote back what there was
    assert actions(case)[-1] == "agent.run_timed_out"
    # A timed-out run is over: a redelivery does not resume it.
    make_stale(run)
    assert execute_run(run.pk) is None


def test_one_failing_agent_leaves_an_error_in_its_result_and_the_run_completes_with_errors(
        case, django_capture_on_commit_callbacks):
    run = enqueue(case, django_capture_on_commit_callbacks, fail="test_b")

    # Issue 13: this run was "completed" before; a run with a failed agent says so.
    assert run.status == AgentRun.Status.COMPLETED_WITH_ERRORS
    assert run.error == "1 of 3 agents failed."
    assert run.status_label == "Completed with errors (1 of 3 agents failed)"
    failed = run.results["test_b"]
    assert failed["output"] is None
    assert failed["error_type"] == "provider" and "RuntimeError: test_b analyst crashed" in failed["error"]
    assert run.results["test_c"]["output"]["summary"].endswith("(1 inputs)")  # c went on with a alone
    b_call = AgentCall.objects.get(run=run, key="test_b")
    assert b_call.status == AgentCall.Status.ERROR and b_call.error_type == "provider"
    assert sorted(actions(case)) == sorted(["agent.run_queued", "agent.call_completed", "agent.call_failed",
                                            "agent.call_completed", "agent.run_completed_with_errors"])


@pytest.mark.django_db(transaction=True)
def test_a_live_worker_in_a_long_call_keeps_its_run(case, monkeypatch, settings):
    """A call may outlast RUN_STALE_AFTER_SECONDS (timeouts, retries): the worker must keep
    its heartbeat fresh meanwhile, or the sweeper hands its run to a second worker.

    Counted, not timed: test_a thinks until the worker has written heartbeats spanning more
    than the stale window since it claimed the run, and the sweeper is asked about a moment
    just after the last of them (its `now`), not about whenever this thread gets to ask."""
    settings.RUN_STALE_AFTER_SECONDS = 1
    window = timedelta(seconds=settings.RUN_STALE_AFTER_SECONDS)
    monkeypatch.setattr(run_pipeline, "delay", lambda run_id: None)
    with transaction.atomic():
        run = pipeline_enqueue(case=case, pipeline=PIPELINE, mode="full", actor="system",
                               initial_state={"input": {"slow": "test_a"}})
    beats: list = []  # the heartbeats the worker wrote while its calls were in progress
    beat = threading.Condition()
    real_save = pipeline_module._save

    def save(saved: AgentRun, fields: list[str]) -> None:
        real_save(saved, fields)
        if fields == ["heartbeat_at"]:
            with beat:
                beats.append((saved.started_at, saved.heartbeat_at))
                beat.notify_all()

    monkeypatch.setattr(pipeline_module, "_save", save)

    def worker():
        try:
            execute_run(run.pk)
        finally:
            connection.close()

    first = threading.Thread(target=worker)
    first.start()
    try:
        with beat:
            outlasted = beat.wait_for(lambda: beats and beats[-1][1] - beats[-1][0] > window, timeout=60)
        assert outlasted, f"no heartbeat during the call, or too few: {beats}"
        # Half a window after the last heartbeat, the run has been going for more than a
        # window and a half: only the heartbeats keep it from looking orphaned.
        redelivered = resume_stale_runs(now=beats[-1][1] + window / 2)
    finally:
        SLOW_UNTIL.set()
        first.join(timeout=30)

    assert redelivered == 0
    assert sorted(CALLS) == ["test_a", "test_b", "test_c"]
    assert AgentCall.objects.filter(run=run).count() == 3
    run.refresh_from_db()
    assert run.status == AgentRun.Status.COMPLETED
