"""Durable pipelines: stages of agent calls, run by a worker, resumable after a crash.

A pipeline is a list of stages per mode. A stage names the calls it makes (agent + input),
computed from the case and the results so far. The executor:
  1. claims the run with a conditional UPDATE (queued, or running with a stale heartbeat,
     i.e. a worker that died), so a duplicate delivery does nothing;
  2. prepares the run once (e.g. copies cached results in);
  3. for each stage from the last saved one: runs the stage's calls that have no saved
     result yet, concurrently (bounded by LLM_MAX_CONCURRENCY), and saves each result with
     its AgentCall row and audit entry as it lands, on this thread;
  4. calls the pipeline's `finish` to write results back through domain services.
A run past RUN_TIMEOUT_SECONDS ends timed_out, and `finish` still gets what it has.
"""

from __future__ import annotations

import concurrent.futures
import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from decimal import Decimal

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q, Value
from django.db.models.functions import Coalesce
from django.utils import timezone
from opentelemetry import context as otel_context
from opentelemetry import trace as otel_trace

from agents.models import AgentCall, AgentRun
from agents.runtime.agent import Agent, AgentResult
from agents.runtime.runner import run_agent
from audit.context import correlation
from audit.services import audit_record
from audit.tracing import get_tracer

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class CallSpec:
    key: str
    agent: Agent
    input: dict


@dataclass
class RunContext:
    run: AgentRun

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
class Stage:
    name: str
    calls: Callable[[RunContext], list[CallSpec]]


@dataclass
class Pipeline:
    name: str
    modes: dict[str, list[Stage]]
    prepare: Callable[[RunContext], None] = lambda ctx: None
    # Writes results back through domain services. May return AgentRun.Status.WAITING when
    # the flow now waits for a person (the next step is a new run, enqueued on the answer).
    finish: Callable[[RunContext], str | None] = lambda ctx: None
    description: str = ""
    agents: dict[str, Agent] = field(default_factory=dict)


PIPELINES: dict[str, Pipeline] = {}


def register_pipeline(pipeline: Pipeline) -> Pipeline:
    if pipeline.name in PIPELINES and PIPELINES[pipeline.name] is not pipeline:
        raise ValueError(f"A pipeline named {pipeline.name!r} is already registered.")
    PIPELINES[pipeline.name] = pipeline
    return pipeline


def get_pipeline(name: str) -> Pipeline:
    from agents.pipelines import load_all

    load_all()
    return PIPELINES[name]


class LostClaim(Exception):
    """Another worker took this run over (our heartbeat went stale); stop writing to it."""


def claim_run(run_id: int) -> str | None:
    """Claim the run for this worker; returns the claim token, or None if it is not claimable.

    Every later write to the run is conditional on that token (`_save`), so a worker whose
    run was taken over after a stale heartbeat cannot overwrite the new holder's work."""
    now = timezone.now()
    stale = now - timedelta(seconds=settings.RUN_STALE_AFTER_SECONDS)
    token = uuid.uuid4().hex
    claimed = (
        AgentRun.objects.filter(pk=run_id)
        .filter(Q(status=AgentRun.Status.QUEUED) | Q(status=AgentRun.Status.RUNNING, heartbeat_at__lt=stale))
        .update(status=AgentRun.Status.RUNNING, heartbeat_at=now, claim_token=token,
                started_at=Coalesce(F("started_at"), Value(now)))
    )
    return token if claimed == 1 else None


def _save(run: AgentRun, fields: list[str]) -> None:
    """Write these fields of the run, only while this worker still holds it."""
    updated = AgentRun.objects.filter(pk=run.pk, claim_token=run.claim_token).update(
        **{name: getattr(run, name) for name in fields}
    )
    if updated != 1:
        raise LostClaim(f"Run {run.pk} was taken over by another worker.")
    expressions = [name for name in fields if hasattr(getattr(run, name), "resolve_expression")]
    if expressions:
        run.refresh_from_db(fields=expressions)


def execute_run(run_id: int) -> AgentRun | None:
    """Run (or resume) one pipeline run. Returns None when another worker holds it."""
    token = claim_run(run_id)
    if token is None:
        logger.info("Run %s is not claimable (done, or held by a live worker); skipping.", run_id)
        return None
    run = AgentRun.objects.select_related("case").get(pk=run_id)
    run.claim_token = token
    pipeline = get_pipeline(run.pipeline)
    ctx = RunContext(run)
    tracer = get_tracer()
    parent = _trace_parent(run)
    with correlation(run.correlation_id or None), tracer.start_as_current_span(
        f"pipeline.{run.pipeline}", context=parent
    ) as span:
        span.set_attributes({"run.id": run.pk, "run.pipeline": run.pipeline, "run.mode": run.mode,
                             "case.reference": run.case.reference, "run.resumed": bool(run.state.get("prepared"))})
        if not run.trace_id:
            run.trace_id = format(span.get_span_context().trace_id, "032x")
            _save(run, ["trace_id"])
        try:
            _execute(ctx, pipeline)
        except LostClaim:
            logger.warning("Run %s was taken over by another worker; this worker stops.", run.pk)
        except Exception as exc:  # noqa: BLE001 - the run records the failure; the worker lives on
            logger.exception("Run %s failed", run.pk)
            span.set_status(otel_trace.Status(otel_trace.StatusCode.ERROR, str(exc)[:200]))
            try:
                _end(run, AgentRun.Status.FAILED, f"{type(exc).__name__}: {exc}")
            except LostClaim:
                logger.warning("Run %s failed here but is held by another worker now.", run.pk)
    return run


def _trace_parent(run: AgentRun):
    """A resumed run's spans join the trace it started."""
    if not run.trace_id:
        return None
    span_context = otel_trace.SpanContext(trace_id=int(run.trace_id, 16), span_id=0x1, is_remote=True,
                                          trace_flags=otel_trace.TraceFlags(otel_trace.TraceFlags.SAMPLED))
    return otel_trace.set_span_in_context(otel_trace.NonRecordingSpan(span_context))


def _execute(ctx: RunContext, pipeline: Pipeline) -> None:
    run = ctx.run
    stages = pipeline.modes[run.mode]
    if not run.state.get("prepared"):
        pipeline.prepare(ctx)
        run.state["prepared"] = True
        _save(run, ["state"])
    for index in range(run.state.get("stage_index", 0), len(stages)):
        if _timed_out(run):
            _finish_quietly(ctx, pipeline)
            _end(run, AgentRun.Status.TIMED_OUT,
                 f"Stopped after {settings.RUN_TIMEOUT_SECONDS} s; the results so far are kept.")
            return
        stage = stages[index]
        pending = [spec for spec in stage.calls(ctx) if spec.key not in ctx.results]
        for spec, result in _run_concurrently(pending, run):
            _record(ctx, stage, index, spec, result)
        run.state["stage_index"] = index + 1
        run.step_count = F("step_count") + 1
        run.heartbeat_at = timezone.now()
        _save(run, ["state", "step_count", "heartbeat_at"])
    outcome = pipeline.finish(ctx)
    _end(run, AgentRun.Status.WAITING if outcome == AgentRun.Status.WAITING else AgentRun.Status.COMPLETED, "")


def _run_concurrently(specs: list[CallSpec], run: AgentRun):
    """Yield (spec, result) as each call finishes. Worker threads make LLM calls only; the
    caller's thread does every database write, including the heartbeat: one call may last
    longer than RUN_STALE_AFTER_SECONDS (timeouts, retries, backoff), and a run whose
    heartbeat goes stale is handed to another worker, which would repeat the calls."""
    if not specs:
        return
    parent = otel_context.get_current()

    def call(spec: CallSpec) -> AgentResult:
        token = otel_context.attach(parent)
        try:
            return run_agent(spec.agent, spec.input)
        finally:
            otel_context.detach(token)

    beat_every = max(0.5, settings.RUN_STALE_AFTER_SECONDS / 3)
    workers = min(len(specs), settings.LLM_MAX_CONCURRENCY)
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers, thread_name_prefix="agent") as pool:
        pending = {pool.submit(call, spec): spec for spec in specs}
        while pending:
            done, _ = concurrent.futures.wait(pending, timeout=beat_every,
                                              return_when=concurrent.futures.FIRST_COMPLETED)
            if not done:
                _beat(run)
            for future in done:
                yield pending.pop(future), future.result()


def _beat(run: AgentRun) -> None:
    run.heartbeat_at = timezone.now()
    _save(run, ["heartbeat_at"])


@transaction.atomic
def _record(ctx: RunContext, stage: Stage, stage_index: int, spec: CallSpec, result: AgentResult) -> None:
    run = ctx.run
    # Fail before writing anything if another worker holds the run now.
    if not AgentRun.objects.filter(pk=run.pk, claim_token=run.claim_token).exists():
        raise LostClaim(f"Run {run.pk} was taken over by another worker.")
    call = AgentCall.objects.create(
        run=run, kind=AgentCall.Kind.AGENT, key=spec.key, name=spec.agent.id, stage=stage.name,
        input=spec.input, output=result.output, status=AgentCall.Status.OK if result.ok else AgentCall.Status.ERROR,
        error=result.error, error_type=result.error_type, attempts=result.attempts, attempt_log=result.attempt_log,
        input_tokens=result.input_tokens, output_tokens=result.output_tokens, latency_ms=result.latency_ms,
        cost_usd=Decimal(str(round(result.cost_usd, 6))), model=result.model, provider=result.provider,
        trace_id=result.trace_id, span_id=result.span_id,
    )
    if result.tool_calls:
        AgentCall.objects.bulk_create([
            AgentCall(run=run, kind=AgentCall.Kind.TOOL, key=f"{spec.key}.{tc['name']}.{i}", name=tc["name"],
                      stage=stage.name, input=tc["arguments"], output={"result": tc["result"]},
                      status=AgentCall.Status.OK if tc["success"] else AgentCall.Status.ERROR,
                      error="" if tc["success"] else str(tc["result"]), error_type=tc["error_type"],
                      latency_ms=tc["latency_ms"], trace_id=result.trace_id)
            for i, tc in enumerate(result.tool_calls, start=1)
        ])
    ctx.results[spec.key] = {
        "agent": spec.agent.id, "stage": stage_index, "output": result.output, "error": result.error,
        "error_type": result.error_type, "call_id": call.pk, "latency_ms": result.latency_ms,
        "attempts": result.attempts, "input_tokens": result.input_tokens, "output_tokens": result.output_tokens,
    }
    run.input_tokens = F("input_tokens") + result.input_tokens
    run.output_tokens = F("output_tokens") + result.output_tokens
    run.cost_usd = F("cost_usd") + Decimal(str(round(result.cost_usd, 6)))
    run.provider = result.provider
    run.heartbeat_at = timezone.now()
    _save(run, ["state", "input_tokens", "output_tokens", "cost_usd", "provider", "heartbeat_at"])
    for tc in result.tool_calls:
        audit_record(actor=f"agent:{spec.agent.id}", action="agent.tool_called", case=ctx.case, obj=call,
                     data={"tool": tc["name"], "arguments": tc["arguments"], "success": tc["success"],
                           "error_type": tc["error_type"]})
    audit_record(
        actor=f"agent:{spec.agent.id}", action="agent.call_completed" if result.ok else "agent.call_failed",
        case=ctx.case, obj=call,
        data={"run": run.pk, "key": spec.key, "provider": result.provider, "model": result.model,
              "input_tokens": result.input_tokens, "output_tokens": result.output_tokens,
              "latency_ms": result.latency_ms, "attempts": result.attempts, "error": result.error},
    )


def _timed_out(run: AgentRun) -> bool:
    run.refresh_from_db(fields=["started_at"])
    return bool(run.started_at) and (timezone.now() - run.started_at).total_seconds() > settings.RUN_TIMEOUT_SECONDS


def _finish_quietly(ctx: RunContext, pipeline: Pipeline) -> None:
    try:
        pipeline.finish(ctx)
    except Exception:  # noqa: BLE001 - a timed-out run keeps what it has even if write-back fails
        logger.exception("finish() failed for timed-out run %s", ctx.run.pk)


@transaction.atomic
def _end(run: AgentRun, status: str, error: str) -> None:
    run.status = status
    run.error = error
    run.finished_at = timezone.now()
    _save(run, ["status", "error", "finished_at"])
    audit_record(actor="system", action=f"agent.run_{status}", case=run.case, obj=run,
                 data={"pipeline": run.pipeline, "mode": run.mode, "error": error,
                       "input_tokens": run.input_tokens, "output_tokens": run.output_tokens})
