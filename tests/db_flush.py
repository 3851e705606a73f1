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


_django_reload = TransactionTestCase._should_reload_connections


def _should_reload_connections(self: TransactionTestCase) -> bool:
    """Django closes every connection after each transactional test, so that a statement run at
    a connection's start and lost to a test's rollback cannot leak into the next test. On
    PostgreSQL each new connection costs the server a backend whose catalog caches start empty
    and plans every statement afresh (the emptying query above alone, a UNION over ~150 tables,
    took 17 ms to plan at each test: pg_stat_statements). Django's connection setup on
    PostgreSQL is made in autocommit, before any test's transaction, so nothing of it can be
    lost: a healthy connection, outside any transaction and still on the test database, is
    kept. SQLite's connections are closed as Django does (they cost nothing to open)."""
    for conn in connections.all(initialized_only=True):
        if not _reusable(conn):
            return _django_reload(self)
    return False


def _reusable(conn) -> bool:
    """Not open (nothing to close), or a PostgreSQL connection in autocommit (no atomic block),
    idle (no transaction open), on the test database and answering."""
    if conn.connection is None:
        return True
    from psycopg.pq import TransactionStatus

    return (conn.vendor == "postgresql" and conn.get_autocommit()
            and conn.connection.info.transaction_status == TransactionStatus.IDLE
            and conn.connection.info.dbname == conn.settings_dict["NAME"] and conn.is_usable())


@contextlib.contextmanager
def fast_flush() -> Iterator[None]:
    TransactionTestCase._fixture_teardown = _fixture_teardown
    TransactionTestCase._should_reload_connections = _should_reload_connections
    try:
        yield
    finally:
        TransactionTestCase._fixture_teardown = _django_flush
        TransactionTestCase._should_reload_connections = _django_reload
