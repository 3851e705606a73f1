"""Celery tasks: evaluate the detection rules on ingested transactions, and the sweep; and the
one function ingestion calls to queue an evaluation (evaluate_after_commit)."""

from __future__ import annotations

from datetime import datetime

from celery import shared_task
from django.db import transaction
from django.utils import timezone
from django.utils.dateparse import parse_datetime

# Transactions evaluated per task when the sweep finds a backlog.
CHUNK = 1000



@shared_task(acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def monitoring_evaluate(ids: list[int]) -> dict:
    from casework.transactions.monitoring.evaluate import transactions_evaluate

    return transactions_evaluate(ids)


@shared_task(ignore_result=True)
def monitoring_evaluate_pending(now: datetime | str | None = None) -> int:
    """Evaluate what a lost message left behind (ingested, not evaluated after a few seconds).
    `now`: the clock's, unless a test gives one."""
    from casework.transactions.monitoring.evaluate import pending_ids, transactions_evaluate

    now = (parse_datetime(now) if isinstance(now, str) else now) or timezone.now()
    ids = pending_ids(now=now)
    for start in range(0, len(ids), CHUNK):
        transactions_evaluate(ids[start:start + CHUNK], now=now)
    return len(ids)


@shared_task(ignore_result=True, time_limit=600)
def aggregates_prune() -> int:
    """Drop the velocity counters' buckets that no window reads any more."""
    from casework.transactions.aggregates import prune

    return prune()


@shared_task(ignore_result=True, time_limit=3600)
def aggregates_ensure() -> bool:
    """Velocity counters kept in Redis and lost (a Redis restart): rebuild them from the database."""
    from casework.transactions.aggregates import ensure

    return ensure()


def evaluate_after_commit(ids: list[int]) -> None:
    """Queue the evaluation of these transactions once the surrounding transaction commits
    (coalesced with the other commits of the next TXN_EVALUATE_COALESCE_MS: monitoring/wake.py)."""
    if not ids:
        return
    from casework.transactions.monitoring.wake import evaluation_wake

    transaction.on_commit(lambda: evaluation_wake(ids, send=monitoring_evaluate.delay, chunk=CHUNK))
