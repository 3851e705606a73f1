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
from django.core.management import call_command
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
    """Empty every table of the evaluation database (TRUNCATE on PostgreSQL)."""
    if _active_name is None or connection.settings_dict["NAME"] != _active_name:
        raise RuntimeError("Refusing to empty a database that is not the evaluation's throwaway database.")
    call_command("flush", interactive=False, verbosity=0)
