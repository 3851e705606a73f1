"""Durable pipelines: steps chosen at run time from the saved state, run by a worker,
resumable after a crash.

A pipeline gives, per mode, a *plan*: a function of the run's context that returns the next
step (a name and the calls to make: agents, or tools run directly) or None when the run is
done. A fixed list of stages is one kind of plan (`fixed_stages`, today's fan-out then
merge); a planner loop or a tool loop is another (the plan reads what the last step found
and picks what comes next). The executor:
  1. claims the run with a conditional UPDATE (queued, or running with a stale heartbeat,
     i.e. a worker that died), so a duplicate delivery does nothing;
  2. prepares the run once (e.g. copies cached results in);
  3. asks the plan for the next step, runs its calls concurrently on the process's event
     loop (bounded by LLM_MAX_CONCURRENCY), keeping the heartbeat fresh and watching the run
     deadline while they run, then writes the step in ONE transaction: its AgentCall rows,
     its audit entries and the run's state, conditional on the claim token; repeats until
     the plan is done or max_steps is reached;
  4. calls the pipeline's `finish` to write results back through domain services, and ends
     the run, in one transaction.
A run past RUN_TIMEOUT_SECONDS ends timed_out, even in the middle of a long step, and
`finish` still gets what it has. A run resumed after a crash starts from its last saved
step: a step either saved whole or not at all, so no finished step's call is repeated.
A run may start without a case (e.g. a message matched to a ticket before the ticket's case
exists) and be attached to one later (agents.services.run_attach_case).
"""

from __future__ import annotations

import concurrent.futures
import importlib
import json
import logging
import random
import sys
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from decimal import Decimal

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone
from opentelemetry import context as otel_context
from opentelemetry import trace as otel_trace

from agents.llm.base import ToolCall
from agents.models import AgentCall, AgentRun
from agents.runtime import aio
from agents.runtime.agent import Agent, AgentResult
from agents.runtime.approval import ApprovalPolicies, policy_load
from agents.runtime.effects import approval_effect_base, effect_scope
from agents.runtime.pause import WAITING_STATUS, pause_open, pauses_answered, pauses_mark_resumed
from agents.runtime.runner import arun_agent, arun_tool_loop
from agents.runtime.signals import run_ended, run_failed
from agents.runtime.tools import Tool, ToolRegistry, argument_names
from agents.runtime.transient import is_transient
from audit.context import correlation, log_fields
from audit.rowsql import row_get, rows_insert
from audit.services import audit_entry_build, audit_record_many
from audit.tracing import get_tracer

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class CallSpec:
    """One call of a step: an agent with its input, or a registered tool run directly with
    `input` as its arguments (a planner's tool executor)."""

    key: str
    agent: Agent | None = None
    input: dict = field(default_factory=dict)
    tool: Tool | None = None
    # A tool-calling agent's loop bounds and what it does when its context outgrows the window
    # (runner.arun_tool_loop's max_turns, max_tool_calls, context_strategy); None keeps the loop's own.
    max_turns: int | None = None
    max_tool_calls: int | None = None
    context_strategy: str | None = None

    @property
    def name(self) -> str:
        return self.agent.id if self.agent else self.tool.name


@dataclass
class RunContext:
    run: AgentRun
    # Why the run stopped early ("timed_out", "max_steps"), for `finish` to see.
    stop_reason: str = ""

    @property
    def case(self):
        return self.run.case

    @property
    def state(self) -> dict:
        return self.run.state

    @property
    def results(self) -> dict:
        return self.run.state.setdefault("results", {})

    def output(self, key: str) -> dict | None:
        entry = self.results.get(key)
        return entry.get("output") if entry and not entry.get("error") else None


@dataclass(frozen=True)
class Step:
    """What a plan asks for next. `index` is recorded with each result (re-running one agent
    keeps the results of steps up to its own); `state` is merged into the run's state when
    the step is saved, in the same transaction as its calls."""

    name: str
    calls: list[CallSpec]
    index: int = 0
    state: dict = field(default_factory=dict)
    # The plan knows that no step follows this one once it completes (a fixed plan's last
    # stage): the executor then saves the step, runs `finish` and ends the run in ONE
    # transaction, instead of committing the step and asking the plan again.
    last: bool = False


Plan = Callable[[RunContext], Step | None]


@dataclass(frozen=True)
class Stage:
    """A stage of a fixed plan: its calls are computed from the context when it is reached."""

    name: str
    calls: Callable[[RunContext], list[CallSpec]]


def fixed_stages(stages: list[Stage]) -> Plan:
    """A plan that walks stages in order. A stage whose calls all have results already (or
    that has none to make) is passed over without a step of its own."""

    def plan(ctx: RunContext) -> Step | None:
        index = ctx.state.get("stage_index", 0)
        while index < len(stages):
            stage = stages[index]
            pending = [spec for spec in stage.calls(ctx) if spec.key not in ctx.results]
            if pending:
                ctx.state["stage_index"] = index
                return Step(stage.name, pending, index=index, state={"stage_index": index + 1},
                            last=index == len(stages) - 1)
            index += 1
        ctx.state["stage_index"] = index
        return None

    return plan


@dataclass
class Pipeline:
    name: str
    # Per mode: a plan, or a list of stages (run as fixed_stages).
    modes: dict[str, Plan | list[Stage]]
    prepare: Callable[[RunContext], None] = lambda ctx: None
    # Writes results back through domain services. May return AgentRun.Status.WAITING when
    # the flow now waits for a person (the next step is a new run, enqueued on the answer).
    finish: Callable[[RunContext], str | None] = lambda ctx: None
    description: str = ""
    agents: dict[str, Agent] = field(default_factory=dict)
    # Steps a run may take before it is stopped (0: RUN_MAX_STEPS).
    max_steps: int = 0
    # Called when the run fails with an exception, in the transaction that ends it, so the
    # domain's own record (an investigation "in progress") can say it failed too. Its own
    # failure is logged and does not stop the run being ended.
    on_failed: Callable[[RunContext, Exception], None] = lambda ctx, exc: None
    # Tools its plans run directly (CallSpec.tool), besides its agents' own: listed so that an
    # approval's edited arguments can be checked against the tool's schema (tool_find).
    tools: tuple[Tool, ...] = ()

    def plan(self, mode: str) -> Plan:
        plan = self.modes[mode]
        return fixed_stages(plan) if isinstance(plan, list) else plan


PIPELINES: dict[str, Pipeline] = {}


# The module that registered each pipeline (its prompts are read from there: agents.evals.prompts).
PIPELINE_MODULES: dict[str, str] = {}


def register_pipeline(pipeline: Pipeline) -> Pipeline:
    if pipeline.name in PIPELINES and PIPELINES[pipeline.name] is not pipeline:
        raise ValueError(f"A pipeline named {pipeline.name!r} is already registered.")
    PIPELINES[pipeline.name] = pipeline
    PIPELINE_MODULES[pipeline.name] = sys._getframe(1).f_globals.get("__name__", "")
    return pipeline


def pipeline_module_load(module: str) -> bool:
    """Import a case type's pipeline module, which registers its pipeline (a type's
    AppConfig.ready calls this with its own module: casework/<type>/agents/pipeline.py).
    A module that fails to import is logged, not raised: one broken pipeline must not stop
    the app, nor the other types' runs; its own runs fail with "no pipeline registered"."""
    try:
        importlib.import_module(module)
    except Exception:  # noqa: BLE001 - see the docstring
        logger.exception("Pipeline module %s failed to import; its runs will fail.", module)
        return False
    return True


def tool_find(pipeline: str, name: str) -> Tool | None:
    """The tool called `name` that the pipeline's agents (or its plans, directly) may call."""
    found = PIPELINES.get(pipeline)
    if found is None:
        return None
    for tool in (*found.tools, *(t for agent in found.agents.values() for t in agent.tools)):
        if tool.name == name:
            return tool
    return None


def get_pipeline(name: str) -> Pipeline:
    """A registered pipeline. Pipelines register when their modules are imported, which the
    agents app does at start-up (AgentsConfig.ready); the runtime imports none of them."""
    try:
        return PIPELINES[name]
    except KeyError:
        raise LookupError(f"No pipeline named {name!r} is registered (did its module fail to import?).") from None


class LostClaim(Exception):
    """Another worker took this run over (our heartbeat went stale); stop writing to it."""


class RunInterrupted(Exception):
    """The run met a transient database error (a restart, a lost connection, a deadlock): it
    is not failed. Its last saved step stands; the worker retries it with backoff under the
    same claim (`claim_token`), and it resumes from that step."""

    def __init__(self, run_id: int, claim_token: str | None, cause: BaseException):
        super().__init__(f"Run {run_id} interrupted by a transient database error: {type(cause).__name__}: {cause}")
        self.run_id = run_id
        self.claim_token = claim_token


# The executor's two hot statements, the claim and the token-guarded save, are written as
# SQL: built through QuerySet.filter().update() they cost about 1.2 ms and 0.5 ms of a worker's
# CPU each, several times per run (bench/README.md, runtime_throughput); as SQL, about a
# tenth. Values still go through each field's get_db_prep_save, as the ORM's UPDATE does.
def _run_update(sets: dict[str, object], where: str, where_params: list, *, keep: tuple[str, ...] = ()) -> int:
    """UPDATE agents_agentrun SET <field> = <value>, ... WHERE <where>; returns the row count.
    A field named in `keep` is set only where it is NULL (COALESCE)."""
    qn = connection.ops.quote_name
    columns = {name: qn(AgentRun._meta.get_field(name).column) for name in sets}
    assignments = [f"{column} = COALESCE({column}, %s)" if name in keep else f"{column} = %s"
                   for name, column in columns.items()]
    with connection.cursor() as cursor:
        cursor.execute(f"UPDATE {qn(AgentRun._meta.db_table)} SET {', '.join(assignments)} WHERE {where}",
                       [_prep(name, value) for name, value in sets.items()] + where_params)
        return cursor.rowcount


def _prep(name: str, value):
    """A value as the ORM would write it to this field (JSON, Decimal, datetime per database)."""
    return AgentRun._meta.get_field(name).get_db_prep_save(value, connection)


def claim_run(run_id: int, *, claim_token: str | None = None) -> str | None:
    """Claim the run for this worker; returns the claim token, or None if it is not claimable:
    queued, or running with a stale heartbeat (its worker died), and not scheduled for later
    (a retry's not_before). With `claim_token` (a retry after a transient database error, see
    RunInterrupted), a run still running under that token is taken back first.

    Every later write to the run is conditional on that token (`_save`), so a worker whose
    run was taken over after a stale heartbeat cannot overwrite the new holder's work."""
    now = timezone.now()
    if claim_token:
        reclaimed = _run_update({"heartbeat_at": now}, "id = %s AND status = %s AND claim_token = %s",
                                [run_id, AgentRun.Status.RUNNING, claim_token])
        if reclaimed == 1:
            return claim_token
    stale = now - timedelta(seconds=settings.RUN_STALE_AFTER_SECONDS)
    token = uuid.uuid4().hex
    claimed = _run_update(
        {"status": AgentRun.Status.RUNNING, "heartbeat_at": now, "claim_token": token, "started_at": now},
        "id = %s AND (status = %s OR (status = %s AND heartbeat_at < %s)) "
        "AND (not_before IS NULL OR not_before <= %s)",
        [run_id, AgentRun.Status.QUEUED, AgentRun.Status.RUNNING, _prep("heartbeat_at", stale),
         _prep("not_before", now)], keep=("started_at",))
    return token if claimed == 1 else None


def _save(run: AgentRun, fields: list[str]) -> None:
    """Write these fields of the run, only while this worker still holds it."""
    updated = _run_update({name: getattr(run, name) for name in fields}, "id = %s AND claim_token = %s",
                          [run.pk, run.claim_token])
    if updated != 1:
        raise LostClaim(f"Run {run.pk} was taken over by another worker.")


def execute_run(run_id: int, *, claim_token: str | None = None) -> AgentRun | None:
    """Run (or resume) one pipeline run. Returns None when another worker holds it.

    A transient database error (agents.runtime.transient) anywhere in the run does not fail it:
    RunInterrupted is raised, carrying the claim, for the caller to retry with backoff; the
    retry reads the run back from the database and resumes from its last saved step."""
    try:
        token = claim_run(run_id, claim_token=claim_token)
    except Exception as exc:
        if is_transient(exc):
            raise RunInterrupted(run_id, claim_token, exc) from exc
        raise
    if token is None:
        logger.info("Run %s is not claimable (done, or held by a live worker); skipping.", run_id)
        return None
    try:
        return _execute_claimed(run_id, token)
    except Exception as exc:
        if is_transient(exc):
            raise RunInterrupted(run_id, token, exc) from exc
        raise


def _execute_claimed(run_id: int, token: str) -> AgentRun:
    # Compiled once per process (audit.rowsql.row_get): every run starts with this read.
    run = row_get("run with its case", lambda: AgentRun.objects.select_related("case"), run_id)
    run.claim_token = token
    ctx = RunContext(run)
    tracer = get_tracer()
    # Every log line of the run carries its correlation id (the request's that queued it),
    # its id and (through the span) its trace id (audit.logs).
    with correlation(run.correlation_id or None) as correlation_id, log_fields(run_id=run.pk), \
            tracer.start_as_current_span(f"pipeline.{run.pipeline}", context=_trace_parent(run),
                                         links=_queued_by()) as span:
        span.set_attributes({"run.id": run.pk, "run.pipeline": run.pipeline, "run.mode": run.mode,
                             "case.reference": run.case.reference if run.case else "",
                             "run.resumed": bool(run.state.get("prepared")), "correlation.id": correlation_id})
        # Saved with the run's first write, not in a write of its own.
        unsaved = [] if run.trace_id else ["trace_id"]
        run.trace_id = run.trace_id or format(span.get_span_context().trace_id, "032x")
        try:
            _execute(ctx, get_pipeline(run.pipeline), unsaved)
        except LostClaim:
            logger.warning("Run %s was taken over by another worker; this worker stops.", run.pk)
        except Exception as exc:  # noqa: BLE001 - the run records the failure; the worker lives on
            if is_transient(exc):
                # Not the run's fault: it is retried, never failed (execute_run).
                span.set_status(otel_trace.Status(otel_trace.StatusCode.ERROR, f"interrupted: {exc}"[:200]))
                raise
            if getattr(exc, "expected", False):  # raised on purpose (the demo's injected failures)
                logger.warning("Run %s failed: %s", run.pk, exc)
            else:
                logger.exception("Run %s failed", run.pk)
            span.set_status(otel_trace.Status(otel_trace.StatusCode.ERROR, str(exc)[:200]))
            try:
                with transaction.atomic():
                    _on_failed(ctx, exc)
                    _end(run, AgentRun.Status.FAILED, f"{type(exc).__name__}: {exc}", unsaved)
            except LostClaim:
                logger.warning("Run %s failed here but is held by another worker now.", run.pk)
    return run


def _on_failed(ctx: RunContext, exc: Exception) -> None:
    try:
        pipeline = get_pipeline(ctx.run.pipeline)
        with transaction.atomic():
            pipeline.on_failed(ctx, exc)
    except Exception:  # noqa: BLE001 - the run is ended failed whatever the hook does
        logger.exception("on_failed() failed for run %s", ctx.run.pk)


def _trace_parent(run: AgentRun):
    """A resumed run's spans join the trace it started; a new run starts a trace of its own,
    even when it runs inside the request that queued it (eager tasks): one trace, one file,
    per run."""
    if not run.trace_id:
        return otel_context.Context()
    span_context = otel_trace.SpanContext(trace_id=int(run.trace_id, 16), span_id=0x1, is_remote=True,
                                          trace_flags=otel_trace.TraceFlags(otel_trace.TraceFlags.SAMPLED))
    return otel_trace.set_span_in_context(otel_trace.NonRecordingSpan(span_context))


def _queued_by() -> list[otel_trace.Link]:
    """A link to the span the run was started under (the request's, when it runs there)."""
    context = otel_trace.get_current_span().get_span_context()
    return [otel_trace.Link(context)] if context.is_valid else []


def _deadline(run: AgentRun):
    """RUN_TIMEOUT_SECONDS from the run's start, or from a person's resuming it (a run that
    waited for its budget to be raised: its wait is not its work)."""
    start = run.started_at or timezone.now()
    resumed = run.state.get("resumed_at")
    if resumed:
        from datetime import datetime

        start = max(start, datetime.fromisoformat(resumed))
    return start + timedelta(seconds=settings.RUN_TIMEOUT_SECONDS)


def _execute(ctx: RunContext, pipeline: Pipeline, unsaved: list[str]) -> None:
    run = ctx.run
    plan = pipeline.plan(run.mode)
    max_steps = pipeline.max_steps or settings.RUN_MAX_STEPS
    if not run.state.get("prepared"):
        before = json.dumps(run.state, sort_keys=True, default=str)
        pipeline.prepare(ctx)
        changed = json.dumps(run.state, sort_keys=True, default=str) != before
        run.state["prepared"] = True
        if changed:
            # What prepare put in the state is saved before any call depends on it; a prepare
            # that changed nothing is marked done with the first step's write.
            _save(run, ["state", *unsaved])
            unsaved.clear()
    while True:
        deadline = _deadline(run)
        if timezone.now() >= deadline:
            waited = run.state.get("waiting_for_model")
            reason = (f"Stopped after {settings.RUN_TIMEOUT_SECONDS} s, waiting for the model: the "
                      f"{waited['provider']} endpoint has been unreachable since {waited['since']} "
                      f"({waited['error']}); the results so far are kept.") if waited else (
                      f"Stopped after {settings.RUN_TIMEOUT_SECONDS} s; the results so far are kept.")
            return _stop(ctx, pipeline, AgentRun.Status.TIMED_OUT, unsaved, "timed_out", reason)
        if run.step_count >= max_steps:
            return _stop(ctx, pipeline, AgentRun.Status.COMPLETED, unsaved, "max_steps",
                         f"Stopped at the step limit ({max_steps} steps); the results so far are kept.")
        step = plan(ctx)
        if step is None:
            break
        outcomes, out_of_time = _run_step(step, run, deadline)
        waiting = [(spec, _budget_pending(result)) for spec, result in outcomes
                   if result.pending or result.error_type == "budget_reached"]
        if waiting and not out_of_time:
            return _pause_step(ctx, step, outcomes, waiting, unsaved)
        outcomes = [(spec, result) for spec, result in outcomes if not result.pending]
        unreachable = [(spec, result) for spec, result in outcomes if _model_unreachable(result)]
        if unreachable and not out_of_time:
            return _wait_for_model(ctx, step, outcomes, unreachable, unsaved)
        if step.last and not out_of_time:
            return _save_last_step_and_end(ctx, pipeline, step, outcomes, unsaved)
        with transaction.atomic():
            _save_step(ctx, step, outcomes, unsaved, complete=not out_of_time)
        unsaved.clear()
        if out_of_time:
            return _stop(ctx, pipeline, AgentRun.Status.TIMED_OUT, unsaved, "timed_out",
                         f"Stopped after {settings.RUN_TIMEOUT_SECONDS} s, during {step.name}; "
                         "the results so far are kept.")
    with transaction.atomic():
        outcome = pipeline.finish(ctx)
        _end(run, _finished_status(outcome), "", unsaved)


def _model_unreachable(result: AgentResult) -> bool:
    """The call was not answered because the model's endpoint is down: its breaker is open
    (the request was never sent), or it failed on a connection while the breaker opened."""
    if result.error_type == "circuit_open":
        return True
    if result.error_type == "network" and result.provider:
        from agents.llm.breaker import breaker_for

        return breaker_for(result.provider).status() is not None
    return False


def _wait_for_model(ctx: RunContext, step: Step, outcomes: list[tuple[CallSpec, AgentResult]],
                    unreachable: list[tuple[CallSpec, AgentResult]], unsaved: list[str]) -> None:
    """Put the run back in the queue until the model's endpoint may answer again: it spends
    none of its retries and is not failed. The step's answered calls are saved (the step is
    not marked done, so its unanswered calls are made when the run resumes); the run is
    `queued` with not_before at the breaker's next try and a wake-up sent for then, its
    state saying what it waits for (the run panel shows it). Its deadline (started_at +
    RUN_TIMEOUT_SECONDS) still holds: a run that waits past it ends timed_out, saying why."""
    from agents.llm.breaker import breaker_for

    run = ctx.run
    provider = unreachable[0][1].provider
    status = breaker_for(provider).status() or {}
    wait = max(1.0, min(float(status.get("retry_in_seconds") or settings.LLM_BREAKER_COOLDOWN_SECONDS),
                        settings.LLM_BREAKER_COOLDOWN_SECONDS))
    wait += wait * 0.2 * random.random()  # waiting runs do not all wake in the same instant
    now = timezone.now()
    first_wait = "waiting_for_model" not in run.state
    skipped = {id(result) for _, result in unreachable}
    answered = [(spec, result) for spec, result in outcomes if id(result) not in skipped]
    with transaction.atomic():
        if answered:
            _save_step(ctx, step, answered, unsaved, complete=False, save_run=False)
        previous = run.state.get("waiting_for_model") or {}
        run.state["waiting_for_model"] = {
            "provider": provider, "since": previous.get("since") or status.get("since") or now.isoformat(),
            "error": unreachable[0][1].error[:300], "next_try": (now + timedelta(seconds=wait)).isoformat(),
            "calls": [spec.key for spec, _ in unreachable]}
        run.status = AgentRun.Status.QUEUED
        run.not_before = now + timedelta(seconds=wait)
        run.heartbeat_at = now
        # The claim is given up with this write: whoever wakes it next claims it afresh.
        _save(run, list(dict.fromkeys(["state", "status", "not_before", "heartbeat_at", "step_count", "input_tokens",
                                       "output_tokens", "cost_usd", "provider", *unsaved])))
        _run_update({"claim_token": ""}, "id = %s", [run.pk])
        unsaved.clear()
        if first_wait:
            audit_record_many([audit_entry_build(
                actor="system", action="agent.run_waiting_for_model", case=run.case, obj=run,
                data={"pipeline": run.pipeline, "mode": run.mode, "provider": provider,
                      "error": run.state["waiting_for_model"]["error"], "calls": run.state["waiting_for_model"]["calls"]})])
    # The caller (agents.tasks.run_pipeline) sends the run a wake-up for then; if that is lost,
    # the sweeper wakes it a deadline after not_before.
    run.wake_after = wait
    logger.warning("Run %s waits %.0f s for the model (%s unreachable).", run.pk, wait, provider)


def _budget_pending(result: AgentResult) -> AgentResult:
    """A call the case's budget refused waits like a call waiting for an approval, as a pause of
    kind budget (agents.runtime.pause): a tool loop refused mid-way carries its snapshot (it goes
    on from that turn), any other call is made afresh once a lead raises the budget."""
    if not result.pending:
        result.pending = {"kind": "budget", "reason": result.error, "snapshot": {}}
    return result


def _finished_status(outcome: str | None) -> str:
    return AgentRun.Status.WAITING if outcome == AgentRun.Status.WAITING else AgentRun.Status.COMPLETED


def _save_last_step_and_end(ctx: RunContext, pipeline: Pipeline, step: Step,
                            outcomes: list[tuple[CallSpec, AgentResult]], unsaved: list[str]) -> None:
    """The plan's last step, `finish` and the run's end in one transaction, the run's row
    written once. `finish` runs in a savepoint: when it fails, the step is still saved (its
    calls happened), and the failure is raised after the commit, to end the run failed as
    any other failure does."""
    failure: Exception | None = None
    with transaction.atomic():
        fields = _save_step(ctx, step, outcomes, unsaved, save_run=False)
        try:
            with transaction.atomic():
                outcome = pipeline.finish(ctx)
                _end(ctx.run, _finished_status(outcome), "", fields)
        except LostClaim:
            raise  # nothing of this run is ours to write any more: the whole step rolls back
        except Exception as exc:  # noqa: BLE001 - raised again below, once the step is committed
            failure = exc
            _save(ctx.run, fields)
    unsaved.clear()
    if failure is not None:
        raise failure


def _stop(ctx: RunContext, pipeline: Pipeline, status: str, unsaved: list[str], reason: str, error: str) -> None:
    """End the run early; `finish` still writes back what there is (and may fail alone)."""
    ctx.stop_reason = reason
    with transaction.atomic():
        try:
            with transaction.atomic():
                pipeline.finish(ctx)
        except Exception:  # noqa: BLE001 - a stopped run keeps what it has even if write-back fails
            logger.exception("finish() failed for run %s, stopped (%s)", ctx.run.pk, reason)
        _end(ctx.run, status, error, unsaved)


async def _acall(spec: CallSpec, metadata: dict, policies: ApprovalPolicies | None = None,
                 resume: dict | None = None) -> AgentResult:
    """One call of a step. `policies` decide which tool calls wait for a person (None: the
    step has no "acts" tool); `resume` is a person's answer to this call's earlier pause
    (agents.runtime.pause.pauses_answered), which the call continues from."""
    gate = policies.decide if policies is not None else None
    if spec.agent is not None and spec.agent.tools:
        loop = {k: v for k, v in (("max_turns", spec.max_turns), ("max_tool_calls", spec.max_tool_calls),
                                  ("context_strategy", spec.context_strategy)) if v is not None}
        if resume is not None and resume.get("snapshot"):
            loop["resume"] = resume
        return await arun_tool_loop(spec.agent, spec.input, metadata=metadata, gate=gate, **loop)
    if spec.agent is not None:
        return await arun_agent(spec.agent, spec.input, metadata=metadata)
    arguments = spec.input
    answer = (resume or {}).get("answer") if (resume or {}).get("kind") == "approval" else None
    if answer is not None and not answer.get("approved"):
        return AgentResult(agent_id=spec.tool.name, error=f"A person ({answer.get('by') or 'a reviewer'}) denied "
                           f"this call: {answer.get('reason') or 'no reason given'}. It was not run.",
                           error_type="ApprovalDenied")
    if answer is not None:
        arguments = answer["arguments"] if answer.get("arguments") is not None else arguments
    elif gate is not None and (decision := gate(spec.tool, arguments)).needed:
        return AgentResult(agent_id=spec.tool.name, pending={
            "kind": "approval", "tool": spec.tool.name, "arguments": arguments,
            "reason": str(arguments.get("reason", "")) if isinstance(arguments, dict) else "",
            "rule": decision.rule, "snapshot": {}})
    with effect_scope(approval_effect_base(answer)):  # an approved call's effects: once (agents.runtime.effects)
        outcome = await ToolRegistry([spec.tool]).aexecute(ToolCall(id=spec.key, name=spec.tool.name,
                                                                    arguments=arguments))
    content = outcome.content if isinstance(outcome.content, dict) else {"result": outcome.content}
    return AgentResult(agent_id=spec.tool.name, output=content if outcome.success else None,
                       error="" if outcome.success else str(outcome.content), error_type=outcome.error_type,
                       latency_ms=outcome.latency_ms)


def _run_step(step: Step, run: AgentRun, deadline) -> tuple[list[tuple[CallSpec, AgentResult]], bool]:
    """Run the step's calls concurrently on the event loop; this thread waits, keeping the
    heartbeat fresh (a call may outlast RUN_STALE_AFTER_SECONDS through timeouts and
    retries, and a run whose heartbeat goes stale is handed to another worker) and stopping
    at the run's deadline. Returns the finished calls and whether time ran out."""
    metadata = {"run": str(run.pk), "correlation": run.correlation_id,
                "case": run.case.reference if run.case else ""}
    # Read here, on the worker's thread: the calls on the loop decide without the database.
    policies = policy_load(run.case.case_type if run.case else "") if _step_acts(step) else None
    resumes = pauses_answered(run) if run.state.get("paused") else {}
    pending = {aio.submit(_acall(spec, {**metadata, "call": spec.key}, policies, resumes.get(spec.key))): spec
               for spec in step.calls}
    finished: list[tuple[CallSpec, AgentResult]] = []
    beat_every = max(0.5, settings.RUN_STALE_AFTER_SECONDS / 3)
    while pending:
        remaining = (deadline - timezone.now()).total_seconds()
        if remaining <= 0:
            for future in pending:
                future.cancel()
            return finished, True
        done, _ = concurrent.futures.wait(pending, timeout=min(beat_every, remaining),
                                          return_when=concurrent.futures.FIRST_COMPLETED)
        if not done and remaining > beat_every:
            run.heartbeat_at = timezone.now()
            _save(run, ["heartbeat_at"])
        for future in done:
            finished.append((pending.pop(future), future.result()))
    return finished, False


def _step_acts(step: Step) -> bool:
    """Whether a call of the step may run a tool that acts (and so may need an approval)."""
    return any(tool.acts for spec in step.calls
               for tool in (spec.agent.tools if spec.agent is not None else (spec.tool,)))


def _pause_step(ctx: RunContext, step: Step, outcomes: list[tuple[CallSpec, AgentResult]],
                waiting: list[tuple[CallSpec, AgentResult]], unsaved: list[str]) -> None:
    """Stop the run until a person answers: the step's finished calls are saved (the step is
    not marked done, so its waiting calls are made when it resumes), a RunPause is opened for
    each call waiting for an approval and one for the calls the case's budget refused
    (agents.runtime.pause), the run moves to "Waiting for approval" (or "Budget reached" when
    only the budget holds it) and gives up its claim. No worker, thread or connection waits:
    the answer (or the lead's raise) queues the run again, for any worker."""
    run = ctx.run
    skipped = {id(result) for _, result in waiting}
    answered = [(spec, result) for spec, result in outcomes if id(result) not in skipped]
    approvals = [(spec, result) for spec, result in waiting if result.pending["kind"] != "budget"]
    refused = [(spec, result) for spec, result in waiting if result.pending["kind"] == "budget"]
    kind = approvals[0][1].pending["kind"] if approvals else "budget"
    with transaction.atomic():
        if answered:
            _save_step(ctx, step, answered, unsaved, complete=False, save_run=False)
        # An answer this step resumed from is used now, even where the call waits again.
        pauses_mark_resumed(run, [spec.key for spec, _ in outcomes])
        for spec, result in approvals:
            pending = result.pending
            pause_open(run=run, kind=pending["kind"], call_key=spec.key, step=step.name, agent=spec.name,
                       tool=pending.get("tool", ""), arguments=pending.get("arguments"),
                       reason=pending.get("reason", ""), policy=pending.get("rule", ""),
                       snapshot=pending.get("snapshot"))
        if refused:
            # One pause for every call the budget refused: a lead answers them together.
            message = refused[0][1].pending.get("reason", "")
            pause_open(run=run, kind="budget", call_key=refused[0][0].key, step=step.name,
                       agent=refused[0][0].name, reason=message, policy="the case's budget",
                       snapshot={"calls": {spec.key: result.pending.get("snapshot") or {}
                                           for spec, result in refused}})
        run.state["paused"] = True
        run.state.pop("waiting_for_model", None)
        run.status = WAITING_STATUS[kind]
        run.heartbeat_at = timezone.now()
        # The claim is given up with this write: the answer queues the run for whoever comes.
        _save(run, list(dict.fromkeys(["state", "status", "heartbeat_at", "step_count", "input_tokens",
                                       "output_tokens", "cost_usd", "provider", *unsaved])))
        _run_update({"claim_token": ""}, "id = %s", [run.pk])
        unsaved.clear()
        audit_record_many([audit_entry_build(
            actor="system", action=f"agent.run_{run.status}", case=run.case, obj=run,
            data={"pipeline": run.pipeline, "mode": run.mode, "step": step.name,
                  "waiting": [{"call": spec.key, "tool": result.pending.get("tool", ""),
                               "kind": result.pending["kind"]} for spec, result in waiting],
                  **({"message": refused[0][1].pending.get("reason", "")[:300]} if refused else {})})])
    logger.info("Run %s waits for a person (%s) at %s.", run.pk, kind, step.name)


def _save_step(ctx: RunContext, step: Step, outcomes: list[tuple[CallSpec, AgentResult]],
               unsaved: list[str], *, complete: bool = True, save_run: bool = True) -> list[str]:
    """The step's calls, audit entries and the run's state, in the caller's transaction: one
    INSERT of AgentCall rows, one of audit entries, one conditional UPDATE of the run (or,
    with save_run=False, the run's fields to write are returned for the caller's own UPDATE)."""
    run = ctx.run
    rows: list[AgentCall] = []
    calls: list[AgentCall] = []
    for spec, result in outcomes:
        calls.append(_call_row(run, step, spec, result))
        rows.append(calls[-1])
        rows += [_tool_row(run, step, spec, result, number, tc) for number, tc in enumerate(result.tool_calls, 1)]
    rows_insert(rows)  # bulk_create, its INSERT built once (audit.rowsql)
    entries = []
    for (spec, result), call in zip(outcomes, calls, strict=True):
        actor = f"agent:{spec.name}"
        for number, tc in enumerate(result.tool_calls, 1):
            # The arguments quote the case (an absence's dates): they stay in the tool call's row,
            # encrypted at rest, which the entry names by key; the trail holds only their names.
            entries.append(audit_entry_build(actor=actor, action="agent.tool_called", case=ctx.case, obj=call,
                                             data={"tool": tc["name"], "call": _tool_key(spec, number, tc),
                                                   "arguments": argument_names(tc["arguments"]),
                                                   "success": tc["success"], "error_type": tc["error_type"]}))
        entries.append(audit_entry_build(
            actor=actor, action="agent.call_completed" if result.ok else "agent.call_failed", case=ctx.case,
            obj=call, data={"run": run.pk, "key": spec.key, "step": step.name, "provider": result.provider,
                            "model": result.model, "input_tokens": result.input_tokens,
                            "output_tokens": result.output_tokens, "latency_ms": result.latency_ms,
                            "attempts": result.attempts, "error": result.error}))
        ctx.results[spec.key] = {
            "agent": spec.name, "stage": step.index, "step": step.name, "output": result.output,
            "error": result.error, "error_type": result.error_type, "call_id": call.pk,
            "latency_ms": result.latency_ms, "attempts": result.attempts, "input_tokens": result.input_tokens,
            "output_tokens": result.output_tokens, **({"tool": True} if spec.tool else {}),
            # The tool loop's prunings of its context, kept with the result they shaped.
            **({"context_events": result.context_events} if result.context_events else {}),
        }
        run.input_tokens += result.input_tokens
        run.output_tokens += result.output_tokens
        run.cost_usd = Decimal(run.cost_usd) + Decimal(str(round(result.cost_usd, 6)))
        run.provider = result.provider or run.provider
    audit_record_many(entries)
    if run.state.get("paused"):
        pauses_mark_resumed(run, [spec.key for spec, _ in outcomes], step_done=complete)
    if complete:
        run.state.pop("waiting_for_model", None)  # the model answered: the run no longer waits
        # A step cut short by the deadline keeps the results it has, but is not marked done:
        # its state (e.g. "next stage") would claim calls that never ran.
        run.state.update(step.state)
    run.step_count += 1
    run.heartbeat_at = timezone.now()
    fields = ["state", "step_count", "input_tokens", "output_tokens", "cost_usd", "provider", "heartbeat_at",
              *unsaved]
    if save_run:
        _save(run, fields)
    return fields


def _verdict(spec: CallSpec, output: dict | None) -> str:
    """The output's value under the agent's verdict_key, when it is a short word (AgentCall.output_verdict)."""
    key = spec.agent.verdict_key if spec.agent else ""
    value = output.get(key) if key and isinstance(output, dict) else None
    return value if isinstance(value, str) and len(value) <= 20 else ""


def _call_row(run: AgentRun, step: Step, spec: CallSpec, result: AgentResult) -> AgentCall:
    return AgentCall(
        run=run, kind=AgentCall.Kind.AGENT if spec.agent else AgentCall.Kind.TOOL, key=spec.key, name=spec.name,
        stage=step.name, input=spec.input, output=result.output, output_verdict=_verdict(spec, result.output),
        status=AgentCall.Status.OK if result.ok else AgentCall.Status.ERROR, error=result.error,
        error_type=result.error_type, attempts=result.attempts, attempt_log=result.attempt_log,
        input_tokens=result.input_tokens, output_tokens=result.output_tokens, latency_ms=result.latency_ms,
        cost_usd=Decimal(str(round(result.cost_usd, 6))), model=result.model, provider=result.provider,
        trace_id=result.trace_id, span_id=result.span_id,
    )


def _tool_key(spec: CallSpec, number: int, tc: dict) -> str:
    return f"{spec.key}.{tc['name']}.{number}"


def _tool_row(run: AgentRun, step: Step, spec: CallSpec, result: AgentResult, number: int, tc: dict) -> AgentCall:
    return AgentCall(
        run=run, kind=AgentCall.Kind.TOOL, key=_tool_key(spec, number, tc), name=tc["name"],
        stage=step.name, input=tc["arguments"], output={"result": tc["result"]},
        status=AgentCall.Status.OK if tc["success"] else AgentCall.Status.ERROR,
        error="" if tc["success"] else str(tc["result"]), error_type=tc["error_type"],
        latency_ms=tc["latency_ms"], trace_id=result.trace_id,
    )


def _end(run: AgentRun, status: str, error: str, unsaved: list[str]) -> None:
    """In the caller's transaction: the run's last state, its end, and the audit entry.

    A run that got to its end while one of its agent results carries an error is not
    "completed": it ends completed_with_errors, so no page calls a run with failed agents done."""
    failed, total = run.agent_failures
    if status == AgentRun.Status.COMPLETED and failed:
        status = AgentRun.Status.COMPLETED_WITH_ERRORS
        error = error or f"{failed} of {total} agent{'s' if total != 1 else ''} failed."
    run.status = status
    run.error = error
    run.finished_at = timezone.now()
    _save(run, list(dict.fromkeys(["status", "error", "finished_at", "state", *unsaved])))
    unsaved.clear()
    if status in (AgentRun.Status.FAILED, AgentRun.Status.TIMED_OUT) and run.case_id:
        transaction.on_commit(lambda: run_failed.send(sender=AgentRun, run=run))
    audit_record_many([audit_entry_build(
        actor="system", action=f"agent.run_{status}", case=run.case, obj=run,
        data={"pipeline": run.pipeline, "mode": run.mode, "error": error, "steps": run.step_count,
              "input_tokens": run.input_tokens, "output_tokens": run.output_tokens})])
    # In the run's ending transaction (outgoing webhooks are written there: the outbox).
    run_ended.send(sender=AgentRun, run=run)
