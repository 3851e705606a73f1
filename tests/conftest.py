"""Shared fixtures: named people (alice the investigator, mona the manager ...)."""

from __future__ import annotations

import os

import pytest

from casework.people.roles import ADMIN, INVESTIGATOR, MANAGER, RELEASE_MANAGER
from casework.people.services import user_create
from tests.db_flush import fast_flush

# A fake server or receiver that recorded an error fails its test, however it was started.
pytest_plugins = ["tests.fakes.guard"]


def in_every_team(user):
    """The fixture people who work cases are in one team owning every case type, so that a test
    about something else sees the cases it makes; tests about need-to-know make their own
    teams (tests/cases/test_visibility.py)."""
    from casework.cases.types import CASE_TYPES
    from casework.people.teams import team_create, team_member_set

    team = team_create(actor="system", name="Every case type (test fixture)", case_types=list(CASE_TYPES))
    team_member_set(actor="system", team=team, user=user)
    return user


@pytest.fixture
def alice(db):
    return in_every_team(user_create(actor="system", username="alice", password="alice-pass-123", role=INVESTIGATOR))


@pytest.fixture
def ivan(db):
    return in_every_team(user_create(actor="system", username="ivan", password="ivan-pass-123", role=INVESTIGATOR))


@pytest.fixture
def mona(db):
    return user_create(actor="system", username="mona", password="mona-pass-123", role=MANAGER)


@pytest.fixture
def rita(db):
    return in_every_team(user_create(actor="system", username="rita", password="rita-pass-123",
                                     role=RELEASE_MANAGER))


@pytest.fixture
def admin_user(db):
    return user_create(actor="system", username="root", password="root-pass-123", role=ADMIN)


@pytest.fixture
def alice_client(client, alice):
    client.force_login(alice)
    return client


@pytest.fixture
def api(alice):
    from rest_framework.test import APIClient

    client = APIClient()
    client.force_authenticate(alice)
    return client


@pytest.fixture(autouse=True)
def _fast_test_settings(settings):
    """PBKDF2's many rounds cost ~0.3 s per user, and WhiteNoise without autorefresh indexes
    every static file once per test; neither is what these tests are about."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    settings.WHITENOISE_AUTOREFRESH = True


@pytest.fixture(autouse=True)
def _navigation_cache_cleared():
    """The navigation's cache outlives a test's rolled-back transaction (and, under VAR_DIR,
    the test run): every test starts without entries another test's rows left there."""
    from django.core.cache import caches

    caches["nav"].clear()


@pytest.fixture(scope="session", autouse=True)
def _transactional_tests_empty_only_the_filled_tables():
    """After a transactional test, only the tables it filled are emptied (tests/db_flush.py)."""
    with fast_flush():
        yield


@pytest.fixture(scope="session")
def django_db_modify_db_settings(django_db_modify_db_settings_parallel_suffix, django_db_blocker,
                                 django_db_use_migrations):
    """On PostgreSQL, test databases are copies of one migrated template (tests/db_template.py)."""
    if django_db_use_migrations:
        from tests.db_template import use_migrated_template

        with django_db_blocker.unblock():
            use_migrated_template()


@pytest.fixture
def worker_prepares(settings, transactional_db):
    """This process's connections set up as a Celery worker's (casework.celery): on PostgreSQL
    every statement is prepared from its first run (threshold 0). Transactional: the set-up
    closes the connection so that the next one is made with the option."""
    from django.db import connections

    from casework.celery import _prepare_statements

    settings.WORKER_DB_PREPARE_THRESHOLD = 0
    _prepare_statements()
    yield connections["default"]
    connections.settings["default"].get("OPTIONS", {}).pop("prepare_threshold", None)
    connections["default"].close()


def prepared_statements() -> list[str]:
    """The statements this connection has prepared (PostgreSQL's pg_prepared_statements)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements")
        return [row[0] for row in cursor.fetchall()]


def _weight(item) -> float:
    """How long a test is expected to take, for the order below: a `long` test's
    `@pytest.mark.long(seconds=...)` hint (its share of an idle run, roughly), else 1."""
    marker = item.get_closest_marker("long")
    return marker.kwargs.get("seconds", 1) if marker else 0


def pytest_collection_modifyitems(items):
    """The long tests first (marked `long`), the longest of them first, each at the head of a
    worker's first pair. `make test` runs pytest-xdist with `--dist load --maxschedchunk 1`:
    each worker is sent two tests to start with (the collection's first two, the next two ...),
    then one more each time it finishes one. With the n longest tests at the head of the n
    workers' pairs, each starts at once on a worker of its own, and every later test goes to
    whichever worker is free. (xdist 3.8 sends consecutive chunks of a quarter of a worker's
    share without --maxschedchunk: one worker was given every long test, ran them one after
    another for 600 s, and ended 95 s after the others.)"""
    items.sort(key=lambda item: -_weight(item))
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT") or 1)
    if workers < 2:
        return
    heads = [item for item in items[:workers] if _weight(item)]
    rest = items[len(heads):]
    paired = []
    for head in heads:
        paired += [head, *rest[:1]]
        rest = rest[1:]
    items[:] = paired + rest


def pytest_collection_finish(session):
    """The test process's garbage collector set up as the product's workers and web processes
    set theirs (casework/ops/gc_tuning.py): what collection loaded (Django, every test module,
    schemathesis, hypothesis, Playwright) frozen, where no pass walks it again, and young passes
    every 20,000 allocations instead of 700. With CPython's defaults a full pass walked all of
    it every 70,000 allocations. Measured: tests/cases and tests/fraud in one process took 7 to
    12% less CPU with it; the whole suite under xdist, the same within noise (555 and 557
    CPU-seconds, one run each), so keep it for what it is, not for a figure."""
    from casework.ops.gc_tuning import gc_tune

    gc_tune()


def pytest_terminal_summary(terminalreporter):
    """On SQLite, say loudly how many tests needed PostgreSQL and how to run them."""
    from django.db import connection

    if connection.vendor != "sqlite":
        return
    skipped = [report for report in terminalreporter.stats.get("skipped", [])
               if "PostgreSQL" in str(getattr(report, "longrepr", ""))]
    if skipped:
        terminalreporter.write_sep("*", f"{len(skipped)} tests SKIPPED: they need PostgreSQL", red=True, bold=True)
        terminalreporter.write_line("Run them: start PostgreSQL on 127.0.0.1:5432 (make test uses it), "
                                    "or `make test-pg` (a throwaway cluster), or set DATABASE_URL.")
