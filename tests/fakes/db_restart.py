"""A PostgreSQL restart, as a worker's connection sees it: from a connection of its own,
`pg_terminate_backend` ends every other backend of the test database (what a fast shutdown
or a failover does: "terminating connection due to administrator command"). Tests that use
it run on PostgreSQL (CI's database) and skip on SQLite, where there is no server."""

from __future__ import annotations

import psycopg
import pytest
from django.db import connection

on_postgres = pytest.mark.skipif(connection.vendor != "postgresql",
                                 reason="pg_terminate_backend needs PostgreSQL (CI runs these on it)")


def terminate_other_backends() -> int:
    """End every other backend of this database; returns how many were ended."""
    params = connection.get_connection_params()
    for name in ("cursor_factory", "context", "prepare_threshold"):
        params.pop(name, None)
    with psycopg.connect(**params, autocommit=True) as killer, killer.cursor() as cursor:
        cursor.execute("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                       "WHERE datname = current_database() AND pid <> pg_backend_pid()")
        return cursor.fetchone()[0]
