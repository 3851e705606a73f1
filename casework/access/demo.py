"""Demo data for access changes: a small organisation and changes that walk every path.

Thirty employees in five departments under two managers with logins (mona: Finance and HR;
mark: IT, Sales and Operations), five systems (Payroll's authorisation registry is down),
ten roles. The changes, and where the loader leaves them:

  authorised                         Kees (Finance Controller) changes Lotte's FinanceApp access
                                     -> Approved -> report: accept
  sick-leave cover, manager approves  Priya covers Kees's sick leave; Mona approves -> accept; decided
  vacation cover, manager denies     Noah covers Hana's vacation; Mark denies -> reject; decided
  invalid claim                      Yara claims Ben was on sick leave; he was not -> reject
  a tool failing three times         Sofia changes Payroll; check_authorization fails three times
                                     -> Manual Intervention Required -> manual-intervention report;
                                     decided by Alice, overriding the recommendation
  waiting for the employee           Elif has not answered yet (a reminder went out)
  waiting for Mona                   Aisha covered Tomasz's vacation; Mona's inbox; escalated to
                                     the investigators
  a claim no record confirms         Sam's "other" explanation (an incident) -> Rejected - Invalid
                                     User Claim -> report says why; awaiting the investigator
  waiting for approval               Jan changed Lotte's access; the agent waits for the
                                     investigator's approval before it e-mails him

Each e-mail an agent sends (send_notification acts outside Casework) waits for a person's
approval by default (issue 46): the loader approves them as the investigator would, except
the last change's.

The loader drives the people's answers through the same services the pages use, and runs
each pipeline step in-process so the demo shows every state at once (a worker that picks the
same runs up later finds them finished and does nothing). Idempotent: reference data is
matched on ids, and the changes are created only when there are none.
"""

from __future__ import annotations

from datetime import date, datetime, timedelta

from django.db import transaction
from django.utils import timezone

from casework.access.models import (
    AccessLevel,
    DirectAuthorisation,
    Employee,
    HRMutation,
    InfoRequest,
    Role,
    RoleAuthorisation,
    SickLeave,
    System,
    Vacation,
)

LEVELS = [("Read", 10), ("Write", 20), ("Admin", 30)]
SYSTEMS = [
    ("FinanceApp", "General ledger and month-end close", True),
    ("HRPortal", "Employee records and contracts", True),
    ("CRM", "Customers, deals and quotes", True),
    ("DevOps", "Build and deployment pipeline", True),
    ("Payroll", "Salaries and payslips (its authorisation registry is offline for maintenance)", False),
]
ROLES = [
    ("R01", "Finance Analyst", "Finance", [("FinanceApp", "Read")]),
    ("R02", "Finance Controller", "Finance", [("FinanceApp", "Admin"), ("Payroll", "Write")]),
    ("R03", "HR Specialist", "HR", [("HRPortal", "Write"), ("Payroll", "Read")]),
    ("R04", "HR Lead", "HR", [("HRPortal", "Admin"), ("Payroll", "Admin")]),
    ("R05", "Engineer", "IT", [("DevOps", "Write")]),
    ("R06", "Platform Lead", "IT", [("DevOps", "Admin"), ("CRM", "Read")]),
    ("R07", "Sales Representative", "Sales", [("CRM", "Write")]),
    ("R08", "Sales Lead", "Sales", [("CRM", "Admin")]),
    ("R09", "Operations Clerk", "Operations", [("CRM", "Read"), ("FinanceApp", "Read")]),
    ("R10", "Manager", "", []),
]
# id, name, department, job title, role, manager id, login
EMPLOYEES = [
    ("u001", "Dana Okafor", "Management", "Director", "R10", None, None),
    ("u100", "Mona Marsh", "Finance", "Finance & HR Manager", "R10", "u001", "mona"),
    ("u200", "Mark Mensah", "IT", "IT, Sales & Operations Manager", "R10", "u001", "mark"),
    ("u101", "Priya Patel", "Finance", "Finance Analyst", "R01", "u100", None),
    ("u102", "Kees Bakker", "Finance", "Finance Controller", "R02", "u100", None),
    ("u103", "Jan de Vries", "Finance", "Finance Analyst", "R01", "u100", None),
    ("u104", "Lotte Jansen", "Finance", "Finance Analyst", "R01", "u100", None),
    ("u105", "Omar Haddad", "Finance", "Finance Controller", "R02", "u100", None),
    ("u106", "Elif Demir", "Finance", "Finance Analyst", "R01", "u100", None),
    ("u107", "Anna Kowalski", "Finance", "Finance Analyst", "R01", "u100", None),
    ("u111", "Sofia Rossi", "HR", "HR Specialist", "R03", "u100", None),
    ("u112", "Tomasz Nowak", "HR", "HR Lead", "R04", "u100", None),
    ("u113", "Aisha Bello", "HR", "HR Specialist", "R03", "u100", None),
    ("u114", "Lucas Martin", "HR", "HR Specialist", "R03", "u100", None),
    ("u115", "Julia Berg", "HR", "HR Specialist", "R03", "u100", None),
    ("u201", "Noah Fischer", "IT", "Engineer", "R05", "u200", None),
    ("u202", "Hana Sato", "IT", "Platform Lead", "R06", "u200", None),
    ("u203", "Ravi Kumar", "IT", "Engineer", "R05", "u200", None),
    ("u204", "Emma Wilson", "IT", "Engineer", "R05", "u200", None),
    ("u205", "Mateo Garcia", "IT", "Engineer", "R05", "u200", None),
    ("u206", "Sam Lee", "IT", "Engineer", "R05", "u200", None),
    ("u211", "Chloe Dubois", "Sales", "Sales Representative", "R07", "u200", None),
    ("u212", "Ben Carter", "Sales", "Sales Lead", "R08", "u200", None),
    ("u213", "Yara Haddad", "Sales", "Sales Representative", "R07", "u200", None),
    ("u214", "Finn Murphy", "Sales", "Sales Representative", "R07", "u200", None),
    ("u215", "Nora Ali", "Sales", "Sales Representative", "R07", "u200", None),
    ("u221", "Ines Costa", "Operations", "Operations Clerk", "R09", "u200", None),
    ("u222", "Kofi Asante", "Operations", "Operations Clerk", "R09", "u200", None),
    ("u223", "Mia Schulz", "Operations", "Operations Clerk", "R09", "u200", None),
    ("u224", "Leo Rossi", "Operations", "Operations Clerk", "R09", "u200", None),
]


def _days(n: int) -> date:
    return timezone.now().date() - timedelta(days=n)


def _at(days_ago: int, hour: int, minute: int = 0) -> datetime:
    return timezone.now().replace(hour=hour, minute=minute, second=0, microsecond=0) - timedelta(days=days_ago)


def _reference_data(users: dict) -> dict:
    levels = {name: AccessLevel.objects.update_or_create(name=name, defaults={"rank": rank})[0] for name, rank in LEVELS}
    systems = {code: System.objects.update_or_create(code=code, defaults={"description": d, "available": a})[0]
               for code, d, a in SYSTEMS}
    roles = {}
    for role_id, name, dept, grants in ROLES:
        role = Role.objects.update_or_create(role_id=role_id, defaults={"name": name, "department": dept})[0]
        roles[role_id] = role
        for system, level in grants:
            RoleAuthorisation.objects.update_or_create(role=role, system=systems[system],
                                                       defaults={"access_level": levels[level]})
    people = {}
    for eid, name, dept, title, role, _manager, login in EMPLOYEES:
        first = name.split()[0].lower()
        people[eid] = Employee.objects.update_or_create(employee_id=eid, defaults={
            "name": name, "department": dept, "job_title": title, "role": roles[role],
            "email": f"{first}.{eid}@example.com", "hire_date": date(2019, 1, 7) if eid < "u110" else date(2021, 3, 1),
            "user": users.get(login) if login else None,
        })[0]
    for eid, *_rest, manager, _login in EMPLOYEES:
        if manager:
            Employee.objects.filter(pk=people[eid].pk).update(manager=people[manager])
    Employee.objects.filter(pk=people["u224"].pk).update(status=Employee.Status.TERMINATED,
                                                         termination_date=_days(120))
    people = {e.employee_id: e for e in Employee.objects.select_related("manager", "user")}

    def grant(auth_id, eid, system, level, start, end=None, status="active"):
        DirectAuthorisation.objects.update_or_create(authorisation_id=auth_id, defaults={
            "employee": people[eid], "system": systems[system], "access_level": levels[level],
            "valid_from": start, "valid_to": end, "status": status, "granted_by": "u001"})

    grant("A001", "u101", "FinanceApp", "Write", date(2024, 1, 8))
    grant("A002", "u101", "FinanceApp", "Admin", date(2023, 1, 9), date(2024, 12, 31), "revoked")
    grant("A003", "u201", "DevOps", "Admin", _days(60), _days(30), "revoked")
    grant("A004", "u211", "CRM", "Admin", date(2024, 5, 1))
    grant("A005", "u111", "Payroll", "Write", date(2023, 6, 1))
    grant("A006", "u213", "CRM", "Admin", _days(400), _days(200), "revoked")
    grant("A007", "u206", "DevOps", "Admin", _days(90), _days(60))

    def absence(model, eid, start, end, status="approved"):
        if model.objects.period(people[eid], start, end) is None:
            model.objects.create(employee=people[eid], start_date=start, end_date=end, status=status)

    absence(SickLeave, "u102", _days(8), _days(4))          # Kees: covers Priya's change
    absence(Vacation, "u202", _days(9), _days(2))           # Hana: covers Noah's change
    absence(Vacation, "u212", _days(40), _days(30))         # Ben: long before Yara's change
    absence(SickLeave, "u212", _days(2), _days(1), "pending")
    absence(Vacation, "u112", _days(6), _days(1))           # Tomasz: covers Aisha's change
    absence(SickLeave, "u204", _days(70), _days(66))
    absence(Vacation, "u105", _days(25), _days(11))
    absence(Vacation, "u221", _days(15), _days(10))
    return {"levels": levels, "systems": systems, "people": people}


def _drain(case, approver=None) -> None:
    """Run this case's queued pipeline runs now, in this process (no-op for runs already done):
    the same task a worker runs, applied here so the demo's cases are ready when seeding ends.
    A run that waits for approval (its agent asks to e-mail someone: issue 46) is approved by
    `approver`, as the case page would, and goes on; without one it is left waiting."""
    from agents.models import AgentRun, RunPause
    from agents.runtime.pause import pause_answer
    from agents.tasks import run_pipeline

    # A failed step's later attempts are runs of their own, queued for after a backoff: the
    # demo makes them now (clearing the wait), until none is left.
    for _ in range(8):  # at most one run per attempt of a step, its approvals, and the report
        if approver is not None:
            for pause in RunPause.objects.filter(case=case, status=RunPause.Status.PENDING):
                pause_answer(pause=pause, actor=approver, approve=True)
        run_ids = list(AgentRun.objects.filter(case=case, status=AgentRun.Status.QUEUED).values_list("pk", flat=True))
        if not run_ids:
            return
        AgentRun.objects.filter(pk__in=run_ids).update(not_before=None)
        for run_id in run_ids:
            run_pipeline.apply(args=(run_id,))


def _submit(actor, ref: dict, changed_by, changed_for, system, level, field, old, new, days_ago, hour, reason="",
            *, approve: bool = True):
    from casework.access.services import mutation_submit

    with transaction.atomic():
        mutation = mutation_submit(actor=actor, changed_by=ref["people"][changed_by],
                                   changed_for=ref["people"][changed_for], system=ref["systems"][system],
                                   access_level=ref["levels"][level], field_changed=field, old_value=old,
                                   new_value=new, changed_at=_at(days_ago, hour), reason=reason)
    _drain(mutation.case, approver=actor if approve else None)
    mutation.refresh_from_db()
    return mutation


def _employee_answers(mutation, claim_type, colleague, start, end, explanation):
    from casework.access.links import link_token
    from casework.access.services import claim_submit

    request = InfoRequest.objects.get(mutation=mutation, kind=InfoRequest.Kind.EMPLOYEE, answered_at__isnull=True,
                                      cancelled_at__isnull=True)
    claim_submit(token=link_token(request), claim_type=claim_type, colleague=colleague, period_start=start,
                 period_end=end, explanation=explanation)
    _drain(mutation.case, approver=mutation.case.created_by or "system")
    mutation.refresh_from_db()


def _manager_answers(mutation, user, approved, comment):
    from casework.access.services import verdict_submit

    request = InfoRequest.objects.get(mutation=mutation, kind=InfoRequest.Kind.MANAGER, answered_at__isnull=True)
    verdict_submit(actor=user, request=request, approved=approved, comment=comment)
    _drain(mutation.case)
    mutation.refresh_from_db()


def _backdate(mutation, kind: str, days: int) -> None:
    """Demo only: pretend a request went out `days` ago, so reminders and escalation show."""
    sent = timezone.now() - timedelta(days=days)
    request = InfoRequest.objects.get(mutation=mutation, kind=kind, answered_at__isnull=True)
    expires = sent + (request.expires_at - request.sent_at) if request.expires_at else None
    InfoRequest.objects.filter(pk=request.pk).update(sent_at=sent, expires_at=expires)


def demo_load_access(*, users: dict) -> int:
    from casework.access.reminders import requests_remind_due
    from casework.access.services import mutation_decide
    from casework.cases.services import case_assign

    ref = _reference_data(users)
    if HRMutation.objects.exists():
        return 0
    p = ref["people"]
    # The IAM team's investigator works access changes (irene in the demo; alice where a test
    # loads this alone with its own people).
    investigator = users.get("irene") or users.get("alice")
    mona, mark = users.get("mona"), users.get("mark")
    actor = investigator or "system"

    # 1. Authorised: a Finance Controller holds Admin on FinanceApp through their role.
    _submit(actor, ref, "u102", "u104", "FinanceApp", "Admin", "Access level", "Read", "Write", 12, 10,
            "Lotte takes over accounts payable")

    # 2. Not authorised; covered a colleague's sick leave; the manager approves.
    covered = _submit(actor, ref, "u101", "u103", "FinanceApp", "Admin", "Access level", "Read", "Write", 6, 9,
                      "Month-end close")
    _employee_answers(covered, "sick_leave_cover", p["u102"], _days(8), _days(4),
                      "Kees was ill during month-end close and asked me by phone to give Jan write access so the "
                      "accruals could be booked on time.")
    _manager_answers(covered, mona, True, "Confirmed: I asked Priya to stand in for Kees while he was ill.")

    # 3. Same story with vacation cover; the manager denies.
    denied = _submit(actor, ref, "u201", "u203", "DevOps", "Admin", "Deployment approver", "no", "yes", 5, 16)
    _employee_answers(denied, "vacation_cover", p["u202"], _days(9), _days(2),
                      "Hana was on holiday and a release was blocked, so I made Ravi an approver.")
    _manager_answers(denied, mark, False,
                     "Not agreed: Hana's deputy was available and approver rights need my sign-off.")

    # 4. An invalid claim: Ben was not on sick leave that day.
    invalid = _submit(actor, ref, "u213", "u214", "CRM", "Admin", "Discount limit", "10%", "35%", 4, 11)
    _employee_answers(invalid, "sick_leave_cover", p["u212"], _days(5), _days(3),
                      "Ben was off sick and the customer needed the quote that day.")

    # 5. A tool failing three times: Payroll's authorisation registry is down.
    failing = _submit(actor, ref, "u111", "u114", "Payroll", "Write", "Salary band", "B2", "B3", 3, 14,
                      "Annual review outcome")

    # 6. Waiting for the employee, who got a reminder.
    waiting = _submit(actor, ref, "u106", "u107", "FinanceApp", "Admin", "Access level", "Read", "Write", 3, 15)
    _backdate(waiting, InfoRequest.Kind.EMPLOYEE, 3)

    # 7. Waiting for Mona: a vacation cover the records confirm; escalated to the investigators.
    for_mona = _submit(actor, ref, "u113", "u115", "HRPortal", "Admin", "Contract template access", "no", "yes",
                       2, 10)
    _employee_answers(for_mona, "vacation_cover", p["u112"], _days(6), _days(1),
                      "Tomasz is on leave; Julia had to issue two contracts that could not wait.")
    _backdate(for_mona, InfoRequest.Kind.MANAGER, 5)

    # 8. An explanation no record can confirm: Rejected - Invalid User Claim, and the report
    #    says why (the investigator may still override it).
    other = _submit(actor, ref, "u206", "u204", "DevOps", "Admin", "Production deploy rights", "no", "yes", 7, 2)
    _employee_answers(other, "other", None, None, None,
                      "Production incident at 02:00; the on-call runbook says to grant deploy rights to whoever "
                      "is on call. Emma was on call.")
    requests_remind_due()

    # 9. Waiting for approval: the agent wants to e-mail Jan about his change, and the
    #    investigator has not approved it yet (the case page's approvals panel, /approvals/).
    _submit(actor, ref, "u103", "u104", "FinanceApp", "Admin", "Access level", "Read", "Write", 1, 11,
            approve=False)

    # Decisions: one following the recommendation, one rejecting, one overriding it.
    if investigator:
        for mutation, outcome, reason in (
            (covered, "accepted", "The records and the manager confirm the cover; the access stays until Kees is back."),
            (denied, "rejected", "The manager denied it: revert Ravi's approver rights."),
            (failing, "accepted", "Checked with the payroll team by phone: Sofia holds Write on Payroll (A005). "
                                  "Overrides the manual-intervention recommendation."),
        ):
            mutation.refresh_from_db()
            case_assign(actor=investigator, case=mutation.case, assignee=investigator)
            mutation_decide(actor=investigator, mutation=mutation, outcome=outcome, reason=reason)
    return HRMutation.objects.count()
