"""Reminders, expiry and escalation for requests nobody answered.

Run every ACCESS_REMINDER_CHECK_MINUTES by Celery beat (casework.access.tasks). Each request
is claimed with a conditional UPDATE before anything is sent, so two overlapping runs (or a
task delivered twice) send each reminder and each escalation once.

An employee's link that expired unanswered moves the change from Awaiting User Response to
Link Expired (nobody can answer any more, so the status must not say it is waiting) and tells
the investigators at once; that is the request's escalation, so none follows later.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.urls import reverse
from django.utils import timezone

from audit.services import audit_record
from casework.access.models import InfoRequest
from casework.access.services import _notify_request, investigators_to_notify, notification_send
from casework.access.states import AccessStatus, mutation_transition


def requests_remind_due(*, now: datetime | None = None) -> dict:
    """Send the reminders and escalations that are due at `now`; returns what was sent."""
    now = now or timezone.now()
    remind_before = now - timedelta(days=settings.ACCESS_REMINDER_DAYS)
    escalate_before = now - timedelta(days=settings.ACCESS_ESCALATION_DAYS)
    open_requests = InfoRequest.objects.filter(answered_at__isnull=True, cancelled_at__isnull=True,
                                               mutation__case__closed_at__isnull=True)
    sent = {"reminders": 0, "escalations": 0, "expired": 0}
    for pk in (open_requests.filter(kind=InfoRequest.Kind.EMPLOYEE, expires_at__lte=now,
                                    mutation__status=AccessStatus.AWAITING_USER_RESPONSE)
               .values_list("pk", flat=True)):
        sent["expired"] += _expire(pk, now)
    for pk in open_requests.filter(escalated_at__isnull=True, sent_at__lte=escalate_before).values_list("pk", flat=True):
        sent["escalations"] += _escalate(pk, now)
    for pk in (open_requests.filter(reminder_count=0, escalated_at__isnull=True, sent_at__lte=remind_before)
               .values_list("pk", flat=True)):
        sent["reminders"] += _remind(pk, now)
    return sent


@transaction.atomic
def _remind(pk: int, now: datetime) -> int:
    request = InfoRequest.objects.select_related("mutation__case", "recipient__user").get(pk=pk)
    if request.state(now) != "open":
        return 0  # an expired link is not worth a reminder; escalation takes it from here
    if not InfoRequest.objects.filter(pk=pk, reminder_count=0, answered_at__isnull=True).update(
            reminder_count=1, last_reminder_at=now):
        return 0
    _notify_request(request, actor="system", reminder=True)
    audit_record(actor="system", action="access.request_reminded", case=request.mutation.case, obj=request,
                 data={"kind": request.kind, "to": request.recipient.employee_id,
                       "sent_at": request.sent_at.isoformat()})
    return 1


@transaction.atomic
def _escalate(pk: int, now: datetime) -> int:
    if not InfoRequest.objects.filter(pk=pk, escalated_at__isnull=True, answered_at__isnull=True).update(
            escalated_at=now):
        return 0
    request = InfoRequest.objects.select_related("mutation__case__assignee", "recipient").get(pk=pk)
    case = request.mutation.case
    days = (now - request.sent_at).days
    who = "the employee" if request.kind == InfoRequest.Kind.EMPLOYEE else "the manager"
    for user in investigators_to_notify(case):
        notification_send(
            actor="system", kind="escalation", case=case, user=user,
            subject=f"{case.reference}: no answer from {who} after {days} days",
            body=(f"{request.recipient.name} ({who}) has not answered the request sent on "
                  f"{request.sent_at:%d %B %Y} about {case.title}. Contact them, or decide the case yourself "
                  "on its page (the decision can override the agents' recommendation)."),
            url=reverse("cases:detail", args=[case.reference]),
        )
    audit_record(actor="system", action="access.request_escalated", case=case, obj=request,
                 data={"kind": request.kind, "to": request.recipient.employee_id, "days": days})
    return 1


@transaction.atomic
def _expire(pk: int, now: datetime) -> int:
    """The employee's link expired unanswered: Link Expired, with the reason, and the
    investigators are told (the request counts as escalated)."""
    request = InfoRequest.objects.select_related("mutation__case__assignee", "recipient").get(pk=pk)
    mutation = request.mutation
    if request.state(now) != "expired" or mutation.status != AccessStatus.AWAITING_USER_RESPONSE:
        return 0
    case = mutation.case
    reason = (f"The link sent to {request.recipient.name} on {request.sent_at:%d %B %Y} expired on "
              f"{request.expires_at:%d %B %Y %H:%M} UTC without an answer (request #{request.pk}).")
    # The move locks the mutation's row: a second, overlapping run finds it moved and stops.
    mutation_transition(actor="system", mutation=mutation, to=AccessStatus.LINK_EXPIRED, reason=reason)
    InfoRequest.objects.filter(pk=pk, escalated_at__isnull=True).update(escalated_at=now)
    for user in investigators_to_notify(case):
        notification_send(
            actor="system", kind="escalation", case=case, user=user,
            subject=f"{case.reference}: the employee's link expired unanswered",
            body=(f"{reason} Send a fresh link from the case's Answers tab, contact {request.recipient.name}, "
                  "or decide the case yourself."),
            url=reverse("cases:detail", args=[case.reference]),
        )
    audit_record(actor="system", action="access.request_expired", case=case, obj=request,
                 data={"kind": request.kind, "to": request.recipient.employee_id,
                       "expires_at": request.expires_at.isoformat()})
    return 1
