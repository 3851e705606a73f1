"""What the agents hand back, written as the access change's records."""

from __future__ import annotations

import logging

from django.db import transaction
from django.utils import timezone

from audit.services import audit_record
from casework.access.models import (
    AdvisoryReport,
    EmployeeClaim,
    HRMutation,
    RightsCheck,
)
from casework.errors import DomainError

logger = logging.getLogger(__name__)


@transaction.atomic
def rights_check_record(*, mutation: HRMutation, result: dict, message: str, run_id: int | None = None,
                        call_key: str = "") -> RightsCheck:
    """Store the rights-check evidence a step accepted (once per run and call)."""
    if call_key and run_id is not None:
        existing = RightsCheck.objects.filter(run_id=run_id, call_key=call_key).first()
        if existing:
            return existing
    evidence = list(result.get("evidence") or [])
    if mutation.is_self_change:
        # Whatever the rights say, a change to one's own access is flagged in the evidence.
        evidence.insert(0, {"source": "self_change", "reference": mutation.mutation_id,
                            "system": mutation.system.code, "level": mutation.access_level.name, "covers": False,
                            "note": f"self-change: {mutation.changed_by.name} changed their own access"})
    check = RightsCheck.objects.create(
        mutation=mutation, authorized=bool(result.get("authorized")), held_level=result.get("held_level") or "",
        evidence=evidence, message=(message or "")[:4000], run_id=run_id,
        call_key=call_key,
    )
    audit_record(actor="agent:access_rights_check", action="access.rights_checked", case=mutation.case, obj=check,
                 data={"authorized": check.authorized, "held_level": check.held_level,
                       "covering": [r.get("reference") for r in check.evidence if r.get("covers")],
                       "self_change": mutation.is_self_change})
    return check


@transaction.atomic
def report_record(*, mutation: HRMutation, report_id: str, kind: str, summary: str, recommendation: str,
                  details: list[str], run_id: int | None = None, failures: list[dict] | None = None) -> AdvisoryReport:
    """Store the advisory report. Its kind follows the case's status (guards.report_kind_guard:
    Manual Intervention Required files a manual-intervention report recommending manual
    intervention, any other status a standard one), and its recommendation the case's facts
    (guards.recommendation_guard). What the facts do not allow is replaced, the report says
    so in its summary and details, and each override is recorded on the case."""
    from casework.access.guards import guard_override_record, recommendation_guard, report_kind_guard

    existing = AdvisoryReport.objects.filter(report_id=report_id).first()
    if existing:
        return existing
    details = [str(d)[:2000] for d in details][:39]
    filed = (kind, recommendation)
    kind, recommendation, kind_why = report_kind_guard(mutation=mutation, kind=kind, recommendation=recommendation,
                                                       failures=failures or [])
    if kind_why:
        details.append(f"Code filed this as a {kind.replace('_', '-')} report: {kind_why}.")
    proposed = recommendation
    recommendation, why = recommendation_guard(mutation=mutation, recommendation=proposed)
    labels = dict(AdvisoryReport.Recommendation.choices)
    if why:
        note = (f"The agent recommended {labels.get(proposed, proposed)}; code changed it to "
                f"{labels[recommendation]}: {why}.")
        summary = f"{note} {summary}"
        details.append(note)
    report = AdvisoryReport(mutation=mutation, report_id=report_id, kind=kind, summary=summary[:4000],
                            recommendation=recommendation, details=details, run_id=run_id)
    report.full_clean()
    report.save()
    audit_record(actor="agent:access_advisory", action="access.report_generated", case=mutation.case, obj=report,
                 data={"report_id": report_id, "kind": kind, "recommendation": recommendation,
                       "agent_recommendation": filed[1], "agent_kind": filed[0]})
    if kind_why:
        guard_override_record(case=mutation.case, obj=report, guard="report_kind",
                              agent_said=f"{filed[0]} report recommending {filed[1]}",
                              code_says=f"{kind} report recommending {proposed}", reason=kind_why)
    if why:
        guard_override_record(case=mutation.case, obj=report, guard="recommendation", agent_said=proposed,
                              code_says=recommendation, reason=why)
    return report


@transaction.atomic
def claim_record_validation(*, claim: EmployeeClaim, status: str, result: dict) -> EmployeeClaim:
    if status not in EmployeeClaim.Validation.values or status == EmployeeClaim.Validation.PENDING:
        raise DomainError(f"Unknown claim validation {status!r}.", code="bad_validation")
    EmployeeClaim.objects.filter(pk=claim.pk).update(validation_status=status, validation=result,
                                                     validated_at=timezone.now())
    claim.refresh_from_db()
    audit_record(actor="agent:access_request_info", action="access.claim_validated",
                 case=claim.request.mutation.case, obj=claim,
                 # The message names the absence the records show (special-category): it stays in
                 # the claim's validation, encrypted, and out of the audit trail.
                 data={"status": status})
    return claim

