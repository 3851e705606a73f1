"""Steps chosen at run time (agents.runtime.pipeline): a planner loop whose next step is read
from the saved state, tools run as steps, max_steps, the run deadline inside a long step,
a run that starts without a case and is attached to one later, and the run's identity sent
with every LLM request.

The planner here is an offline analyst: it picks the first tool of a fixed order that has
no result yet, so the test can also tell it to loop forever or to die (a killed worker).
"""

from __future__ import annotations

import threading
import time

import pytest
from django.db import transaction
from pydantic import BaseModel, Field

from agents.llm.offline_registry import offline_analyst
from agents.models import AgentCall, AgentRun
from agents.runtime.agent import Agent
from agents.runtime.pipeline import CallSpec, Pipeline, RunContext, Stage, Step, execute_run, register_pipeline
from agents.runtime.runner import run_agent
from agents.runtime.tools import Tool
from agents.services import run_attach_case
from agents.tasks import pipeline_enqueue, run_pipeline
from audit.models import AuditEntry
from casework.cases.services import case_create
from casework.errors import Conflict
from tests.fakes.llm_servers import json_answer

pytestmark = pytest.mark.django_db

ORDER = ["lookup", "score", "summarise"]
TOOL_RUNS: list[str] = []
_lock = threading.Lock()


class Choice(BaseModel):
    tool: str = Field(description="The next tool, or COMPLETE.")
    reason: str


class ToolArgs(BaseModel):
    subject: str


class Kill(BaseException):
    """Stands for SIGKILL: nothing between the call and the worker catches it."""


KILL_TOOL: set[str] = set()


def _tool(name: str) -> Tool:
    def handler(args: ToolArgs) -> dict:
        with _lock:
            TOOL_RUNS.append(name)
            if name in KILL_TOOL:
                KILL_TOOL.discard(name)
                raise Kill(name)
        return {"tool": name, "subject": args.subject, "value": len(TOOL_RUNS)}

    return Tool(name=name, description=f"The {name} tool.", parameters=ToolArgs, handler=handler, consequence="read_only")


TOOLS = {name: _tool(name) for name in ORDER}


@offline_analyst("test_planner")
def _planner(data: dict) -> dict:
    if data.get("loop_forever"):
        return {"tool": "lookup", "reason": "again"}
    todo = [name for name in ORDER if name not in data["done"]]
    return {"tool": todo[0] if todo else "COMPLETE", "reason": f"{len(todo)} left"}


PLANNER = Agent(id="test_planner", system_prompt="You are test_planner.", output_model=Choice)
FINISHED: list[tuple[int, str]] = []


def planner_loop(ctx: RunContext) -> Step | None:
    """planner -> (tool -> planner)* : the step after a planner call runs the tool it chose."""
    steps = ctx.state.setdefault("steps", [])
    done = [s["tool"] for s in steps if s.get("tool")]
    number = len(steps)
    if steps and steps[-1].get("planner") and not steps[-1].get("tool"):
        choice = ctx.output(steps[-1]["planner"])
        if choice is None or choice["tool"] == "COMPLETE":
            return None
        key = f"tool.{number}.{choice['tool']}"
        return Step(f"tool {choice['tool']}", [CallSpec(key, tool=TOOLS[choice["tool"]],
                                                        input={"subject": ctx.state["input"]["subject"]})],
                    index=number, state={"steps": [*steps[:-1], {**steps[-1], "tool": choice["tool"], "key": key}]})
    key = f"planner.{number}"
    return Step("planner", [CallSpec(key, PLANNER, {"done": done, **ctx.state["input"]})], index=number,
                state={"steps": [*steps, {"planner": key}]})


register_pipeline(Pipeline(
    name="test_planner_loop", modes={"investigate": planner_loop}, max_steps=12,
    finish=lambda ctx: FINISHED.append((ctx.run.pk, ctx.stop_reason)),
    description="A planner choosing tools at run time.",
))


@pytest.fixture(autouse=True)
def _clean():
    TOOL_RUNS.clear()
    KILL_TOOL.clear()
    FINISHED.clear()


@pytest.fixture
def case(alice):
    return case_create(actor=alice, case_type="fraud_alert", title="Planner subject")


def start(case, capture, pipeline="test_planner_loop", mode="investigate", **flags) -> AgentRun:
    with capture(execute=True), transaction.atomic():
        run = pipeline_enqueue(case=case, pipeline=pipeline, mode=mode, actor="system",
                               initial_state={"input": {"subject": "ACC-9", **flags}})
    run.refresh_from_db()
    return run


def test_a_planner_loop_runs_the_tools_it_chooses_one_step_each(case, django_capture_on_commit_callbacks):
    run = start(case, django_capture_on_commit_callbacks)

    assert run.status == AgentRun.Status.COMPLETED, run.error
    assert TOOL_RUNS == ORDER
    calls = list(AgentCall.objects.filter(run=run).order_by("id"))
    assert [(c.kind, c.name) for c in calls] == [
        ("agent", "test_planner"), ("tool", "lookup"), ("agent", "test_planner"), ("tool", "score"),
        ("agent", "test_planner"), ("tool", "summarise"), ("agent", "test_planner")]
    assert calls[1].output["subject"] == "ACC-9" and calls[1].status == "ok"
    assert run.step_count == 7
    assert [s.get("tool") for s in run.state["steps"]] == [*ORDER, None]
    assert FINISHED == [(run.pk, "")]


def test_a_killed_planner_run_resumes_from_its_last_saved_step(case, django_capture_on_commit_callbacks):
    KILL_TOOL.add("score")
    with pytest.raises(Kill):
        start(case, django_capture_on_commit_callbacks)
    run = AgentRun.objects.get(case=case)
    assert run.status == AgentRun.Status.RUNNING
    assert run.step_count == 3  # planner, lookup, planner: saved; the score step died unsaved
    AgentRun.objects.filter(pk=run.pk).update(heartbeat_at=run.heartbeat_at.replace(year=2000))

    run_pipeline.delay(run.pk)

    run.refresh_from_db()
    assert run.status == AgentRun.Status.COMPLETED, run.error
    # lookup ran once; score's first run died with the worker and ran again; nothing else repeated.
    assert TOOL_RUNS == ["lookup", "score", "score", "summarise"]
    assert AgentCall.objects.filter(run=run, kind="tool").count() == 3
    assert AgentCall.objects.filter(run=run, name="test_planner").count() == 4


def test_a_planner_that_never_finishes_stops_at_max_steps(case, django_capture_on_commit_callbacks):
    run = start(case, django_capture_on_commit_callbacks, loop_forever=True)

    assert run.step_count == 12
    assert run.status == AgentRun.Status.COMPLETED
    assert "step limit (12 steps)" in run.error
    assert FINISHED == [(run.pk, "max_steps")]
    assert AuditEntry.objects.filter(case_id=case.pk, action="agent.run_completed").count() == 1


# --- the deadline inside one long step ------------------------------------------------------

class Finding(BaseModel):
    summary: str


@offline_analyst("test_quick")
def _quick(data: dict) -> dict:
    return {"summary": "quick"}


QUICK = Agent(id="test_quick", system_prompt="You are test_quick.", output_model=Finding)
SLOW = Agent(id="test_slow", system_prompt="You are test_slow.", output_model=Finding)
register_pipeline(Pipeline(
    name="test_long_step",
    modes={"full": [Stage("both", lambda ctx: [CallSpec("quick", QUICK, {}), CallSpec("slow", SLOW, {})]),
                    Stage("after", lambda ctx: [CallSpec("after", QUICK, {})])]},
    finish=lambda ctx: FINISHED.append((ctx.run.pk, ctx.stop_reason)),
))


def test_the_deadline_stops_a_run_in_the_middle_of_a_long_step(case, settings, fake_openai,
                                                              django_capture_on_commit_callbacks):
    # A slow model is a slow endpoint: test_slow's answer takes 3 s, test_quick's none.
    fake_openai.default = lambda body: json_answer(
        {"summary": "slow" if "You are test_slow" in body["messages"][0]["content"] else "quick"},
        delay=8.0 if "You are test_slow" in body["messages"][0]["content"] else 0.0)
    run_agent(QUICK, {})  # the SDK's first import and client are not what this test times
    settings.RUN_TIMEOUT_SECONDS = 2
    started = time.perf_counter()
    run = start(case, django_capture_on_commit_callbacks, pipeline="test_long_step", mode="full")
    elapsed = time.perf_counter() - started

    assert run.status == AgentRun.Status.TIMED_OUT
    assert "during both" in run.error
    assert elapsed < 7  # the slow call needs 8 s; the run did not wait for it
    assert set(run.results) == {"quick"}  # what finished is kept
    assert list(AgentCall.objects.filter(run=run).values_list("key", flat=True)) == ["quick"]
    assert run.state["stage_index"] == 0  # the cut-short stage is not marked done
    assert FINISHED == [(run.pk, "timed_out")]


FAILED_HOOK: list[tuple[int, str]] = []


def _broken_plan(ctx: RunContext) -> Step | None:
    raise ValueError("the plan cannot read its state")


register_pipeline(Pipeline(
    name="test_broken_plan", modes={"full": _broken_plan},
    on_failed=lambda ctx, exc: FAILED_HOOK.append((ctx.run.pk, str(exc))),
))


def test_a_failing_run_tells_its_pipeline_before_it_ends_failed(case, django_capture_on_commit_callbacks):
    FAILED_HOOK.clear()
    run = start(case, django_capture_on_commit_callbacks, pipeline="test_broken_plan", mode="full")

    assert run.status == AgentRun.Status.FAILED
    assert run.error == "ValueError: the plan cannot read its state"
    assert FAILED_HOOK == [(run.pk, "the plan cannot read its state")]


def _finish_that_fails(ctx: RunContext) -> None:
    from audit.services import audit_record

    audit_record(actor="system", action="test.finish_wrote", case=ctx.case)  # rolled back with finish
    raise ValueError("write-back refused")


register_pipeline(Pipeline(
    name="test_failing_finish",
    modes={"full": [Stage("only", lambda ctx: [CallSpec("quick", QUICK, {})])]},
    finish=_finish_that_fails,
    on_failed=lambda ctx, exc: FAILED_HOOK.append((ctx.run.pk, str(exc))),
))


def test_a_failing_finish_after_the_last_step_keeps_the_step_and_ends_the_run_failed(
        case, django_capture_on_commit_callbacks):
    # The last step of a fixed plan, finish and the run's end share one transaction; finish
    # runs in a savepoint, so its failure undoes its own writes, not the step's.
    FAILED_HOOK.clear()
    run = start(case, django_capture_on_commit_callbacks, pipeline="test_failing_finish", mode="full")

    assert run.status == AgentRun.Status.FAILED
    assert run.error == "ValueError: write-back refused"
    assert FAILED_HOOK == [(run.pk, "write-back refused")]
    assert run.step_count == 1 and run.results["quick"]["output"] == {"summary": "quick"}
    assert list(AgentCall.objects.filter(run=run).values_list("key", flat=True)) == ["quick"]
    actions = list(AuditEntry.objects.filter(case_id=case.pk).values_list("action", flat=True))
    assert "agent.call_completed" in actions and "agent.run_failed" in actions
    assert "test.finish_wrote" not in actions


# --- a run without a case ------------------------------------------------------------------

register_pipeline(Pipeline(
    name="test_intake",
    modes={"match": [Stage("match", lambda ctx: [CallSpec("quick", QUICK, ctx.state["input"])])]},
))


def test_a_run_can_start_without_a_case_and_be_attached_to_one(alice, case, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True), transaction.atomic():
        run = pipeline_enqueue(pipeline="test_intake", mode="match", actor="system",
                               initial_state={"input": {"message": "Where is my invoice?"}})
    run.refresh_from_db()
    assert run.case is None and run.status == AgentRun.Status.COMPLETED, run.error
    assert run.results["quick"]["output"] == {"summary": "quick"}

    run_attach_case(actor=alice, run=run, case=case)

    run.refresh_from_db()
    assert run.case == case
    attached = AuditEntry.objects.get(action="agent.run_attached")
    assert attached.case_id == case.pk and attached.actor == "alice" and attached.object_id == str(run.pk)
    other = case_create(actor=alice, case_type="fraud_alert", title="Someone else")
    with pytest.raises(Conflict):
        run_attach_case(actor=alice, run=run, case=other)
    assert run_attach_case(actor=alice, run=run, case=case).case == case  # the same case again: no-op


# --- the run's identity on every request ---------------------------------------------------

def test_every_llm_request_names_its_run_agent_and_case(case, settings, fake_openai,
                                                        django_capture_on_commit_callbacks):
    fake_openai.default = json_answer({"summary": "seen"})
    run = start(case, django_capture_on_commit_callbacks, pipeline="test_intake", mode="match", message="hi")

    assert run.status == AgentRun.Status.COMPLETED, run.error
    (request,) = fake_openai.requests
    assert request.headers["x-casework-run"] == str(run.pk)
    assert request.headers["x-casework-agent"] == "test_quick"
    assert request.headers["x-casework-case"] == case.reference
    assert request.headers["x-casework-correlation"] == run.correlation_id


def test_a_duplicate_delivery_of_a_planner_run_does_nothing(case, django_capture_on_commit_callbacks):
    run = start(case, django_capture_on_commit_callbacks)
    before = (len(TOOL_RUNS), AgentCall.objects.count())
    assert execute_run(run.pk) is None
    assert (len(TOOL_RUNS), AgentCall.objects.count()) == before
