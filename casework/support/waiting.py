"""Waiting on the customer (issue 25.4): pending pauses the SLA clock; silence closes the ticket.

  ticket_set_pending     a person asks the customer something (the question is the ticket's
                         outbound message) and the ticket waits: state pending, the case
                         awaiting the customer, its SLA clock paused (case_sla_pause).
  ticket_customer_answered
                         the customer's message joined a pending ticket (or one closed for
                         inactivity): the clock runs again with due_at moved later by the paused
                         time (case_sla_resume), and the ticket is back with a person (routed;
                         the follow-up's triage routes it further).
  support_auto_close     the beat task's scan: a ticket pending for SUPPORT_AUTO_CLOSE_DAYS is
                         closed for inactivity, with a last message to the customer.

Why "closed for inactivity" leaves the case open: only a person's decision closes a case
(casework/cases/lifecycle, tests/cases/test_lifecycles.py), and an auto-close is the system's
move under a documented policy, not a decision. So the ticket's own lifecycle records the truth
(closed_inactive, entered by the system, audited with the policy and the days of silence, the
customer told) and the case waits for a person to confirm with a decision; the customer writing
again reopens the ticket instead.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from audit.services import audit_record
from casework.support.models import Ticket, TicketMessage
from casework.support.states import TicketState
from casework.support.tickets import MESSAGE_MAX_LENGTH, _lock, _message_add, _move, _reply_email

AUTO_CLOSE_BATCH = 200


def auto_close_text(ticket: Ticket, days: int) -> str:
    return (f"We have not heard from you for {days} days, so we have closed ticket {ticket.ticket_id} "
            "for inactivity. If you still need help, just reply to this message and it reopens.")


@transaction.atomic
def ticket_set_pending(*, actor, ticket: Ticket, body: str, now: datetime | None = None) -> TicketMessage:
    """A person's question to the customer; the ticket waits on the answer (SLA paused)."""
    from casework.cases.services import case_sla_pause

    body = (body or "").strip()
    if not body:
        raise ValidationError({"body": "Write what you ask the customer."})
    if len(body) > MESSAGE_MAX_LENGTH:
        raise ValidationError({"body": f"A message is at most {MESSAGE_MAX_LENGTH} characters."})
    now = now or timezone.now()
    ticket = _lock(ticket)
    from casework.cases.lifecycle.services import transition_check
    from casework.support.states import SUPPORT_LIFECYCLE

    transition_check(SUPPORT_LIFECYCLE, actor=actor, source=ticket.lifecycle, target=TicketState.PENDING,
                     reference=ticket.case.reference)
    message = _message_add(ticket=ticket, direction=TicketMessage.Direction.AGENT, text=body,
                           channel=ticket.channel, sent_by=actor if isinstance(actor, User) else None)
    _reply_email(ticket=ticket, message=message)  # emailed, threaded, when the customer has an address
    ticket.pending_since = now
    ticket.first_response_at = ticket.first_response_at or message.created_at
    _move(actor=actor, ticket=ticket, to=TicketState.PENDING, reason="Waiting on the customer's answer.",
          data={"message": message.pk}, save=("pending_since", "first_response_at"))
    case_sla_pause(actor=actor, case=ticket.case, reason=f"{ticket.ticket_id} is pending on the customer.", now=now)
    audit_record(actor=actor, action="support.asked_customer", case=ticket.case, obj=message,
                 data={"ticket_id": ticket.ticket_id, "body": body[:500]})
    return message


@transaction.atomic
def ticket_customer_answered(*, actor, ticket: Ticket, now: datetime | None = None) -> Ticket:
    """The customer wrote on a pending ticket (or one closed for inactivity): the SLA clock runs
    again and the ticket is back with a person. No-op for any other state."""
    from casework.cases.services import case_sla_resume

    ticket = _lock(ticket)
    if ticket.lifecycle not in (TicketState.PENDING, TicketState.CLOSED_INACTIVE):
        return ticket
    now = now or timezone.now()
    waited = int((now - ticket.pending_since).total_seconds()) if ticket.pending_since else None
    if ticket.lifecycle == TicketState.PENDING and waited:
        ticket.sla_paused_seconds += max(waited, 0)
    ticket.pending_since = None
    ticket.completed_at = None
    ticket = _move(actor=actor, ticket=ticket, to=TicketState.ROUTED, reason="The customer answered.",
                   data={"waited_seconds": waited}, save=("pending_since", "completed_at", "sla_paused_seconds"))
    case_sla_resume(actor=actor, case=ticket.case, reason=f"The customer answered on {ticket.ticket_id}.", now=now)
    return ticket


@transaction.atomic
def ticket_close_inactive(*, ticket: Ticket, now: datetime) -> TicketMessage | None:
    """Close one pending ticket for inactivity if it is still pending and silent for
    SUPPORT_AUTO_CLOSE_DAYS (checked again under the row lock: a customer's answer or a second
    scan in between makes this a no-op). The last message is the ticket's outbound message."""
    days = settings.SUPPORT_AUTO_CLOSE_DAYS
    ticket = _lock(ticket)
    if ticket.lifecycle != TicketState.PENDING or ticket.pending_since is None:
        return None
    if ticket.pending_since > now - timedelta(days=days):
        return None
    if ticket.messages.filter(direction=TicketMessage.Direction.CUSTOMER, created_at__gt=ticket.pending_since).exists():
        return None  # an answer arrived (its intake will resume the ticket)
    message = _message_add(ticket=ticket, direction=TicketMessage.Direction.AGENT, text=auto_close_text(ticket, days),
                           channel=ticket.channel, auto_sent=True)
    _reply_email(ticket=ticket, message=message, auto_submitted="auto-generated")  # a notice, no answer
    ticket.completed_at = now
    _move(actor="system", ticket=ticket, to=TicketState.CLOSED_INACTIVE,
          reason=f"No answer from the customer for {days} days (SUPPORT_AUTO_CLOSE_DAYS): closed for inactivity "
                 "by the system under that policy; a person confirms by closing the case.",
          data={"message": message.pk, "policy": "SUPPORT_AUTO_CLOSE_DAYS", "days": days,
                "pending_since": ticket.pending_since.isoformat()},
          save=("completed_at",))
    audit_record(actor="system", action="support.closed_for_inactivity", case=ticket.case, obj=message,
                 data={"ticket_id": ticket.ticket_id, "days": days, "body": message.text[:500]})
    return message


def support_auto_close(*, now: datetime | None = None) -> dict:
    """The scan: every ticket pending for SUPPORT_AUTO_CLOSE_DAYS, each in its own transaction."""
    now = now or timezone.now()
    cutoff = now - timedelta(days=settings.SUPPORT_AUTO_CLOSE_DAYS)
    closed, last = 0, 0
    while True:
        ids = list(Ticket.objects.filter(lifecycle=TicketState.PENDING, pending_since__lte=cutoff, pk__gt=last)
                   .order_by("pk").values_list("pk", flat=True)[:AUTO_CLOSE_BATCH])
        closed += sum(1 for pk in ids if ticket_close_inactive(ticket=Ticket(pk=pk), now=now) is not None)
        if len(ids) < AUTO_CLOSE_BATCH:
            return {"closed": closed}
        last = ids[-1]
