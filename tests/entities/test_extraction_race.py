"""Two cases naming the same new entity at the same moment: one entity, both mentions. On
PostgreSQL the second insert of the entity waits for the first transaction, and the mentions'
insert (a statement of its own, sent in the same round trip) then sees the committed row.
SQLite takes its write lock at BEGIN (IMMEDIATE), so the two never overlap there: the test
runs on PostgreSQL (CI's database)."""

from __future__ import annotations

import threading
import time

import pytest
from django.db import connection, transaction

from casework.cases.services import case_create
from casework.cases.types import Found
from casework.entities.extraction import entities_record
from casework.entities.models import Entity, Mention

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "postgresql",
                       reason="the overlap needs PostgreSQL's row-level waits (CI runs it there)"),
]

NEW = Found("device", "DEV-BRAND-NEW", "device_ids")


def _waiting_on_a_lock() -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                       "AND wait_event_type = 'Lock' AND query LIKE %s", ["%entities_entity%"])
        return cursor.fetchone()[0] > 0


def test_two_cases_naming_the_same_new_entity_at_once_both_get_their_mention():
    first = case_create(actor="system", case_type="fraud_alert", title="First")
    second = case_create(actor="system", case_type="fraud_alert", title="Second")
    recorded, may_commit = threading.Event(), threading.Event()
    errors: list[Exception] = []

    def hold_then_commit():
        try:
            with transaction.atomic():
                entities_record(case=first, found=[NEW])
                recorded.set()
                assert may_commit.wait(timeout=30)
        except Exception as exc:  # noqa: BLE001 - the test reports what the thread got
            errors.append(exc)
        finally:
            connection.close()

    def record_meanwhile():
        try:
            assert recorded.wait(timeout=30)
            with transaction.atomic():
                entities_record(case=second, found=[NEW])
        except Exception as exc:  # noqa: BLE001
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=hold_then_commit), threading.Thread(target=record_meanwhile)]
    for thread in threads:
        thread.start()
    # The second waits on the first's uncommitted entity (polled: a condition, not a time).
    for _ in range(600):
        if _waiting_on_a_lock():
            break
        time.sleep(0.05)
    else:
        may_commit.set()
        pytest.fail("the second recording never waited on the first")
    may_commit.set()
    for thread in threads:
        thread.join(timeout=30)
    assert not errors and not any(t.is_alive() for t in threads), errors
    entity = Entity.objects.get(kind="device", value="DEV-BRAND-NEW")
    assert set(Mention.objects.filter(entity=entity).values_list("case_id", flat=True)) == {first.pk, second.pk}
