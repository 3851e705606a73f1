"""Events leave through the outbox to a real receiver: signed, retried under one id, and only
for what committed. The schedule is driven by `now=`, never by waiting."""

from __future__ import annotations

import json
import threading
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.utils import timezone
from jsonschema import Draft4Validator

from casework.cases.models import Case
from casework.cases.notifications.models import Notification
from casework.cases.services import case_assign, case_close, case_create
from casework.outbox.catalogue import EVENT_TYPES, envelope_schema
from casework.outbox.delivery import delivery_attempt
from casework.outbox.models import Delivery, DeliveryAttempt, OutboxEvent
from casework.outbox.services import endpoint_update
from casework.outbox.tasks import outbox_deliver_due

pytestmark = pytest.mark.django_db

HOUR = timedelta(hours=1)
MINUTE = timedelta(minutes=1)


def _open_case(alice, capture) -> Case:
    with capture(execute=True):
        return case_create(actor=alice, case_type="fraud_alert", title="Card used in two countries")


def _json_schema(schema):
    """OpenAPI 3.0's `nullable` as JSON Schema's type list, to validate with jsonschema."""
    if isinstance(schema, dict):
        out = {k: _json_schema(v) for k, v in schema.items() if k not in ("nullable", "example")}
        if schema.get("nullable") and "type" in schema:
            out["type"] = [schema["type"], "null"]
        return out
    return [_json_schema(v) for v in schema] if isinstance(schema, list) else schema


def validate(body: dict) -> None:
    Draft4Validator(_json_schema(envelope_schema(EVENT_TYPES[body["type"]]))).validate(body)


def _payload(received) -> dict:
    return json.loads(received.body)


def test_an_event_arrives_signed_under_one_id_across_its_retries(alice, receiver, endpoint,
                                                                 django_capture_on_commit_callbacks, settings):
    settings.WEBHOOK_RETRY_JITTER = 0
    receiver.script = [500, 500]
    case = _open_case(alice, django_capture_on_commit_callbacks)  # first attempt on commit: 500
    delivery = Delivery.objects.get()
    assert delivery.state == Delivery.State.RETRYING and delivery.attempts == 1
    t = timezone.now()
    assert outbox_deliver_due(now=t) == 0  # not due for 5 s
    # Its retry's own message (an ETA at its due time: tests/outbox/test_leases.py) holds it
    # until then plus a lease; past that the sweep sends it, as if that message was lost.
    assert outbox_deliver_due(now=delivery.next_attempt_at) == 0
    assert outbox_deliver_due(now=t + timedelta(seconds=5 + settings.WEBHOOK_LEASE_SECONDS + 1)) == 1  # second: 500
    assert outbox_deliver_due(now=t + HOUR) == 1  # third: 200
    assert outbox_deliver_due(now=t + 2 * HOUR) == 0  # nothing left

    delivery.refresh_from_db()
    assert (delivery.state, delivery.attempts, delivery.last_status) == (Delivery.State.DELIVERED, 3, 200)
    assert [a.status for a in DeliveryAttempt.objects.order_by("number")] == [500, 500, 200]
    assert len(receiver.received) == 3
    assert {r.headers["webhook-id"] for r in receiver.received} == {delivery.event_id}
    assert all(r.verified_by == receiver.secrets for r in receiver.received)
    body = _payload(receiver.received[-1])
    assert body["id"] == delivery.event_id and body["type"] == "case.created" and body["version"] == 1
    assert body["data"]["case"]["reference"] == case.reference
    validate(body)


def test_a_decision_that_rolls_back_emits_nothing(alice, receiver, endpoint, django_capture_on_commit_callbacks):
    case = _open_case(alice, django_capture_on_commit_callbacks)
    receiver.received.clear()
    with pytest.raises(RuntimeError), django_capture_on_commit_callbacks(execute=True):  # noqa: PT012
        with transaction.atomic():
            case_close(actor=alice, case=case, outcome="legit", reason="Customer confirmed.")
            raise RuntimeError("the decision's transaction fails after the close")
    assert not OutboxEvent.objects.filter(type="case.decided").exists()
    outbox_deliver_due(now=timezone.now() + 30 * HOUR)
    assert [_payload(r)["type"] for r in receiver.received] == []


def test_assign_and_decide_emit_their_documented_events(alice, ivan, receiver, endpoint,
                                                        django_capture_on_commit_callbacks):
    case = _open_case(alice, django_capture_on_commit_callbacks)
    with django_capture_on_commit_callbacks(execute=True):
        case_assign(actor=alice, case=case, assignee=ivan)
    with django_capture_on_commit_callbacks(execute=True):
        case_close(actor=ivan, case=case, outcome="legit", reason="Customer confirmed.")
    every = [_payload(r) for r in receiver.received]
    for body in every:
        validate(body)
    bodies = [b for b in every if b["type"].startswith("case.")]
    assert [b["type"] for b in bodies] == ["case.created", "case.assigned", "case.decided"]
    # Closing queued knowledge capture, which fails on a case with no alert record: run.failed.
    runs = [b for b in every if b["type"].startswith("run.")]
    assert [b["type"] for b in runs] == ["run.failed"] and runs[0]["data"]["case"]["reference"] == case.reference
    assert bodies[1]["data"]["assignee"] == "ivan"
    assert bodies[2]["data"]["decision"]["outcome"] == "legit"
    assert bodies[2]["data"]["decision"]["decided_by"] == "ivan"


def test_subscriptions_choose_the_endpoints(alice, receiver, admin_user, django_capture_on_commit_callbacks):
    from casework.outbox.services import endpoint_create

    decided_only, _ = endpoint_create(actor=admin_user, url=receiver.url, event_types=["case.decided"])
    other_type, _ = endpoint_create(actor=admin_user, url=receiver.url, case_types=["support_ticket"])
    fraud_only, _ = endpoint_create(actor=admin_user, url=receiver.url, case_types=["fraud_alert"])
    everything, _ = endpoint_create(actor=admin_user, url=receiver.url)
    case = _open_case(alice, django_capture_on_commit_callbacks)
    with django_capture_on_commit_callbacks(execute=True):
        case_close(actor=alice, case=case, outcome="legit", reason="Customer confirmed.")

    def received(endpoint) -> list[str]:
        return sorted(Delivery.objects.filter(endpoint=endpoint, event__type__startswith="case.")
                      .values_list("event__type", flat=True))

    assert received(decided_only) == ["case.decided"]
    assert received(other_type) == []
    assert received(fraud_only) == received(everything) == ["case.created", "case.decided"]


def test_410_disables_the_endpoint_and_tells_its_owner(alice, admin_user, receiver, endpoint,
                                                       django_capture_on_commit_callbacks):
    receiver.script = [410]
    _open_case(alice, django_capture_on_commit_callbacks)
    endpoint.refresh_from_db()
    assert not endpoint.enabled and "410" in endpoint.disabled_reason
    assert Delivery.objects.get().state == Delivery.State.DEAD
    assert Notification.objects.filter(recipient_user=admin_user, subject__contains="disabled").exists()
    # Nothing more goes to a disabled endpoint, not even new events.
    _open_case(alice, django_capture_on_commit_callbacks)
    assert outbox_deliver_due(now=timezone.now() + 30 * HOUR) == 0
    assert len(receiver.received) == 1


def test_the_circuit_breaker_pauses_the_endpoint_without_spending_attempts(
        alice, receiver, endpoint, settings, django_capture_on_commit_callbacks):
    settings.WEBHOOK_BREAKER_MIN_ATTEMPTS = 2  # all failed inside the window (tests/outbox/test_breaker.py)
    settings.WEBHOOK_BREAKER_FAILURE_RATE = 1.0
    settings.WEBHOOK_BREAKER_COOLOFF_SECONDS = 3600
    receiver.script = [503, 503]
    _open_case(alice, django_capture_on_commit_callbacks)  # attempt 1: 503
    _open_case(alice, django_capture_on_commit_callbacks)  # attempt 1 of the second: 503, breaker opens
    endpoint.refresh_from_db()
    assert endpoint.consecutive_failures == 2 and endpoint.paused_until is not None
    t = timezone.now()
    assert outbox_deliver_due(now=t + timedelta(minutes=30)) == 0  # paused: they wait
    first = Delivery.objects.order_by("pk").first()
    assert delivery_attempt(first.pk, now=t + timedelta(minutes=30)) is None  # a stray message does nothing
    assert set(Delivery.objects.values_list("attempts", flat=True)) == {1}
    endpoint.refresh_from_db()
    assert endpoint.breaker_state(t + 30 * MINUTE) == "open"
    assert endpoint.breaker_state(t + 2 * HOUR) == "half-open"
    # Cool-off over: one delivery goes alone as the probe, and is accepted ...
    assert outbox_deliver_due(now=t + 2 * HOUR) == 1
    assert sorted(Delivery.objects.values_list("state", "attempts")) == [
        (Delivery.State.DELIVERED, 2), (Delivery.State.RETRYING, 1)]
    endpoint.refresh_from_db()
    assert endpoint.consecutive_failures == 0 and endpoint.breaker_state(t + 2 * HOUR) == "closed"
    # ... which closes the breaker: the queue resumes at the next sweep, without waiting out
    # WEBHOOK_REDELIVER_AFTER_SECONDS for the wake-ups that did nothing while it was open.
    assert outbox_deliver_due(now=t + 2 * HOUR + timedelta(seconds=1)) == 1
    assert set(Delivery.objects.values_list("state", flat=True)) == {Delivery.State.DELIVERED}


def test_a_failed_probe_opens_the_breaker_for_another_cool_off(
        alice, receiver, endpoint, settings, django_capture_on_commit_callbacks):
    settings.WEBHOOK_BREAKER_MIN_ATTEMPTS = 2  # all failed inside the window (tests/outbox/test_breaker.py)
    settings.WEBHOOK_BREAKER_FAILURE_RATE = 1.0
    settings.WEBHOOK_BREAKER_COOLOFF_SECONDS = 3600
    receiver.script = [503, 503, 503]
    for _ in range(3):
        _open_case(alice, django_capture_on_commit_callbacks)  # 503, 503 (opens), then paused: waits
    assert len(receiver.received) == 2
    t = timezone.now()
    assert outbox_deliver_due(now=t + 2 * HOUR) == 1  # the probe, alone: 503
    assert len(receiver.received) == 3
    endpoint.refresh_from_db()
    assert endpoint.consecutive_failures == 3
    assert endpoint.breaker_state(t + 2 * HOUR + 59 * MINUTE) == "open"  # re-opened from the probe's failure
    assert outbox_deliver_due(now=t + 2 * HOUR + 59 * MINUTE) == 0
    assert len(receiver.received) == 3
    assert outbox_deliver_due(now=t + 4 * HOUR) == 1  # the next probe: 200, the breaker closes
    assert outbox_deliver_due(now=t + 4 * HOUR + timedelta(seconds=1)) == 2  # and the rest follow
    assert set(Delivery.objects.values_list("state", flat=True)) == {Delivery.State.DELIVERED}
    assert len(receiver.received) == 6


@pytest.mark.django_db(transaction=True)  # the probe is sent from a thread of its own, on its own connection
def test_nothing_goes_beside_the_probe_while_it_is_in_flight(alice, receiver, endpoint, settings):
    settings.WEBHOOK_BREAKER_MIN_ATTEMPTS = 1  # all failed inside the window (tests/outbox/test_breaker.py)
    settings.WEBHOOK_BREAKER_FAILURE_RATE = 1.0
    settings.WEBHOOK_BREAKER_COOLOFF_SECONDS = 60
    receiver.script = [503]
    case_create(actor=alice, case_type="fraud_alert", title="First")
    case_create(actor=alice, case_type="fraud_alert", title="Second")
    probe, other = Delivery.objects.order_by("pk")
    t = timezone.now()
    delivery_attempt(probe.pk, now=t)  # 503: the breaker opens
    # Half-open: the probe takes the one place, and holds it while its request is in flight ...
    receiver.hold()

    def send_probe():
        try:
            delivery_attempt(probe.pk, now=t + HOUR)
        finally:
            connection.close()

    sending = threading.Thread(target=send_probe)
    sending.start()
    assert receiver.wait_for_request(), "the probe did not arrive"
    try:
        endpoint.refresh_from_db()
        assert endpoint.breaker_state(t + HOUR) == "probing"
        assert delivery_attempt(other.pk, now=t + HOUR) is None  # ... so a stray message does nothing
        assert outbox_deliver_due(now=t + HOUR) == 0
    finally:
        receiver.release()
        sending.join(timeout=30)
    assert Delivery.objects.get(pk=other.pk).attempts == 0
    assert Delivery.objects.get(pk=probe.pk).state == Delivery.State.DELIVERED


def test_after_the_last_attempt_the_delivery_is_dead_and_the_owner_is_told(
        alice, admin_user, receiver, endpoint, settings, django_capture_on_commit_callbacks):
    settings.WEBHOOK_RETRY_SCHEDULE = [5, 300, 1800, 7200, 18000, 36000, 36000]
    settings.WEBHOOK_BREAKER_MIN_ATTEMPTS = 100  # all failed inside the window (tests/outbox/test_breaker.py)
    settings.WEBHOOK_BREAKER_FAILURE_RATE = 1.0
    receiver.script = [500] * 8
    case = _open_case(alice, django_capture_on_commit_callbacks)
    t = timezone.now()
    for hours in range(1, 40):
        outbox_deliver_due(now=t + hours * HOUR)
    delivery = Delivery.objects.get()
    assert (delivery.state, delivery.attempts) == (Delivery.State.DEAD, 8)
    # Spread over more than a day: the last attempt came more than 24 h after the first.
    attempts = list(DeliveryAttempt.objects.order_by("number"))
    assert attempts[-1].at - attempts[0].at > timedelta(hours=24)
    note = Notification.objects.get(recipient_user=admin_user, subject__contains="failed for good")
    assert note.case == case and delivery.event_id in note.body
    assert len({r.headers["webhook-id"] for r in receiver.received}) == 1


def test_replay_sends_a_dead_delivery_again_under_the_same_id(
        alice, admin_user, receiver, endpoint, settings, django_capture_on_commit_callbacks):
    from audit.models import AuditEntry
    from casework.outbox.services import delivery_replay, endpoint_replay_failed

    settings.WEBHOOK_RETRY_SCHEDULE = [5]
    receiver.script = [500, 500]
    _open_case(alice, django_capture_on_commit_callbacks)
    outbox_deliver_due(now=timezone.now() + HOUR)
    delivery = Delivery.objects.get()
    assert delivery.state == Delivery.State.DEAD
    with django_capture_on_commit_callbacks(execute=True):
        assert endpoint_replay_failed(actor=admin_user, endpoint=endpoint) == 1
    delivery.refresh_from_db()
    assert delivery.state == Delivery.State.DELIVERED and delivery.attempts == 3
    with django_capture_on_commit_callbacks(execute=True):
        delivery_replay(actor=admin_user, delivery=delivery)
    assert len({r.headers["webhook-id"] for r in receiver.received}) == 1 and len(receiver.received) == 4
    assert AuditEntry.objects.filter(action__in=["webhook.deliveries_replayed", "webhook.delivery_replayed"]).count() == 2


def test_a_lost_broker_message_is_sent_by_the_sweep(alice, receiver, endpoint, settings):
    # No on-commit wake-up at all (as if the broker lost the message).
    case_create(actor=alice, case_type="fraud_alert", title="Lost message")
    t = timezone.now()
    assert outbox_deliver_due(now=t) == 0  # its message may still be on its way
    assert outbox_deliver_due(now=t + timedelta(seconds=settings.WEBHOOK_REDELIVER_AFTER_SECONDS + 1)) == 1
    assert Delivery.objects.get().state == Delivery.State.DELIVERED


def test_a_worker_that_died_mid_request_leaves_a_claim_another_takes_over(alice, receiver, endpoint):
    from casework.outbox.delivery import delivery_claim

    case_create(actor=alice, case_type="fraud_alert", title="Dead worker")
    delivery = Delivery.objects.select_related("endpoint").get()
    t = timezone.now()
    assert delivery_claim(delivery, now=t) is not None  # a worker took it, then died
    assert delivery_claim(delivery, now=t) is None  # a duplicate message: nothing
    assert outbox_deliver_due(now=t + timedelta(seconds=5)) == 0  # its lease still runs
    assert outbox_deliver_due(now=t + timedelta(minutes=5)) == 1
    delivery.refresh_from_db()
    assert delivery.state == Delivery.State.DELIVERED and delivery.attempts == 2


def test_reenabling_an_endpoint_resumes_its_waiting_deliveries(alice, admin_user, receiver, endpoint, settings,
                                                               django_capture_on_commit_callbacks):
    settings.WEBHOOK_RETRY_JITTER = 0
    settings.WEBHOOK_BREAKER_MIN_ATTEMPTS = 1  # all failed inside the window (tests/outbox/test_breaker.py)
    settings.WEBHOOK_BREAKER_FAILURE_RATE = 1.0
    settings.WEBHOOK_BREAKER_COOLOFF_SECONDS = 24 * 3600
    receiver.script = [503]
    _open_case(alice, django_capture_on_commit_callbacks)  # attempt 1: 503, and the breaker opens for a day
    # Its owner turns the endpoint off while the receiver is fixed: the delivery waits.
    endpoint_update(actor=admin_user, endpoint=endpoint, enabled=False)
    case_create(actor=alice, case_type="fraud_alert", title="While disabled")
    assert Delivery.objects.count() == 1  # a disabled endpoint subscribes to nothing new
    t = timezone.now()
    assert outbox_deliver_due(now=t + HOUR) == 0
    waiting = Delivery.objects.get()
    assert (waiting.state, waiting.attempts) == (Delivery.State.RETRYING, 1) and len(receiver.received) == 1

    # Turned on again (the breaker closed with it, a day early): the waiting delivery goes.
    endpoint_update(actor=admin_user, endpoint=endpoint, enabled=True)
    assert outbox_deliver_due(now=t + HOUR) == 1
    waiting.refresh_from_db()
    assert (waiting.state, waiting.attempts, waiting.last_status) == (Delivery.State.DELIVERED, 2, 200)
    assert [r.headers["webhook-id"] for r in receiver.received] == [waiting.event_id] * 2


def test_the_case_page_says_what_happened_and_no_more(alice, alice_client, receiver, endpoint, settings,
                                                      django_capture_on_commit_callbacks):
    settings.WEBHOOK_RETRY_JITTER = 0
    receiver.script = [500]
    case = _open_case(alice, django_capture_on_commit_callbacks)
    page = alice_client.get(f"/cases/{case.reference}/").content.decode()
    assert "Outgoing events" in page and "case.created" in page
    assert "retrying (attempt 1 failed: HTTP 500; next at" in page
    outbox_deliver_due(now=timezone.now() + HOUR)
    page = alice_client.get(f"/cases/{case.reference}/").content.decode()
    assert "delivered (HTTP 200," in page and " ms)" in page


def test_a_run_that_ends_emits_run_completed_in_its_transaction(alice, receiver, endpoint):
    from agents.models import AgentRun
    from agents.signals import run_ended

    case = case_create(actor=alice, case_type="fraud_alert", title="Assessed")
    run = AgentRun.objects.create(case=case, pipeline="fraud", mode="full", status=AgentRun.Status.COMPLETED,
                                  finished_at=timezone.now())
    with pytest.raises(RuntimeError), transaction.atomic():  # noqa: PT012
        run_ended.send(sender=AgentRun, run=run)
        raise RuntimeError("the run's end rolls back")
    assert not OutboxEvent.objects.filter(type__startswith="run.").exists()
    run_ended.send(sender=AgentRun, run=run)
    event = OutboxEvent.objects.get(type__startswith="run.")
    assert event.type == "run.completed" and event.case == case
    validate(event.payload)
    run.status = AgentRun.Status.WAITING
    run_ended.send(sender=AgentRun, run=run)  # waiting for a person: not an end
    assert OutboxEvent.objects.filter(type__startswith="run.").count() == 1


def test_an_endpoint_with_no_owner_has_its_failures_told_to_the_admins(
        alice, admin_user, receiver, settings, django_capture_on_commit_callbacks):
    from casework.outbox.services import endpoint_create
    from casework.people.roles import ADMIN
    from casework.people.services import user_create

    user_create(actor="system", username="ada", password="ada-pass-123", role=ADMIN)
    gone = user_create(actor="system", username="gone", password="gone-pass-123", role=ADMIN)
    gone.is_active = False
    gone.save()
    endpoint, secret = endpoint_create(actor="system", url=receiver.url, description="Nobody's")
    assert endpoint.owner is None
    receiver.secrets = [secret]
    settings.WEBHOOK_RETRY_SCHEDULE = [5]
    settings.WEBHOOK_BREAKER_MIN_ATTEMPTS = 100  # all failed inside the window (tests/outbox/test_breaker.py)
    settings.WEBHOOK_BREAKER_FAILURE_RATE = 1.0
    receiver.script = [500, 500, 410]
    _open_case(alice, django_capture_on_commit_callbacks)
    outbox_deliver_due(now=timezone.now() + HOUR)  # the last try: dead-lettered
    dead = Notification.objects.filter(subject__contains="failed for good")
    assert sorted(dead.values_list("recipient_user__username", flat=True)) == ["ada", "root"]
    assert all("no owner" in note.body for note in dead)
    _open_case(alice, django_capture_on_commit_callbacks)  # 410: disabled
    disabled = Notification.objects.filter(subject__contains="disabled")
    assert sorted(disabled.values_list("recipient_user__username", flat=True)) == ["ada", "root"]
    # Nobody else hears of it: not the investigator, not an admin whose account is closed.
    assert not Notification.objects.filter(recipient_user__in=[alice, gone], kind="webhook").exists()
