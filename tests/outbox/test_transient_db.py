"""A database restart does not lose a webhook delivery (issue 26): the worker that meets it
retries with backoff; the receiver gets the event once."""

from __future__ import annotations

import pytest

from casework.cases.services import case_create
from casework.outbox import tasks
from casework.outbox.models import Delivery
from tests.fakes.db_restart import on_postgres, terminate_other_backends

pytestmark = [pytest.mark.django_db(transaction=True), on_postgres]


def test_a_delivery_whose_connection_was_terminated_is_retried_and_arrives_once(alice, receiver, endpoint,
                                                                                monkeypatch):
    with monkeypatch.context() as broker:  # the wake-up comes later, by hand
        broker.setattr(tasks.outbox_deliver, "delay", lambda *args, **kwargs: None)
        case_create(actor=alice, case_type="fraud_alert", title="Card used in two countries")
    delivery = Delivery.objects.get()
    assert delivery.state == Delivery.State.PENDING

    assert terminate_other_backends() >= 1  # the worker's connection is gone: the restart
    tasks.outbox_deliver.delay(delivery.pk)

    delivery.refresh_from_db()
    assert delivery.state == Delivery.State.DELIVERED and delivery.attempts == 1
    assert len(receiver.received) == 1
