"""access.revert_requested (issue 23): a change decided "rejected" asks its system to revert
it, in the decision's transaction, whichever way the case closed; the event arrives signed at a
real receiver and matches its documented schema. An accepted change asks for nothing."""

from __future__ import annotations

import json

import pytest

from casework.cases.services import case_close
from casework.outbox.models import Action
from tests.outbox.conftest import endpoint, receiver  # noqa: F401 - fixtures
from tests.outbox.helpers import deliver_due, validate

pytestmark = pytest.mark.django_db

REVERT = "access.revert_requested"


def test_rejecting_the_change_on_its_page_requests_the_revert(submit, alice_client, receiver, endpoint):  # noqa: F811
    mutation = submit()
    answer = alice_client.post(f"/access/cases/{mutation.case.reference}/decide/",
                               {"outcome": "rejected", "reason": "No ticket; the manager denied it."})
    assert answer.status_code == 302
    action = Action.objects.get()
    assert (action.type, action.label, action.state) == (REVERT, "Access revert", "requested")

    deliver_due()
    body = next(json.loads(r.body) for r in receiver.received if json.loads(r.body)["type"] == REVERT)
    assert all(r.verified_by == receiver.secrets for r in receiver.received)
    validate(body)
    change = body["data"]["change"]
    assert (change["mutation_id"], change["system"], change["old_value"], change["new_value"]) == (
        mutation.mutation_id, "FinanceApp", "Read", "Write")
    assert change["changed_by"]["employee_id"] == "u001" and change["changed_for"]["employee_id"] == "u003"
    assert body["data"]["revert"] == {"operation": "set", "field": "Access level", "value": "Read"}
    assert body["data"]["decision"]["outcome"] == "rejected" and body["data"]["decision"]["decided_by"] == "alice"
    action.refresh_from_db()
    assert action.state == "delivered"


def test_a_rejection_through_the_generic_close_requests_it_too_and_an_acceptance_does_not(submit, alice):
    accepted, rejected = submit(mutation_id="M-A"), submit(mutation_id="M-R")
    case_close(actor=alice, case=accepted.case, outcome="accepted", reason="Ticket CHG-1 covers it.")
    case_close(actor=alice, case=rejected.case, outcome="rejected", reason="No ticket.")
    assert list(Action.objects.values_list("case_id", "type")) == [(rejected.case_id, REVERT)]
