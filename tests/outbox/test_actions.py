"""Actions (issue 23.5): a decision asks another system to act; the action follows its delivery
(requested -> delivered) and the other system's signed confirmation (-> confirmed / failed), or
a person's word. Shown on the case page and flagged in the queue once overdue. Driven by a fraud
alert's confirmed fraud (the account freeze); the other types' events are in their own tests."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.db import transaction

from audit.models import AuditEntry
from casework.cases.actions.services import action_overdue_q, action_resolve, case_has_overdue_action
from casework.cases.services import case_close
from casework.fraud.services import alert_create
from casework.outbox.models import Action, Delivery, OutboxEvent
from casework.outbox.services import endpoint_create
from tests.fraud.conftest import CLEAN
from tests.outbox.helpers import as_client_headers, deliver_due, signed, validate

pytestmark = pytest.mark.django_db

FREEZE = "fraud.account_freeze_requested"


@pytest.fixture
def alert(db):
    return alert_create(actor="system", data=dict(CLEAN))


def _confirm(client, action, secret, payload, **kw):
    body, headers = signed(secret, payload, **kw)
    return client.post(f"/api/actions/{action.event_id}/confirmation", data=body, content_type="application/json",
                       **as_client_headers(headers))


def test_a_confirmed_fraud_requests_the_freeze_and_the_action_follows_its_delivery(alice, alert, receiver, endpoint):
    case_close(actor=alice, case=alert.case, outcome="confirmed_fraud", reason="Money cycles through it.")
    action = Action.objects.get()
    assert (action.type, action.label, action.state, action.requested_by) == (FREEZE, "Account freeze", "requested",
                                                                               alice)
    assert action.event.case_id == alert.case_id

    assert deliver_due() == 2  # case.decided and the freeze
    freeze = [json.loads(r.body) for r in receiver.received if json.loads(r.body)["type"] == FREEZE]
    assert len(freeze) == 1 and all(r.verified_by == receiver.secrets for r in receiver.received)
    body = freeze[0]
    validate(body)
    assert body["id"] == action.event_id
    assert body["data"]["account"] == {"account_id": "ACC-2001"}
    assert body["data"]["decision"]["outcome"] == "confirmed_fraud"
    assert body["data"]["action"]["confirm_url"] == f"/api/actions/{action.event_id}/confirmation"
    action.refresh_from_db()
    assert action.state == "delivered" and action.delivered_at is not None and action.delivered_to == "Core banking"
    moves = list(AuditEntry.objects.filter(action="action.state_changed").values_list("data__to", "actor"))
    assert moves == [("delivered", "system")]
    assert AuditEntry.objects.filter(action="action.requested", actor="alice").count() == 1


def test_a_legit_decision_asks_for_no_freeze(alice, alert, receiver, endpoint):
    case_close(actor=alice, case=alert.case, outcome="legit", reason="The customer explained it.")
    assert not Action.objects.exists()
    assert list(OutboxEvent.objects.values_list("type", flat=True).order_by("type")) == ["case.created",
                                                                                         "case.decided"]


def test_a_decision_that_rolls_back_asks_for_nothing(alice, alert, receiver, endpoint):
    with pytest.raises(RuntimeError), transaction.atomic():  # noqa: PT012
        case_close(actor=alice, case=alert.case, outcome="confirmed_fraud", reason="Money cycles through it.")
        assert Action.objects.count() == 1  # written in the decision's transaction ...
        raise RuntimeError("the decision fails after the close")
    assert not Action.objects.exists() and not OutboxEvent.objects.filter(type=FREEZE).exists()  # ... and undone
    assert deliver_due() == 0 and receiver.received == []  # (the alert was opened before the endpoint existed)


def test_a_signed_confirmation_confirms_it_once(alice, alert, receiver, endpoint, client):
    case_close(actor=alice, case=alert.case, outcome="confirmed_fraud", reason="Money cycles through it.")
    deliver_due()
    action = Action.objects.get()
    secret = receiver.secrets[0]

    answer = _confirm(client, action, secret, {"status": "confirmed", "reference": "FRZ-1009"})
    assert answer.status_code == 200, answer.content
    assert answer.json()["state"] == "confirmed" and answer.json()["resolved_by"] == "Core banking"
    action.refresh_from_db()
    assert (action.state, action.resolved_by_name, action.external_reference) == ("confirmed", "Core banking",
                                                                                    "FRZ-1009")
    entry = AuditEntry.objects.filter(action="action.state_changed", data__to="confirmed").get()
    assert entry.actor == "webhook:Core banking" and entry.actor_type == "system"
    assert secret not in json.dumps(entry.data)

    again = _confirm(client, action, secret, {"status": "confirmed"}, msg_id="cb_2")  # a retried callback
    assert again.status_code == 200 and AuditEntry.objects.filter(data__to="confirmed").count() == 1
    late = _confirm(client, action, secret, {"status": "failed", "reason": "oops"}, msg_id="cb_3")
    assert late.status_code == 409 and late.json()["code"] == "already_confirmed"


def test_the_system_may_say_it_failed_with_its_reason(alice, alert, receiver, endpoint, client):
    case_close(actor=alice, case=alert.case, outcome="confirmed_fraud", reason="Money cycles through it.")
    deliver_due()
    action = Action.objects.get()
    no_reason = _confirm(client, action, receiver.secrets[0], {"status": "failed"})
    assert no_reason.status_code == 400 and "reason" in no_reason.json()
    answer = _confirm(client, action, receiver.secrets[0], {"status": "failed", "reason": "Account already closed."})
    assert answer.status_code == 200 and answer.json()["state"] == "failed"
    action.refresh_from_db()
    assert action.failure_reason == "Account already closed."


def test_forged_unsigned_tampered_or_unknown_callbacks_are_refused(alice, alert, receiver, endpoint, client):
    case_close(actor=alice, case=alert.case, outcome="confirmed_fraud", reason="Money cycles through it.")
    deliver_due()
    action = Action.objects.get()
    url = f"/api/actions/{action.event_id}/confirmation"
    from casework.outbox.models import secret_new

    forged = _confirm(client, action, secret_new(), {"status": "confirmed"})
    assert forged.status_code == 401 and forged.json()["code"] == "signature_invalid"
    unsigned = client.post(url, data=b'{"status": "confirmed"}', content_type="application/json")
    assert unsigned.status_code == 401 and unsigned.json()["code"] == "signature_missing"
    body, headers = signed(receiver.secrets[0], {"status": "failed", "reason": "x"})
    tampered = client.post(url, data=body.replace(b"failed", b"confirmed").replace(b'"x"', b'""'),
                           content_type="application/json", **as_client_headers(headers))
    assert tampered.status_code == 401
    garbage = client.post(url, data=b"{}", content_type="application/json",
                          **as_client_headers({**headers, "webhook-signature": "nonsense"}))
    assert garbage.status_code == 401
    body, headers = signed(receiver.secrets[0], {"status": "confirmed"})
    unknown = client.post("/api/actions/evt_nope/confirmation", data=body, content_type="application/json",
                          **as_client_headers(headers))
    assert unknown.status_code == 404 and unknown.json()["code"] == "unknown_action"
    bad = _confirm(client, action, receiver.secrets[0], {"status": "done"})
    assert bad.status_code == 400 and "status" in bad.json()
    not_json = _confirm(client, action, receiver.secrets[0], b"not json")
    assert not_json.status_code == 400 and "body" in not_json.json()
    action.refresh_from_db()
    assert action.state == "delivered"


def test_a_wrongly_signed_callback_cannot_tell_a_known_action_from_an_unknown_one(
        alice, alert, receiver, endpoint, client):
    case_close(actor=alice, case=alert.case, outcome="confirmed_fraud", reason="Money cycles through it.")
    deliver_due()
    action = Action.objects.get()
    from casework.outbox.models import secret_new

    forger = secret_new()
    answers = []
    for event_id in (action.event_id, "evt_nope"):
        body, headers = signed(forger, {"status": "confirmed"})
        answer = client.post(f"/api/actions/{event_id}/confirmation", data=body, content_type="application/json",
                             **as_client_headers(headers))
        answers.append((answer.status_code, answer.json()))
    # The signature is checked first: the same refusal, word for word, whether the id exists or not.
    assert answers[0] == answers[1] and answers[0][0] == 401 and answers[0][1]["code"] == "signature_invalid"
    # A system holding a real secret still learns that an id is unknown.
    body, headers = signed(receiver.secrets[0], {"status": "confirmed"})
    unknown = client.post("/api/actions/evt_nope/confirmation", data=body, content_type="application/json",
                          **as_client_headers(headers))
    assert unknown.status_code == 404 and unknown.json()["code"] == "unknown_action"
    action.refresh_from_db()
    assert action.state == "delivered"


def test_an_endpoint_the_event_never_went_to_cannot_confirm_it(alice, alert, receiver, endpoint, client, admin_user):
    other, other_secret = endpoint_create(actor=admin_user, url=receiver.url, description="Other",
                                          event_types=["case.created"])
    case_close(actor=alice, case=alert.case, outcome="confirmed_fraud", reason="Money cycles through it.")
    action = Action.objects.get()
    assert _confirm(client, action, other_secret, {"status": "confirmed"}).status_code == 401


def test_a_dead_delivery_fails_the_action_and_a_replay_that_gets_through_delivers_it(
        alice, alert, receiver, endpoint, settings, admin_user):
    from casework.outbox.delivery import delivery_attempt
    from casework.outbox.services import delivery_replay

    settings.WEBHOOK_RETRY_SCHEDULE = [5]
    settings.WEBHOOK_RETRY_JITTER = 0
    receiver.script = [500, 500]
    case_close(actor=alice, case=alert.case, outcome="confirmed_fraud", reason="Money cycles through it.")
    action = Action.objects.get()
    delivery = Delivery.objects.get(event_id=action.event_id)
    t = action.requested_at
    delivery_attempt(delivery.pk, now=t)
    delivery_attempt(delivery.pk, now=t + timedelta(seconds=10))
    delivery.refresh_from_db()
    action.refresh_from_db()
    assert delivery.state == "dead" and action.state == "failed"
    assert action.failure_reason == "Not delivered: Core banking answered HTTP 500 after 2 attempts."
    delivery_replay(actor=admin_user, delivery=delivery, now=t + timedelta(minutes=1))
    delivery_attempt(delivery.pk, now=t + timedelta(minutes=1))
    action.refresh_from_db()
    assert action.state == "delivered" and action.failure_reason == ""


def test_with_no_endpoint_the_action_stays_requested_and_says_so(alice, alert, alice_client):
    case_close(actor=alice, case=alert.case, outcome="confirmed_fraud", reason="Money cycles through it.")
    page = alice_client.get(f"/cases/{alert.case.reference}/").content.decode()
    assert "Account freeze requested" in page and "not delivered: no endpoint subscribes to it" in page


def test_a_person_confirms_or_fails_it_audited(alice, alert, alice_client):
    case_close(actor=alice, case=alert.case, outcome="confirmed_fraud", reason="Money cycles through it.")
    action = Action.objects.get()
    url = f"/cases/{alert.case.reference}/actions/resolve/"
    refused = alice_client.post(url, {"action": action.pk, "to": "failed", "reason": ""})
    assert refused.status_code == 302
    action.refresh_from_db()
    assert action.state == "requested"
    alice_client.post(url, {"action": action.pk, "to": "confirmed", "reason": "Phoned core banking: frozen at 14:05."})
    action.refresh_from_db()
    assert (action.state, action.resolved_by, action.resolved_by_name) == ("confirmed", alice, "alice")
    entry = AuditEntry.objects.filter(action="action.state_changed").get()
    assert entry.actor == "alice" and entry.data["reason"] == "Phoned core banking: frozen at 14:05."
    page = alice_client.get(f"/cases/{alert.case.reference}/").content.decode()
    assert "confirmed by alice" in page and "Confirm or fail an action yourself" not in page  # nothing left to confirm
    assert alice_client.get(f"/cases/{alert.case.reference}/actions/").content.decode().count("confirmed by alice") == 1


def test_overdue_is_an_open_action_past_its_deadline_on_the_case_and_in_the_queue(alice, alert, alice_client,
                                                                                   settings):
    settings.ACTION_CONFIRM_DEADLINE_MINUTES = 30
    case_close(actor=alice, case=alert.case, outcome="confirmed_fraud", reason="Money cycles through it.")
    action = Action.objects.get()
    assert action.deadline_at == action.requested_at + timedelta(minutes=30)
    before, after = action.requested_at + timedelta(minutes=29), action.requested_at + timedelta(minutes=31)
    assert not action.is_overdue(before) and action.is_overdue(after)
    assert not Action.objects.filter(action_overdue_q(before)).exists()
    assert Action.objects.filter(action_overdue_q(after)).get() == action
    from casework.cases.models import Case

    assert list(Case.objects.filter(case_has_overdue_action(after)).values_list("pk", flat=True)) == [alert.case_id]
    assert not Case.objects.filter(case_has_overdue_action(before)).exists()
    settings.ACTION_CONFIRM_DEADLINES = {FREEZE: 5}
    second = alert_create(actor="system", data={**CLEAN, "account_id": "ACC-2002"})
    case_close(actor=alice, case=second.case, outcome="confirmed_fraud", reason="Same ring.")
    fast = Action.objects.get(case=second.case)
    assert fast.deadline_at == fast.requested_at + timedelta(minutes=5)

    # The pages read the clock: put the deadline well behind it, as the SLA page tests do.
    Action.objects.filter(pk=action.pk).update(deadline_at=action.requested_at - timedelta(days=1))
    queue = alice_client.get("/cases/?action=overdue").content.decode()
    assert alert.case.reference in queue and second.case.reference not in queue
    assert 'data-action="overdue"' in queue
    listed = alice_client.get("/api/cases/?action=overdue").json()
    assert [c["reference"] for c in listed["results"]] == [alert.case.reference]
    assert alice_client.get("/api/cases/?action=late").status_code == 400
    page = alice_client.get(f"/cases/{alert.case.reference}/").content.decode()
    assert 'data-overdue="true"' in page and "Overdue: not confirmed by" in page
    metrics = alice_client.get("/metrics").content.decode()
    assert 'casework_actions{state="requested"} 2.0' in metrics and "casework_actions_overdue 1.0" in metrics
    action_resolve(actor=alice, action=action, to="confirmed", reason="Checked.")
    assert alert.case.reference not in alice_client.get("/cases/?action=overdue").content.decode()


def test_a_confirmation_that_beats_the_delivery_record_keeps_both(alice, alert, receiver, endpoint, client):
    """The system may act and call back before our worker has recorded its 2xx: the action is
    confirmed at once, and the delivery, recorded after, adds when it was delivered."""
    case_close(actor=alice, case=alert.case, outcome="confirmed_fraud", reason="Money cycles through it.")
    action = Action.objects.get()
    assert _confirm(client, action, receiver.secrets[0], {"status": "confirmed"}).status_code == 200
    deliver_due()
    action.refresh_from_db()
    assert action.state == "confirmed" and action.delivered_at is not None
    assert list(AuditEntry.objects.filter(action="action.state_changed").values_list("data__to", flat=True)) == [
        "confirmed"]
