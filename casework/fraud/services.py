"""Every write to fraud data goes through these functions; each is audited in its transaction."""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Any

from django.core.exceptions import ValidationError
from django.db import transaction
from pydantic import BaseModel, ConfigDict, Field, StringConstraints
from pydantic import ValidationError as PydanticValidationError

from agents.tasks import pipeline_enqueue
from audit.services import audit_record
from casework.cases.models import Case, Decision
from casework.cases.services import case_create, case_set_priority
from casework.entities.extraction import entities_extract
from casework.errors import Conflict
from casework.fraud.features import FEATURE_NAMES, SCORE_NAMES
from casework.fraud.models import Account, AccountLink, Alert, KnowledgePattern
from casework.fraud.schemas import AlertIn, alert_validate, alerts_validate
from casework.fraud.scoring import assess, risk_level_for
from casework.fraud.states import UNDECIDED, AlertStatus, alert_transition

logger = logging.getLogger(__name__)

# One all-or-nothing batch holds the audit chain's lock from its first alert to its commit,
# stalling every other audited write meanwhile (about 15-30 ms per alert), so batches are
# bounded; the CSV import validates a whole file first and then commits it in such batches.
MAX_ALERTS_PER_BATCH = 1_000

PRIORITY_FOR_RISK = {"critical": Case.Priority.CRITICAL, "high": Case.Priority.HIGH,
                     "medium": Case.Priority.MEDIUM, "low": Case.Priority.LOW}


def _title(account_id: str, label: str) -> str:
    title = f"Account {account_id}: {label}"
    return title if len(title) <= 200 else title[:197] + "..."


def _create_one(*, actor, alert_in: AlertIn, via: str) -> Alert:
    """Create the account (if new), the case and the alert. Caller holds the transaction."""
    assessment = assess(alert_in.model_dump())
    upstream = alert_in.upstream_scores()
    scores = assessment.scores()
    filled: list[str] = []
    if upstream:
        filled = [name for name in SCORE_NAMES if name not in upstream]
        scores.update(upstream)
        if "risk_level" not in upstream and "fraud_probability" in upstream:
            # Upstream's probability decides the level, with our thresholds.
            scores["risk_level"] = risk_level_for(upstream["fraud_probability"])
    source = Alert.ScoreSource.UPSTREAM if upstream else Alert.ScoreSource.CASEWORK_SCORER
    label = assessment.pattern_label
    if upstream and not any(factor.fired for factor in assessment.factors):
        # Upstream saw something our rules do not: say whose judgement the case rests on.
        label = f"flagged by the upstream model ({scores['risk_level']} risk)"

    account, _ = Account.objects.get_or_create(account_id=alert_in.account_id)
    case = case_create(
        actor=actor,
        case_type="fraud_alert",
        title=_title(account.account_id, label),
        description=scores["one_line_explanation"],
        priority=PRIORITY_FOR_RISK[scores["risk_level"]],
    )
    alert = Alert(
        case=case, account=account,
        **{name: getattr(alert_in, name) for name in FEATURE_NAMES},
        **scores,
        score_source=source,
        scorer_filled=filled,
    )
    # Ranges were checked by AlertIn and are enforced again by the table's CHECK
    # constraints; Django's Python-side constraint check would cost a query per constraint,
    # and the case and account were fetched or made a moment ago in this transaction.
    alert.full_clean(exclude=["case", "account"], validate_constraints=False)
    alert.save()
    links = [AccountLink(account=account, kind=kind, value=value)
             for kind, values in ((AccountLink.Kind.DEVICE, alert_in.device_ids), (AccountLink.Kind.IP, alert_in.ip_addresses))
             for value in dict.fromkeys(values or [])]
    if links:
        AccountLink.objects.bulk_create(links, ignore_conflicts=True)
    entities_extract(case=case)
    audit_record(
        actor=actor, action="fraud.alert_created", case=case, obj=alert,
        data={"account_id": account.account_id, "via": via, "score_source": source,
              "scorer_filled": filled, "risk_level": alert.risk_level,
              "fraud_probability": alert.fraud_probability, "features": alert.features},
    )
    # The run is queued in this transaction; its task starts once the alert has committed.
    pipeline_enqueue(case=case, pipeline="fraud", mode="alert_creation", actor=actor)
    return alert


@transaction.atomic
def alert_create(*, actor, data: dict, via: str = "api") -> Alert:
    """Validate one alert, open its fraud case, save it, audit, and enqueue its pipeline on commit.

    `data` uses the upstream field names (see AlertIn); unknown fields are refused by name.
    `via` says which channel it came through (api, csv_upload, csv_command, admin, demo).
    """
    return _create_one(actor=actor, alert_in=alert_validate(data), via=via)


@transaction.atomic
def alerts_create_bulk(
    *, actor, rows: Sequence[Any], via: str = "api", numbers: Sequence[int] | None = None, label: str = "row",
) -> list[Alert]:
    """Create many alerts, all or nothing.

    Every row is validated before anything is written. If any row is invalid, nothing is
    created and the ValidationError names each bad row and field: "row 3: vpn_usage_pct"
    (rows numbered from 1 in the order sent), or "line 4: vpn_usage_pct" when a CSV reader
    passes file line numbers with label="line" (the header is line 1).
    """
    if not rows:
        raise ValidationError({"__all__": ["Send at least one alert."]})
    if len(rows) > MAX_ALERTS_PER_BATCH:
        raise ValidationError({"__all__": [
            f"At most {MAX_ALERTS_PER_BATCH:,} alerts at a time; this batch has {len(rows):,}. Split it, "
            "or import a CSV file."]})
    valid, errors = alerts_validate(rows, numbers=numbers, label=label)
    if errors:
        how = ("line numbers count the header as line 1" if label == "line"
               else "rows are numbered from 1 in the order sent")
        bad = len({key.split(":")[0] for key in errors})
        errors = {"__all__": [f"Nothing was created: {bad} of {len(rows)} {label}s are invalid ({how})."],
                  **errors}
        raise ValidationError(errors)
    return [_create_one(actor=actor, alert_in=alert_in, via=via) for _, alert_in in valid]


# --- Orchestrator assessment ----------------------------------------------------------

_PRIORITY_WORDS: dict[str, str] = {
    **dict.fromkeys(("critical", "urgent", "immediate", "immediately", "severe", "p0", "p1", "highest"), "critical"),
    **dict.fromkeys(("high", "elevated", "p2", "escalate"), "high"),
    **dict.fromkeys(("medium", "moderate", "normal", "standard", "p3", "routine"), "medium"),
    **dict.fromkeys(("low", "minimal", "minor", "p4", "p5", "lowest"), "low"),
}
_NEGATIONS = frozenset({"not", "no", "non"})
_SEVERITY = ("critical", "high", "medium", "low")


def priority_from_text(text: Any) -> str | None:
    """Map an orchestrator's free-text priority to a case priority, or None if it names none.

    "High" -> high; "P1 - urgent" -> critical; "Low, not urgent" -> low (a word after
    "not"/"no" is ignored); "review when possible" -> None. When several levels are named,
    the most severe wins: an investigator would rather look too early than too late.
    """
    if not isinstance(text, str):
        return None
    found: set[str] = set()
    negated = False
    for word in re.findall(r"[a-z0-9]+", text.lower()):
        if word in _NEGATIONS:
            negated = True
            continue
        if not negated and word in _PRIORITY_WORDS:
            found.add(_PRIORITY_WORDS[word])
        negated = False
    return next((level for level in _SEVERITY if level in found), None)


_RANK = {"low": 0, "medium": 1, "high": 2, "critical": 3}


@dataclass(frozen=True)
class AssessmentApplied:
    """What an orchestrator's answer changed: the priority it proposed, the one that stands,
    and the guard's override (empty when the proposal stood)."""

    proposed: str | None
    priority: str | None
    override: str = ""


def priority_guard(*, alert: Alert, proposed: str | None) -> tuple[str | None, str]:
    """The priority that may stand for the orchestrator's proposal, and why it was overridden
    ("" when it stands): never below the priority of the alert's own score (the upstream
    model's, or our rule-based scorer's), which only a person may lower."""
    floor = PRIORITY_FOR_RISK[alert.risk_level]
    if proposed is None or _RANK[proposed] >= _RANK[floor]:
        return proposed, ""
    source = alert.get_score_source_display().lower()
    return floor, (f"the orchestrator proposed {proposed}, below the {alert.risk_level} risk of the {source}; "
                   f"the priority stays {floor} (only a person lowers it)")


def _lock_alert(alert: Alert) -> Alert:
    return Alert.objects.select_for_update(of=("self",)).select_related("case").get(pk=alert.pk)


def _move_if_allowed(*, actor, alert: Alert, to: str, reason: str, fact=None) -> Alert | None:
    """alert_transition, or None when the table has no move from where the alert stands now
    (a person decided meanwhile, a late run): what the table refuses is left as it is. A
    refusal comes before lifecycle_transition writes anything, so the caller's transaction
    goes on; a refused kind of actor is a bug and is raised."""
    try:
        locked = alert_transition(actor=actor, alert=alert, to=to, reason=reason, fact=fact)
    except Conflict as exc:
        if exc.code != "transition_refused":
            raise
        return None
    alert.status = locked.status
    alert.case.status = locked.case.status
    return locked


def alert_assessment_started(*, alert: Alert, mode: str) -> bool:
    """An assessment run started: the alert is being assessed (the case in progress). False,
    and nothing changes, when the alert is not assessable (a person decided meanwhile)."""
    what = "re-assessment (the orchestrator alone)" if mode == "case_open" else "assessment"
    return _move_if_allowed(actor="system", alert=alert, to=AlertStatus.ASSESSING,
                            reason=f"The {what} started.") is not None


def alert_apply_assessment(*, alert: Alert, orchestrator: dict | None, actor, why: str = "",
                           runtime_notifies: bool = False, run=None) -> AssessmentApplied | None:
    """Write the orchestrator's assessment back, or record that there is none.

    "Assessed" rests on a fact: `run`, the assessment run, with at least one specialist's
    findings (casework.fraud.states.specialist_finished). An orchestrator that answered over
    five failed specialists assessed nothing: its answer is a guess, so the assessment failed
    as if it had not answered (no priority change).

    With an answer: the alert is assessed (the case awaits a person's decision) at the
    priority the answer names (its `priority`, mapped by `priority_from_text`, else its
    `risk_level`), floored by `priority_guard` (an override is audited as
    fraud.priority_guarded and given as the priority change's reason). Without one
    (missing, or failed: `_error`/`error`): the assessment failed, the rule-based factors
    stand in, and people are told (`runtime_notifies`: the runtime already tells the
    assignee of a failed or timed-out run). None, and nothing changes, when the alert is not
    being assessed (a person decided meanwhile); the priority is left alone on a closed case.
    """
    from casework.fraud.states import specialist_finished

    prefix = why[:1].upper() + why[1:] + ": " if why else ""
    answered = bool(orchestrator) and not orchestrator.get("_error") and not orchestrator.get("error")
    grounded = run is not None and specialist_finished(run)
    if not answered or not grounded:
        what = ("the orchestrator gave no assessment" if not answered else
                f"every specialist failed, so the orchestrator had nothing to assess (its guess, "
                f"{orchestrator.get('risk_level')!r} risk, is not taken)")
        reason = (f"{prefix}{what}; the rule-based risk factors "
                  f"({alert.get_score_source_display().lower()}: {alert.risk_level} risk) stand in, "
                  "and a person must look.")
        locked = _move_if_allowed(actor="system", alert=alert, to=AlertStatus.ASSESSMENT_FAILED, reason=reason)
        if locked is not None and not locked.case.is_closed:
            _notify_assessment_failed(case=locked.case, reason=reason, skip_assignee=runtime_notifies)
        return None
    proposed = priority_from_text(orchestrator.get("priority")) or priority_from_text(orchestrator.get("risk_level"))
    priority, override = priority_guard(alert=alert, proposed=proposed)
    # The timeline shows this reason beside the change: which run, and what the orchestrator said.
    said = str(orchestrator.get("investigation_summary") or "")[:200]
    reason = (f"{prefix}orchestrator assessment: priority {orchestrator.get('priority')!r}, risk level "
              f"{orchestrator.get('risk_level')!r}{'. ' + said if said else ''}.")
    # The agents are done; a person decides (never "resolved" by an agent).
    locked = _move_if_allowed(actor=actor, alert=alert, to=AlertStatus.ASSESSED, reason=reason, fact=run)
    if locked is None or locked.case.is_closed:
        return None
    case = locked.case
    if override:
        audit_record(actor="system", action="fraud.priority_guarded", case=case, obj=locked,
                     data={"proposed": proposed, "applied": priority, "floor_source": locked.score_source,
                           "risk_level": locked.risk_level, "reason": override})
        reason = f"{reason} Guard: {override}."
    if priority is not None and priority != case.priority:
        case = case_set_priority(actor=actor, case=case, priority=priority, reason=reason)
    alert.case.status, alert.case.priority = case.status, case.priority
    return AssessmentApplied(proposed=proposed, priority=priority, override=override)


def _notify_assessment_failed(*, case: Case, reason: str, skip_assignee: bool) -> None:
    """Tell the assignee, or every investigator when nobody is assigned, that the assessment
    failed and a person must look."""
    from django.contrib.auth.models import User
    from django.urls import reverse

    from casework.cases.notifications.models import Notification
    from casework.cases.notifications.services import notification_send
    from casework.people.roles import INVESTIGATOR

    if case.assignee_id is not None:
        recipients = [] if skip_assignee else [case.assignee]
    else:
        recipients = list(User.objects.filter(is_active=True, groups__name=INVESTIGATOR).distinct().order_by("pk"))
    for user in recipients:
        notification_send(
            actor="system", kind=Notification.Kind.RUN_FAILED, case=case, user=user,
            subject=f"{case.reference}: the fraud assessment failed",
            body=f"{reason} Open {case.reference} ({case.title}), re-assess it, or decide on the rule-based factors.",
            url=reverse("cases:detail", args=[case.reference]))


def alert_assessment_failed(*, alert: Alert, error: str, runtime_notifies: bool = True) -> bool:
    """The assessment run itself failed (an exception, or it stopped before the orchestrator):
    the alert says so, and people are told. False when the alert was not being assessed."""
    reason = (f"The assessment run failed ({error[:300] or 'no detail'}); the rule-based risk factors "
              f"({alert.risk_level} risk) stand in, and a person must look.")
    locked = _move_if_allowed(actor="system", alert=alert, to=AlertStatus.ASSESSMENT_FAILED, reason=reason)
    if locked is None:
        return False
    if not locked.case.is_closed:
        _notify_assessment_failed(case=locked.case, reason=reason, skip_assignee=runtime_notifies)
    return True


# --- Knowledge capture ----------------------------------------------------------------

Signal = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=200)]


class PatternIn(BaseModel):
    """The knowledge_capture agent's output. Other keys (run metadata) are ignored."""

    model_config = ConfigDict(extra="ignore", str_strip_whitespace=True)

    key_signals: list[Signal] = Field(default_factory=list, max_length=30)
    behavioral_pattern: str = Field(min_length=1, max_length=5_000)
    final_outcome: str = Field(min_length=1, max_length=100)
    one_sentence_description: str = Field(min_length=1, max_length=500)


@transaction.atomic
def pattern_capture(*, decision: Decision, pattern: dict, actor) -> KnowledgePattern:
    """Store what a closed fraud case taught us, and attach a copy to its decision.

    Steps: validate the pattern; lock the decision row (a second capture, e.g. a re-run,
    updates rather than duplicates); upsert the KnowledgePattern; copy it into
    decision.data["knowledge_pattern"] (Decision rows are ordinary rows, not audit
    entries, so they may be updated); audit.
    """
    if pattern.get("_error") or pattern.get("error"):
        raise ValidationError({"__all__": ["The knowledge capture failed; there is no pattern to store."]})
    try:
        data = PatternIn.model_validate(pattern)
    except PydanticValidationError as exc:
        raise ValidationError({str(e["loc"][0]) if e["loc"] else "__all__": [e["msg"]] for e in exc.errors()})
    decision = Decision.objects.select_for_update().select_related("case").get(pk=decision.pk)
    if decision.case.case_type != "fraud_alert":
        raise ValidationError({"decision": "Knowledge patterns are captured for fraud cases only."})
    if not decision.final:
        raise ValidationError({"decision": "Capture a pattern from the case's final decision."})
    alert = Alert.objects.select_related("account", "case").get(case_id=decision.case_id)
    knowledge = KnowledgePattern.objects.filter(decision=decision).first()
    created = knowledge is None
    if created:
        knowledge = KnowledgePattern(decision=decision, case=decision.case, account=alert.account)
    for name, value in data.model_dump().items():
        setattr(knowledge, name, value)
    knowledge.full_clean(validate_constraints=False)
    knowledge.save()
    decision.data = {**(decision.data or {}), "knowledge_pattern": data.model_dump()}
    decision.save(update_fields=["data"])
    audit_record(actor=actor, action="fraud.pattern_captured" if created else "fraud.pattern_updated",
                 case=decision.case, obj=knowledge, data=data.model_dump())
    alert_decided(alert=alert, decision=decision)
    if alert.status != AlertStatus.KNOWLEDGE_CAPTURED:
        alert_transition(actor=actor, alert=alert, to=AlertStatus.KNOWLEDGE_CAPTURED,
                         reason=f"Pattern stored: {data.one_sentence_description}")
    return knowledge


def alert_decided(*, alert: Alert, decision: Decision) -> Alert:
    """A person's final decision closed the alert's case: the alert is decided, on the word of
    the person who decided (nothing changes once it is past that). Returns the alert."""
    if alert.status in UNDECIDED:
        _move_if_allowed(actor=decision.decided_by, alert=alert, to=AlertStatus.DECIDED,
                         reason=f"{decision.outcome_label}: {decision.reason}"[:1000])
    return alert


def alert_capture_failed(*, alert: Alert, error: str) -> bool:
    """Knowledge capture ended without a stored pattern: the alert says so, and a person may
    retry (alert_capture_retry). False when the alert is not waiting for its capture."""
    return _move_if_allowed(actor="system", alert=alert, to=AlertStatus.CAPTURE_FAILED,
                            reason=f"Knowledge capture failed: {error[:500] or 'no detail'}. "
                                   "Nothing was stored.") is not None


@transaction.atomic
def alert_capture_retry(*, actor, alert: Alert):
    """Retry a failed knowledge capture ("Retry knowledge capture"): the alert is decided
    again (audited with who asked) and the knowledge capture agent runs on the final decision.
    Refused (409) unless the capture failed, or while a capture runs."""
    from agents.models import AgentRun

    locked = _lock_alert(alert)
    decision = locked.case.decisions.filter(final=True).first()
    if decision is None:
        raise Conflict(f"{locked.case.reference} has no decision yet; knowledge is captured once a person decides.",
                       code="not_decided")
    if AgentRun.objects.filter(case=locked.case, pipeline="fraud", mode="close", status__in=AgentRun.ACTIVE).exists():
        raise Conflict(f"{locked.case.reference}: knowledge capture is already running.", code="run_active")
    if locked.status != AlertStatus.CAPTURE_FAILED:
        raise Conflict(f"{locked.case.reference} is {locked.get_status_display().lower()}: only a failed knowledge "
                       "capture is retried.", code="transition_refused")
    alert_transition(actor=actor, alert=locked, to=AlertStatus.DECIDED, reason="Retry knowledge capture.")
    alert.status = locked.status
    return pipeline_enqueue(case=locked.case, pipeline="fraud", mode="close", actor=actor,
                            initial_state={"input_decision": decision.pk})


def _refuse_if_running(alert: Alert) -> None:
    from agents.models import AgentRun

    if alert.case.is_closed:
        raise Conflict(f"{alert.case.reference} is closed; its assessment is final.", code="case_closed")

    if AgentRun.objects.filter(case=alert.case, pipeline="fraud", status__in=AgentRun.ACTIVE).exists():
        raise Conflict(f"{alert.case.reference} is already being assessed; wait for that run to finish.",
                       code="run_active")


@transaction.atomic
def alert_reassess(*, actor, alert: Alert):
    """Run only the orchestrator again over this alert's own cached specialist results (one
    LLM call); refused (409) when the alert has no finished full assessment to read them from
    (another alert on the account carries other figures)."""
    from agents.models import AgentRun

    _refuse_if_running(alert)
    if not AgentRun.objects.filter(case=alert.case, pipeline="fraud", mode="alert_creation",
                                   status__in=AgentRun.DONE).exists():
        raise Conflict(f"{alert.case.reference} cannot be re-assessed: it has no finished assessment of its own "
                       "to read the specialists' findings from. Use Re-run all.", code="nothing_to_reassess")
    return pipeline_enqueue(case=alert.case, pipeline="fraud", mode="case_open", actor=actor)


@transaction.atomic
def alert_rerun_all(*, actor, alert: Alert):
    """Run all six agents again (six LLM calls); the earlier runs are kept."""
    _refuse_if_running(alert)
    return pipeline_enqueue(case=alert.case, pipeline="fraud", mode="alert_creation", actor=actor)
