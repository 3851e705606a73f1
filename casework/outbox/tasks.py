"""Celery tasks: deliver one webhook or send one email, and the periodic sweeps that send what is due."""

from __future__ import annotations

import logging
import time
from datetime import datetime, timedelta

from celery import shared_task
from django.utils.dateparse import parse_datetime

logger = logging.getLogger(__name__)

# Deliveries woken per sweep, oldest due first; the next sweep takes the rest.
SWEEP_LIMIT = 500
# Rows whose messages are with the broker are let go (marked woken) in batches of this many
# while the sweep goes on: a sweep killed after that leaves only the rest to its lease.
RELEASE_BATCH = 50


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
    from casework.outbox.models import Delivery

    delivery = _attempt(self, delivery_attempt, delivery_id, now)
    if (delivery is not None and delivery.state == Delivery.State.RETRYING and delivery.claim_token
            and not self.request.is_eager):
        # Failed, and its retry is held for the message sent here (leases.retry_hold): it goes
        # at its due time, not at the next sweep after it. (Not in eager mode, where an ETA is
        # not waited for: tests drive the schedule by the `now` they give the sweep.)
        try:
            outbox_deliver.apply_async((delivery.pk,), eta=delivery.next_attempt_at)
        except Exception:  # noqa: BLE001 - its hold lapses a lease after its due time; the sweep sends it
            logger.warning("Could not enqueue the retry of webhook delivery %s; the sweep will send it.",
                           delivery.pk, exc_info=True)


def _sweep(task, *, due, model, waiting, send, what: str, now: datetime | str | None) -> int:
    """Wake a worker for each row that is due, oldest first (at most SWEEP_LIMIT), holding
    the waiting ones under a lease while it sends (casework/outbox/leases.py).

    Steps: choose the due rows; hold the waiting ones (a conditional UPDATE under this
    sweep's token and a lease of WEBHOOK_LEASE_SECONDS, renewed while it sends); send one task
    each; let the sent ones go as woken, in batches, and the unsent ones (a broker that refused
    a message stops the pass) at once, for the next sweep. A sweep killed mid-way lets go of
    nothing: its rows lapse within a lease and the next sweep takes them, instead of waiting
    WEBHOOK_REDELIVER_AFTER_SECONDS. Rows being sent by a worker whose claim lapsed are sent
    as they are (the claim decides). A transient database error retries the sweep (expiring
    with the next one)."""
    from django.utils import timezone

    from casework.db_transient import is_transient_db_error, task_retry_transient
    from casework.outbox.leases import (
        lease_seconds,
        renew_every,
        rows_hold,
        rows_release,
        rows_release_woken,
        rows_renew,
    )

    given = now is not None
    now = _when(now) or timezone.now()
    try:
        ids = due(now=now, limit=SWEEP_LIMIT)
        token, held = rows_hold(model, ids, now=now, waiting=waiting)
    except Exception as exc:
        if not is_transient_db_error(exc):
            raise
        return task_retry_transient(task, exc, max_retries=3) or 0
    started = renewed = time.monotonic()
    unsent, woken = set(held), []
    sent = 0
    try:
        for pk in ids:
            if unsent and time.monotonic() - renewed > renew_every():
                renewed = time.monotonic()
                rows_renew(model, list(unsent), token=token,
                           until=now + timedelta(seconds=renewed - started + lease_seconds()))
            send.apply_async((pk,), {"now": now.isoformat()} if given else {})
            sent += 1
            if pk in unsent:
                unsent.discard(pk)
                woken.append(pk)
            if len(woken) >= RELEASE_BATCH:
                rows_release_woken(model, woken, token=token, now=now)
                woken = []
    except Exception:  # noqa: BLE001 - the broker refused: the rest go at the next sweep
        logger.warning("Could not enqueue %s %s", what, ids[sent], exc_info=True)
    rows_release_woken(model, woken, token=token, now=now)
    rows_release(model, list(unsent), token=token)
    return sent


def _attempt(task, attempt, pk: int, now):
    """One attempt; returns what it returned. A transient database error sends the task again
    with backoff (met after the claim, the retry finds it claimed: its lease runs out and the
    sweep sends it again)."""
    from casework.db_transient import is_transient_db_error, task_retry_transient

    try:
        return attempt(pk, now=_when(now))
    except Exception as exc:
        if not is_transient_db_error(exc):
            raise
        task_retry_transient(task, exc)
        return None


@shared_task(bind=True, ignore_result=True)
def outbox_deliver_due(self, now: datetime | str | None = None) -> int:
    """Wake a worker for every delivery that is due: retries whose time came, deliveries whose
    broker message was lost (none sent for WEBHOOK_REDELIVER_AFTER_SECONDS), and claims of
    workers that died mid-request. Returns how many were sent. `now`: the clock's unless a test
    gives one (it is passed on to each delivery, so a test drives the schedule by it)."""
    from casework.outbox.delivery import WAITING, deliveries_due
    from casework.outbox.models import Delivery

    return _sweep(self, due=deliveries_due, model=Delivery, waiting=WAITING, send=outbox_deliver,
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
    from casework.outbox.email_sending import WAITING, emails_due
    from casework.outbox.models import OutboundEmail

    return _sweep(self, due=emails_due, model=OutboundEmail, waiting=WAITING, send=outbox_email_send,
                  what="email", now=now)
