"""Every write to fraud data goes through these functions; each is audited in its transaction."""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from typing import Annotated, Any

from django.core.exceptions import ValidationError
from django.db import transaction
from pydantic import BaseModel, ConfigDict, Field, StringConstraints
from pydantic import ValidationError as PydanticValidationError

from agents.tasks import pipeline_enqueue
from audit.services import audit_record
from casework.cases.models import Case, Decision
from casework.cases.services import case_agents_done, case_create
from casework.errors import Conflict
from casework.fraud.features import FEATURE_NAMES, SCORE_NAMES
from casework.fraud.models import Account, AccountLink, Alert, KnowledgePattern
from casework.fraud.schemas import AlertIn, alert_validate, alerts_validate
from casework.fraud.scoring import assess, risk_level_for

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


def alert_apply_assessment(*, alert: Alert, orchestrator: dict | None, actor, why: str = "") -> str | None:
    """Set the case's priority from the orchestrator's output, and its status to awaiting a
    decision; returns the new priority or None.

    Uses the output's `priority` (free text, mapped by `priority_from_text`), else its
    `risk_level`. Does nothing for a missing or failed output (one with `_error`/`error`),
    an output naming no priority, or a closed case.
    """
    if not orchestrator or orchestrator.get("_error") or orchestrator.get("error"):
        return None
    priority = priority_from_text(orchestrator.get("priority")) or priority_from_text(orchestrator.get("risk_level"))
    # The timeline shows this reason beside the change: which run, and what the orchestrator said.
    said = str(orchestrator.get("investigation_summary") or "")[:200]
    reason = (f"{why[:1].upper() + why[1:] + ': ' if why else ''}orchestrator assessment: priority "
              f"{orchestrator.get('priority')!r}, risk level {orchestrator.get('risk_level')!r}"
              f"{'. ' + said if said else ''}.")
    # The agents are done; a person decides (never "resolved" by an agent). One lock for the
    # status and the priority; nothing changes on a case a person closed meanwhile.
    case = case_agents_done(actor=actor, case=alert.case, priority=priority, reason=reason)
    if case is None:
        return None
    alert.case.status, alert.case.priority = case.status, case.priority
    return priority


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
    alert = Alert.objects.select_related("account").get(case_id=decision.case_id)
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
    return knowledge


def _refuse_if_running(alert: Alert) -> None:
    from agents.models import AgentRun

    if alert.case.is_closed:
        raise Conflict(f"{alert.case.reference} is closed; its assessment is final.", code="case_closed")

    if AgentRun.objects.filter(case=alert.case, pipeline="fraud", status__in=AgentRun.ACTIVE).exists():
        raise Conflict(f"{alert.case.reference} is already being assessed; wait for that run to finish.",
                       code="run_active")


@transaction.atomic
def alert_reassess(*, actor, alert: Alert):
    """Run only the orchestrator again over this account's cached specialist results (one LLM call)."""
    _refuse_if_running(alert)
    return pipeline_enqueue(case=alert.case, pipeline="fraud", mode="case_open", actor=actor)


@transaction.atomic
def alert_rerun_all(*, actor, alert: Alert):
    """Run all six agents again (six LLM calls); the earlier runs are kept."""
    _refuse_if_running(alert)
    return pipeline_enqueue(case=alert.case, pipeline="fraud", mode="alert_creation", actor=actor)
