"""Celery tasks: deliver one webhook or send one email, and the periodic sweeps that send what is due."""

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
    from casework.outbox.delivery import delivery_attempt

    _attempt(self, delivery_attempt, delivery_id, now)


def _sweep(task, *, due, mark_woken, send, what: str, now: datetime | str | None) -> int:
    """Wake a worker for each row that is due, oldest first (at most SWEEP_LIMIT): stamp them
    woken, then send one task each. A transient database error retries the sweep (expiring
    with the next one); a broker that refuses a message stops the pass, and the rows are sent
    again once their wake-up is old (WEBHOOK_REDELIVER_AFTER_SECONDS)."""
    from django.utils import timezone

    from casework.db_transient import is_transient_db_error, task_retry_transient

    given = now is not None
    now = _when(now) or timezone.now()
    try:
        ids = due(now=now, limit=SWEEP_LIMIT)
        # Stamped before sending: in eager mode (tests) the row is handled inside apply_async
        # and a retry it schedules must keep its own woken_at (None) for the next sweep.
        mark_woken(ids, now)
    except Exception as exc:
        if not is_transient_db_error(exc):
            raise
        return task_retry_transient(task, exc, max_retries=3) or 0
    sent = 0
    for pk in ids:
        try:
            send.apply_async((pk,), {"now": now.isoformat()} if given else {})
        except Exception:  # noqa: BLE001 - sent again after WEBHOOK_REDELIVER_AFTER_SECONDS
            logger.warning("Could not enqueue %s %s", what, pk, exc_info=True)
            break
        sent += 1
    return sent


def _attempt(task, attempt, pk: int, now) -> None:
    """One attempt; a transient database error sends the task again with backoff (met after
    the claim, the retry finds it claimed: its lease runs out and the sweep sends it again)."""
    from casework.db_transient import is_transient_db_error, task_retry_transient

    try:
        attempt(pk, now=_when(now))
    except Exception as exc:
        if not is_transient_db_error(exc):
            raise
        task_retry_transient(task, exc)


@shared_task(bind=True, ignore_result=True)
def outbox_deliver_due(self, now: datetime | str | None = None) -> int:
    """Wake a worker for every delivery that is due: retries whose time came, deliveries whose
    broker message was lost (none sent for WEBHOOK_REDELIVER_AFTER_SECONDS), and claims of
    workers that died mid-request. Returns how many were sent. `now`: the clock's unless a test
    gives one (it is passed on to each delivery, so a test drives the schedule by it)."""
    from casework.outbox.delivery import deliveries_due, deliveries_mark_woken

    return _sweep(self, due=deliveries_due, mark_woken=deliveries_mark_woken, send=outbox_deliver,
                  what="webhook delivery", now=now)


@shared_task(bind=True, acks_late=True, reject_on_worker_lost=True, soft_time_limit=90, time_limit=120,
             ignore_result=True)
def outbox_email_send(self, email_id: int, now: datetime | str | None = None) -> None:
    """One attempt of one queued email. A duplicate message finds it claimed (or sent) and does
    nothing; a transient database error retries it, as outbox_deliver does."""
    from casework.outbox.email_sending import email_attempt

    _attempt(self, email_attempt, email_id, now)


@shared_task(bind=True, ignore_result=True)
def outbox_email_send_due(self, now: datetime | str | None = None) -> int:
    """Wake a worker for every email that is due (a retry whose time came, a lost broker
    message, a worker that died mid-send). `now` as in outbox_deliver_due."""
    from casework.outbox.email_sending import emails_due, emails_mark_woken

    return _sweep(self, due=emails_due, mark_woken=emails_mark_woken, send=outbox_email_send, what="email",
                  now=now)
