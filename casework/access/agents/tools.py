"""The access investigation's tools (seed 002, "Tool Call Architecture"): check_authorization,
lookup_data, send_notification, generate_report.

Each is a registered Tool with a Pydantic parameter model; the runtime validates the
model's arguments before a handler runs, and a handler's exception becomes a tool error the
agent sees (and the pipeline counts as a failed attempt). Handlers read the database through
casework.access; the one that writes (send_notification) goes through its service.
"""

from __future__ import annotations

import json
import uuid
from datetime import date
from typing import Literal

from django.core.serializers.json import DjangoJSONEncoder
from pydantic import BaseModel, Field

from agents.runtime.tools import Tool

MAX_ROWS = 50


def _json(value) -> dict:
    """What a handler returns is stored in JSON columns (AgentCall): dates become ISO strings."""
    return json.loads(json.dumps(value, cls=DjangoJSONEncoder))


# --- check_authorization ----------------------------------------------------------------------

class CheckAuthorizationArgs(BaseModel):
    employee_id: str = Field(description="The employee whose rights to check (UserID, e.g. u014).")
    system: str = Field(description="The system's name, e.g. FinanceApp.")
    access_level: str = Field(description="The access level the change needed, e.g. Write.")
    on_date: date = Field(description="The day of the change (YYYY-MM-DD); rights are checked as they were then.")


def check_authorization(args: CheckAuthorizationArgs) -> dict:
    """Did the employee hold this access level (or higher) on this system on that day, through a
    direct authorisation or their role? Returns `authorized`, `held_level` and evidence rows."""
    from casework.access.models import AccessLevel, Employee, System
    from casework.access.rights import rights_evaluate

    employee = Employee.objects.select_related("role").filter(employee_id=args.employee_id).first()
    if employee is None:
        raise LookupError(f"No employee {args.employee_id!r}.")
    system = System.objects.filter(code__iexact=args.system).first()
    if system is None:
        raise LookupError(f"No system {args.system!r}.")
    level = AccessLevel.objects.filter(name__iexact=args.access_level).first()
    if level is None:
        raise LookupError(f"No access level {args.access_level!r}; known: "
                          f"{', '.join(AccessLevel.objects.values_list('name', flat=True))}.")
    return _json(rights_evaluate(employee=employee, system=system, level=level, on_date=args.on_date).as_dict())


# --- lookup_data ------------------------------------------------------------------------------

Dataset = Literal["mutation", "employee", "authorisations", "role_authorisations", "sick_leave", "vacation",
                  "audit_trail", "answers"]


class LookupDataArgs(BaseModel):
    dataset: Dataset = Field(description=(
        "What to read: mutation (the change; needs mutation_id), employee (needs employee_id), "
        "authorisations / role_authorisations / sick_leave / vacation (an employee's rows; needs employee_id), "
        "audit_trail (the investigation's status history; needs mutation_id), answers (the employee's claim "
        "and the manager's verdict; needs mutation_id)."))
    mutation_id: str | None = Field(default=None, description="The mutation's id, e.g. M-1001.")
    employee_id: str | None = Field(default=None, description="An employee's id (UserID), e.g. u014.")
    on_date: date | None = Field(default=None, description="Only rows that cover or are valid on this day.")


def _employee(employee_id: str | None):
    from casework.access.models import Employee

    if not employee_id:
        raise ValueError("This dataset needs employee_id.")
    employee = Employee.objects.select_related("role", "manager").filter(employee_id=employee_id).first()
    if employee is None:
        raise LookupError(f"No employee {employee_id!r}.")
    return employee


def _mutation(mutation_id: str | None):
    from casework.access.models import HRMutation

    if not mutation_id:
        raise ValueError("This dataset needs mutation_id.")
    mutation = (HRMutation.objects.select_related("case", "changed_by", "changed_for", "system", "access_level",
                                                  "manager").filter(mutation_id=mutation_id).first())
    if mutation is None:
        raise LookupError(f"No mutation {mutation_id!r}.")
    return mutation


def employee_row(employee) -> dict:
    return _json({"employee_id": employee.employee_id, "name": employee.name, "department": employee.department,
            "job_title": employee.job_title, "role": employee.role.role_id if employee.role else None,
            "manager_id": employee.manager.employee_id if employee.manager else None,
            "manager_name": employee.manager.name if employee.manager else None, "status": employee.status,
            "hire_date": employee.hire_date, "termination_date": employee.termination_date})


def mutation_row(mutation) -> dict:
    return {"mutation_id": mutation.mutation_id, "case": mutation.case.reference,
            "changed_by": mutation.changed_by.employee_id, "changed_by_name": mutation.changed_by.name,
            "changed_for": mutation.changed_for.employee_id, "changed_for_name": mutation.changed_for.name,
            "system": mutation.system.code, "access_level": mutation.access_level.name,
            "change_type": mutation.change_type, "field_changed": mutation.field_changed,
            "old_value": mutation.old_value, "new_value": mutation.new_value,
            "changed_at": mutation.changed_at.isoformat(), "change_date": mutation.change_date.isoformat(),
            "reason": mutation.reason, "manager_id": mutation.manager.employee_id if mutation.manager else None,
            "status": mutation.status, "status_label": mutation.status_label}


def _absences(model, prefix: str, employee, on_date: date | None) -> list[dict]:
    rows = model.objects.covering(employee, on_date) if on_date else model.objects.of(employee)
    return [{"record_id": f"{prefix}:{r.pk}", "employee_id": employee.employee_id, "start_date": r.start_date,
             "end_date": r.end_date, "status": r.status} for r in rows[:MAX_ROWS]]


def lookup_data(args: LookupDataArgs) -> dict:
    """Read reference data and the investigation's own records (read-only)."""
    from audit.models import AuditEntry
    from casework.access.models import (
        DirectAuthorisation,
        EmployeeClaim,
        ManagerVerdict,
        RoleAuthorisation,
        SickLeave,
        Vacation,
    )

    ds = args.dataset
    if ds == "mutation":
        rows = [mutation_row(_mutation(args.mutation_id))]
    elif ds == "employee":
        rows = [employee_row(_employee(args.employee_id))]
    elif ds == "authorisations":
        employee = _employee(args.employee_id)
        qs = DirectAuthorisation.objects.filter(employee=employee).select_related("system", "access_level")
        if args.on_date:
            qs = qs.filter(valid_from__lte=args.on_date).exclude(valid_to__lt=args.on_date)
        rows = [{"authorisation_id": a.authorisation_id, "system": a.system.code, "access_level": a.access_level.name,
                 "valid_from": a.valid_from, "valid_to": a.valid_to, "status": a.status, "granted_by": a.granted_by}
                for a in qs.order_by("valid_from")[:MAX_ROWS]]
    elif ds == "role_authorisations":
        employee = _employee(args.employee_id)
        qs = RoleAuthorisation.objects.filter(role_id=employee.role_id).select_related("role", "system", "access_level")
        rows = [{"role_id": r.role.role_id, "role": r.role.name, "system": r.system.code,
                 "access_level": r.access_level.name} for r in qs[:MAX_ROWS]] if employee.role_id else []
    elif ds == "sick_leave":
        rows = _absences(SickLeave, "sick_leave", _employee(args.employee_id), args.on_date)
    elif ds == "vacation":
        rows = _absences(Vacation, "vacation", _employee(args.employee_id), args.on_date)
    elif ds == "audit_trail":
        mutation = _mutation(args.mutation_id)
        entries = (AuditEntry.objects.filter(case_id=mutation.case_id, action="access.status_changed")
                   .order_by("id")[:MAX_ROWS])
        rows = [{"timestamp": e.timestamp, "old_status": e.data.get("from"), "new_status": e.data.get("to"),
                 "new_status_label": e.data.get("to_label"), "agent": e.actor, "comment": e.data.get("reason", "")}
                for e in entries]
    else:  # answers
        mutation = _mutation(args.mutation_id)
        rows = []
        for claim in EmployeeClaim.objects.filter(request__mutation=mutation).select_related("colleague"):
            rows.append({"type": "employee_claim", "claim_type": claim.claim_type,
                         "colleague_id": claim.colleague.employee_id if claim.colleague else None,
                         "period_start": claim.period_start, "period_end": claim.period_end,
                         "explanation": claim.explanation, "validation": claim.validation_status,
                         "submitted_at": claim.submitted_at})
        for verdict in ManagerVerdict.objects.filter(request__mutation=mutation).select_related("request__recipient"):
            rows.append({"type": "manager_verdict", "manager_id": verdict.request.recipient.employee_id,
                         "approved": verdict.approved, "comment": verdict.comment, "decided_at": verdict.decided_at})
    return _json({"dataset": ds, "count": len(rows), "rows": rows})


# --- send_notification ------------------------------------------------------------------------

class SendNotificationArgs(BaseModel):
    mutation_id: str = Field(description="The mutation the request is about.")
    recipient: Literal["employee", "manager"] = Field(description=(
        "employee: the person who made the change (gets a one-time answer link by email); "
        "manager: their manager (gets the request in their Casework inbox and by email)."))
    subject: str = Field(min_length=5, max_length=200, description="The email subject.")
    body: str = Field(min_length=20, max_length=4000, description=(
        "The message, in plain words: what changed, why it needs an explanation or validation. The answer "
        "link or inbox link is added by the system; do not invent one."))


def send_notification(args: SendNotificationArgs) -> dict:
    """Ask the employee or their manager about the change. Sending again while a request is
    open returns the open one instead of messaging the person twice."""
    from casework.access.models import InfoRequest
    from casework.access.services import request_send

    mutation = _mutation(args.mutation_id)
    kind = InfoRequest.Kind.EMPLOYEE if args.recipient == "employee" else InfoRequest.Kind.MANAGER
    request, created = request_send(actor="agent:access_request_info", mutation=mutation, kind=kind,
                                    subject=args.subject, body=args.body)
    return _json({"request_id": request.pk, "recipient_id": request.recipient.employee_id,
                  "recipient_name": request.recipient.name,
                  "channels": ["email"] if kind == InfoRequest.Kind.EMPLOYEE else ["in_app", "email"],
                  "expires_at": request.expires_at, "already_open": not created})


# --- generate_report --------------------------------------------------------------------------

class GenerateReportArgs(BaseModel):
    mutation_id: str = Field(description="The mutation the report is about.")
    report_kind: Literal["standard", "manual_intervention"] = Field(description=(
        "standard after an approval or a rejection; manual_intervention when a step failed and a person must "
        "take over."))
    summary: str = Field(min_length=20, max_length=2000, description="Executive summary of the investigation.")
    recommendation: Literal["accept", "reject_investigate", "manual_intervention"] = Field(description=(
        "accept: the change is valid and authorised; reject_investigate: the change needs reverting or "
        "further investigation; manual_intervention: plausible but a person must review it."))
    details: list[str] = Field(min_length=1, max_length=30, description=(
        "The findings and evidence, one per line: rights held, the claim and what the records show, the "
        "manager's answer, failures."))


def generate_report(args: GenerateReportArgs) -> dict:
    """File the advisory report; returns its report id."""
    mutation = _mutation(args.mutation_id)
    return {"report_id": f"RPT-{mutation.mutation_id}-{uuid.uuid4().hex[:6]}", "recommendation": args.recommendation}


CHECK_AUTHORIZATION = Tool("check_authorization", check_authorization.__doc__.strip(), CheckAuthorizationArgs,
                           check_authorization, timeout=15.0, consequence="read_only")
LOOKUP_DATA = Tool("lookup_data", lookup_data.__doc__.strip(), LookupDataArgs, lookup_data, timeout=15.0,
                   consequence="read_only")
SEND_NOTIFICATION = Tool("send_notification", send_notification.__doc__.strip(), SendNotificationArgs,
                         send_notification, timeout=20.0, consequence="acts")
GENERATE_REPORT = Tool("generate_report", generate_report.__doc__.strip(), GenerateReportArgs, generate_report,
                       timeout=10.0, consequence="drafts")
