"""Celery tasks: deliver one webhook, and the periodic sweep that sends what is due."""

from __future__ import annotations

import logging
from datetime import datetime

from celery import shared_task
from django.utils.dateparse import parse_datetime

logger = logging.getLogger(__name__)

# Deliveries woken per sweep, oldest due first; the next sweep takes the rest.
SWEEP_LIMIT = 500


def _when(now: datetime | str | None) -> datetime | None:
    return parse_datetime(now) if isinstance(now, str) else now


# The request's own timeout (at most 60 s) comes well inside these limits.
@shared_task(bind=True, acks_late=True, reject_on_worker_lost=True, soft_time_limit=90, time_limit=120,
             ignore_result=True)
def outbox_deliver(self, delivery_id: int, now: datetime | str | None = None) -> None:
    """One attempt of one delivery. A duplicate message finds it claimed (or not due) and does nothing.

    A transient database error (a restart) sends the task again with backoff. Met before the
    claim, the retry delivers; met after it, the retry finds the delivery claimed and leaves
    it: its lease runs out and the sweep sends it again under the same webhook-id (at least once)."""
    from casework.db_transient import is_transient_db_error, task_retry_transient
    from casework.outbox.services import delivery_attempt

    try:
        delivery_attempt(delivery_id, now=_when(now))
    except Exception as exc:
        if not is_transient_db_error(exc):
            raise
        task_retry_transient(self, exc)


@shared_task(bind=True, ignore_result=True)
def outbox_deliver_due(self, now: datetime | str | None = None) -> int:
    """Wake a worker for every delivery that is due: retries whose time came, deliveries whose
    broker message was lost (none sent for WEBHOOK_REDELIVER_AFTER_SECONDS), and claims of
    workers that died mid-request. Returns how many were sent. `now`: the clock's unless a test
    gives one (it is passed on to each delivery, so a test drives the schedule by it)."""
    from django.utils import timezone

    from casework.db_transient import is_transient_db_error, task_retry_transient
    from casework.outbox.services import deliveries_due, deliveries_mark_woken

    given = now is not None
    now = _when(now) or timezone.now()
    try:
        ids = deliveries_due(now=now, limit=SWEEP_LIMIT)
        # Stamped before sending: in eager mode (tests) the delivery runs inside apply_async and
        # a retry it schedules must keep its own woken_at (None) for the next sweep.
        deliveries_mark_woken(ids, now)
    except Exception as exc:
        if not is_transient_db_error(exc):
            raise
        # Expiring with the next sweep's interval: a late retry gives way to it.
        return task_retry_transient(self, exc, max_retries=3) or 0
    sent = 0
    for pk in ids:
        try:
            outbox_deliver.apply_async((pk,), {"now": now.isoformat()} if given else {})
        except Exception:  # noqa: BLE001 - sent again after WEBHOOK_REDELIVER_AFTER_SECONDS
            logger.warning("Could not enqueue webhook delivery %s", pk, exc_info=True)
            break
        sent += 1
    return sent

