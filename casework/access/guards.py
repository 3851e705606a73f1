"""Rules in code over what the access agents say (issue 22: agents recommend, code guards).

    claim_verdict        whether a sick-leave or vacation claim holds, computed from the
                         records (who, which kind of absence, which dates); the model may
                         explain it, never decide it. An invalid claim names the record that
                         contradicts it, or says that no record covers it.
    recommendation_guard an advisory recommendation must agree with the case's facts: never
                         "accept" on a change nothing covers (the manager denied it, the
                         explanation was not confirmed, the changer had no rights), never
                         "reject" on one the records cover; the decision form pre-selects the
                         guarded recommendation only.
    report_kind_guard    the advisory report's kind follows the case's status (seed 002, "Error
                         Handling & Retry Logic"): a step that failed three times leaves the case
                         at Manual Intervention Required, and its report is a manual-intervention
                         report recommending manual intervention; a report on any other status is
                         a standard one.
    validator_choose     who validates the explanation: the changer's manager, unless they
                         made the change, benefit from it, have no login, or are absent (sick
                         leave or vacation on the day of the change or of the request); then
                         the manager's own manager, up the line; then the system's fallback
                         approver (System.fallback_approver, set by an admin).

Each time code sets an agent's answer aside, `guard_override_record` writes an
`access.guard_override` audit entry with the agent's answer, the code's and why; the case
page lists them (selectors.mutation_overview "overrides").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date

from audit.services import audit_record

OVERRIDE_ACTION = "access.guard_override"

GUARD_LABELS = {
    "claim_validity": "Claim validity",
    "recommendation": "Advisory recommendation",
    "validator": "Validating manager",
    "report_kind": "Report kind",
}


def guard_override_record(*, case, obj, guard: str, agent_said: str, code_says: str, reason: str,
                          actor="system") -> None:
    """Record on the case that code overrode an agent's answer, and why (in the caller's
    transaction)."""
    audit_record(actor=actor, action=OVERRIDE_ACTION, case=case, obj=obj,
                 data={"guard": guard, "label": GUARD_LABELS.get(guard, guard), "agent_said": str(agent_said)[:200],
                       "code_says": str(code_says)[:200], "reason": reason[:1000]})


# --- the claim ---------------------------------------------------------------------------------

@dataclass
class ClaimVerdict:
    status: str  # valid | invalid | unverifiable (EmployeeClaim.Validation)
    message: str
    checks: list[dict] = field(default_factory=list)
    cited_records: list[str] = field(default_factory=list)


def _absence_row(prefix: str, record) -> str:
    return f"{prefix}:{record.pk} ({record.start_date} to {record.end_date}, {record.status})"


def _rights_findings(mutation) -> list[str]:
    """What the rights check found against the changer's own access on the system: grants
    that had ended, were revoked or not yet valid on the day."""
    check = mutation.rights_checks.first()
    if check is None or check.authorized:
        return []
    system = mutation.system.code
    return [f"{row.get('reference')} ({row.get('level')} on {system}) {row.get('note')}"
            for row in check.evidence
            if row.get("source") == "direct" and row.get("system") == system
            and str(row.get("note", "")).startswith(("ended on", "revoked", "not yet valid"))]


def claim_verdict(*, claim, mutation) -> ClaimVerdict:
    """Does the employee's claim hold, by the records alone?

    A sick-leave or vacation cover holds when the named colleague was employed on the day
    of the change, an approved absence of that kind of theirs covers the day, and the
    period the employee states includes it. A failed check names the record that
    contradicts the claim (a terminated colleague, an absence of the other kind, one not
    approved) or says that no record covers the day. An explanation of another kind can
    be neither confirmed nor contradicted by these records: unverifiable, which the flow
    still treats as not confirmed (seed 002 knows valid and invalid claims only).
    """
    from casework.access.models import EmployeeClaim, SickLeave, Vacation

    day: date = mutation.change_date
    if claim.claim_type == EmployeeClaim.ClaimType.OTHER:
        detail = ("no record could verify it: only an approved sick leave or vacation of a colleague covering "
                  f"{day} can confirm an explanation, and this one gives another reason")
        checks = [{"check": "A record confirms the explanation", "passed": False, "detail": detail}]
        message = f"Not verified: {detail}."
        findings = _rights_findings(mutation)
        if findings:
            message += " The rights check found: " + "; ".join(findings) + "."
        return ClaimVerdict("unverifiable", message, checks)

    sick = claim.claim_type == EmployeeClaim.ClaimType.SICK_LEAVE
    model, prefix, kind = (SickLeave, "sick_leave", "sick leave") if sick else (Vacation, "vacation", "vacation")
    other_model, other_prefix, other_kind = (Vacation, "vacation", "vacation") if sick else (
        SickLeave, "sick_leave", "sick leave")
    colleague = claim.colleague
    checks = []

    employed = colleague is not None and colleague.employed_on(day) and not (
        colleague.status == colleague.Status.TERMINATED and not colleague.termination_date)
    checks.append({"check": f"{colleague.name if colleague else 'The colleague'} was employed on {day}",
                   "passed": employed,
                   "detail": (f"employee record {colleague.employee_id}: {colleague.status}"
                              + (f", left on {colleague.termination_date}" if colleague.termination_date else "")
                              + (f", hired on {colleague.hire_date}" if colleague.hire_date else ""))
                   if colleague else "no colleague named"})

    covering = model.objects.covering(colleague, day, status="approved") if colleague else []
    if covering:
        detail = "records " + ", ".join(_absence_row(prefix, r) for r in covering)
    elif colleague is None:
        detail = "no colleague named, so no record can cover the day"
    else:
        unapproved = [r for r in model.objects.covering(colleague, day) if r.status != "approved"]
        other = other_model.objects.covering(colleague, day, status="approved")
        if unapproved:
            detail = (f"no approved {kind} on {day}: the record that covers it is not approved: "
                      + ", ".join(_absence_row(prefix, r) for r in unapproved))
        elif other:
            detail = (f"no approved {kind} on {day}: the records show a {other_kind} instead: "
                      + ", ".join(_absence_row(other_prefix, r) for r in other))
        else:
            nearest = model.objects.of(colleague)[::-1][:3]
            detail = (f"no approved {kind} on {day}: no record of {colleague.employee_id} covers the day"
                      + ("; recorded: " + ", ".join(_absence_row(prefix, r) for r in nearest) if nearest else ""))
    checks.append({"check": f"An approved {kind} of the colleague covers {day}", "passed": bool(covering),
                   "detail": detail})

    in_period = bool(claim.period_start and claim.period_end and claim.period_start <= day <= claim.period_end)
    checks.append({"check": f"The period the employee states includes {day}", "passed": in_period,
                   "detail": f"stated {claim.period_start} to {claim.period_end}; the change ({mutation.mutation_id}) "
                             f"was made on {day}"})

    if all(c["passed"] for c in checks):
        record = covering[0]
        return ClaimVerdict("valid", (f"Confirmed by the records: {colleague.name} was on approved {kind} on {day} "
                                      f"({prefix}:{record.pk}, {record.start_date} to {record.end_date}), within "
                                      "the period stated."),
                            checks, [f"{prefix}:{r.pk}" for r in covering])
    return ClaimVerdict("invalid", "Not confirmed: " + "; ".join(f"{c['check'].lower()} — {c['detail']}"
                                                                 for c in checks if not c["passed"]), checks)


# --- the recommendation ------------------------------------------------------------------------

def recommendation_guard(*, mutation, recommendation: str) -> tuple[str, str]:
    """The recommendation the case's facts allow: (recommendation, why it was changed, or "").

    "accept" needs a change the records cover: the changer held the rights, or a validator
    approved an explanation the records confirm. "reject_investigate" on a covered change
    becomes manual intervention (correct, but the agent had doubts a person should weigh).
    "manual_intervention" always stands."""
    from casework.access.models import EmployeeClaim, ManagerVerdict

    check = mutation.rights_checks.first()
    verdict = ManagerVerdict.objects.filter(request__mutation=mutation).order_by("-decided_at", "-id").first()
    claim = EmployeeClaim.objects.filter(request__mutation=mutation).order_by("-submitted_at", "-id").first()
    authorized = bool(check and check.authorized)
    denied = verdict is not None and not verdict.approved
    confirmed = claim is not None and claim.validation_status == EmployeeClaim.Validation.VALID
    covered = authorized or (verdict is not None and verdict.approved and confirmed)
    if recommendation == "accept" and not covered:
        if denied:
            return "reject_investigate", "the manager denied the change"
        if claim is not None and claim.validation_status in ("invalid", "unverifiable"):
            return "reject_investigate", (f"the employee's explanation was not confirmed by the records "
                                          f"({claim.get_validation_status_display().lower()})")
        return "manual_intervention", ("nothing covers the change: the changer did not hold the rights and no "
                                       "validator approved an explanation the records confirm")
    if recommendation == "reject_investigate" and covered and not denied:
        how = "the changer held the rights" if authorized else "the validator approved a confirmed explanation"
        return "manual_intervention", f"the records cover the change ({how}); a person weighs the agent's doubts"
    return recommendation, ""


def report_kind_guard(*, mutation, kind: str, recommendation: str, failures: list[dict]) -> tuple[str, str, str]:
    """(kind, recommendation, why they were changed, or "") as the case's status allows."""
    if mutation.status == "manual_intervention_required":
        if (kind, recommendation) == ("manual_intervention", "manual_intervention"):
            return kind, recommendation, ""
        failed = "; ".join(f"{f.get('label') or f.get('step')} failed {f.get('attempts')} times" for f in failures)
        return "manual_intervention", "manual_intervention", (
            "the investigation stopped at Manual Intervention Required"
            + (f" ({failed})" if failed else "") + ": seed 002 files a manual-intervention report, and a person "
            "finishes what the agents could not")
    if kind != "standard":
        return "standard", recommendation, (f"the investigation finished ({mutation.status_label}); a "
                                            "manual-intervention report is only for a step that failed three times")
    return kind, recommendation, ""


# --- the validator -----------------------------------------------------------------------------

@dataclass
class ValidatorChoice:
    validator: object | None
    role: str = ""
    first: object | None = None  # who would be asked by default (the manager)
    skipped: list[str] = field(default_factory=list)

    @property
    def is_fallback(self) -> bool:
        return self.validator is not None and self.first is not None and self.validator.pk != self.first.pk


def _absence_on(employee, days: list[date]) -> str:
    from casework.access.models import SickLeave, Vacation

    for model, prefix, kind in ((SickLeave, "sick_leave", "sick leave"), (Vacation, "vacation", "vacation")):
        for day in days:
            record = next(iter(model.objects.covering(employee, day, status="approved")), None)
            if record:
                return f"on {kind} on {day} ({prefix}:{record.pk}, {record.start_date} to {record.end_date})"
    return ""


def _why_not(candidate, mutation, days: list[date]) -> str:
    if candidate.pk == mutation.changed_by_id:
        return "made the change"
    if candidate.pk == mutation.changed_for_id:
        return "benefits from the change"
    if candidate.status != candidate.Status.ACTIVE or not candidate.employed_on(days[-1]):
        return "is no longer employed"
    if candidate.user_id is None or not candidate.user.is_active:
        return "has no Casework login to answer with"
    absent = _absence_on(candidate, days)
    return f"is absent: {absent}" if absent else ""


def validator_choose(*, mutation, today: date) -> ValidatorChoice:
    """Who validates the changer's explanation (see the module's docstring). Reads only."""
    first = mutation.manager or mutation.changed_by.manager
    candidates: list[tuple[object, str]] = []
    seen: set[int] = set()
    person, role = first, "manager"
    while person is not None and person.pk not in seen and len(candidates) < 10:
        candidates.append((person, role))
        seen.add(person.pk)
        person, role = person.manager, f"{role}'s manager" if role == "manager" else role
    fallback = mutation.system.fallback_approver
    if fallback is not None and fallback.pk not in seen:
        candidates.append((fallback, f"fallback approver for {mutation.system.code}"))
    days = sorted({mutation.change_date, today})
    choice = ValidatorChoice(None, first=first)
    for candidate, role in candidates:
        why = _why_not(candidate, mutation, days)
        if not why:
            choice.validator, choice.role = candidate, role
            return choice
        choice.skipped.append(f"{candidate.name} ({candidate.employee_id}, {role}) {why}")
    if not candidates:
        choice.skipped.append(f"{mutation.changed_by.name} has no manager, and {mutation.system.code} has no "
                              "fallback approver")
    return choice
