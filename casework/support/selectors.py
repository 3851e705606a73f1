"""Reads of support data, already joined; the SLA clock."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.db.models import Case as DbCase
from django.db.models import IntegerField, Q, Subquery, Value, When
from django.http import Http404
from django.utils import timezone

from casework.cases.models import Case
from casework.cases.visibility import visible_q
from casework.people.roles import is_investigator
from casework.support.models import Customer, KBArticle, Ticket, TicketMessage
from casework.support.states import MATCHABLE, WAITING, TicketState


def active_ticket_ids(customer_id: str, *, limit: int | None = None) -> list[str]:
    """The customer's matchable tickets (the only ones a new message may join: received,
    triage failed, routed), the most recently active first (updated_at: a message joined,
    a reply, a routing), at most SUPPORT_MATCH_MAX_TICKETS of them: the matcher summarises
    each one, so the intake's cost must not grow with a customer's backlog. A follow-up
    almost always continues a ticket that moved recently; one left out opens a new ticket,
    which a person can still merge. Index support_ticket_recent serves the order."""
    limit = limit or settings.SUPPORT_MATCH_MAX_TICKETS
    # The customer as a scalar subquery, not a join: PostgreSQL then walks the index in
    # order and stops at `limit`, where a join had it sort every ticket of the customer.
    customer = Subquery(Customer.objects.filter(customer_id=customer_id).values("pk")[:1])
    return list(Ticket.objects.filter(customer_id=customer, lifecycle__in=MATCHABLE)
                .exclude(case__status=Case.Status.CLOSED).order_by("-updated_at", "-id")
                .values_list("ticket_id", flat=True)[:limit])


def ticket_for_case(case: Case) -> Ticket | None:
    return (Ticket.objects.select_related("customer", "case", "follows__case")
            .prefetch_related("messages__sent_by", "messages__email")
            .filter(case=case).first())


def ticket_get(ticket_id: str, *, within: Q | None = None) -> Ticket:
    tickets = (Ticket.objects.select_related("customer", "case", "case__assignee")
               .prefetch_related("messages__sent_by", "messages__email"))
    ticket = tickets.filter(within or Q(), ticket_id=(ticket_id or "").upper()).first()
    if ticket is None:
        raise Http404(f"No ticket {ticket_id}.")
    return ticket


def ticket_get_for_user(user, ticket_id: str) -> Ticket:
    """The ticket, if this person may see its case (casework.cases.selectors.case_get_for_user's
    rule): 403 for someone who works no cases, 404 for a ticket outside their need-to-know, as
    for one that does not exist."""
    if not is_investigator(user):
        raise PermissionDenied("Only investigators can see tickets.")
    return ticket_get(ticket_id, within=visible_q(user, "case__"))


def kb_article_get(article_id: str) -> KBArticle:
    article = KBArticle.objects.filter(article_id=article_id).first()
    if article is None:
        raise Http404(f"No article {article_id}.")
    return article


def _urgency_rank():
    return DbCase(*[When(urgency=u, then=Value(i)) for i, u in enumerate(("critical", "high", "medium", "low"))],
                 default=Value(4), output_field=IntegerField())


def support_queue(user, *, states: tuple[str, ...] = WAITING, group: str = ""):
    """Open tickets that wait for a person (triage failed, routed, reply drafted, escalated) of
    the cases this person may see, most urgent first, then oldest first; `group`: only that
    escalation group's queue."""
    tickets = (Ticket.objects.select_related("customer", "case", "case__assignee", "group")
               .filter(visible_q(user, "case__"), lifecycle__in=states).exclude(case__status=Case.Status.CLOSED))
    if group:
        tickets = tickets.filter(group__key=group)
    return tickets.annotate(urgency_rank=_urgency_rank()).order_by("urgency_rank", "created_at", "id")


def auto_sent_replies(user):
    """Replies the system sent on its own on the cases this person may see, newest first, for
    spot checks."""
    return (TicketMessage.objects.filter(visible_q(user, "ticket__case__"), auto_sent=True)
            .select_related("ticket__customer", "ticket__case")
            .order_by("-created_at", "-id"))


@dataclass(frozen=True)
class SlaClock:
    first_response_due: datetime
    resolution_due: datetime
    first_response_at: datetime | None
    resolved_at: datetime | None
    now: datetime
    # A person closed the ticket without a reply: no first response will come, and the clock
    # stops at the close.
    closed_without_reply: bool = False
    # Waiting on the customer (pending): the resolution clock stands still (its due moves
    # later by every paused second, this pause's included).
    paused: bool = False

    @property
    def first_response_breached(self) -> bool:
        return (self.first_response_at or self.resolved_at or self.now) > self.first_response_due

    @property
    def resolution_breached(self) -> bool:
        return (self.resolved_at or self.now) > self.resolution_due

    @property
    def next_due(self) -> datetime | None:
        if self.resolved_at and (self.first_response_at or self.closed_without_reply):
            return None
        if self.first_response_at is None:
            return self.first_response_due
        return None if self.resolved_at else self.resolution_due

    @property
    def next_label(self) -> str:
        if self.closed_without_reply:
            return "closed without a reply"
        return "first response" if self.first_response_at is None else "resolution"

    @property
    def minutes_left(self) -> int | None:
        due = self.next_due
        return None if due is None else int((due - self.now).total_seconds() // 60)

    @property
    def breached(self) -> bool:
        return self.minutes_left is not None and self.minutes_left < 0


def sla_clock(ticket: Ticket, *, now: datetime | None = None) -> SlaClock:
    targets = settings.SUPPORT_SLA[ticket.customer.plan]
    now = now or timezone.now()
    closed_without_reply = ticket.lifecycle == TicketState.CLOSED_NO_REPLY
    inactive = ticket.lifecycle == TicketState.CLOSED_INACTIVE
    resolved_at = ticket.case.closed_at or (ticket.completed_at if closed_without_reply or inactive else None)
    paused = ticket.lifecycle == TicketState.PENDING and ticket.pending_since is not None
    paused_seconds = ticket.sla_paused_seconds + (max((now - ticket.pending_since).total_seconds(), 0)
                                                  if paused else 0)
    return SlaClock(
        first_response_due=ticket.created_at + timedelta(minutes=targets["first_response_minutes"]),
        resolution_due=ticket.created_at + timedelta(hours=targets["resolution_hours"], seconds=paused_seconds),
        first_response_at=ticket.first_response_at, resolved_at=resolved_at, now=now,
        closed_without_reply=closed_without_reply, paused=paused)
