from __future__ import annotations

import logging

from celery import shared_task

logger = logging.getLogger(__name__)


@shared_task(soft_time_limit=60, time_limit=90)
def budget_holds_release(now: str | None = None) -> int:
    """The beat task: give back the budget holds of processes that are gone (a killed worker's
    reservations and leases: casework/budgets/holds.py), at `now` (ISO; the clock when not given).
    A transient database error skips this scan; the next one looks again."""
    from datetime import datetime

    from django.utils import timezone

    from casework.budgets.holds import holds_release_gone
    from casework.db_transient import db_connections_reset, is_transient_db_error

    try:
        return holds_release_gone(now=datetime.fromisoformat(now) if now else timezone.now())
    except Exception as exc:
        if not is_transient_db_error(exc):
            raise
        db_connections_reset()
        logger.warning("Budget hold scan skipped: transient database error (%s: %s).", type(exc).__name__, exc)
        return 0
