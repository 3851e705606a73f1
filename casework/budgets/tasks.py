from __future__ import annotations

from celery import shared_task


@shared_task(soft_time_limit=60, time_limit=90)
def budget_holds_release(now: str | None = None) -> int:
    """The beat task: give back the budget holds of processes that are gone (a killed worker's
    reservations and leases: casework/budgets/holds.py), at `now` (ISO; the clock when not given).
    A transient database error skips this scan; the next one looks again."""
    from datetime import datetime

    from django.utils import timezone

    from casework.budgets.holds import holds_release_gone
    from casework.db_transient import scan_or_skip

    return scan_or_skip("Budget hold scan", lambda: holds_release_gone(
        now=datetime.fromisoformat(now) if now else timezone.now()), 0)
