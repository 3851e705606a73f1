"""The investigation pipeline's writes: progress after every step, and completion.

Called by casework/transactions/agents/pipeline.py with the planner's state (seed section 2). Every
write is idempotent, so a step replayed after a crash changes nothing: decisions are one
per step, executions one per tool, insights and recommendations one per key. Every change
of Investigation.status goes through states.investigation_transition (checked, audited, the
shared case brought along).
"""

from __future__ import annotations

from datetime import datetime

from django.db import transaction
from django.template.defaultfilters import pluralize
from django.utils import timezone

from audit.services import audit_record
from casework.cases.selectors import agent_priority
from casework.cases.services import case_set_priority
from casework.transactions import similarity
from casework.transactions.backtest import backtest
from casework.transactions.models import (
    Insight,
    Investigation,
    PlannerDecision,
    Recommendation,
    RuleDraft,
    ToolExecution,
    analysed,
)
from casework.transactions.states import ACTIVE, RESUMABLE, InvestigationStatus, investigation_transition

S = InvestigationStatus

PRIORITY_FOR_SEVERITY = {"CRITICAL": "critical", "HIGH": "high", "MEDIUM": "medium", "LOW": "low"}


def _when(value: str | None) -> datetime:
    return datetime.fromisoformat(value) if value else timezone.now()


def _save_steps(investigation: Investigation, state: dict, *, last_only: bool = False) -> None:
    """Insert the decision and execution rows (existing ones are kept: ON CONFLICT DO NOTHING).
    After one step only the newest of each can be new; at completion all are written again."""
    decisions = state.get("planner_decisions", [])
    executions = state.get("tool_executions", [])
    if last_only:
        decisions, executions = decisions[-1:], executions[-1:]
    rows = [PlannerDecision(investigation=investigation, step=d["step"], selected_tool=d["selected_tool"],
                            reason=d["reason"][:2000], confidence=min(1.0, max(0.0, float(d["confidence"]))),
                            used_fallback=d.get("used_fallback", False), rejected=(d.get("rejected") or "")[:300],
                            timestamp=_when(d["timestamp"])) for d in decisions]
    if rows:
        PlannerDecision.objects.bulk_create(rows, ignore_conflicts=True)
    rows = [ToolExecution(investigation=investigation, assessment=e.get("assessment", 1), step=e.get("step", 0),
                          tool_name=e["tool_name"],
                          input_summary=e["input_summary"], output_summary=e["output_summary"],
                          execution_time_ms=e["execution_time_ms"], status=e["status"],
                          error_message=e.get("error_message") or "", timestamp=_when(e["timestamp"]))
            for e in executions]
    if rows:
        ToolExecution.objects.bulk_create(rows, ignore_conflicts=True)


@transaction.atomic
def investigation_begin(*, investigation_id: int) -> None:
    """A run of the planner starts: IN_PROGRESS. From PENDING it is the planner's first run
    (an agent's move); from FAILED or TIMED_OUT a resumed run the system started (a person's
    Resume has already moved it). A completed or inconclusive one is final: refused (Conflict)."""
    investigation = Investigation.objects.select_for_update().get(pk=investigation_id)
    if investigation.status == S.IN_PROGRESS:
        return
    resumed = investigation.status in RESUMABLE
    investigation.started_at = investigation.started_at or timezone.now()
    investigation.error = "" if resumed else investigation.error
    investigation_transition(actor="system" if resumed else "agent:planner", investigation=investigation,
                             to=S.IN_PROGRESS, reason="Resumed from the saved state." if resumed else "The planner started.",
                             save=("started_at", "error"))


@transaction.atomic
def investigation_record_progress(*, investigation_id: int, state: dict) -> None:
    """After a planner or tool step: the state snapshot and the step's new decision or
    execution row (one UPDATE and one INSERT a step), and the audit entry of a guard that
    overrode the planner at this step."""
    now = timezone.now()
    unchanged = Investigation.objects.filter(pk=investigation_id, status=S.IN_PROGRESS).update(
        state=state, updated_at=now)
    investigation = Investigation(pk=investigation_id)
    if not unchanged:
        # Not in progress (investigation_begin did not run for it): the move says so, or refuses.
        investigation = Investigation.objects.select_for_update().select_related("case").get(pk=investigation_id)
        investigation.state = state
        investigation.started_at = investigation.started_at or now
        investigation_transition(actor="agent:planner", investigation=investigation, to=S.IN_PROGRESS,
                                 reason="The planner recorded a step.", data={"step_count": state.get("step_count", 0)},
                                 save=("state", "started_at"))
    # A resumed run's first record may follow several steps of an earlier run: write them all.
    _save_steps(investigation, state, last_only=bool(unchanged))
    if state.get("overrides"):
        _audit_overrides(investigation_id, state)


def _audit_overrides(investigation_id: int, state: dict) -> None:
    """One audit entry per override of the planner by a rule in code, written once (by its
    key) however often a step is replayed."""
    from audit.models import AuditEntry

    investigation = Investigation.objects.select_related("case").get(pk=investigation_id)
    done = {data.get("key") for data in AuditEntry.objects.filter(
        case_id=investigation.case_id, action="txn.guard_override").values_list("data", flat=True)}
    for override in state["overrides"]:
        if override["key"] not in done:
            audit_record(actor="agent:planner", action="txn.guard_override", case=investigation.case,
                         obj=investigation, data=override)


def override_record(state: dict, *, rule: str, model: str, code: str, reason: str) -> dict:
    """Note on the state that a rule in code overrode what the model proposed (shown on the
    case page; audited when the state is next written)."""
    overrides = state.setdefault("overrides", [])
    # The key is the override's place in the list (overrides are only ever appended).
    override = {"key": f"{len(overrides) + 1}:{rule}", "rule": rule, "step": state.get("step_count", 0),
                "model": model, "code": code, "reason": reason}
    overrides.append(override)
    return override


@transaction.atomic
def investigation_complete(*, investigation_id: int, state: dict, summary: str = "",
                           partial: bool = False) -> Investigation:
    """Persist the end of an investigation, in the seed's order (section 7.3): the
    investigation (its status through the lifecycle, which audits the move; severity,
    confidence), the state, the tool logs, the insights, the recommendations (and the
    drafted rule), the case's priority, then the audit entries of any override.

    `state["status"]` is COMPLETED, INCONCLUSIVE, TIMED_OUT or STOPPED (or FAILED: a HIGH or CRITICAL
    one left with no recommendation at all, casework.transactions.agents.pipeline._require_recommendations). `partial`: the run stopped
    early (timed out, or at the step limit) and keeps everything it found. The case's
    priority follows the severity, except that an inconclusive investigation, or one that
    analysed nothing, claims none, a partial one may raise the priority but never lower it,
    and a priority a person set stands.
    """
    investigation = Investigation.objects.select_for_update().select_related("case").get(pk=investigation_id)
    status = state["status"]
    case = investigation.case
    priority_note = _priority_decision(case, status=status, severity=state["severity"], partial=partial,
                                       has_analysis=analysed(state))
    if isinstance(priority_note, dict):
        override_record(state, **priority_note)
    # 1. the investigation, and 2. the state
    investigation.severity = state["severity"]
    investigation.confidence_score = round(min(1.0, max(0.0, state["confidence_score"])), 3)
    investigation.completed_at = _when(state.get("completed_at"))
    investigation.summary = summary
    investigation.error = state.get("error") or ""
    if state.get("pattern_results"):
        investigation.features = similarity.vector_of(state["pattern_results"])
        investigation.feature_bucket = similarity.bucket_of(investigation.features)
    investigation.state = state
    investigation.full_clean(exclude=["case", "transaction", "status"], validate_constraints=False)
    investigation_transition(
        actor="agent:planner", investigation=investigation, to=status,
        reason=investigation.error or summary or f"Severity {investigation.severity}.",
        data={"severity": investigation.severity, "confidence": investigation.confidence_score,
              "completed_steps": state.get("completed_steps", []), "step_count": state.get("step_count"),
              "error": investigation.error},
        save=("severity", "confidence_score", "completed_at", "summary", "error", "features", "feature_bucket",
              "state"))
    # 3. the tool logs (and the planner's decisions)
    _save_steps(investigation, state)
    # 4. insights with their evidence
    for kind, key, title, confidence, evidence in _insights(state):
        Insight.objects.update_or_create(investigation=investigation, kind=kind, key=key, defaults={
            "title": title[:300], "confidence": round(confidence, 3), "evidence": evidence})
    # 5. recommendations: a person's accept/reject is kept when a resumed run writes again
    for number, rec in enumerate(state.get("recommendations", []), 1):
        Recommendation.objects.update_or_create(investigation=investigation, action=rec["action"], defaults={
            "title": rec["title"][:200], "reason": rec["reason"], "priority": rec.get("priority", number)})
    draft = state.get("rule_draft")
    if draft and not RuleDraft.objects.filter(investigation=investigation).exists():
        RuleDraft.objects.create(investigation=investigation, name=draft["name"][:120],
                                 description=draft.get("description", ""), conditions=draft["conditions"],
                                 backtest=draft.get("backtest") or backtest(
                                     draft["conditions"], drafted_from=investigation.transaction.transaction_id))
    if isinstance(priority_note, str):
        case_set_priority(actor="agent:planner", case=case, priority=priority_note,
                          reason=f"Investigation severity {investigation.severity}"
                                 + (" (stopped early: the priority is only ever raised)." if partial else "."))
    # 6. the audit trail: the move was audited with it; the overrides now
    if state.get("overrides"):
        _audit_overrides(investigation.pk, state)
    return investigation


def _priority_decision(case, *, status: str, severity: str, partial: bool,
                       has_analysis: bool = True) -> str | dict | None:
    """The priority the agents set now (a str), an override to record (a dict: a person's
    priority stands against the agents' assessment), or None (nothing to change). A run
    stopped early has not seen all the evidence: it never lowers the priority."""
    if case.is_closed or status == S.INCONCLUSIVE or not has_analysis:
        return None  # an inconclusive investigation, or one that analysed nothing, claims no priority
    assessed = PRIORITY_FOR_SEVERITY[severity]
    priority, person = agent_priority(case, assessed, may_lower=not partial)
    if person:
        return {"rule": "person_priority_stands", "model": f"priority {assessed} ({severity} severity)",
                "code": f"kept priority {case.priority}",
                "reason": f"{person} set the priority to {case.priority}; the agents do not overwrite a person's "
                          f"priority (they assessed {severity} severity)."}
    return priority


def _insights(state: dict):
    for pattern in state.get("pattern_results", {}).get("patterns", []):
        if pattern["flagged"]:
            yield ("pattern", pattern["type"], f"{pattern['type'].title()}: {pattern['detail']}", pattern["score"],
                   [{"transaction_ids": pattern["transaction_ids"]}])
    matches = state.get("similarity_results", {}).get("matches", [])
    if matches:
        fraud = sum(1 for m in matches if m.get("outcome") == "fraud")
        yield ("similarity", "nearest", f"{len(matches)} similar past investigation{pluralize(len(matches))}, {fraud} decided fraud",
               state["similarity_results"].get("fraud_share") or 0.0, matches)
    for hypothesis in state.get("reasoning", {}).get("hypotheses", []):
        yield ("hypothesis", hypothesis["key"], hypothesis["statement"], hypothesis["likelihood"],
               hypothesis["evidence"])


@transaction.atomic
def investigation_mark_failed(*, investigation_id: int, error: str, actor: str = "system") -> None:
    """The run failed (an error in a step, or while writing the results): FAILED, with the
    error, resumable. Only an investigation the planner may still be working on moves; a
    final or already stopped one stays as it is."""
    investigation = Investigation.objects.select_for_update().select_related("case").get(pk=investigation_id)
    if investigation.status not in ACTIVE:
        return
    investigation.error = error[:2000]
    investigation_transition(actor=actor, investigation=investigation, to=S.FAILED, reason=error[:500],
                             save=("error",))
