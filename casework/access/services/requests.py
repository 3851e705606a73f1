"""Requests to people: the employee's signed link, the manager's inbox item, resends, withdrawals."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.urls import reverse
from django.utils import timezone

from audit.services import audit_record
from casework.access.guards import guard_override_record, validator_choose
from casework.access.links import link_url
from casework.access.models import (
    HRMutation,
    InfoRequest,
)
from casework.access.services.notifications import notification_send
from casework.access.states import AccessStatus, mutation_transition
from casework.cases.notifications.models import Notification
from casework.errors import Conflict, DomainError

logger = logging.getLogger(__name__)


_REQUEST_STATUS = {
    InfoRequest.Kind.EMPLOYEE: AccessStatus.CLARIFICATION_REQUESTED,
    InfoRequest.Kind.MANAGER: AccessStatus.MANAGER_VERIFICATION_REQUESTED,
}


@transaction.atomic
def request_send(*, actor, mutation: HRMutation, kind: str, subject: str, body: str, correlation_id: str = "",
                 now: datetime | None = None) -> tuple[InfoRequest, bool]:
    """Ask the employee (a signed link by email) or their manager (the inbox, in the app and
    by email) about the change. Returns (request, created).

    Sending again while a request of the same kind is open returns that request: a retried
    agent step does not send the person a second message. Only allowed at the step of the
    flow that asks that person.
    """
    now = now or timezone.now()
    mutation = HRMutation.objects.select_related("case", "changed_by", "manager__user").get(pk=mutation.pk)
    if kind not in _REQUEST_STATUS:
        raise DomainError(f"Unknown request kind {kind!r}.", code="bad_kind")
    if mutation.case.is_closed:
        raise Conflict(f"{mutation.case.reference} is closed.", code="case_closed")
    open_request = (InfoRequest.objects.select_for_update().filter(mutation=mutation, kind=kind,
                                                                   answered_at__isnull=True,
                                                                   cancelled_at__isnull=True).first())
    if open_request and open_request.state(now) == "open":
        return open_request, False
    if mutation.status != _REQUEST_STATUS[kind]:
        raise Conflict(f"{mutation.case.reference} is {mutation.status_label}; this request is not due.",
                       code="request_not_due")
    if open_request:  # expired without an answer: replace it
        InfoRequest.objects.filter(pk=open_request.pk).update(cancelled_at=now, cancel_reason="replaced by a new request")
    if kind == InfoRequest.Kind.EMPLOYEE:
        recipient = mutation.changed_by
        if not recipient.email:
            raise DomainError(f"{recipient} has no email address to send the request to.", code="no_email")
        expires_at = now + timedelta(days=settings.ACCESS_LINK_MAX_AGE_DAYS)
    else:
        # Code chooses who validates, never the agent: not the changer, not the beneficiary,
        # not someone absent; the manager's manager, then the system's fallback approver.
        choice = validator_choose(mutation=mutation, today=now.date())
        recipient = choice.validator
        if recipient is None:
            raise DomainError("Nobody can validate the claim: " + "; ".join(choice.skipped) + ".",
                              code="no_validator")
        if choice.is_fallback or choice.first is None:
            why = "; ".join(choice.skipped)
            body = (f"You are asked as the {choice.role}, because {why}.\n\n{body}")
            guard_override_record(case=mutation.case, obj=mutation, guard="validator",
                                  agent_said=f"the manager ({choice.first.employee_id})" if choice.first
                                  else "the manager (none)",
                                  code_says=f"{recipient.name} ({recipient.employee_id}, {choice.role})",
                                  reason=why)
        expires_at = None
    request = InfoRequest.objects.create(mutation=mutation, kind=kind, recipient=recipient, subject=subject[:200],
                                         body=body[:4000], correlation_id=correlation_id, sent_at=now,
                                         expires_at=expires_at)
    _notify_request(request, actor=actor, reminder=False)
    audit_record(actor=actor, action="access.request_sent", case=mutation.case, obj=request,
                 data={"kind": kind, "to": recipient.employee_id,
                       "expires_at": expires_at.isoformat() if expires_at else None})
    return request, True


@transaction.atomic
def request_link_thread(*, request: InfoRequest, correlation_id: str, actor="system") -> InfoRequest:
    """Tie a request to the agent-message thread that asked for it (once: a set id stays)."""
    if request.correlation_id or not correlation_id:
        return request
    InfoRequest.objects.filter(pk=request.pk, correlation_id="").update(correlation_id=correlation_id)
    request.correlation_id = correlation_id
    audit_record(actor=actor, action="access.request_threaded", case=request.mutation.case, obj=request,
                 data={"correlation_id": correlation_id})
    return request


def request_url(request: InfoRequest) -> str:
    if request.kind == InfoRequest.Kind.EMPLOYEE:
        return link_url(request)
    return reverse("access:inbox_detail", args=[request.pk])


def _notify_request(request: InfoRequest, *, actor, reminder: bool) -> Notification:
    recipient = request.recipient
    prefix = "Reminder: " if reminder else ""
    if request.kind == InfoRequest.Kind.EMPLOYEE:
        ending = (f"Answer here (no login needed; the link works once and until "
                  f"{request.expires_at:%d %B %Y %H:%M} UTC):")
        return notification_send(actor=actor, kind="request_reminder" if reminder else "request", case=request.mutation.case,
                                 subject=prefix + request.subject, body=f"{request.body}\n\n{ending}",
                                 url=link_url(request), email=recipient.email, name=recipient.name, request=request)
    return notification_send(actor=actor, kind="request_reminder" if reminder else "request", case=request.mutation.case,
                             subject=prefix + request.subject,
                             body=f"{request.body}\n\nOpen your Casework inbox to approve or deny:",
                             url=request_url(request), user=recipient.user, email=recipient.email or recipient.user.email,
                             name=recipient.name, request=request)


# The employee's link may be sent again from these.
RESENDABLE = (AccessStatus.USER_REQUEST_QUEUED, AccessStatus.AWAITING_USER_RESPONSE, AccessStatus.LINK_EXPIRED,
              AccessStatus.USER_REQUEST_FAILED)


def _employee_request_of(notification) -> InfoRequest | None:
    """The open employee request a notification carried (its first send or a fresh link)."""
    from django.contrib.contenttypes.models import ContentType

    if notification.target_id is None or notification.kind != "request" or \
            notification.target_type_id != ContentType.objects.get_for_model(InfoRequest).pk:
        return None
    return (InfoRequest.objects.select_related("mutation__case", "recipient")
            .filter(pk=notification.target_id, kind=InfoRequest.Kind.EMPLOYEE, answered_at__isnull=True,
                    cancelled_at__isnull=True).first())


@transaction.atomic
def request_email_delivered(*, notification) -> None:
    """The mail server accepted the email with the employee's link: now the employee was told,
    and the change awaits their answer (that email is the fact the state rests on)."""
    request = _employee_request_of(notification)
    if request is None:
        return
    mutation = HRMutation.objects.select_for_update().get(pk=request.mutation_id)
    if mutation.case.is_closed or mutation.status not in (AccessStatus.USER_REQUEST_QUEUED,
                                                          AccessStatus.CLARIFICATION_REQUESTED):
        return
    mutation_transition(actor="system", mutation=mutation, to=AccessStatus.AWAITING_USER_RESPONSE,
                        reason=f"{request.recipient.name} was notified: the mail server accepted the email with "
                               f"their link (request #{request.pk}).", fact=request)


@transaction.atomic
def request_email_failed(*, notification) -> None:
    """The email with the employee's link gave up: nobody was told, so the change does not
    await them; the investigators hear of it and send a fresh link (or decide)."""
    from casework.access.services.notifications import investigators_to_notify

    request = _employee_request_of(notification)
    if request is None:
        return
    mutation = HRMutation.objects.select_for_update().get(pk=request.mutation_id)
    if mutation.case.is_closed or mutation.status not in (AccessStatus.CLARIFICATION_REQUESTED,
                                                          AccessStatus.USER_REQUEST_QUEUED,
                                                          AccessStatus.AWAITING_USER_RESPONSE):
        return
    why = f"The email with {request.recipient.name}'s link failed: {notification.email_error[:300]}"
    mutation_transition(actor="system", mutation=mutation, to=AccessStatus.USER_REQUEST_FAILED, reason=why)
    case = mutation.case
    for user in investigators_to_notify(case):
        notification_send(actor="system", kind=Notification.Kind.ESCALATION, case=case, user=user,
                          subject=f"{case.reference}: the request to {request.recipient.name} was not delivered",
                          body=f"{why}. Nobody has been asked to explain the change: send a fresh link from the "
                               "case, or decide.",
                          url=reverse("cases:detail", args=[case.reference]))


@transaction.atomic
def request_resend(*, actor, request: InfoRequest, now: datetime | None = None) -> InfoRequest:
    """Send the employee a fresh link (the old one stops working), for a request that expired
    unanswered or whose email went astray. Only while the flow still waits for that answer
    (Awaiting User Response, or Link Expired, which it moves back to Awaiting User Response)."""
    now = now or timezone.now()
    request = InfoRequest.objects.select_related("mutation__case", "recipient").get(pk=request.pk)
    mutation = request.mutation
    if request.kind != InfoRequest.Kind.EMPLOYEE:
        raise DomainError("Only an employee's link can be sent again; a manager answers in their inbox.",
                          code="not_a_link")
    if request.answered_at or request.cancelled_at:
        raise Conflict("This request is already answered or withdrawn.", code="request_closed")
    if mutation.status not in RESENDABLE or mutation.case.is_closed:
        raise Conflict("The change is no longer waiting for the employee.", code="not_waiting")
    taken = InfoRequest.objects.filter(pk=request.pk, answered_at__isnull=True, cancelled_at__isnull=True).update(
        cancelled_at=now, cancel_reason="replaced by a new link")
    if taken != 1:
        raise Conflict("This request was answered a moment ago.", code="request_closed")
    fresh = InfoRequest.objects.create(mutation=mutation, kind=request.kind, recipient=request.recipient,
                                       subject=request.subject, body=request.body,
                                       correlation_id=request.correlation_id, sent_at=now,
                                       expires_at=now + timedelta(days=settings.ACCESS_LINK_MAX_AGE_DAYS))
    _notify_request(fresh, actor=actor, reminder=False)
    if mutation.status in (AccessStatus.LINK_EXPIRED, AccessStatus.USER_REQUEST_FAILED):
        # Awaiting the employee again once the fresh link's email is accepted (request_email_delivered).
        mutation_transition(actor=actor, mutation=mutation, to=AccessStatus.USER_REQUEST_QUEUED,
                            reason=f"A fresh link for {request.recipient.name} is queued (request #{fresh.pk}).")
    audit_record(actor=actor, action="access.request_resent", case=mutation.case, obj=fresh,
                 data={"replaces": request.pk, "to": request.recipient.employee_id,
                       "expires_at": fresh.expires_at.isoformat()})
    return fresh


@transaction.atomic
def requests_cancel_open(*, actor, mutation: HRMutation, reason: str, now: datetime | None = None) -> int:
    now = now or timezone.now()
    ids = list(InfoRequest.objects.filter(mutation=mutation, answered_at__isnull=True, cancelled_at__isnull=True)
               .values_list("pk", flat=True))
    if not ids:
        return 0
    InfoRequest.objects.filter(pk__in=ids).update(cancelled_at=now, cancel_reason=reason[:200])
    audit_record(actor=actor, action="access.requests_cancelled", case=mutation.case, obj=mutation,
                 data={"requests": ids, "reason": reason[:200]})
    return len(ids)

