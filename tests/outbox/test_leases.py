"""Leases, as agent runs have them: a worker holds the outbox rows it works on under a short
lease it renews while working; when it dies the rows lapse within a lease (not after
WEBHOOK_REDELIVER_AFTER_SECONDS) and the sweep takes them again. And a retry goes at its due
time (a Celery ETA), with the sweep as the safety net. A real receiver; clocks are given
(`now=`, a counting monotonic clock), never waited for."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from casework.cases.services import case_create
from casework.outbox.delivery import delivery_attempt, delivery_claim
from casework.outbox.models import Delivery
from casework.outbox.tasks import outbox_deliver, outbox_deliver_due

pytestmark = pytest.mark.django_db

SECOND = timedelta(seconds=1)


class Killed(BaseException):
    """The worker's process dies here: nothing after it runs (no except, no finally of ours)."""


def _retries_due(alice, n: int) -> list[int]:
    """n deliveries whose first attempt failed and whose retry is due, held by nobody."""
    for i in range(n):
        case_create(actor=alice, case_type="fraud_alert", title=f"Case {i}")
    Delivery.objects.update(state=Delivery.State.RETRYING, attempts=1, woken_at=None)
    return list(Delivery.objects.order_by("pk").values_list("pk", flat=True))


def test_a_sweep_killed_mid_way_leaves_its_unsent_retries_to_the_next_sweep_after_a_lease(
        alice, receiver, endpoint, settings, monkeypatch):
    settings.WEBHOOK_LEASE_SECONDS = 10
    _retries_due(alice, 3)
    t = timezone.now()
    send = outbox_deliver.apply_async
    sent = []

    def dies_at_the_second(*args, **kwargs):
        if sent:
            raise Killed
        sent.append(args)
        return send(*args, **kwargs)

    monkeypatch.setattr(outbox_deliver, "apply_async", dies_at_the_second)
    with pytest.raises(Killed):
        outbox_deliver_due(now=t)
    monkeypatch.undo()
    assert len(receiver.received) == 1

    # While the dead sweep's lease runs, no other sweep sends them beside it ...
    assert outbox_deliver_due(now=t + SECOND) == 0
    # ... and once it has run out, the next sweep does: a lease, not WEBHOOK_REDELIVER_AFTER_SECONDS.
    assert settings.WEBHOOK_REDELIVER_AFTER_SECONDS > 11
    assert outbox_deliver_due(now=t + 11 * SECOND) == 2
    assert set(Delivery.objects.values_list("state", flat=True)) == {Delivery.State.DELIVERED}
    assert len(receiver.received) == 3


def test_a_broker_that_refuses_mid_sweep_leaves_the_rest_to_the_next_sweep_at_once(
        alice, receiver, endpoint, settings, monkeypatch):
    _retries_due(alice, 2)
    t = timezone.now()

    def refuses(*args, **kwargs):
        raise ConnectionError("broker down")

    monkeypatch.setattr(outbox_deliver, "apply_async", refuses)
    assert outbox_deliver_due(now=t) == 0
    monkeypatch.undo()
    assert outbox_deliver_due(now=t + SECOND) == 2  # let go at once: the sweep was alive to say so


def test_a_worker_killed_mid_request_frees_its_claim_after_a_lease(alice, receiver, endpoint, settings):
    settings.WEBHOOK_LEASE_SECONDS = 10
    case_create(actor=alice, case_type="fraud_alert", title="Dead worker")
    delivery = Delivery.objects.select_related("endpoint").get()
    assert delivery.endpoint.timeout_seconds == 10
    t = timezone.now()
    assert delivery_claim(delivery, now=t) is not None  # a worker took it, then died
    assert outbox_deliver_due(now=t + 9 * SECOND) == 0
    # The lease, not the request's timeout plus a margin (40 s), frees it.
    assert outbox_deliver_due(now=t + 11 * SECOND) == 1
    delivery.refresh_from_db()
    assert delivery.state == Delivery.State.DELIVERED and delivery.attempts == 2


@pytest.mark.django_db(transaction=True)  # the request is sent from a thread of its own, on its own connection
def test_a_live_worker_keeps_its_claim_while_its_request_is_in_flight(alice, receiver, endpoint, settings,
                                                                      monkeypatch):
    from casework.outbox import leases

    settings.WEBHOOK_LEASE_SECONDS = 10
    case_create(actor=alice, case_type="fraud_alert", title="Slow receiver")  # delivered on commit
    t = timezone.now()
    Delivery.objects.update(state=Delivery.State.PENDING, next_attempt_at=t)  # to be sent again
    delivery = Delivery.objects.get()
    # A monotonic clock that advances 5 s each time it is read, and a renewal at each wait.
    ticks = iter(range(0, 10_000, 5))
    monkeypatch.setattr(leases, "clock", lambda: float(next(ticks)))
    monkeypatch.setattr(leases, "renew_every", lambda: 0.01)
    receiver.hold()

    def send():
        try:
            delivery_attempt(delivery.pk, now=t)
        finally:
            connection.close()

    sending = threading.Thread(target=send)
    sending.start()
    assert receiver.wait_for_request(), "the request did not arrive"
    try:
        deadline = timezone.now() + timedelta(seconds=30)  # a failure guard only
        while Delivery.objects.get(pk=delivery.pk).lease_until < t + 30 * SECOND:
            assert timezone.now() < deadline, "the claim was not renewed"
        # Its first lease (t + 10 s) is long past on the worker's clock: still its.
        assert outbox_deliver_due(now=t + 20 * SECOND) == 0
    finally:
        receiver.release()
        sending.join(timeout=30)
    delivery.refresh_from_db()
    assert delivery.state == Delivery.State.DELIVERED and delivery.attempts == 2 and len(receiver.received) == 2


def test_a_retry_is_sent_for_its_due_time_and_the_sweep_is_only_the_safety_net(
        alice, receiver, endpoint, settings, monkeypatch):
    settings.WEBHOOK_RETRY_SCHEDULE = [5, 3600]
    settings.WEBHOOK_RETRY_JITTER = 0
    settings.WEBHOOK_LEASE_SECONDS = 10
    receiver.script = [503, 503]
    case_create(actor=alice, case_type="fraud_alert", title="Retry on time")
    delivery = Delivery.objects.get()
    scheduled = []
    monkeypatch.setattr(outbox_deliver, "apply_async", lambda *a, **kw: scheduled.append((a, kw)))

    outbox_deliver(delivery.pk)  # the first attempt, as a worker runs it: 503

    delivery.refresh_from_db()
    due = delivery.next_attempt_at
    assert delivery.state == Delivery.State.RETRYING
    assert scheduled == [(((delivery.pk,),), {"eta": due})]  # at its due time, not at the next sweep
    # Held for that message until its due time plus a lease: no sweep sends it beside it ...
    assert outbox_deliver_due(now=due) == 0
    assert outbox_deliver_due(now=due + 9 * SECOND) == 0
    monkeypatch.undo()
    # ... unless the message never came (its worker died holding it): a lease after its due time.
    assert outbox_deliver_due(now=due + 11 * SECOND) == 1
    delivery.refresh_from_db()
    assert (delivery.attempts, delivery.state) == (2, Delivery.State.RETRYING)
    # A retry an hour away (past WEBHOOK_RETRY_ETA_MAX_SECONDS) is the sweep's: no message held that long.
    assert delivery.claim_token == "" and delivery.lease_until is None
