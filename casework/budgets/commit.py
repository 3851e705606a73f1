"""The budget pool's connections commit without waiting for the WAL's flush (ledger.BudgetCharger
.connection_prepare); the writes that must not be lost on a crash ask for the flush again."""

from __future__ import annotations

from django.db import connection


def durable() -> None:
    """Inside a transaction: it commits only once flushed to disk (PostgreSQL; a no-op elsewhere),
    whatever the session's synchronous_commit. Audit entries and notifications are written so."""
    if connection.vendor == "postgresql" and connection.in_atomic_block:
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL synchronous_commit = on")
