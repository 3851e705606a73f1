"""The database's append-only guard on audit entries, as each backend has it: on PostgreSQL one
trigger (audit migrations 0002, 0003), on SQLite two (0004)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from django.db import connection

PG_TRIGGER = "audit_auditentry_append_only"
SQLITE_TRIGGERS = ("audit_auditentry_append_only_delete", "audit_auditentry_append_only_update")


def sqlite_triggers() -> dict[str, str]:
    """The SQLite triggers on audit_auditentry, name -> the SQL that created them."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'audit_auditentry'")
        return dict(cursor.fetchall())


def guard_in_place() -> bool:
    """Whether the append-only trigger(s) exist and are enabled."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT tgenabled FROM pg_trigger WHERE tgname = %s", [PG_TRIGGER])
            return cursor.fetchall() == [("O",)]  # present once, enabled
    return sorted(sqlite_triggers()) == list(SQLITE_TRIGGERS)


@contextlib.contextmanager
def behind_the_codes_back() -> Iterator:
    """A cursor for raw SQL that tampers with entries, with the database's guard switched off
    for this (never committed) test transaction and switched on again afterwards: disabled on
    PostgreSQL, dropped and created again on SQLite (which cannot disable a trigger)."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(f"ALTER TABLE audit_auditentry DISABLE TRIGGER {PG_TRIGGER}")
            yield cursor
            cursor.execute(f"ALTER TABLE audit_auditentry ENABLE TRIGGER {PG_TRIGGER}")
        else:
            triggers = sqlite_triggers()
            for name in triggers:
                cursor.execute(f'DROP TRIGGER "{name}"')
            yield cursor
            for sql in triggers.values():
                cursor.execute(sql)
