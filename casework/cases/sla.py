"""Case deadlines: the SLA per case type and priority (settings.CASE_SLA) and the countdown
the queue and the case page show."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

# A case in one of these states was decided by a person: it has no deadline left to breach.
DONE_STATUSES = ("resolved", "closed")


def sla_hours(case_type: str, priority: str) -> float:
    sla = settings.CASE_SLA
    return sla.get(case_type, {}).get(priority) or sla["*"][priority]


def sla_due_at(*, case_type: str, priority: str, start: datetime) -> datetime:
    return start + timedelta(hours=sla_hours(case_type, priority))


def sla_open_q() -> Q:
    """Cases the SLA still applies to: not decided, with a deadline, the clock not paused."""
    return Q(due_at__isnull=False, sla_paused_at__isnull=True) & ~Q(status__in=DONE_STATUSES)


def sla_breached_q(now: datetime | None = None) -> Q:
    return sla_open_q() & Q(due_at__lt=now or timezone.now())


def sla_due_soon_q(now: datetime | None = None) -> Q:
    """Not breached yet, due within CASE_SLA_WARN_HOURS."""
    now = now or timezone.now()
    return sla_open_q() & Q(due_at__gte=now, due_at__lt=now + timedelta(hours=settings.CASE_SLA_WARN_HOURS))


@dataclass(frozen=True)
class Countdown:
    state: str  # "ok", "due_soon", "breached", "paused" or "done" (decided, or no deadline)
    seconds: int  # until the deadline (negative: past it)
    text: str

    @property
    def breached(self) -> bool:
        return self.state == "breached"


def _span(seconds: int) -> str:
    seconds = abs(seconds)
    if seconds < 3600:
        return f"{max(1, seconds // 60)} min"
    if seconds < 2 * 86400:
        return f"{seconds // 3600} h"
    return f"{seconds // 86400} d"


def case_countdown(case, *, now: datetime | None = None) -> Countdown:
    """"due in 3 h" / "overdue by 2 h" for a case (reads due_at, status; no query)."""
    if case.due_at is None or case.status in DONE_STATUSES:
        return Countdown("done", 0, "")
    if case.sla_paused_at is not None:
        left = int((case.due_at - case.sla_paused_at).total_seconds())
        return Countdown("paused", left, f"clock paused, {_span(left)} left" if left > 0
                         else f"clock paused, overdue by {_span(left)}")
    now = now or timezone.now()
    seconds = int((case.due_at - now).total_seconds())
    if seconds < 0:
        return Countdown("breached", seconds, f"overdue by {_span(seconds)}")
    state = "due_soon" if seconds < settings.CASE_SLA_WARN_HOURS * 3600 else "ok"
    return Countdown(state, seconds, f"due in {_span(seconds)}")


def sla_resumed_due_at(*, due_at: datetime, paused_at: datetime, now: datetime) -> datetime:
    """The deadline after a pause: later by the time the clock stood still."""
    return due_at + max(now - paused_at, timedelta(0))
