"""transaction.card_block_requested (issue 23): accepting the agents' "Block the card and
reissue it" asks core banking to block it, in the acceptance's transaction; the event arrives
signed at a real receiver and matches its documented schema."""

from __future__ import annotations

import json

import pytest

from casework.outbox.models import Action, OutboxEvent
from casework.transactions.services import recommendation_decide
from tests.outbox.conftest import endpoint, receiver  # noqa: F401 - fixtures
from tests.outbox.helpers import deliver_due, validate
from tests.transactions.conftest import load

pytestmark = pytest.mark.django_db(transaction=True)

BLOCK = "transaction.card_block_requested"


def test_accepting_the_block_recommendation_requests_the_card_block(run_investigation, alice, api, receiver,  # noqa: F811
                                                                   endpoint):  # noqa: F811
    investigation = run_investigation(load("card_testing"))
    recs = {r.action: r for r in investigation.recommendations.all()}
    assert "block_card" in recs, investigation.severity

    # Rejecting another recommendation, or accepting one that is no action, asks nothing.
    other = next(r for action, r in recs.items() if action != "block_card")
    recommendation_decide(actor=alice, recommendation=other, accept=True)
    assert not Action.objects.exists()

    answer = api.post(f"/api/transactions/investigations/{investigation.case.reference}/recommendations/"
                      f"{recs['block_card'].pk}/", {"decision": "accept", "note": "Cardholder unreachable."},
                      format="json")
    assert answer.status_code == 200, answer.content
    action = Action.objects.get()
    assert (action.type, action.label) == (BLOCK, "Card block")
    assert OutboxEvent.objects.filter(type=BLOCK).count() == 1

    deliver_due()  # (these tests commit: the acceptance's commit already sent it, eagerly)
    bodies = [json.loads(r.body) for r in receiver.received]
    body = next(b for b in bodies if b["type"] == BLOCK)
    assert all(r.verified_by == receiver.secrets for r in receiver.received)
    validate(body)
    txn = investigation.transaction
    assert body["data"]["card"] == {"account_id": txn.account.account_id, "holder_name": txn.account.holder_name,
                                    "last4": txn.card_last4}
    assert body["data"]["transaction"]["transaction_id"] == txn.transaction_id
    assert body["data"]["recommendation"]["note"] == "Cardholder unreachable."
    assert body["data"]["recommendation"]["accepted_by"] == "alice"
    action.refresh_from_db()
    assert action.state == "delivered"

    # A double click accepts nothing twice.
    again = api.post(f"/api/transactions/investigations/{investigation.case.reference}/recommendations/"
                     f"{recs['block_card'].pk}/", {"decision": "accept"}, format="json")
    assert again.status_code == 200 and Action.objects.count() == 1
