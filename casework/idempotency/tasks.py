from __future__ import annotations

from celery import shared_task

from casework.idempotency.services import idempotency_keys_purge


@shared_task(name="casework.idempotency.purge")
def idempotency_purge() -> int:
    return idempotency_keys_purge()
