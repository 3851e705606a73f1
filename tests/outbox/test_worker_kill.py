"""A real worker killed (SIGKILL) while its webhook request is in flight loses no event: the
delivery stays claimed until its lease runs out, then another real worker sends it again under
the same webhook-id, and the receiver, verifying both, can drop the repeat.

The takeover's `now` is given (past the lease) instead of waited for; the only waits are for
things to happen (the request to arrive, the delivery to be recorded), bounded by a guard."""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from casework.cases.services import case_create
from casework.outbox.models import Delivery, DeliveryAttempt
from casework.outbox.tasks import outbox_deliver_due
from tests.ops.test_worker_metrics import Worker, wait_for

# Failure guards only: a worker starts in about 3 s and a delivery takes milliseconds.
DEADLINE_SECONDS = 60


@pytest.fixture
def start_worker(transactional_db, tmp_path, monkeypatch):
    """Real workers (`celery -A casework worker`, as the README starts them) on this test's
    database and broker; killed before the database is flushed."""
    from casework.celery import app

    monkeypatch.setitem(app.conf, "task_always_eager", False)  # through the broker, to the worker
    workers: list[Worker] = []

    def start(count: int) -> list[Worker]:
        """Started together (their start-up, about 3 s each, overlaps), returned once serving."""
        started = [Worker(tmp_path / f"worker-{n}.log", WEBHOOK_ALLOWED_HOSTS="127.0.0.1") for n in range(count)]
        workers.extend(started)
        for worker in started:
            worker.wait_until_serving()
        return started

    yield start
    for worker in workers:
        worker.stop()


def _holds_connection(pid: int, local_port: int) -> bool:
    """Whether process `pid` has the TCP socket whose local port is `local_port` open (Linux's
    /proc: the socket's inode in /proc/net/tcp, then among the process's file descriptors)."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as rows:
            for row in list(rows)[1:]:
                fields = row.split()
                if int(fields[1].rsplit(":", 1)[1], 16) == local_port:
                    inodes.add(f"socket:[{fields[9]}]")
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            if os.readlink(fd) in inodes:
                return True
        except OSError:  # closed since the listing
            pass
    return False


def test_a_worker_killed_mid_request_loses_no_delivery(start_worker, alice, receiver, endpoint):
    workers = start_worker(2)
    receiver.hold()  # the request stays in flight until its worker is dead
    case_create(actor=alice, case_type="fraud_alert", title="Card used in two countries")  # wakes one on commit
    assert receiver.wait_for_request(DEADLINE_SECONDS), "No request arrived:\n" + "\n".join(w.log() for w in workers)
    delivery = Delivery.objects.select_related("endpoint").get()
    assert (delivery.state, delivery.attempts) == (Delivery.State.DELIVERING, 1)
    assert delivery.claim_token and delivery.lease_until is not None
    # The one sending it: the worker process that holds the request's connection open.
    [first] = [w for w in workers if _holds_connection(w.proc.pid, receiver.received[0].client[1])]
    [second] = [w for w in workers if w is not first]

    first.stop()  # SIGKILL to its process group, the request still unanswered
    receiver.release()  # the answer goes to a dead socket: nobody records it
    # The dead worker's claim holds until its lease runs out; no other worker may take it before.
    assert outbox_deliver_due(now=timezone.now()) == 0
    assert Delivery.objects.get().attempts == 1
    after_lease = delivery.lease_until + timedelta(seconds=1)
    assert outbox_deliver_due(now=after_lease) == 1  # through the broker, to the second worker
    delivered = wait_for(lambda: Delivery.objects.filter(state=Delivery.State.DELIVERED).first(), [second],
                         "The second worker did not deliver it", DEADLINE_SECONDS)

    assert delivered.attempts == 2 and delivered.last_status == 200
    # The killed attempt left no record; the one that got through did.
    assert [(a.number, a.status) for a in DeliveryAttempt.objects.all()] == [(2, 200)]
    assert len(receiver.received) == 2
    assert {r.headers["webhook-id"] for r in receiver.received} == {delivered.event_id}
    assert all(r.verified_by == receiver.secrets for r in receiver.received)
