"""The database emptied after each transactional test (live server, browser, worker threads):
what Django's flush leaves, in milliseconds instead of about 0.6 s on PostgreSQL.

Django's TransactionTestCase truncates every table (~150; TRUNCATE re-creates each table's
files) and then re-creates the content types and permissions (the post_migrate signal), after
each of the suite's ~470 transactional tests. `empty_tables` (agents/evals/isolation.py, the
evaluation scenarios' reset) empties only the tables that have rows and keeps the content
types and permissions, which describe the schema; so the next test starts from the same rows.
Where a test changed those two tables, or asks for what the fast path does not do (several
databases, available_apps, serialized rollback), Django's own flush runs.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from django.db import DEFAULT_DB_ALIAS, connections
from django.test import TransactionTestCase

from agents.evals.isolation import empty_tables

_django_flush = TransactionTestCase._fixture_teardown
# The content types' and permissions' (count, max id) as Django's flush left them.
_schema_rows: tuple | None = None


def _schema_rows_now() -> tuple:
    with connections[DEFAULT_DB_ALIAS].cursor() as cursor:
        cursor.execute("SELECT (SELECT count(*) FROM django_content_type), (SELECT max(id) FROM django_content_type),"
                       " (SELECT count(*) FROM auth_permission), (SELECT max(id) FROM auth_permission)")
        return cursor.fetchone()


def _fixture_teardown(self: TransactionTestCase) -> None:
    global _schema_rows
    simple = (self.available_apps is None and not self.serialized_rollback
              and list(self._databases_names(include_mirrors=False)) == [DEFAULT_DB_ALIAS])
    if simple and _schema_rows is not None and _schema_rows_now() == _schema_rows:
        empty_tables()
        return
    _django_flush(self)
    _schema_rows = _schema_rows_now() if simple else None


@contextlib.contextmanager
def fast_flush() -> Iterator[None]:
    TransactionTestCase._fixture_teardown = _fixture_teardown
    try:
        yield
    finally:
        TransactionTestCase._fixture_teardown = _django_flush
