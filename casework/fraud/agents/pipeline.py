"""Fraud alerts (seed 000): five specialists in parallel, then the orchestrator; knowledge
capture when the case is closed.

Modes:
- alert_creation: the five specialists concurrently, then the orchestrator on their merged
  outputs (errors stripped). Six LLM calls.
- case_open ("Re-assess"): the specialists' results are copied from this alert's own latest
  full assessment (the cache; another alert on the account has other figures), and only the
  orchestrator runs. One LLM call.
- close: knowledge_capture on the alert, the decision's outcome and reason. One LLM call.
The alert's own status (casework/fraud/states.py) follows: being assessed when an assessment
run starts, assessed or assessment failed when it ends (on_failed too), knowledge captured
or capture failed when the close run ends.
Opening a case reads the stored results and calls no LLM.
"""

from __future__ import annotations

import logging

from django.db import transaction
from django.dispatch import receiver

from agents.models import AgentRun
from agents.runtime.pipeline import CallSpec, Pipeline, RunContext, Stage, register_pipeline
from casework.cases.signals import case_closed
from casework.fraud.agents import FRAUD_AGENTS, SPECIALISTS
from casework.fraud.agents import inputs as build

logger = logging.getLogger(__name__)

PIPELINE = "fraud"
ASSESSMENT_MODES = ("alert_creation", "case_open")
SIMILAR_CASES_SHOWN = 5


def alert_input(alert) -> dict:
    """The alert as the agents see it: the 13 features, the account and the upstream scores."""
    from casework.fraud.features import FEATURES

    data = {f.name: getattr(alert, f.name) for f in FEATURES}
    data.update(
        account_id=alert.account.account_id,
        fraud_probability=alert.fraud_probability,
        anomaly_score=alert.anomaly_score,
        risk_level=alert.risk_level,
        one_line_explanation=alert.one_line_explanation,
        risk_factors=alert.risk_factors,
    )
    return data


def _alert(ctx: RunContext):
    """The case's alert with its account, read once per run (one query, not two)."""
    from audit.rowsql import row_get
    from casework.cases.models import Case
    from casework.fraud.models import Alert

    if not Case.fraud_alert.is_cached(ctx.case):
        ctx.case.fraud_alert = row_get("fraud run's alert", lambda: Alert.objects.select_related("account"),
                                       ctx.case.pk, by="case")  # compiled once (audit.rowsql)
    return ctx.case.fraud_alert


def _specialist_calls(ctx: RunContext) -> list[CallSpec]:
    from casework.fraud import selectors

    if all(key in ctx.results for key in SPECIALISTS):
        # Re-assess: the specialists came from the cache with the similar-case list they were
        # shown; recomputing it here would overwrite that list with one no agent saw.
        return []
    alert = _alert(ctx)
    data = alert_input(alert)
    lookalikes = selectors.similar_decided(alert, limit=SIMILAR_CASES_SHOWN, pattern_limit=3)
    similar, similar_count, nearest_patterns = lookalikes.confirmed, lookalikes.confirmed_count, lookalikes.patterns
    patterns = [
        {"behavioral_pattern": p.behavioral_pattern, "one_sentence_description": p.one_sentence_description}
        for p in nearest_patterns
    ]
    # Cases a person linked to this one come first, marked with the link (casework.entities).
    ctx.state["input_similar_cases"] = [
        {"reference": near.reference, "account_id": near.account_id, "distance": near.distance,
         **({"linked_as": near.link} if near.link else {})} for near in similar
    ]
    ctx.state["input_similar_count"] = similar_count
    links = selectors.known_fraud_links(alert.account)
    # The entity graph adds confirmed fraud of any type that shares a device, an IP ... with this
    # alert (a transaction investigation decided as fraud on a ring device); the account's own
    # earlier alerts are not links.
    from casework.entities.selectors import confirmed_fraud_links

    counted = {link["reference"] for link in links}
    links += [{"account_id": other["type_label"], "reference": other["reference"], "shares": other["shares"]}
              for other in confirmed_fraud_links(alert.case, exclude_kinds=("account",))
              if other["reference"] not in counted]
    ctx.state["input_known_fraud_links"] = links
    cleared, cleared_count = lookalikes.cleared, lookalikes.cleared_count
    ctx.state["input_similar_cleared"] = cleared
    ctx.state["input_similar_cleared_count"] = cleared_count
    inputs = {
        "transaction": build.build_transaction_input(data),
        "identity": build.build_identity_input(data),
        "geo": build.build_geo_input(data),
        "network": build.build_network_input(data, known_fraud_links_from_system=len(links)),
        "outcome_similarity": build.build_outcome_similarity_input(
            data,
            similar_confirmed_cases_count_from_system=similar_count,
            similar_cases=ctx.state["input_similar_cases"],
            knowledge_patterns=patterns,
            similar_cleared_cases=cleared,
            similar_cleared_cases_count_from_system=cleared_count,
            similar_count_is_lower_bound=lookalikes.confirmed_more,
        ),
    }
    return [CallSpec(agent_id, FRAUD_AGENTS[agent_id], inputs[agent_id]) for agent_id in SPECIALISTS]


def _orchestrator_calls(ctx: RunContext) -> list[CallSpec]:
    outputs = {key: ctx.output(key) for key in SPECIALISTS}
    return [CallSpec("orchestrator", FRAUD_AGENTS["orchestrator"],
                     build.build_orchestrator_input({k: v for k, v in outputs.items() if v is not None}))]


def _knowledge_capture_calls(ctx: RunContext) -> list[CallSpec]:
    from casework.cases.models import Decision

    decision = Decision.objects.get(pk=ctx.state["input_decision"])
    latest = _latest_assessment(ctx.case)
    specialists = {k: v.get("output") for k, v in (latest.results if latest else {}).items()
                   if k in SPECIALISTS and not v.get("error")}
    return [CallSpec("knowledge_capture", FRAUD_AGENTS["knowledge_capture"],
                     build.build_knowledge_capture_input(alert_input(_alert(ctx)), decision.outcome, decision.reason,
                                                         specialists))]


def _latest_assessment(case) -> AgentRun | None:
    return (AgentRun.objects.filter(case=case, pipeline=PIPELINE, mode__in=("alert_creation", "case_open"))
            .exclude(status__in=AgentRun.ACTIVE).order_by("-created_at", "-id").first())


def _copy_cached_specialists(ctx: RunContext) -> None:
    """case_open: take the specialists' results from this alert's own latest full assessment
    (never another alert's: an account's other alerts carry other figures)."""
    if ctx.results:
        return  # a re-run of one agent already carries its results
    cached = (AgentRun.objects.filter(case=ctx.case, pipeline=PIPELINE, mode="alert_creation",
                                      status__in=AgentRun.DONE)
              .exclude(pk=ctx.run.pk).order_by("-created_at", "-id").first())
    if cached is None:
        raise RuntimeError("This alert has no finished assessment of its own to re-assess from; use Re-run all.")
    ctx.state["input_cached_from_run"] = cached.pk
    for key in ("input_similar_cases", "input_similar_count", "input_similar_cleared", "input_similar_cleared_count",
                "input_known_fraud_links"):
        if key in cached.state:
            ctx.state[key] = cached.state[key]
    for key in SPECIALISTS:
        if key in cached.results:
            ctx.results[key] = {**cached.results[key], "cached": True}


def _why(ctx: RunContext) -> str:
    """What produced this assessment, for the timeline beside a priority change."""
    rerun = ctx.state.get("rerun_agent")
    if rerun:
        return (f"run #{ctx.run.pk} re-ran {rerun}, then the orchestrator over all five specialists "
                f"(the others from the last good results)")
    if ctx.run.mode == "case_open":
        return f"run #{ctx.run.pk} re-assessed the cached specialist findings"
    return f"run #{ctx.run.pk} assessed the alert"


def _reuse_last_good(ctx: RunContext) -> None:
    """Re-running one specialist: a sibling whose kept result failed takes its last good
    result from an earlier run on this case, so the orchestrator reads all five."""
    for key in SPECIALISTS:
        entry = ctx.results.get(key)
        if key == ctx.state.get("rerun_agent") or entry is None or not entry.get("error"):
            continue
        for earlier in (AgentRun.objects.filter(case=ctx.case, pipeline=PIPELINE, mode__in=("alert_creation", "case_open"))
                        .exclude(pk=ctx.run.pk).order_by("-created_at", "-id")):
            good = earlier.results.get(key)
            if good and not good.get("error") and good.get("output") is not None:
                ctx.results[key] = {**good, "cached": True, "from_run": earlier.pk}
                break


def _finish(ctx: RunContext) -> None:
    from casework.fraud.services import alert_apply_assessment, alert_capture_failed, pattern_capture

    if ctx.run.mode in ASSESSMENT_MODES:
        applied = alert_apply_assessment(alert=_alert(ctx), orchestrator=ctx.output("orchestrator"),
                                         actor="agent:orchestrator", why=_why(ctx),
                                         runtime_notifies=ctx.stop_reason == "timed_out", run=ctx.run)
        if applied is not None and applied.override:
            # The case page shows the guard's override beside the orchestrator's verdict.
            ctx.state["priority_override"] = {"proposed": applied.proposed, "applied": applied.priority,
                                              "reason": applied.override}
    elif ctx.run.mode == "close":
        pattern = ctx.output("knowledge_capture")
        if pattern is None:
            entry = ctx.results.get("knowledge_capture") or {}
            alert_capture_failed(alert=_alert(ctx), error=str(entry.get("error") or ctx.stop_reason
                                                             or "the agent gave no pattern"))
            return
        from casework.cases.models import Decision

        decision = Decision.objects.get(pk=ctx.state["input_decision"])
        pattern_capture(decision=decision, pattern=pattern, actor="agent:knowledge_capture")


def _on_failed(ctx: RunContext, exc: Exception) -> None:
    """The run failed: the alert says what did not happen (the runtime tells the assignee)."""
    from casework.fraud.services import alert_assessment_failed, alert_capture_failed

    error = f"{type(exc).__name__}: {exc}"
    if ctx.run.mode in ASSESSMENT_MODES:
        alert_assessment_failed(alert=_alert(ctx), error=error, runtime_notifies=True)
    elif ctx.run.mode == "close":
        alert_capture_failed(alert=_alert(ctx), error=error)


def _prepare(ctx: RunContext) -> None:
    from casework.fraud.services import alert_assessment_started

    if ctx.run.mode in ASSESSMENT_MODES:
        alert_assessment_started(alert=_alert(ctx), mode=ctx.run.mode)
    if ctx.state.get("rerun_agent"):
        _reuse_last_good(ctx)
    if ctx.run.mode == "case_open":
        _copy_cached_specialists(ctx)


specialists_stage = Stage("specialists", _specialist_calls)
orchestrator_stage = Stage("orchestrator", _orchestrator_calls)

fraud_pipeline = register_pipeline(Pipeline(
    name=PIPELINE,
    description="Fraud alert investigation (seed 000).",
    modes={
        "alert_creation": [specialists_stage, orchestrator_stage],
        "case_open": [specialists_stage, orchestrator_stage],  # specialists come from the cache
        "close": [Stage("knowledge_capture", _knowledge_capture_calls)],
    },
    prepare=_prepare,
    finish=_finish,
    on_failed=_on_failed,
    agents=FRAUD_AGENTS,
))


@receiver(case_closed, dispatch_uid="fraud_knowledge_capture")
def _capture_knowledge_on_close(sender, case, decision, actor, **kwargs) -> None:
    """A person decided: the alert is decided, and its knowledge capture runs (not for a
    duplicate merged into another alert's case)."""
    if case.case_type != "fraud_alert":
        return
    from agents.tasks import pipeline_enqueue
    from casework.cases.types import MERGED_OUTCOME
    from casework.fraud.models import Alert
    from casework.fraud.services import alert_decided
    from casework.fraud.states import AlertStatus

    with transaction.atomic():
        alert = Alert.objects.filter(case=case).first()
        if alert is not None:
            if alert_decided(alert=alert, decision=decision).status != AlertStatus.DECIDED:
                return  # the pattern is stored already (the demo stores a prepared one with the close)
        if decision.outcome == MERGED_OUTCOME:
            return  # a duplicate says nothing new: the survivor's decision is the one to learn from
        pipeline_enqueue(case=case, pipeline=PIPELINE, mode="close", actor=actor,
                         initial_state={"input_decision": decision.pk})
