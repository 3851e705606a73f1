"""Velocity counters under concurrent ingest: four batches on the same cards, stored at once on
four connections, add up (the upsert adds; no batch's counts are lost or doubled), and no
batch deadlocks another (each writes its buckets in key order). Checked against the rebuild
from the transactions. SQLite takes its write lock at BEGIN, so the race runs on PostgreSQL."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.db import connection, connections

from casework.transactions.aggregates.models import AggregateBucket
from casework.transactions.ingest import transactions_import
from tests.transactions.test_aggregates import VELOCITY_RULES, WHEN, running, txn

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "postgresql",
                       reason="concurrent writers need PostgreSQL (SQLite runs one writer at a time)"),
]


def test_four_batches_stored_at_once_on_the_same_cards_add_up(alice, mona, monkeypatch):
    from casework.transactions.monitoring import tasks

    monkeypatch.setattr(tasks.monitoring_evaluate, "delay", lambda *args, **kwargs: None)
    for name in ("burst", "spend", "shared device"):
        running(alice, mona, VELOCITY_RULES[name], name=name, action="review", mode="shadow")
    # The cards' accounts exist first (a new account is created by the batch that brings it).
    transactions_import(actor="system", rows=[txn(f"A-{c}", WHEN, card=f"CARD-{c}") for c in range(3)])
    barrier = threading.Barrier(4)
    errors: list[Exception] = []

    def ingest(batch: int) -> None:
        try:
            rows = [txn(f"B{batch}-{k}", WHEN + timedelta(seconds=5 * k + batch), card=f"CARD-{k % 3}",
                        device_id=f"dev-{(k + batch) % 4}") for k in range(25)]
            barrier.wait(timeout=30)  # a guard only: a lost thread fails the test, never hangs it
            transactions_import(actor="system", rows=rows)
        except Exception as exc:  # noqa: BLE001 - the test reports what the thread got
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=ingest, args=(b,)) for b in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not errors, errors
    counted = sorted(AggregateBucket.objects.values_list("series", "grp", "size", "start", "n", "cents"))
    # By card and by account: all 103; by device: the 100 that have a device.
    assert sum(n for _, _, size, _, n, _ in counted if size == 86400) == 103 + 103 + 100
    call_command("aggregates_rebuild", "--check")  # the counters equal the transactions'
