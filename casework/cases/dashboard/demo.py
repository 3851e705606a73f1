"""Demo data for the workbench (issue 14), after every case type's loader has run: a history
for the dashboard and some notifications.

The loaders create every case "now". This spreads them over the past days (decided cases over
two weeks, open ones over five days, each with a time to decision of its own), recomputes the
open cases' deadlines from their new creation time (so some are past due), dates each case's
agent calls with it, hands a few cases to investigators of their teams (notifications; one of them falls
due within the hour), and runs the SLA scan once (breaches in the audit trail, a warning). Demo data only: the audit trail keeps
the real times of what the loaders did.
"""

from __future__ import annotations

from datetime import timedelta

from django.apps import apps
from django.db import transaction
from django.utils import timezone

from casework.cases.models import Case, Decision
from casework.cases.sla import DONE_STATUSES, sla_due_at


def demo_load_workbench(*, users: dict) -> dict:
    from casework.cases.notifications.deadlines import cases_sla_scan
    from casework.cases.services import case_assign
    from casework.cases.visibility import cases_visible_to

    now = timezone.now()
    AgentCall = apps.get_model("agents", "AgentCall")
    AgentRun = apps.get_model("agents", "AgentRun")
    with transaction.atomic():
        for i, case in enumerate(Case.objects.order_by("id")):
            decided = case.status in DONE_STATUSES and case.closed_at is not None
            created = now - timedelta(hours=(i * 37) % (14 * 24) + 6 if decided else (i * 13) % 120)
            changes = {"created_at": created}
            if decided:
                closed = min(now, created + timedelta(hours=1 + (i * 7) % 60, minutes=i % 50))
                changes["closed_at"] = closed
                Decision.objects.filter(case=case, final=True).update(decided_at=closed)
            else:
                changes["due_at"] = sla_due_at(case_type=case.case_type, priority=case.priority, start=created)
            Case.objects.filter(pk=case.pk).update(**changes)
            AgentRun.objects.filter(case=case).update(created_at=created + timedelta(minutes=1))
            AgentCall.objects.filter(run__case=case).update(created_at=created + timedelta(minutes=2))
    assigned = 0
    alice, ivan, admin = users.get("alice"), users.get("ivan"), users.get("admin")
    if alice and ivan and admin:
        # Each hand-over stays inside the team that sees the case: an admin hands Ivan three of
        # his desk's cases, the fraud team's lead (an admin without one) two of Alice's.
        handed = []
        for actor, assignee, count in ((admin, ivan, 3), (users.get("leo") or admin, alice, 2)):
            cases = list(cases_visible_to(assignee, Case.objects.exclude(status__in=DONE_STATUSES)
                                          .filter(assignee__isnull=True).exclude(pk__in=[c.pk for c in handed]))
                         .order_by("due_at")[:count])
            for case in cases:
                case_assign(actor=actor, case=case, assignee=assignee)
                assigned += 1
            handed += cases
        # One of Ivan's new cases opened long enough ago to fall due within the hour: the scan
        # warns him (an SLA notification).
        if handed:
            case = handed[0]
            due = now + timedelta(minutes=50)
            created = due - (sla_due_at(case_type=case.case_type, priority=case.priority, start=now) - now)
            Case.objects.filter(pk=case.pk).update(created_at=created, due_at=due)
    return {"assigned": assigned, **cases_sla_scan(now=now)}
