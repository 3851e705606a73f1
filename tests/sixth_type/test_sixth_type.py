"""A sixth case type is only its own package (issue 45 item 4). The test-only warranty claim
(tests/sixth_type/) is installed by its own settings, so the rest of the suite never sees a
sixth type: its tests (drive/) run here in a process of their own, with their own VAR_DIR and
database, and must all pass. And no shared file names it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import connection

ROOT = Path(__file__).resolve().parents[2]
DRIVE_TESTS = 6
SHARED = ("casework", "agents", "audit", "templates")
SHARED_FILES = ("manage.py", "pyproject.toml", "Makefile", "requirements.txt")


def _database_url(tmp_path: Path) -> str:
    """A database of its own: on PostgreSQL when this run is (the name of this run's with
    _sixth added; its test database is then copied from its own migrated template,
    tests/db_template.py, instead of migrated: about 11 s of CPU), else a SQLite file."""
    url = os.environ.get("DATABASE_URL", "")
    if connection.vendor == "postgresql" and url.startswith(("postgres://", "postgresql://")):
        address, _, query = url.partition("?")
        return f"{address.rstrip('/')}_sixth" + (f"?{query}" if query else "")
    return f"sqlite:///{tmp_path / 'sixth.sqlite3'}"


@pytest.mark.long(seconds=60)
def test_the_sixth_type_runs_end_to_end_in_its_own_process(tmp_path):
    env = {**os.environ, "VAR_DIR": str(tmp_path), "DATABASE_URL": _database_url(tmp_path),
           "LLM_PROVIDER": "offline", "CELERY_TASK_ALWAYS_EAGER": "true"}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    for name in ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID"):
        env.pop(name, None)  # its own run, not one of this run's xdist workers
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:randomly", "-p", "no:cacheprovider",
         "--ds=tests.sixth_type.settings", "tests/sixth_type/drive/"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-5000:]
    assert re.search(rf"\b{DRIVE_TESTS} passed\b", output), output[-2000:]


def test_no_shared_file_names_the_sixth_type():
    named = re.compile(r"warranty|sixth_type", re.I)
    files = [p for top in SHARED for p in (ROOT / top).rglob("*")
             if p.is_file() and p.suffix in (".py", ".html", ".yaml", ".yml", ".json", ".txt", ".toml", ".cfg")]
    files += [ROOT / name for name in SHARED_FILES if (ROOT / name).is_file()]
    assert [str(p.relative_to(ROOT)) for p in files if named.search(p.read_text(errors="ignore"))] == []


def test_the_normal_suite_does_not_see_a_sixth_type():
    from casework.cases.types import CASE_TYPES

    assert "warranty_claim" not in CASE_TYPES
