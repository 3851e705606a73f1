"""Transaction investigations (seed 003): planner -> (tool_executor -> planner)* -> completion.

Every planner call and every tool run is one step of the run, chosen at run time by `plan`
from the saved state, so a killed worker resumes at its last saved step and never re-runs a
finished tool. The seed's state (section 2) lives in run.state["inv"]; after each step `plan`
folds the step's result into it (a planner decision checked against the rules, or a tool
execution), writes it to the investigation (casework.transactions.progress), and picks the
next step:
  - the planner's answer is checked in code (casework.transactions.agents.state.
    rule_violation); a failed, timed-out or invalid answer, or one a rule rejects, is
    replaced by the deterministic fallback and recorded as used_fallback;
  - a tool that fails or times out is recorded FAILED / TIMED_OUT and counts as done;
  - a context that cannot be loaded ends the investigation at once, INCONCLUSIVE (nothing
    was learned: no severity, no priority change, no recommendation);
  - max_steps planner decisions (STOPPED), or TXN_INVESTIGATION_TIMEOUT_SECONDS (TIMED_OUT;
    checked between steps on `clock()`, which tests replace; each step is bounded by its own
    timeout), end it early with what it found; both resume.
`finish` scores the evidence and persists it in the seed's order (progress.investigation_complete);
a HIGH or CRITICAL investigation completes only with recommendations (the planner may not
complete before recommendation_tool at those severities; if it ends without them, code runs
the recommendation step, and the override is recorded on the case). A run that fails, in a
step or while writing its results, leaves the investigation FAILED (`_failed`, the
pipeline's on_failed), resumable. Investigation.status changes only through the lifecycle
of casework/transactions/states.py.
"""

from __future__ import annotations

import logging
from datetime import datetime

from django.conf import settings
from django.utils import timezone

from agents.runtime.pipeline import CallSpec, Pipeline, RunContext, Step, register_pipeline
from casework.transactions.agents import findings, telemetry
from casework.transactions.agents.planner import planner_agent, planner_input
from casework.transactions.agents.state import (
    COMPLETE,
    FILLS,
    RECOMMENDATION_TOOL,
    REQUIRES_RECOMMENDATIONS,
    assess,
    context_failed,
    create_initial_state,
    deterministic_fallback,
    needs_recommendations,
    rule_violation,
    utc_now,
)
from casework.transactions.agents.tools import HANDLERS, build_tool, output_summary, tool_input

logger = logging.getLogger(__name__)

PIPELINE = "transactions"


def clock() -> datetime:
    """The investigation timeout's clock: the time now (tests put a fake one here)."""
    return timezone.now()


def _prepare(ctx: RunContext) -> None:
    """A new investigation gets the seed's initial state; a resumed one (a new run of an
    investigation that timed out or failed) continues from the state it saved."""
    from casework.transactions.models import Investigation

    # A run started from the generic agent-runs panel (agents.services.run_rerun) carries only
    # "rerun_of": it finds its investigation by the case, and resumes it like "Resume" does.
    investigation = Investigation.objects.select_related("transaction").get(case_id=ctx.run.case_id)
    ctx.state["investigation_id"] = investigation.pk
    resume = bool(ctx.state.get("resume") or ctx.state.get("rerun_of"))
    safeguards = {"max_steps": settings.TXN_MAX_STEPS,
                  "investigation_timeout_seconds": settings.TXN_INVESTIGATION_TIMEOUT_SECONDS,
                  "tool_timeout_seconds": settings.TXN_TOOL_TIMEOUT_SECONDS,
                  "planner_timeout_seconds": settings.TXN_PLANNER_TIMEOUT_SECONDS,
                  **ctx.state.get("safeguards", {})}
    saved = _latest_state(ctx, investigation.state) if resume else investigation.state
    if ctx.state.get("reassess"):
        inv = _new_round(investigation, saved, ctx.state["reassess"], safeguards)
    elif saved.get("completed_steps") is not None and resume:
        # A resumed run gets this run's limits (a demo's injected failure is not carried over).
        kept = {k: v for k, v in saved.get("safeguards", {}).items() if k not in INJECTED}
        # Stopped at the step limit: the resumed run gets a fresh budget on top of the steps taken.
        steps = saved.get("step_count", 0)
        limit = steps + safeguards["max_steps"] if steps >= safeguards["max_steps"] else safeguards["max_steps"]
        inv = {**saved, "safeguards": {**kept, **safeguards}, "max_steps": limit,
               "completed_at": None, "error": None}
    else:
        inv = create_initial_state(
            investigation_id=investigation.pk, transaction_id=investigation.transaction.transaction_id,
            max_steps=safeguards["max_steps"], safeguards=safeguards,
            feature_flags={"planner_llm_enabled": settings.LLM_PROVIDER != "offline", "reasoning_llm_enabled": False,
                           "vector_search_enabled": False, "prompt_guard_enabled": True})
    inv["status"] = "IN_PROGRESS"
    inv.setdefault("overrides", [])
    inv.setdefault("assessment", 1)
    inv.setdefault("assessed", [inv["transaction_id"]])
    ctx.state["inv"] = inv
    ctx.state["run_started"] = clock().isoformat()
    from casework.transactions.progress import investigation_begin

    investigation_begin(investigation_id=investigation.pk)


def _new_round(investigation, saved: dict, transaction_id: str, safeguards: dict) -> dict:
    """A re-assessment (casework.transactions.reassess): a fresh state on the joined hit's
    transaction, every tool to run again, the earlier rounds' verdicts kept in "assessments".
    Planner steps go on counting from the last round (each step's decision is one row), with
    this round's own max_steps on top."""
    round_number = int(saved.get("assessment", 1))
    verdict = {"assessment": round_number, "transaction_id": saved.get("transaction_id"),
               "status": investigation.status if investigation.status != "IN_PROGRESS" else saved.get("status"),
               "severity": saved.get("severity"), "confidence_score": saved.get("confidence_score"),
               "summary": investigation.summary, "completed_at": saved.get("completed_at")}
    steps = int(saved.get("step_count", 0))
    inv = create_initial_state(
        investigation_id=investigation.pk, transaction_id=transaction_id, max_steps=steps + safeguards["max_steps"],
        safeguards=safeguards, feature_flags=saved.get("feature_flags") or {})
    assessed = list(saved.get("assessed") or [saved.get("transaction_id")])
    inv.update(step_count=steps, assessment=round_number + 1, assessments=[*saved.get("assessments", []), verdict],
               assessed=[*assessed, transaction_id], overrides=list(saved.get("overrides", [])),
               reassessed_because=(saved.get("reassess") or {}).get("why", ""))
    return inv


def _latest_state(ctx: RunContext, saved: dict) -> dict:
    """The furthest state of this investigation: the investigation's copy, or the previous
    run's, with that run's last saved step folded in (a run that failed after saving a tool's
    result but before writing it to the investigation must not make the resume run it again)."""
    from agents.models import AgentRun

    previous = (AgentRun.objects.filter(case_id=ctx.run.case_id, pipeline=PIPELINE).exclude(pk=ctx.run.pk)
                .order_by("-id").first())
    if previous is None or not previous.state.get("inv"):
        return saved
    before = RunContext(previous)
    inv = before.state["inv"]
    pending = before.state.get("pending")
    if pending and pending["key"] in before.results:
        (_absorb_decision if pending["kind"] == "planner" else _absorb_tool)(before, inv, pending)
    if len(inv["completed_steps"]) >= len(saved.get("completed_steps", [])) and \
            inv["step_count"] >= saved.get("step_count", 0):
        return inv
    return saved


def plan(ctx: RunContext) -> Step | None:
    from casework.transactions.progress import investigation_record_progress

    inv = ctx.state["inv"]
    _inject_failures(ctx, inv)
    pending = ctx.state.get("pending")
    if pending and pending["key"] in ctx.results:
        (_absorb_decision if pending["kind"] == "planner" else _absorb_tool)(ctx, inv, pending)
        ctx.state["pending"] = None
        investigation_record_progress(investigation_id=ctx.state["investigation_id"], state=inv)
    elif pending:
        return _replay(ctx, pending)
    stop = _stop_reason(ctx, inv)
    if stop:
        ctx.state["stop"] = stop
        return None
    number = len(ctx.results)
    action = inv["next_action"]
    if action and action != COMPLETE and action not in inv["completed_steps"]:
        key = f"tool.{action}"
        return _step(f"tool {action}", CallSpec(key, tool=build_tool(action, tool_timeout(inv, action)), input=tool_input(action, inv)), number,
            {"kind": "tool", "key": key, "tool": action})
    key = f"planner.{inv['step_count'] + 1}"
    return _step("planner", CallSpec(key, planner_agent(), planner_input(inv)), number,
                 {"kind": "planner", "key": key})


# The demo's injected failures (casework.transactions.chaos): a resumed run drops them.
INJECTED = ("fail_after_steps", "kill_after_steps", "simulated_tool_seconds")


def _inject_failures(ctx: RunContext, inv: dict) -> None:
    """The demo's injected failures (casework.transactions.chaos), never set by the API."""
    from casework.transactions.chaos import InjectedFailure, SimulatedCrash, crash_allowed

    fail_after = inv["safeguards"].get("fail_after_steps")
    if fail_after is not None and inv["step_count"] >= fail_after:
        raise InjectedFailure(f"Injected failure after {fail_after} planner steps (safeguard fail_after_steps).")
    kill_after = inv["safeguards"].get("kill_after_steps")
    if kill_after is not None and inv["step_count"] >= kill_after and crash_allowed():
        raise SimulatedCrash(f"Worker killed after {kill_after} planner steps (safeguard kill_after_steps).")


def _step(name: str, call: CallSpec, number: int, pending: dict) -> Step:
    return Step(name, [call], index=number, state={"pending": {**pending, "input": call.input}})


def tool_timeout(inv: dict, name: str) -> float | None:
    """This tool's timeout: its own in the safeguards' "tool_timeouts" ({name: seconds}, e.g. a
    short one for the one tool a test or a demo hangs), else the investigation's."""
    safeguards = inv["safeguards"]
    return (safeguards.get("tool_timeouts") or {}).get(name) or safeguards.get("tool_timeout_seconds")


def _replay(ctx: RunContext, pending: dict) -> Step:
    """A step chosen but not saved (the worker died during it): ask for it again."""
    inv = ctx.state["inv"]
    if pending["kind"] == "tool":
        call = CallSpec(pending["key"], tool=build_tool(pending["tool"], tool_timeout(inv, pending["tool"])),
                        input=pending["input"])
    else:
        call = CallSpec(pending["key"], planner_agent(), pending["input"])
    name = f"tool {pending['tool']}" if pending["kind"] == "tool" else "planner"
    return Step(name, [call], index=len(ctx.results), state={"pending": pending})


def _stop_reason(ctx: RunContext, inv: dict) -> str:
    if inv["next_action"] == COMPLETE:
        return "complete"
    if context_failed(inv):
        return "context_failed"
    from casework.transactions.chaos import simulated_seconds

    started = datetime.fromisoformat(ctx.state["run_started"])
    limit = float(inv["safeguards"].get("investigation_timeout_seconds", settings.TXN_INVESTIGATION_TIMEOUT_SECONDS))
    if (clock() - started).total_seconds() + simulated_seconds(inv) >= limit:
        return "timed_out"
    # Seed 3.3: the planner step that reaches max_steps routes to completion (its tool is not run).
    if inv["step_count"] >= inv["max_steps"]:
        return "max_steps"
    return ""


def _absorb_decision(ctx: RunContext, inv: dict, pending: dict) -> None:
    result = ctx.results[pending["key"]]
    choice = ctx.output(pending["key"])
    rejected = ""
    if choice is None:
        rejected = f"no usable answer ({result.get('error_type') or 'error'}): {result.get('error', '')}"[:300]
    else:
        violation = rule_violation(choice["tool"], inv)
        if violation:
            rejected = f"{choice['tool']}: {violation}"[:300]
    guarded = bool(rejected) and choice is not None and choice["tool"] == COMPLETE and needs_recommendations(inv)
    if guarded:
        # The guard: a HIGH or CRITICAL transaction gets its recommendations before it completes.
        tool = RECOMMENDATION_TOOL
        reason = f"Overruled: the planner's {rejected}. Running {tool} first."
        confidence = 0.5
    elif rejected:
        tool = deterministic_fallback(inv)
        reason = f"Fallback to the fixed order ({tool}): the planner's {rejected}"
        confidence = 0.5
    else:
        tool, reason, confidence = choice["tool"], choice["reason"], float(choice["confidence"])
    inv["step_count"] += 1
    if guarded:
        from casework.transactions.progress import override_record

        override_record(inv, rule="recommendations_required", model=f"COMPLETE: {choice['reason']}"[:300],
                        code=f"ran {RECOMMENDATION_TOOL}",
                        reason=f"A {inv['severity']} transaction needs recommendations before it completes; "
                               f"the planner chose COMPLETE before {RECOMMENDATION_TOOL}.")
    inv["next_action"] = tool
    inv["planner_decisions"].append({
        "step": inv["step_count"], "selected_tool": tool, "reason": reason, "confidence": confidence,
        "timestamp": utc_now(), "used_fallback": bool(rejected), "rejected": rejected})
    telemetry.planner_span(investigation_id=inv["investigation_id"], step_count=inv["step_count"],
                           selected_tool=tool, used_fallback=bool(rejected),
                           latency_ms=result.get("latency_ms", 0), confidence=confidence)


def _absorb_tool(ctx: RunContext, inv: dict, pending: dict) -> None:
    name = pending["tool"]
    result = ctx.results[pending["key"]]
    output = ctx.output(pending["key"])
    if output is not None:
        status, error = "SUCCESS", None
    elif result.get("error_type") == "ToolTimeout":
        timeout = tool_timeout(inv, name) or settings.TXN_TOOL_TIMEOUT_SECONDS
        status, error = "TIMED_OUT", f"Tool timed out after {timeout:g}s"
    else:
        status, error = "FAILED", result.get("error") or "failed"
    inv["tool_executions"].append({
        "tool_name": name, "step": inv["step_count"], "assessment": inv.get("assessment", 1),
        "input_summary": {"transaction_id": inv["transaction_id"], "reads": sorted(pending["input"]["state"])},
        "output_summary": output_summary(name, output) if output else {},
        "execution_time_ms": int(result.get("latency_ms", 0)), "status": status, "error_message": error,
        "timestamp": utc_now()})
    inv["completed_steps"].append(name)
    if output is not None:
        if name == "reasoning_tool":
            inv["reasoning"] = output
            inv["hypotheses"] = [h["statement"] for h in output["hypotheses"]]
            inv["evidence"] = [e for h in output["hypotheses"] for e in h["evidence"]]
        elif name == "recommendation_tool":
            inv["recommendations"] = output["recommendations"]
        else:
            inv[FILLS[name]] = output
    elif name == "context_tool":
        inv["error"] = f"The context could not be loaded ({error}); the investigation is inconclusive."
    _, inv["severity"], inv["confidence_score"] = assess(inv)
    telemetry.tool_span(investigation_id=inv["investigation_id"], tool_name=name, status=status,
                        execution_time_ms=int(result.get("latency_ms", 0)), error=error or "")


STOP_NOTES = {
    "max_steps": "Stopped at the step limit ({max_steps} planner steps) before the planner completed; the "
                 "findings so far are kept. Resume to finish it.",
    "timed_out": "Stopped at the investigation timeout; the findings so far are kept. Resume to finish it.",
}


def _failed(ctx: RunContext, exc: Exception) -> None:
    """The run failed (in a step, or while writing its results): the investigation says so,
    FAILED with the error, and can be resumed. Called by the runtime in the transaction that
    ends the run."""
    from casework.transactions.models import Investigation
    from casework.transactions.progress import investigation_mark_failed

    investigation_id = ctx.state.get("investigation_id") or (
        Investigation.objects.filter(case_id=ctx.run.case_id).values_list("pk", flat=True).first())
    if investigation_id is not None:
        investigation_mark_failed(investigation_id=investigation_id, error=f"{type(exc).__name__}: {exc}")


def _finish(ctx: RunContext) -> None:
    from casework.transactions.progress import investigation_complete, investigation_mark_failed

    inv = ctx.state.get("inv")
    if inv is None:
        return
    stop = ctx.state.get("stop") or ctx.stop_reason or "complete"
    _, inv["severity"], inv["confidence_score"] = assess(inv)
    if context_failed(inv):
        # Nothing was analysed: no severity or confidence is claimed (the page shows none).
        inv["status"], inv["severity"], inv["confidence_score"] = "INCONCLUSIVE", "LOW", 0.0
    elif stop == "timed_out" or ctx.stop_reason == "timed_out":
        inv["status"] = "TIMED_OUT"
        inv["error"] = inv.get("error") or STOP_NOTES["timed_out"]
    elif stop == "max_steps" or ctx.stop_reason == "max_steps":
        # The planner did not complete: STOPPED, resumable, with what it found (issue 43).
        inv["status"] = "STOPPED"
        inv["error"] = STOP_NOTES["max_steps"].format(max_steps=inv["max_steps"])
        # A high or critical one stopped before recommending still gets them from code.
        _require_recommendations(inv, stop)
    else:
        inv["status"] = "COMPLETED"
        _require_recommendations(inv, stop)
    inv["completed_at"] = utc_now()
    reasoning = inv.get("reasoning") or {}
    summary = inv["error"] if inv["status"] == "INCONCLUSIVE" else reasoning.get("summary", "")
    try:
        investigation_complete(investigation_id=ctx.state["investigation_id"], state=inv, summary=summary or "",
                               partial=stop in ("timed_out", "max_steps"))
    except Exception as exc:
        if not ctx.stop_reason:
            raise  # the run fails, and _failed (on_failed) marks the investigation FAILED
        # A run the runtime stopped (its timeout or step limit) only logs a failed write-back
        # and ends as stopped: the investigation must not stay "In progress".
        logger.exception("Writing the results of run %s failed", ctx.run.pk)
        investigation_mark_failed(investigation_id=ctx.state["investigation_id"],
                                  error=f"Writing the results failed: {type(exc).__name__}: {exc}")
        return
    telemetry.INVESTIGATION_STEPS.observe(inv["step_count"])
    telemetry.INVESTIGATIONS_COMPLETED.labels(inv["status"], inv["severity"]).inc()
    _reassess_if_raised(ctx)


def _reassess_if_raised(ctx: RunContext) -> None:
    """A hit that joined the case while this run worked, raising the stakes, is re-assessed now
    (casework.transactions.reassess; the evaluation left it to this run's end)."""
    from casework.transactions.reassess import investigation_reassess_if_raised

    try:
        investigation_reassess_if_raised(case_id=ctx.run.case_id)
    except Exception:  # noqa: BLE001 - the run's own results stand; the next joined hit asks again
        logger.exception("Re-assessing case %s after run %s failed", ctx.run.case_id, ctx.run.pk)


def _require_recommendations(inv: dict, stop: str) -> None:
    """The guard at completion: a HIGH or CRITICAL investigation ends COMPLETED (or STOPPED at
    the step limit) only with recommendations. Ended without them (the step limit came first, or recommendation_tool
    failed and the planner completed), code runs the recommendation step itself and records
    the override; if even that gives none, the investigation does not complete: it FAILS."""
    from casework.transactions.progress import override_record

    if inv["severity"] not in REQUIRES_RECOMMENDATIONS or inv.get("recommendations"):
        return
    if RECOMMENDATION_TOOL in inv["completed_steps"]:
        why = f"{RECOMMENDATION_TOOL} gave none (it failed or timed out)"
    elif stop == "max_steps":
        why = f"the step limit ({inv['max_steps']} planner steps) came before {RECOMMENDATION_TOOL}"
    else:
        why = f"the investigation ended before {RECOMMENDATION_TOOL}"
    try:
        recommendations = findings.recommend(inv)
    except Exception as exc:  # noqa: BLE001 - said on the investigation, which then fails
        recommendations, why = [], f"{why}, and the recommendation step failed in code too ({exc})"
    if not recommendations:
        inv["status"] = "FAILED"
        inv["error"] = f"{inv['severity']} severity with no recommendation: {why}. Not completed."
        return
    inv["recommendations"] = recommendations
    override_record(inv, rule="recommendations_required", model=f"COMPLETE without recommendations: {why}",
                    code=f"ran the recommendation step in code ({len(recommendations)} recommendations)",
                    reason=f"A {inv['severity']} transaction needs recommendations before it completes; {why}.")


transactions_pipeline = register_pipeline(Pipeline(
    name=PIPELINE,
    description="Transaction investigation (seed 003): a planner choosing among six tools.",
    modes={"investigate": plan},
    prepare=_prepare,
    finish=_finish,
    on_failed=_failed,
    # The planner runs its tools directly: listed for the consequence check and tool_find.
    tools=tuple(build_tool(name) for name in HANDLERS),
))
