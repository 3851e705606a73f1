"""The investigation pipeline's writes: progress after every step, and completion.

Called by agents/pipelines/transactions.py with the planner's state (seed section 2). Every
write is idempotent, so a step replayed after a crash changes nothing: decisions are one
per step, executions one per tool, insights and recommendations one per key.
"""

from __future__ import annotations

from datetime import datetime

from django.db import transaction
from django.template.defaultfilters import pluralize
from django.utils import timezone

from audit.services import audit_record
from casework.cases.services import case_set_priority
from casework.transactions import rules, similarity
from casework.transactions.models import (
    Insight,
    Investigation,
    PlannerDecision,
    Recommendation,
    RuleDraft,
    ToolExecution,
)

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
    rows = [ToolExecution(investigation=investigation, step=e.get("step", 0), tool_name=e["tool_name"],
                          input_summary=e["input_summary"], output_summary=e["output_summary"],
                          execution_time_ms=e["execution_time_ms"], status=e["status"],
                          error_message=e.get("error_message") or "", timestamp=_when(e["timestamp"]))
            for e in executions]
    if rows:
        ToolExecution.objects.bulk_create(rows, ignore_conflicts=True)


@transaction.atomic
def investigation_record_progress(*, investigation_id: int, state: dict) -> None:
    """After a planner or tool step: the state snapshot, the step's new decision or execution
    row, and IN_PROGRESS (audited when the status changes). One UPDATE and one INSERT a step."""
    now = timezone.now()
    unchanged = Investigation.objects.filter(pk=investigation_id, status=Investigation.Status.IN_PROGRESS).update(
        state=state, updated_at=now)
    investigation = Investigation(pk=investigation_id)
    if not unchanged:
        investigation = Investigation.objects.select_for_update().select_related("case").get(pk=investigation_id)
        investigation.state = state
        investigation.status = Investigation.Status.IN_PROGRESS
        investigation.started_at = investigation.started_at or now
        investigation.save(update_fields=["state", "status", "started_at", "updated_at"])
        audit_record(actor="agent:planner", action="txn.investigation_in_progress", case=investigation.case,
                     obj=investigation, data={"step_count": state.get("step_count", 0)})
    # A resumed run's first record may follow several steps of an earlier run: write them all.
    _save_steps(investigation, state, last_only=bool(unchanged))


@transaction.atomic
def investigation_complete(*, investigation_id: int, state: dict, summary: str = "") -> Investigation:
    """Persist the end of an investigation, in the seed's order (section 7.3): the
    investigation (status, severity, confidence), the state, the tool logs, the insights,
    the recommendations (and the drafted rule), then the audit entry. A TIMED_OUT or
    step-limited one keeps everything it found."""
    investigation = Investigation.objects.select_for_update().select_related("case").get(pk=investigation_id)
    # 1. the investigation
    investigation.status = state["status"]
    investigation.severity = state["severity"]
    investigation.confidence_score = round(min(1.0, max(0.0, state["confidence_score"])), 3)
    investigation.completed_at = _when(state.get("completed_at"))
    investigation.summary = summary
    investigation.error = state.get("error") or ""
    if state.get("pattern_results"):
        investigation.features = similarity.vector_of(state["pattern_results"])
        investigation.feature_bucket = similarity.bucket_of(investigation.features)
    # 2. the state
    investigation.state = state
    investigation.full_clean(exclude=["case", "transaction"], validate_constraints=False)
    investigation.save()
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
                                 backtest=draft.get("backtest") or rules.backtest(draft["conditions"]))
    case = investigation.case
    if not case.is_closed and case.priority != PRIORITY_FOR_SEVERITY[investigation.severity]:
        case_set_priority(actor="agent:planner", case=case, priority=PRIORITY_FOR_SEVERITY[investigation.severity],
                          reason=f"Investigation severity {investigation.severity}.")
    # 6. the audit trail
    audit_record(actor="agent:planner", action=f"txn.investigation_{investigation.status.lower()}", case=case,
                 obj=investigation, data={
                     "severity": investigation.severity, "confidence": investigation.confidence_score,
                     "completed_steps": state.get("completed_steps", []), "step_count": state.get("step_count"),
                     "error": investigation.error})
    return investigation


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
def investigation_mark_failed(*, investigation_id: int, error: str) -> None:
    investigation = Investigation.objects.select_for_update().select_related("case").get(pk=investigation_id)
    if investigation.status == Investigation.Status.COMPLETED:
        return
    investigation.status = Investigation.Status.FAILED
    investigation.error = error[:2000]
    investigation.save(update_fields=["status", "error", "updated_at"])
    audit_record(actor="agent:planner", action="txn.investigation_failed", case=investigation.case,
                 obj=investigation, data={"error": error[:500]})
