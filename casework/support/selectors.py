"""Reads of support data, already joined; the SLA clock."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Case as DbCase
from django.db.models import IntegerField, Value, When
from django.http import Http404
from django.utils import timezone

from casework.cases.models import Case
from casework.support.models import KBArticle, Ticket, TicketMessage


def active_ticket_ids(customer_id: str) -> list[str]:
    """The customer's active tickets (the only ones a new message may match), oldest first."""
    return list(Ticket.objects.filter(customer__customer_id=customer_id, lifecycle=Ticket.Lifecycle.ACTIVE)
                .exclude(case__status=Case.Status.CLOSED).order_by("created_at", "id")
                .values_list("ticket_id", flat=True))


def ticket_for_case(case: Case) -> Ticket | None:
    return (Ticket.objects.select_related("customer", "case").prefetch_related("messages__sent_by")
            .filter(case=case).first())


def ticket_get(ticket_id: str) -> Ticket:
    ticket = (Ticket.objects.select_related("customer", "case", "case__assignee")
              .prefetch_related("messages__sent_by").filter(ticket_id=(ticket_id or "").upper()).first())
    if ticket is None:
        raise Http404(f"No ticket {ticket_id}.")
    return ticket


def kb_article_get(article_id: str) -> KBArticle:
    article = KBArticle.objects.filter(article_id=article_id).first()
    if article is None:
        raise Http404(f"No article {article_id}.")
    return article


def _urgency_rank():
    return DbCase(*[When(urgency=u, then=Value(i)) for i, u in enumerate(("critical", "high", "medium", "low"))],
                 default=Value(4), output_field=IntegerField())


def support_queue(*, actions: tuple[str, ...] = ("route_specialist", "escalate_human", "auto_respond")):
    """Open tickets that wait for a person, most urgent first, then oldest first."""
    return (Ticket.objects.select_related("customer", "case", "case__assignee")
            .filter(recommended_action__in=actions).exclude(case__status=Case.Status.CLOSED)
            .annotate(urgency_rank=_urgency_rank()).order_by("urgency_rank", "created_at", "id"))


def auto_sent_replies():
    """Replies the system sent on its own, newest first, for spot checks."""
    return (TicketMessage.objects.filter(auto_sent=True).select_related("ticket__customer", "ticket__case")
            .order_by("-created_at", "-id"))


@dataclass(frozen=True)
class SlaClock:
    first_response_due: datetime
    resolution_due: datetime
    first_response_at: datetime | None
    resolved_at: datetime | None
    now: datetime

    @property
    def first_response_breached(self) -> bool:
        return (self.first_response_at or self.now) > self.first_response_due

    @property
    def resolution_breached(self) -> bool:
        return (self.resolved_at or self.now) > self.resolution_due

    @property
    def next_due(self) -> datetime | None:
        if self.first_response_at is None:
            return self.first_response_due
        return None if self.resolved_at else self.resolution_due

    @property
    def next_label(self) -> str:
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
    return SlaClock(
        first_response_due=ticket.created_at + timedelta(minutes=targets["first_response_minutes"]),
        resolution_due=ticket.created_at + timedelta(hours=targets["resolution_hours"]),
        first_response_at=ticket.first_response_at, resolved_at=ticket.case.closed_at, now=now or timezone.now())
