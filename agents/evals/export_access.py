"""An access change's scenario parts: the organisation slice it needs (levels, systems, the
roles and grants of the people involved, their leave), the change, and the answers people
gave (the employee's claim, the manager's verdict), names and logins masked."""

from __future__ import annotations


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
             "status": row.status} for row in model.objects.filter(employee__in=people).select_related("employee")
            .order_by("start_date")]
