"""What an access change adds to the evaluation harness (agents.evals), registered on its
CaseType (casework.cases.types.case_type_register_evaluation): a scenario becomes a change
through the access services (the organisation slice it needs, the change, and the employee's
and manager's answers when the flow asks for them); a decided case becomes a scenario (the
organisation slice, the change and the answers people gave, names and logins masked); the
rights check and the advisory report are the decision fields beside the record."""

from __future__ import annotations

from datetime import date, datetime
from pathlib import Path

from django.db import transaction
from django.utils.dateparse import parse_date, parse_datetime

from casework.cases.types import Evaluation, Grounding

ACTOR = "evaluation"

# The person's outcome -> what the agents should have concluded.
DECISION_FIELDS = {"accepted": {"extra.report_recommendation": "accept"},
                   "rejected": {"extra.report_recommendation": "reject_investigate"},
                   "manual": {"extra.report_recommendation": "manual_intervention"}}


def submit_access(data: dict, reference: dict) -> None:
    """reference: levels {name: rank}, systems [{code, available}], roles [{role_id, name,
    department, grants {system: level}}], employees [{employee_id, name, department, role,
    manager, login}], authorisations, sick_leave, vacations; input: the change as the API
    takes it (employee ids, system code, level name, changed_at) and, optionally, the
    employee's answer and the manager's verdict, given when the flow asks for them."""
    from casework.access.models import HRMutation
    from casework.access.services import mutation_submit

    org = _access_org(reference)
    with transaction.atomic():
        mutation = mutation_submit(
            actor=ACTOR, changed_by=org["people"][data["changed_by"]], changed_for=org["people"][data["changed_for"]],
            system=org["systems"][data["system"]], access_level=org["levels"][data["access_level"]],
            field_changed=data.get("field_changed", "Access level"), old_value=data.get("old_value", ""),
            new_value=data.get("new_value", ""), reason=data.get("reason", ""), changed_at=_dt(data["changed_at"]))
    _drain()
    mutation = HRMutation.objects.get(pk=mutation.pk)
    answer = data.get("employee_answer")
    if answer and mutation.status == "awaiting_user_response":
        _access_employee_answers(mutation, answer, org)
        _drain()
        mutation = HRMutation.objects.get(pk=mutation.pk)
    verdict = data.get("manager_verdict")
    if verdict and mutation.status == "awaiting_manager_response":
        _access_manager_answers(mutation, verdict)


def _access_employee_answers(mutation, answer: dict, org: dict) -> None:
    from casework.access.links import link_token
    from casework.access.models import InfoRequest
    from casework.access.services import claim_submit

    request = InfoRequest.objects.get(mutation=mutation, kind=InfoRequest.Kind.EMPLOYEE, answered_at__isnull=True,
                                      cancelled_at__isnull=True)
    colleague = org["people"].get(answer.get("colleague") or "")
    claim_submit(token=link_token(request), claim_type=answer["claim_type"], colleague=colleague,
                 period_start=_d(answer.get("period_start")), period_end=_d(answer.get("period_end")),
                 explanation=answer.get("explanation", ""))


def _access_manager_answers(mutation, verdict: dict) -> None:
    from casework.access.models import InfoRequest
    from casework.access.services import verdict_submit

    request = InfoRequest.objects.select_related("recipient__user").get(
        mutation=mutation, kind=InfoRequest.Kind.MANAGER, answered_at__isnull=True)
    verdict_submit(actor=request.recipient.user, request=request, approved=bool(verdict["approved"]),
                   comment=verdict.get("comment", ""))


def _access_org(ref: dict) -> dict:
    from casework.access.models import (
        AccessLevel,
        DirectAuthorisation,
        Employee,
        Role,
        RoleAuthorisation,
        SickLeave,
        System,
        Vacation,
    )
    from casework.people.roles import MANAGER
    from casework.people.services import user_create

    with transaction.atomic():
        levels = {name: AccessLevel.objects.create(name=name, rank=rank) for name, rank in ref.get("levels", {}).items()}
        systems = {s["code"]: System.objects.create(code=s["code"], description=s.get("description", ""),
                                                    available=s.get("available", True)) for s in ref.get("systems", [])}
        roles = {}
        for r in ref.get("roles", []):
            roles[r["role_id"]] = Role.objects.create(role_id=r["role_id"], name=r["name"],
                                                      department=r.get("department", ""))
            for system, level in (r.get("grants") or {}).items():
                RoleAuthorisation.objects.create(role=roles[r["role_id"]], system=systems[system],
                                                 access_level=levels[level])
        people = {}
        for e in ref.get("employees", []):
            user = None
            if e.get("login"):
                first, _, last = e["name"].partition(" ")
                user = user_create(actor="system", username=e["login"], password=f"{e['login']}-eval-pass-1",
                                   role=MANAGER, first_name=first, last_name=last, email=f"{e['login']}@example.com")
            people[e["employee_id"]] = Employee.objects.create(
                employee_id=e["employee_id"], name=e["name"], department=e.get("department", ""),
                job_title=e.get("job_title", ""), role=roles.get(e.get("role") or ""), user=user,
                email=f"{e['employee_id']}@example.com", hire_date=date(2020, 1, 1),
                manager=people.get(e.get("manager") or ""))
        for a in ref.get("authorisations", []):
            DirectAuthorisation.objects.create(
                authorisation_id=a["id"], employee=people[a["employee"]], system=systems[a["system"]],
                access_level=levels[a["level"]], valid_from=_d(a["valid_from"]), valid_to=_d(a.get("valid_to")),
                status=a.get("status", "active"))
        for model, key in ((SickLeave, "sick_leave"), (Vacation, "vacations")):
            for row in ref.get(key, []):
                model.objects.create(employee=people[row["employee"]], start_date=_d(row["start"]),
                                     end_date=_d(row["end"]), status=row.get("status", "approved"))
    return {"levels": levels, "systems": systems, "people": people}


def _drain() -> None:
    """Run the queued runs to their end. An agent's e-mail that waits for approval (issue 46:
    send_notification acts outside Casework) is approved as asked, by the scenario's
    investigator: a scenario plays the people's part, and this is one of them."""
    from agents.evals.runner import drain_runs
    from agents.models import RunPause
    from agents.runtime.pause import pause_answer

    for _ in range(6):  # each step of the flow that e-mails someone waits once
        drain_runs()
        pending = list(RunPause.objects.filter(status=RunPause.Status.PENDING, kind=RunPause.Kind.APPROVAL))
        if not pending:
            return
        for pause in pending:
            pause_answer(pause=pause, actor=ACTOR, approve=True)


def _d(value) -> date | None:
    if value is None or isinstance(value, date):
        return value
    return parse_date(str(value))


def _dt(value) -> datetime:
    return value if isinstance(value, datetime) else parse_datetime(str(value))


# --- export: a decided change as a scenario --------------------------------------------

def access_scenario_parts(mutation, mask) -> tuple[dict, dict, dict]:
    from casework.access.models import (
        AccessLevel,
        DirectAuthorisation,
        EmployeeClaim,
        InfoRequest,
        ManagerVerdict,
        SickLeave,
        System,
        Vacation,
    )

    claim = EmployeeClaim.objects.select_related("colleague").filter(request__mutation=mutation).first()
    verdict = ManagerVerdict.objects.filter(request__mutation=mutation).first()
    people = {mutation.changed_by, mutation.changed_for}
    if claim and claim.colleague:
        people.add(claim.colleague)
    for person in list(people):
        if person.manager_id:
            people.add(person.manager)
    managers = {p.manager_id for p in people if p.manager_id}
    answered = set(InfoRequest.objects.filter(mutation=mutation, kind=InfoRequest.Kind.MANAGER)
                   .values_list("recipient_id", flat=True))
    # Managers first, so that an employee's manager exists when the employee is created.
    ordered = sorted(people, key=lambda p: (p.pk not in managers, p.employee_id))
    roles = {p.role for p in people if p.role_id}
    reference = {
        "levels": {lv.name: lv.rank for lv in AccessLevel.objects.order_by("rank")},
        "systems": [{"code": s.code, "available": s.available} for s in System.objects.order_by("code")],
        "roles": [{"role_id": r.role_id, "name": r.name, "department": r.department,
                   "grants": {a.system.code: a.access_level.name for a in r.authorisations.select_related(
                       "system", "access_level")}} for r in sorted(roles, key=lambda r: r.role_id)],
        "employees": [{"employee_id": p.employee_id, "name": mask("name", p.name), "department": p.department,
                       "job_title": p.job_title, "role": p.role.role_id if p.role_id else None,
                       "manager": p.manager.employee_id if p.manager_id and p.manager in people else None,
                       **({"login": mask("login", p.employee_id)} if p.pk in managers | answered else {})}
                      for p in ordered],
        "authorisations": [{"id": a.authorisation_id, "employee": a.employee.employee_id, "system": a.system.code,
                            "level": a.access_level.name, "valid_from": a.valid_from.isoformat(),
                            "valid_to": a.valid_to.isoformat() if a.valid_to else None, "status": a.status}
                           for a in DirectAuthorisation.objects.filter(employee__in=people)
                           .select_related("employee", "system", "access_level").order_by("authorisation_id")],
        "sick_leave": _leave(SickLeave, people),
        "vacations": _leave(Vacation, people),
    }
    data = {"changed_by": mutation.changed_by.employee_id, "changed_for": mutation.changed_for.employee_id,
            "system": mutation.system.code, "access_level": mutation.access_level.name,
            "field_changed": mutation.field_changed, "old_value": mutation.old_value, "new_value": mutation.new_value,
            "reason": mask.text(mutation.reason), "changed_at": mutation.changed_at.isoformat()}
    if claim:
        data["employee_answer"] = {
            "claim_type": claim.claim_type, "colleague": claim.colleague.employee_id if claim.colleague else None,
            "period_start": claim.period_start.isoformat() if claim.period_start else None,
            "period_end": claim.period_end.isoformat() if claim.period_end else None,
            "explanation": mask.text(claim.explanation)}
    if verdict:
        data["manager_verdict"] = {"approved": verdict.approved, "comment": mask.text(verdict.comment)}
    return data, reference, {}


def _leave(model, people) -> list[dict]:
    return [{"employee": row.employee.employee_id, "start": row.start_date.isoformat(), "end": row.end_date.isoformat(),
             "status": row.status} for row in sorted(model.objects.filter(employee__in=people).select_related("employee"),
                                                     key=lambda r: (r.start_date, r.pk))]


def access_observed(case) -> dict:
    """Decision fields that live beside the record: the rights check, the advisory report."""
    extras: dict = {}
    mutation = case.access_change
    check = mutation.rights_checks.order_by("-id").first()
    if check is not None:
        extras["extra.authorized"] = check.authorized
    report = mutation.reports.order_by("-id").first()
    if report is not None:
        extras["extra.report_recommendation"] = report.recommendation
        extras["extra.report_kind"] = report.kind
    return extras


def access_statements(case) -> list[str]:
    """What the orchestrator, the rights check and the advisory report state."""
    from agents.evals.grounding import outputs_of, texts_in

    return texts_in(outputs_of(case), ("summary", "message", "details", "concerns"))


# Employee (account) ids, mutation ids, grant and role references, dates.
GROUNDING = Grounding(statements=access_statements,
                      items={"account id": r"\bu\d{3,}\b", "mutation id": r"\bM-[0-9a-f]{8}\b",
                             "reference": r"\bR-[A-Z0-9-]+\b", "date": r"\b\d{4}-\d{2}-\d{2}\b"})

EVALUATION = Evaluation(submit=submit_access, export=access_scenario_parts, decision_fields=DECISION_FIELDS,
                        observed=access_observed, grounding=GROUNDING,
                        suite_dir=Path(__file__).resolve().parent / "scenarios",
                        setting_prefixes=("ACCESS",))
