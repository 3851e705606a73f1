"""Where evaluation runs write: never the real database.

The pipelines' tool handlers read the database from pool threads, each on its own
connection, and such a connection cannot see rows inside another connection's open
transaction; so a scenario cannot run inside one rolled-back transaction. Instead
`evaluation_database()` creates a separate, migrated, throwaway database with Django's
test-database machinery (SQLite: var/evals-<pid>.sqlite3; PostgreSQL: <name>_evals_<pid>),
points the default connection at it for the duration, and drops it afterwards. Each scenario
starts from an empty database (`flush_evaluation_database`, which refuses to run anywhere
else). Evaluating therefore never touches a real case.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

from django.conf import settings
from django.db import connection

_active_name: str | None = None


@contextlib.contextmanager
def evaluation_database() -> Iterator[str]:
    global _active_name
    real_name = connection.settings_dict["NAME"]
    test_settings = connection.settings_dict.setdefault("TEST", {})
    saved_test_name = test_settings.get("NAME")
    if connection.vendor == "sqlite":
        test_settings["NAME"] = str(settings.VAR_DIR / f"evals-{os.getpid()}.sqlite3")
    else:
        test_settings["NAME"] = f"{real_name}_evals_{os.getpid()}"[:63]
    try:
        name = connection.creation.create_test_db(verbosity=0, autoclobber=True, serialize=False, keepdb=False)
        _active_name = name
        try:
            yield name
        finally:
            _active_name = None
            connection.creation.destroy_test_db(real_name, verbosity=0, keepdb=False)
    finally:
        test_settings["NAME"] = saved_test_name
        if saved_test_name is None:
            test_settings.pop("NAME")


def flush_evaluation_database() -> None:
    """Empty the evaluation database; refuses to run on any other."""
    if _active_name is None or connection.settings_dict["NAME"] != _active_name:
        raise RuntimeError("Refusing to empty a database that is not the evaluation's throwaway database.")
    empty_tables()


# Rows every scenario may share: they describe the schema, not data (and ContentType's cache
# keeps their ids, which a full flush would invalidate).
KEEP = frozenset({"django_migrations", "django_content_type", "auth_permission"})


def empty_tables() -> None:
    """What `manage.py flush` does, for the tables that have rows only, and without the
    post_migrate signal. On PostgreSQL, DELETE (foreign keys are deferred to the commit) except
    for tables whose BEFORE DELETE triggers refuse it (the append-only audit trail), which are truncated:
    TRUNCATE re-creates a table's files, ~0.1 s a table, so a full flush cost ~2 s a scenario;
    this costs milliseconds. On SQLite, Django's flush statements (DELETE)."""
    from django.core.management.color import no_style

    tables = [t for t in connection.introspection.django_table_names(only_existing=True, include_views=False)
              if t not in KEEP]
    filled = _filled(tables)
    if not filled:
        return
    if connection.vendor != "postgresql":
        connection.ops.execute_sql_flush(
            connection.ops.sql_flush(no_style(), filled, reset_sequences=False, allow_cascade=True))
    elif _empty_postgresql(filled):
        return  # no trigger fired: nothing was written while the tables were emptied
    # Triggers that keep counters (the dashboard's roll-ups, casework/cases/dashboard/triggers.py)
    # write rows while the cases and decisions are deleted, after their own tables may have
    # been emptied: empty those once more, so the next scenario starts from nothing.
    refilled = _filled(tables)
    if refilled:
        connection.ops.execute_sql_flush(
            connection.ops.sql_flush(no_style(), refilled, reset_sequences=False, allow_cascade=True))


def _filled(tables: list[str]) -> list[str]:
    """The tables with a row: one query per 200 tables (SQLite allows 500 SELECTs in a
    compound one), not one a table."""
    quote = connection.ops.quote_name
    filled = []
    with connection.cursor() as cursor:
        for start in range(0, len(tables), 200):
            cursor.execute(" UNION ALL ".join(  # noqa: S608 - names from introspection
                f"SELECT {n} WHERE EXISTS (SELECT 1 FROM {quote(table)})"
                for n, table in enumerate(tables[start:start + 200], start)))
            filled += [tables[row[0]] for row in cursor.fetchall()]
    return filled


def _empty_postgresql(filled: list[str]) -> bool:
    """Empty the tables. As a superuser (the test suite, a developer's evaluation database), with
    session_replication_role = replica, which fires no trigger: a DELETE of each (the append-only
    audit trail's trigger does not refuse it, no foreign key is checked, and no roll-up counter
    is written; every table with rows is emptied, so none is left pointing at a deleted row), and
    returns True. Otherwise DELETE where no trigger refuses it and TRUNCATE where one does (a
    TRUNCATE re-creates the table's files: about 27 ms for the audit trail and what cascades
    from it, against a fraction of a millisecond for a DELETE of a few rows); returns False."""
    from django.db import transaction

    quote = connection.ops.quote_name
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT current_setting('is_superuser') = 'on'")
        if cursor.fetchone()[0]:
            cursor.execute("SET LOCAL session_replication_role = replica")
            for table in filled:
                cursor.execute(f"DELETE FROM {quote(table)}")  # noqa: S608 - names from introspection
            return True
        # Tables with a BEFORE DELETE trigger (tgtype bits 2 and 8): the ones that refuse a
        # DELETE. AFTER triggers that keep counters (the dashboard's roll-ups) take DELETE.
        cursor.execute("SELECT DISTINCT tgrelid::regclass::text FROM pg_trigger "
                       "WHERE NOT tgisinternal AND tgtype & 2 <> 0 AND tgtype & 8 <> 0")
        guarded = {row[0].strip('"') for row in cursor.fetchall()}
        cursor.execute("SET CONSTRAINTS ALL DEFERRED")
        for table in filled:
            if table not in guarded:
                cursor.execute(f"DELETE FROM {quote(table)}")  # noqa: S608 - names from introspection
        truncate = [quote(t) for t in filled if t in guarded]
        if truncate:
            cursor.execute(f"TRUNCATE {', '.join(truncate)} CASCADE")
    return False
