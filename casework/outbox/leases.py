"""Leases on outbox rows (a webhook Delivery, an OutboundEmail): which live worker holds a row
that is waiting or being sent, and until when. As agent runs do (agents.runtime.pipeline:
claim_run, a heartbeat kept fresh while working, a stale one reclaimable), a holder takes a
row with a conditional UPDATE under its own token and a short lease (WEBHOOK_LEASE_SECONDS),
renews it while it works, and lets go when done; a holder that dies simply stops renewing,
and once `lease_until` has passed the sweep takes the row again. So a dead worker costs its
rows a lease, not WEBHOOK_REDELIVER_AFTER_SECONDS (which stays the guard against a broker
that lost a message nobody holds).

Holders of a row, by its state:
  - waiting (pending / retrying, queued): the sweep, between choosing it and handing its
    message to the broker (`rows_hold`, renewed while it sends, released as woken once sent:
    `rows_release_woken`); or the worker holding a retry's ETA message, until its due time
    plus a lease (written with the retry: `retry_hold`);
  - being sent (delivering, sending): the worker whose request is in flight, its claim renewed
    while it waits for the answer (`call_holding_lease`).
"""

from __future__ import annotations

import concurrent.futures
import time
import uuid
from collections.abc import Callable
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Q

# The clock a holder measures its work by (seconds); tests replace it with one that counts.
clock: Callable[[], float] = time.monotonic


def lease_seconds() -> float:
    return float(settings.WEBHOOK_LEASE_SECONDS)


def renew_every() -> float:
    """How often a holder renews: three times per lease, so one late renewal loses nothing."""
    return lease_seconds() / 3


def waiting_due_q(*, now: datetime, waiting) -> Q:
    """Waiting rows the sweep should wake now: due, and either held by nobody with no wake-up
    sent in the last WEBHOOK_REDELIVER_AFTER_SECONDS (a lost broker message), or held by a
    holder whose lease ran out (it died)."""
    quiet = now - timedelta(seconds=settings.WEBHOOK_REDELIVER_AFTER_SECONDS)
    unheld = Q(claim_token="") & (Q(woken_at__isnull=True) | Q(woken_at__lte=quiet))
    expired = ~Q(claim_token="") & Q(lease_until__lt=now)
    return Q(state__in=waiting, next_attempt_at__lte=now) & (unheld | expired)


def rows_hold(model, ids: list[int], *, now: datetime, waiting) -> tuple[str, list[int]]:
    """The sweep takes these waiting rows (one conditional UPDATE: a row another sweep or a
    worker took meanwhile is left to it). Returns the hold's token and the rows it got."""
    token = uuid.uuid4().hex
    until = now + timedelta(seconds=lease_seconds())
    free = Q(claim_token="") | Q(lease_until__lt=now)
    model.objects.filter(Q(pk__in=ids, state__in=waiting) & free).update(claim_token=token, lease_until=until)
    return token, list(model.objects.filter(pk__in=ids, claim_token=token).values_list("pk", flat=True))


def rows_renew(model, ids: list[int], *, token: str, until: datetime) -> None:
    if ids:
        model.objects.filter(pk__in=ids, claim_token=token).update(lease_until=until)


def rows_release_woken(model, ids: list[int], *, token: str, now: datetime) -> None:
    """Their messages are with the broker: the hold ends, and `woken_at` says when they were
    sent (the REDELIVER_AFTER guard). A row a worker claimed meanwhile (another token) is its."""
    if ids:
        model.objects.filter(pk__in=ids, claim_token=token).update(claim_token="", lease_until=None, woken_at=now)


def rows_release(model, ids: list[int], *, token: str) -> None:
    """Not sent (the broker refused): let go at once, so the next sweep tries them again."""
    if ids:
        model.objects.filter(pk__in=ids, claim_token=token).update(claim_token="", lease_until=None)


def retry_hold(*, now: datetime, due: datetime) -> dict:
    """The fields of a waiting row whose retry is sent now with an ETA at `due`: held (by the
    worker that will hold the message) until `due` plus a lease. The sweep leaves it alone
    until then; if that worker died, the sweep sends it a lease after its due time."""
    return {"claim_token": uuid.uuid4().hex, "lease_until": due + timedelta(seconds=lease_seconds()),
            "woken_at": now}


_calls = concurrent.futures.ThreadPoolExecutor(max_workers=64, thread_name_prefix="outbox-request")


def call_holding_lease(call: Callable[[], object], *, renew: Callable[[float], None],
                       every: float | None = None):
    """Run `call` (a request, no database work) on a thread of its own; this thread waits,
    calling renew(seconds elapsed) every `every` seconds (renew_every()) until it returns, so
    the claim outlives a request however long its timeout while a dead worker's claim lapses
    within a lease. Returns what `call` returned (or raises what it raised)."""
    every = renew_every() if every is None else every
    started = clock()
    future = _calls.submit(call)
    while True:
        try:
            return future.result(timeout=every)
        except concurrent.futures.TimeoutError:
            renew(clock() - started)
