"""A worker's PostgreSQL connections prepare the statements they repeat; the value-bounded
searches are never prepared (casework/db_unprepared.py, casework.celery)."""

from __future__ import annotations

from django.db import connection

from casework.cases.models import Case
from casework.db_unprepared import execute_unprepared
from tests.conftest import prepared_statements


def test_a_workers_connection_prepares_what_it_runs_but_not_an_unprepared_statement(worker_prepares):
    if worker_prepares.vendor != "postgresql":
        # SQLite has nothing to prepare: the hook leaves its options alone.
        assert "prepare_threshold" not in worker_prepares.settings_dict.get("OPTIONS", {})
        with connection.cursor() as cursor:
            execute_unprepared(cursor, "SELECT %s + 1", [41])
            assert cursor.fetchone() == (42,)
        return
    assert worker_prepares.settings_dict["OPTIONS"]["prepare_threshold"] == 0
    for _ in range(2):
        assert not Case.objects.filter(pk=0).exists()
        with connection.cursor() as cursor:
            execute_unprepared(cursor, "SELECT %s::int + 1 AS unprepared_answer", [41])
            assert cursor.fetchone() == (42,)
    statements = prepared_statements()
    assert any('FROM "cases_case"' in sql for sql in statements), statements
    assert not any("unprepared_answer" in sql for sql in statements), statements


def test_the_web_s_connections_prepare_nothing(transactional_db):
    # Django's default, kept outside the workers: no threshold, nothing prepared.
    assert "prepare_threshold" not in connection.settings_dict.get("OPTIONS", {})
    for _ in range(3):
        assert not Case.objects.filter(pk=0).exists()
    if connection.vendor == "postgresql":
        assert prepared_statements() == []


def test_an_unprepared_statement_still_reaches_the_query_log_and_execute_wrappers(worker_prepares):
    from django.test.utils import CaptureQueriesContext

    seen = []

    def wrapper(execute, sql, params, many, context):
        seen.append(sql)
        return execute(sql, params, many, context)

    with CaptureQueriesContext(connection) as captured, connection.execute_wrapper(wrapper):
        with connection.cursor() as cursor:
            execute_unprepared(cursor, "SELECT %s AS logged_answer", [7])
            assert cursor.fetchone() == (7,)
    assert any("logged_answer" in q["sql"] for q in captured.captured_queries)
    assert any("logged_answer" in sql for sql in seen)
