"""Celery tasks: evaluate the detection rules on ingested transactions, and the sweep."""

from __future__ import annotations

from celery import shared_task
from django.utils import timezone

# Transactions evaluated per task when the sweep finds a backlog.
CHUNK = 1000


@shared_task(acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def monitoring_evaluate(ids: list[int]) -> dict:
    from casework.transactions.monitoring.evaluate import transactions_evaluate

    return transactions_evaluate(ids)


@shared_task(ignore_result=True)
def monitoring_evaluate_pending() -> int:
    """Evaluate what a lost message left behind (ingested, not evaluated after a few seconds)."""
    from casework.transactions.monitoring.evaluate import pending_ids, transactions_evaluate

    ids = pending_ids(now=timezone.now())
    for start in range(0, len(ids), CHUNK):
        transactions_evaluate(ids[start:start + CHUNK])
    return len(ids)
