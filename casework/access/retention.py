"""An access review's special-category data, for retention (casework.privacy): the absence
details of an employee's claim (casework/access/special.py: which absence it was, its dates, the
explanation and the records check that quote them) and the agents' prompts and answers that
quote them. The case, the change, the manager's verdict and the decision stay."""

from __future__ import annotations

from casework.access.models import Employee, EmployeeClaim, SickLeave, Vacation
from casework.access.special import ABSENCE_CLAIMS
from casework.cases.types import Retention

REMOVED = "Absence details removed under the retention policy."


def claims_purge(case) -> dict[str, int]:
    # Which absence it was (sick leave or vacation) is itself a health fact: the claim becomes
    # "other", with the explanation saying why.
    # claim_type is encrypted at rest (casework.security.fields): the database cannot compare it,
    # so the case's few claims are read and told apart here.
    ids = [claim.pk for claim in EmployeeClaim.objects.filter(request__mutation__case=case).only("pk", "claim_type")
           if claim.claim_type in ABSENCE_CLAIMS]
    count = EmployeeClaim.objects.filter(pk__in=ids).update(claim_type=EmployeeClaim.ClaimType.OTHER, period_start=None, period_end=None,
                          explanation=REMOVED, validation={})
    return {"absence details": count}


def claims_held(case) -> dict:
    return {"claims": list(EmployeeClaim.objects.filter(request__mutation__case=case).values(
        "claim_type", "period_start", "period_end", "explanation", "submitted_at", "validation_status"))}

def _employee(entity) -> Employee | None:
    if entity.kind != "employee" or entity.value.startswith("erased:"):
        return None
    return Employee.objects.filter(employee_id=entity.value).select_related("user").first()


def employee_identifiers(entity) -> list[str]:
    """An employee's name and e-mail address, and their Casework account's (a manager's), for an
    employee entity: what an erasure replaces by a pseudonym in the access changes naming them.
    Their account's username is not among them: it is the actor of what they did, which the
    audit trail keeps (casework.privacy.erasure)."""
    employee = _employee(entity)
    if employee is None:
        return []
    values = [employee.name, employee.email]
    if employee.user is not None:
        values += [employee.user.get_full_name(), employee.user.email]
    return list(dict.fromkeys(v.strip() for v in values if v and v.strip()))


def employee_accounts(entity) -> list[int]:
    employee = _employee(entity)
    return [employee.user_id] if employee is not None and employee.user_id else []


def employee_records_erase(entity) -> dict[str, int]:
    """The employee's own absence records (health data, kept here for the claim checks; they
    belong to no case): deleted. Their Employee row stays, pseudonymised, for the changes that
    point at it."""
    employee = _employee(entity)
    if employee is None:
        return {}
    sick, _ = SickLeave.objects.filter(employee=employee).delete()
    away, _ = Vacation.objects.filter(employee=employee).delete()
    return {"sick leave records": sick, "vacation records": away}


RETENTION = Retention(
    identifiers=employee_identifiers, accounts=employee_accounts, subject_erase=employee_records_erase,
    purge=claims_purge, held=claims_held, shared=("agent_calls",),
    describe="Absence details (kind, dates, explanation, records check) and the agents' prompts and answers "
             "quoting them; the case, the change, the verdict and the decision stay.")
