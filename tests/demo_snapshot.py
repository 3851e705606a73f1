"""The demo data loaded once per test run and restored from a snapshot after that (issue 44).

`demo_load()` makes about 60 cases the way real ones arrive: every pipeline runs on the offline
provider, every write is audited, so it costs 12 to 15 s of CPU. Four tests need the whole demo
(the accessibility sweep, the schemathesis contract, the new user's crawl, the offline analysts'
prose), and they call `demo_loaded()` instead: the first one in a run loads the demo and takes a
snapshot; the others (in any pytest-xdist worker) restore it in about a second.

What a snapshot holds: every table's rows except those that describe the schema (the applied
migrations, content types and permissions, which the fast flush keeps: tests/db_flush.py), and the files the load
wrote beside them: attachments (MEDIA_ROOT), trace files (TRACE_DIR) and audit checkpoints.
- PostgreSQL: `pg_dump --data-only`, restored with psql into the emptied tables, with
  `session_replication_role=replica` so that neither foreign keys (the dump's order is by
  table name) nor triggers (the append-only audit trail's, the dashboard's counters, whose rows
  the dump holds already) act during the copy.
- SQLite: the database file's copy (sqlite3's backup API), copied back over the test database.

A snapshot belongs to one run (pytest-xdist's run id, or this process's for `-n 0`): the demo's
dates are the load's, and a snapshot from yesterday would make every deadline past. Its
directory is removed with the next run's first snapshot. The first worker to need it builds it
under a file lock; another worker that needs it meanwhile waits for the lock, then restores."""

from __future__ import annotations

import fcntl
import os
import shutil
import sqlite3
import subprocess
from pathlib import Path

from django.conf import settings
from django.db import connection

_ROOT_NAME = "test-demo-snapshots"


def _run_id() -> str:
    return os.environ.get("PYTEST_XDIST_TESTRUNUID") or f"pid{os.getpid()}"


def _root() -> Path:
    # Beside the workers' own VAR_DIRs (var/test/gw0 ...): shared by every worker of the run.
    base = Path(settings.VAR_DIR)
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent
    return base / _ROOT_NAME


def _file_dirs() -> dict[str, Path]:
    return {"media": Path(settings.MEDIA_ROOT), "traces": Path(settings.TRACE_DIR),
            "checkpoints": Path(settings.AUDIT_CHECKPOINT_DIR)}


def demo_loaded() -> None:
    """The demo's data in this test's (transactional) database, as `demo_load()` leaves it."""
    root = _root()
    root.mkdir(parents=True, exist_ok=True)
    snapshot = root / _run_id()
    with open(root / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if (snapshot / "done").is_file():
                _restore(snapshot)
                return
            for old in root.iterdir():
                if old.is_dir() and old != snapshot:
                    shutil.rmtree(old, ignore_errors=True)
            from casework.cases.demo import demo_load

            demo_load()
            _take(snapshot)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _take(snapshot: Path) -> None:
    from audit.tracing import flush_trace_files

    shutil.rmtree(snapshot, ignore_errors=True)
    snapshot.mkdir(parents=True)
    flush_trace_files()
    if connection.vendor == "postgresql":
        from agents.evals.isolation import KEEP

        excluded = [arg for table in sorted(KEEP) for arg in ("--exclude-table-data", table)]
        subprocess.run(["pg_dump", "--data-only", "--no-owner", "--no-privileges", *excluded,
                        "--file", str(snapshot / "data.sql"), *_pg_args()], check=True, env=_pg_env())
    else:
        connection.ensure_connection()
        with sqlite3.connect(snapshot / "data.sqlite3") as target:
            connection.connection.backup(target)
        target.close()
    for name, source in _file_dirs().items():
        if source.is_dir():
            shutil.copytree(source, snapshot / name)
    (snapshot / "done").touch()


def _restore(snapshot: Path) -> None:
    if connection.vendor == "postgresql":
        from agents.evals.isolation import empty_tables

        empty_tables()
        subprocess.run(["psql", "--quiet", "--no-psqlrc", "--single-transaction", "-v", "ON_ERROR_STOP=1",
                        "--file", str(snapshot / "data.sql"), *_pg_args()], check=True,
                       env={**_pg_env(), "PGOPTIONS": "-c session_replication_role=replica"},
                       stdout=subprocess.DEVNULL)
        _kept_sequences_reset()
    else:
        connection.ensure_connection()
        with sqlite3.connect(snapshot / "data.sqlite3") as source:
            source.backup(connection.connection)
        source.close()
    for name, target in _file_dirs().items():
        if (snapshot / name).is_dir():
            shutil.copytree(snapshot / name, target, dirs_exist_ok=True)
    _forget_cached_rows()


def _kept_sequences_reset() -> None:
    """The kept tables' id sequences as this database's own rows need them. The dump names the
    kept tables (without their rows), so it sets their sequences to the snapshot database's
    values: restored into a worker whose database had since run a migration test (its
    django_migrations rows, and its sequence, further on), the next migration it applied
    collided with a row it held ("Key (id)=(142) already exists"), and every later test on that
    worker met a half-migrated schema."""
    from agents.evals.isolation import KEEP

    quote = connection.ops.quote_name
    with connection.cursor() as cursor:
        for table in sorted(KEEP):
            cursor.execute(f"SELECT setval(pg_get_serial_sequence(%s, 'id'), COALESCE(MAX(id), 1), "
                           f"MAX(id) IS NOT NULL) FROM {quote(table)}", [table])


def _forget_cached_rows() -> None:
    """What this process remembers of rows the restore replaced: the content types (the same
    rows, but cheap to forget) and every cache (the navigation's counts, sessions)."""
    from django.contrib.contenttypes.models import ContentType
    from django.core.cache import caches

    ContentType.objects.clear_cache()
    for alias in settings.CACHES:
        caches[alias].clear()


def _pg_args() -> list[str]:
    params = connection.get_connection_params()
    args = ["--dbname", params.get("dbname") or connection.settings_dict["NAME"]]
    if params.get("host"):
        args += ["--host", str(params["host"])]
    if params.get("port"):
        args += ["--port", str(params["port"])]
    if params.get("user"):
        args += ["--username", str(params["user"])]
    return args


def _pg_env() -> dict[str, str]:
    env = dict(os.environ)
    password = connection.get_connection_params().get("password")
    if password:
        env["PGPASSWORD"] = str(password)
    return env
