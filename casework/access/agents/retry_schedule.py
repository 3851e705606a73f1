"""The retry schedule and escalation: each step gets MAX_ATTEMPTS attempts. The first is made
at once; a failed one ends the run, and the next attempt is a new run started after a backoff
(ACCESS_RETRY_COUNTDOWNS, Celery countdowns: 30 s, then 2 min), so that a blip is not Manual
Intervention at once. Each attempt is its own stage, so a resumed run repeats none that
finished; a finished attempt is gated, written back and replied to once (settled); after the
last failure the case goes to Manual Intervention Required."""

from __future__ import annotations

import logging

from django.core.exceptions import ValidationError

from agents.runtime.pipeline import CallSpec, RunContext
from casework.access.agents.advisory import ADVISE
from casework.access.agents.claim_check import VALIDATE_CLAIM
from casework.access.agents.flow import Flow, Step
from casework.access.agents.investigation import CHECK_RIGHTS, ORCHESTRATE
from casework.access.agents.prompts import SEED_NAME
from casework.access.agents.requests import REQUEST_CLARIFICATION, REQUEST_MANAGER
from casework.errors import DomainError

logger = logging.getLogger(__name__)

MAX_ATTEMPTS = 3

MODE_STEPS: dict[str, list[Step]] = {
    "investigate": [ORCHESTRATE, CHECK_RIGHTS, REQUEST_CLARIFICATION, ADVISE],
    "validate_claim": [VALIDATE_CLAIM, REQUEST_MANAGER, ADVISE],
    "advise": [ADVISE],
}


def retry_countdown(attempt: int) -> float:
    """Seconds before this attempt of a failed step (ACCESS_RETRY_COUNTDOWNS: before the
    second, the third ...); the first attempt is at once."""
    from django.conf import settings

    countdowns = list(settings.ACCESS_RETRY_COUNTDOWNS) or [0]
    return float(countdowns[min(attempt - 2, len(countdowns) - 1)])


def schedule_retry(flow: Flow) -> dict | None:
    """At the end of a run whose step failed with attempts left: queue the run that makes the
    next attempt after its backoff, carrying the steps' state. Returns what was scheduled."""
    from agents.tasks import pipeline_enqueue

    scheduled = flow.ctx.state.get("retry_scheduled")
    if not scheduled or flow.closed or flow.status in ("manual_intervention_required", "advisory_report_generated",
                                                      "decided"):
        return None
    state = {"access": {"steps": flow.state["steps"], "processed": [], "failures": []},
             "retry_due": {"step": scheduled["step"], "attempt": scheduled["attempt"]},
             "retry_of": flow.run_id,
             **{k: v for k, v in flow.ctx.state.items() if k.startswith("input_")}}
    run = pipeline_enqueue(case=flow.mutation.case, pipeline=flow.ctx.run.pipeline, mode=flow.ctx.run.mode,
                           actor="agent:access_orchestrator", initial_state=state, countdown=scheduled["countdown"])
    scheduled["run"] = run.pk
    return scheduled


def _key(step: Step, attempt: int) -> str:
    return f"{step.name}.{attempt}"


def attempt_calls(step: Step, attempt: int, mode: str, ctx: RunContext) -> list[CallSpec]:
    """The call for this attempt of this step, if it is due: the first attempt when the step
    is needed now, a later one when the attempt before it failed."""
    from casework.access.services import message_send

    # Most stages are retries that are not due; tell from the run's state alone, without a
    # database read, unless a finished call is still waiting to be handled.
    state = ctx.state.get("access", {})
    info = state.get("steps", {}).get(step.name, {})
    unsettled = any(key not in state.get("processed", []) for key in ctx.results)
    if not unsettled and (info.get("status") in ("ok", "exhausted")
                          or (attempt > 1 and (info.get("status") != "failed"
                                               or len(info.get("errors", [])) != attempt - 1))):
        return []
    flow = Flow(ctx)
    settle(flow, mode)
    if flow.closed:
        return []
    info = flow.step(step.name)
    if info["status"] in ("ok", "exhausted"):
        return []
    if attempt == 1:
        if info["status"] == "failed" or not step.needed(flow):
            return []
    elif info["status"] != "failed" or len(info["errors"]) != attempt - 1:
        return []
    elif ctx.state.get("retry_due") != {"step": step.name, "attempt": attempt}:
        # Not now: a blip should pass before the next attempt. This run ends here and a new
        # one, started after the backoff, makes the attempt (finish schedules it).
        ctx.state["retry_scheduled"] = {"step": step.name, "attempt": attempt, "countdown": retry_countdown(attempt)}
        return []
    key = _key(step, attempt)
    data = step.build(flow)
    message_send(case=flow.mutation.case, sender=step.sender, receiver=SEED_NAME[step.agent.id], action=step.action,
                 context={"mutation_id": flow.mutation.mutation_id, "attempt": attempt,
                          **{k: v for k, v in data.items() if k not in ("context", "action", "mutation_id")}},
                 correlation_id=step.correlation(flow) if step.correlation else "",
                 run_id=flow.run_id, key=f"{key}.request")
    return [CallSpec(key=key, agent=step.agent, input=data)]


def settle(flow: Flow, mode: str) -> None:
    """Handle every finished attempt not yet handled: gate it, write it back, reply, and on a
    third failure escalate. Idempotent: handled keys are remembered in the run's state, and
    every write underneath is keyed or guarded by the current status."""
    for step in MODE_STEPS[mode]:
        for attempt in range(1, MAX_ATTEMPTS + 1):
            key = _key(step, attempt)
            if key in flow.ctx.results and key not in flow.state["processed"]:
                _handle(flow, step, attempt, key)
                flow.state["processed"].append(key)


def _handle(flow: Flow, step: Step, attempt: int, key: str) -> None:
    from casework.access.models import AgentMessage
    from casework.access.services import message_reply, message_send

    info = flow.step(step.name)
    entry = flow.ctx.results[key]
    request = AgentMessage.objects.filter(run_id=flow.run_id, key=f"{key}.request").first()
    if request is None:  # defensive: a run resumed from a state written before messages existed
        request = message_send(case=flow.mutation.case, sender=step.sender, receiver=SEED_NAME[step.agent.id],
                               action=step.action, context={"attempt": attempt}, run_id=flow.run_id,
                               key=f"{key}.request")
    flow.reload()
    if flow.closed:
        message_reply(request=request, action=step.reply, context={"attempt": attempt}, status="error",
                      error={"type": "case_closed", "message": "The case was closed; the result was not used."},
                      run_id=flow.run_id, key=f"{key}.reply")
        info["status"] = "exhausted"
        return
    error, error_type = entry.get("error") or "", entry.get("error_type") or ""
    reply_context: dict = {}
    if not error:
        verdict = step.accept(flow, key, entry["output"] or {})
        # A gate returns "" (accepted), why not, or (why not, error type) when a tool failed.
        error, error_type = verdict if isinstance(verdict, tuple) else (verdict, "gate" if verdict else "")
    if not error:
        try:
            reply_context = step.done(flow, key, entry["output"])
        except (DomainError, ValidationError) as exc:
            error, error_type = getattr(exc, "message", None) or "; ".join(getattr(exc, "messages", [str(exc)])), \
                "write_back"
    receiver = step.reply_to or step.sender
    if not error:
        info["status"] = "ok"
        message_reply(request=request, action=step.reply, context={"attempt": attempt, **reply_context},
                      status="success", run_id=flow.run_id, key=f"{key}.reply", receiver=receiver)
        return
    info["errors"].append({"attempt": attempt, "type": error_type, "error": error[:1000]})
    if not entry.get("error"):
        _mark_failed(flow, entry, error, error_type)
    # A person who denied the step's call (an approval, issue 46) is not asked again by a retry.
    exhausted = attempt >= MAX_ATTEMPTS or error_type == "approval_denied"
    info["status"] = "exhausted" if exhausted else "failed"
    message_reply(request=request, action=step.reply, context={"attempt": attempt}, status="error",
                  error={"type": error_type, "message": error[:1000], "attempt": attempt,
                         "retries_left": MAX_ATTEMPTS - attempt},
                  run_id=flow.run_id, key=f"{key}.reply", receiver=receiver)
    logger.info("Access step %s attempt %s failed for %s: %s", step.name, attempt, flow.mutation.mutation_id, error)
    if exhausted:
        flow.state["failures"].append({"step": step.name, "label": step.label, "attempts": attempt,
                                       "errors": info["errors"]})
        if flow.status not in ("manual_intervention_required", "advisory_report_generated", "decided"):
            flow.transition("manual_intervention_required",
                            f"{step.label} failed {attempt} times; last error: {error[:300]}")


def _mark_failed(flow: Flow, entry: dict, error: str, error_type: str) -> None:
    """An agent call that answered but whose answer the step refused (its gate, its tool, its
    write-back) failed the step: its result and its call row say so, so no view shows it done.
    The result is saved with the run's next write."""
    from agents.models import AgentCall

    entry["error"], entry["error_type"] = error[:1000], error_type or "gate"
    if entry.get("call_id"):
        AgentCall.objects.filter(pk=entry["call_id"]).update(status=AgentCall.Status.ERROR, error=error[:4000],
                                                              error_type=entry["error_type"][:40])
