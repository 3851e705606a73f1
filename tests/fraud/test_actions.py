"""fraud.account_freeze_requested (issue 23): confirming fraud through the alert API asks for
the account's freeze, in the decision's transaction; the event arrives signed at a real receiver
and matches its documented schema (the action's states: tests/outbox/test_actions.py)."""

from __future__ import annotations

import json

import pytest

from casework.outbox.models import Action
from tests.outbox.conftest import endpoint, receiver  # noqa: F401 - fixtures
from tests.outbox.helpers import deliver_due, validate

pytestmark = pytest.mark.django_db

FREEZE = "fraud.account_freeze_requested"


def test_confirming_fraud_through_the_api_requests_the_freeze(make_alert, api, receiver, endpoint):  # noqa: F811
    alert = make_alert()
    answer = api.post(f"/api/fraud/alerts/{alert.case.reference}/close/",
                      {"outcome": "confirmed_fraud", "reason": "Deposits leave within two days."}, format="json")
    assert answer.status_code == 201, answer.content
    action = Action.objects.get()
    assert (action.type, action.label, action.state) == (FREEZE, "Account freeze", "requested")
    deliver_due()
    body = next(json.loads(r.body) for r in receiver.received if json.loads(r.body)["type"] == FREEZE)
    assert all(r.verified_by == receiver.secrets for r in receiver.received)
    validate(body)
    assert body["data"]["account"] == {"account_id": alert.account.account_id}
    assert body["data"]["alert"]["risk_level"] == alert.risk_level
    assert body["data"]["case"]["reference"] == alert.case.reference and body["data"]["case"]["status"] == "closed"
    action.refresh_from_db()
    assert action.state == "delivered"


def test_dismissing_it_asks_for_nothing(make_alert, api):
    alert = make_alert()
    api.post(f"/api/fraud/alerts/{alert.case.reference}/close/",
             {"outcome": "false_positive", "reason": "Known payroll pattern."}, format="json")
    assert not Action.objects.exists()
