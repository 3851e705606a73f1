"""Every write to a release goes through these functions; each is audited in its transaction.

A release arrives (release_submit), the detective files its report (risk_report_file, called
from the pipeline's finish) or fails (release_assessment_fail), and a person decides
(release_decide): go, no_go or deferred, with a confirmation when the decision goes against
the report (a no_go on a low report, a go on a high one), marked as an override in the audit.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.template.defaultfilters import pluralize

from agents.tasks import pipeline_enqueue
from audit.services import audit_record
from casework.cases.selectors import agent_priority
from casework.cases.services import case_close, case_may_decide, case_set_priority
from casework.entities.extraction import entities_extract
from casework.errors import Conflict, DomainError
from casework.releases.models import SEVERITIES, Release, ReleaseTest, RiskReport
from casework.releases.schemas import release_validate
from casework.releases.states import ReleaseStatus, release_transition

PIPELINE = "releases"


class OverrideNeedsConfirmation(DomainError):
    """The decision goes against the detective's report; ask the person to confirm it."""

    status_code = 409

    def __init__(self, message: str):
        super().__init__(message, code="override_needs_confirmation")


@transaction.atomic
def release_submit(*, actor, data: Any, via: str = "api") -> Release:
    """Validate, save the release and its tests, open its REL case, queue the detective."""
    release_in = release_validate(data)
    existing = Release.objects.select_related("case").filter(release_id=release_in.release_id).first()
    if existing is not None:
        raise Conflict(f"Release {release_in.release_id} was already submitted ({existing.case.reference}).",
                       code="duplicate_release")
    from casework.cases.services import case_create

    headline = release_in.changes[0] if release_in.changes else "no changes listed"
    case = case_create(actor=actor, case_type="release_risk", priority="medium",
                       title=f"Release {release_in.version}: {headline}"[:200],
                       description=f"Release {release_in.release_id}, {len(release_in.changes)} "
                                   f"change{pluralize(len(release_in.changes))}.")
    metrics = release_in.deployment_metrics
    release = Release(case=case, release_id=release_in.release_id, version=release_in.version,
                      changes=release_in.changes, tests_passed=release_in.tests.passed,
                      tests_failed=release_in.tests.failed, tests_skipped=release_in.tests.skipped,
                      error_rate=metrics.error_rate, response_time_p95=metrics.response_time_p95,
                      submitted_via=via)
    release.full_clean(exclude=["case"])
    release.save()
    ReleaseTest.objects.bulk_create([ReleaseTest(release=release, **t.model_dump()) for t in release_in.test_details])
    entities_extract(case=case)
    audit_record(actor=actor, action="release.submitted", case=case, obj=release,
                 data={"release_id": release.release_id, "version": release.version, "via": via,
                       "tests": release_in.tests.model_dump(), "test_details": len(release_in.test_details)})
    pipeline_enqueue(case=case, pipeline=PIPELINE, mode="assess", actor=actor,
                     initial_state={"release_id": release.release_id})
    return release


def _move_if_allowed(*, actor, release: Release, to: str, reason: str, save: tuple[str, ...] = ()) -> Release | None:
    """release_transition, or None when the table has no move from where the release stands
    now (a person decided meanwhile, a late run): what the table refuses is left as it is."""
    try:
        locked = release_transition(actor=actor, release=release, to=to, reason=reason, save=save)
    except Conflict as exc:
        if exc.code != "transition_refused":
            raise
        return None
    release.case.status = locked.case.status
    return locked


def release_assessment_started(*, release: Release) -> bool:
    """The detective's run started: the release is being assessed (the case in progress)."""
    return _move_if_allowed(actor="system", release=release, to=ReleaseStatus.PENDING,
                            reason="The detective started.") is not None


@transaction.atomic
def release_reassess(*, actor, release: Release):
    """Ask the detective again (a new run; each run files at most one report)."""
    if release.case.is_closed:
        raise Conflict(f"{release.case.reference} is decided; it is not assessed again.", code="case_closed")
    from agents.models import AgentRun

    if AgentRun.objects.filter(case=release.case, pipeline=PIPELINE, status__in=AgentRun.ACTIVE).exists():
        raise Conflict(f"The detective is already assessing {release.release_id}.", code="already_running")
    release.assessment_error = ""
    release_transition(actor=actor, release=release, to=ReleaseStatus.PENDING, reason="Assess again.",
                       save=("assessment_error",))
    audit_record(actor=actor, action="release.reassess_requested", case=release.case, obj=release, data={})
    return pipeline_enqueue(case=release.case, pipeline=PIPELINE, mode="assess", actor=actor,
                            initial_state={"release_id": release.release_id})


def severity_floor(release: Release) -> tuple[str, list[str]]:
    """What the release's own data demands, whatever the detective says: seed 004's three
    rules (casework.releases.agents.rules.grade, the offline detective's own) as floors.
    ("high", why): a failed test that is critical (marked so, or in RELEASE_CRITICAL_AREAS), a
    metric at or past its high threshold, a risky change shipping with failing tests or an
    elevated error rate; ("medium", why): any other failed test, a metric past its medium
    threshold, a risky change, a metric missing; ("low", []) otherwise."""
    from casework.releases.agents.rules import grade

    # The release's own records (not the services the tools ask, which may be down).
    details = {"tests": [t.as_dict() for t in release.test_details.all()]}
    high, medium, _ = grade(release.summary(), details)
    if high:
        return "high", high
    return ("medium", medium) if medium else ("low", [])


@transaction.atomic
def risk_report_file(*, run, release_id: str, report_id: str, severity: str, findings: list[str],
                     missing_data: list[str], provider: str = "") -> RiskReport:
    """Save the report the detective filed; the detective proposes, code decides what stands.

    Steps: a report filed without all its data is never low (raised to medium); a report is
    never below what seed 004's rules make of the release's own data (`severity_floor`: high
    for failing critical tests, metrics past the high thresholds, a risky change with failing
    tests or errors; medium for any failure, degraded metric or risky change). A raised
    severity keeps what was filed (adjusted_from) and why (adjusted_reason, and a finding),
    audited as release.severity_guarded. The release is then "report filed" and the case
    awaits a release manager; the report may raise the case's priority, never lower it, and
    never changes a priority a person set (release.priority_kept). A report landing on a
    decided release is kept, and changes nothing else.
    """
    release = Release.objects.select_related("case").get(release_id=release_id)
    if severity not in SEVERITIES:
        raise ValueError(f"Unknown severity {severity!r}.")
    filed, reasons = severity, []
    findings = [str(f) for f in findings]
    if missing_data and severity == "low":
        severity = "medium"
        reasons.append("the report was filed without " + "; ".join(missing_data))
    floor, why = severity_floor(release)
    if SEVERITIES.index(floor) < SEVERITIES.index(severity):  # SEVERITIES runs from high to low
        severity = floor
        reasons.append("; ".join(w.rstrip(".") for w in why))
    adjusted_from, adjusted_reason = (filed, "; and ".join(reasons)) if severity != filed else ("", "")
    if adjusted_from:
        findings.append(f"Severity raised from {filed} to {severity}: {adjusted_reason}.")
    report = RiskReport(report_id=report_id, release=release, run=run, severity=severity, findings=findings,
                        missing_data=missing_data, adjusted_from=adjusted_from, adjusted_reason=adjusted_reason,
                        provider=provider)
    report.full_clean(exclude=["release", "run"])
    report.save()
    actor = "agent:detective"
    audit_record(actor=actor, action="release.report_filed", case=release.case, obj=report,
                 data={"report_id": report_id, "severity": severity, "findings": findings,
                       "missing_data": missing_data, "adjusted_from": adjusted_from, "run": run.pk if run else None})
    if adjusted_from:
        audit_record(actor="system", action="release.severity_guarded", case=release.case, obj=report,
                     data={"report_id": report_id, "filed": filed, "applied": severity, "reason": adjusted_reason})
    release.assessment_error = ""
    locked = _move_if_allowed(actor=actor, release=release, to=ReleaseStatus.FILED,
                              reason=f"Risk report {report_id}: {severity}.", save=("assessment_error",))
    if locked is not None and not locked.case.is_closed:
        # The report is a recommendation: the case now waits for the release manager. It may
        # raise the priority (a low report never lowers it), and a person's priority stands.
        priority, person = agent_priority(locked.case, severity, may_lower=False)
        if person:
            audit_record(actor="system", action="release.priority_kept", case=release.case, obj=report,
                         data={"report_id": report_id, "severity": severity, "person": person,
                               "priority": locked.case.priority,
                               "reason": f"{person} set the priority to {locked.case.priority}; the detective's "
                                         f"report ({severity}) does not overwrite a person's priority."})
        elif priority:
            case_set_priority(actor=actor, case=locked.case, priority=priority,
                              reason=f"Risk report {report_id}: {severity}."
                                     + (f" Raised from {filed}: {adjusted_reason}." if adjusted_from else ""))
    return report


@transaction.atomic
def release_assessment_fail(*, run, release_id: str, error: str, actor: str = "agent:detective") -> None:
    """The detective filed nothing: the release says the assessment failed, with why."""
    release = Release.objects.select_related("case").get(release_id=release_id)
    release.assessment_error = error[:2000]
    if _move_if_allowed(actor=actor, release=release, to=ReleaseStatus.FAILED, reason=error[:1000],
                        save=("assessment_error",)) is None:
        return
    audit_record(actor=actor, action="release.assessment_failed", case=release.case, obj=release,
                 data={"error": error[:2000], "run": run.pk if run else None})


def release_decided(*, actor, release: Release, outcome_label: str, reason: str) -> None:
    """A person's decision closed the release's case (here, the generic close or a bulk close):
    the release is decided. Nothing changes once it is."""
    if release.assessment != ReleaseStatus.DECIDED:
        release_transition(actor=actor, release=release, to=ReleaseStatus.DECIDED,
                           reason=f"{outcome_label}: {reason}"[:1000])


def override_of(outcome: str, severity: str | None) -> str:
    """Why this decision goes against the report, or ""."""
    if outcome == "no_go" and severity == "low":
        return "a no-go for a release the detective rated low"
    if outcome == "go" and severity == "high":
        return "a go for a release the detective rated high"
    return ""


@transaction.atomic
def release_decide(*, actor, release: Release, outcome: str, reason: str, confirm_override: bool = False):
    """The release manager's go / no_go / deferred, closing the case (one final decision).
    Release managers and admins decide; an investigator reads and comments (PermissionDenied)."""
    case_may_decide(actor, release.case)  # before the override check: an investigator gets the 403
    report = release.reports.order_by("-filed_at", "-id").first()
    severity = report.severity if report else None
    override = override_of(outcome, severity)
    if override and not confirm_override:
        raise OverrideNeedsConfirmation(f"This is {override} ({report.report_id}). Confirm to decide against "
                                        "the report; it is recorded as an override.")
    decision = case_close(actor=actor, case=release.case, outcome=outcome, reason=reason)
    release_decided(actor=actor, release=release, outcome_label=decision.outcome_label, reason=reason)
    data = {"report_id": report.report_id if report else None, "severity": severity, "override": bool(override)}
    type(decision).objects.filter(pk=decision.pk).update(data=data)
    decision.data = data
    audit_record(actor=actor, action="release.override" if override else "release.decided", case=release.case,
                 obj=decision, data={"outcome": outcome, **data, "override_reason": override})
    return decision
