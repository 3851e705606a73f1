"""The SLA beat task's work: warn the assignee before a case's deadline passes, and record a
breach in the audit trail. Each is claimed with a conditional UPDATE (sla_warned_at,
sla_breached_at), so two overlapping scans, or a task delivered twice, warn and record once.
Decided cases (resolved, closed) have no breach (casework.cases.sla.sla_open_q)."""

from __future__ import annotations

from datetime import datetime

from django.db import transaction
from django.utils import timezone

from audit.services import audit_record
from casework.cases.models import Case
from casework.cases.notifications.models import Notification
from casework.cases.notifications.services import _case_url, notification_send
from casework.cases.sla import case_countdown, sla_breached_q, sla_due_soon_q

# Per scan; the next scan (CASE_SLA_CHECK_MINUTES later) takes the rest.
BATCH = 500


def cases_sla_scan(*, now: datetime | None = None) -> dict:
    now = now or timezone.now()
    warn = (Case.objects.filter(sla_due_soon_q(now), sla_warned_at__isnull=True, assignee__isnull=False)
            .order_by("due_at").values_list("pk", flat=True)[:BATCH])
    breached = (Case.objects.filter(sla_breached_q(now), sla_breached_at__isnull=True)
                .order_by("due_at").values_list("pk", flat=True)[:BATCH])
    return {"warned": sum(_warn(pk, now) for pk in list(warn)),
            "breached": sum(_record_breach(pk, now) for pk in list(breached))}


@transaction.atomic
def _warn(pk: int, now: datetime) -> int:
    if not Case.objects.filter(pk=pk, sla_warned_at__isnull=True).update(sla_warned_at=now):
        return 0
    case = Case.objects.select_related("assignee").get(pk=pk)
    due = case_countdown(case, now=now)
    notification_send(
        actor="system", kind=Notification.Kind.SLA_WARNING, case=case, user=case.assignee,
        subject=f"{case.reference} is {due.text}",
        body=(f"{case.reference} ({case.title}, {case.get_priority_display().lower()} priority) is due "
              f"{case.due_at:%Y-%m-%d %H:%M} UTC. Decide it, or change its priority with a reason."),
        url=_case_url(case))
    return 1


@transaction.atomic
def _record_breach(pk: int, now: datetime) -> int:
    if not Case.objects.filter(sla_breached_q(now), pk=pk, sla_breached_at__isnull=True).update(
            sla_breached_at=now):
        return 0
    case = Case.objects.select_related("assignee").get(pk=pk)
    audit_record(actor="system", action="case.sla_breached", case=case, obj=case,
                 data={"due_at": case.due_at.isoformat(), "priority": case.priority, "status": case.status,
                       "assignee": case.assignee.get_username() if case.assignee else None})
    return 1
