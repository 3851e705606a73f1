"""Statements that are never prepared, for the few whose best plan depends on their values.

A worker's PostgreSQL connection prepares what it runs repeatedly (settings.
WORKER_DB_PREPARE_THRESHOLD, applied by casework.celery). After five runs of a prepared
statement PostgreSQL may keep one generic plan for it, made without the values. For a
primary-key read or write that plan is the one any values would get. For the searches that
are bounded by their values (the fraud look-alikes' cells, a transaction's neighbours, the
entities an alert shares) the values decide how many rows each branch reads, and a generic
plan can walk a whole table where the values' own plan reads a few rows (bench/README.md,
growth; tests/fraud/test_lookalike_bounds.py). Those go through `execute_unprepared`: parsed
and planned with their values every time, as on the web's connections.
"""

from __future__ import annotations

from contextlib import nullcontext

from django.db.backends.utils import CursorDebugWrapper


def execute_unprepared(cursor, sql: str, params) -> None:
    """`cursor.execute(sql, params)` on a Django cursor, never as a prepared statement.

    Django's execute wrappers (connection.execute_wrapper) and its query log (DEBUG,
    CaptureQueriesContext) see it as any other statement."""
    if cursor.db.vendor != "postgresql":
        cursor.execute(sql, params)
        return
    log = (cursor.debug_sql(sql, params, use_last_executed_query=True) if isinstance(cursor, CursorDebugWrapper)
           else nullcontext())
    with log:
        cursor._execute_with_wrappers(sql, params, many=False, executor=_execute)


def _execute(sql, params, _many, context):
    db = context["connection"]
    db.validate_no_broken_transaction()
    with db.wrap_database_errors:
        # psycopg's own switch: this execution is neither counted towards preparing nor prepared.
        context["cursor"].cursor.execute(sql, params, prepare=False)
