"""Every case type has one place where a person decides: its decision forms appear once on the
case page, in the decision box beside the recommendation, never again in a tab."""

from __future__ import annotations

import re

import pytest

pytestmark = pytest.mark.django_db


def forms_posting_to(html: str, action: str) -> int:
    return len(re.findall(rf'<form[^>]*action="{re.escape(action)}"', html))


def page(client, reference: str) -> str:
    response = client.get(f"/cases/{reference}/")
    assert response.status_code == 200
    return response.content.decode()


def test_fraud(alice, alice_client):
    from casework.fraud.services import alert_create
    from tests.fraud.conftest import CYCLING

    reference = alert_create(actor=alice, data=CYCLING).case.reference
    assert forms_posting_to(page(alice_client, reference), f"/cases/{reference}/close/") == 1


def test_support(alice, alice_client):
    from casework.support.services import customer_save, ticket_open
    from tests.support.conftest import CUSTOMERS

    customer = customer_save(actor="system", data=CUSTOMERS[0])
    ticket = ticket_open(actor=alice, customer=customer, message="I was charged twice for my subscription.")
    html = page(alice_client, ticket.case.reference)
    # Reply, escalate or close: one decision box with its three actions, each once.
    for action in ("reply", "escalate", "close"):
        assert forms_posting_to(html, f"/support/tickets/{ticket.ticket_id}/{action}/") == 1, action
    assert forms_posting_to(html, f"/cases/{ticket.case.reference}/close/") == 0  # not a second, generic one


def test_transactions(alice, alice_client):
    from casework.transactions.services import investigation_start
    from tests.transactions.conftest import load

    investigation = investigation_start(actor=alice, transaction_id=load("card_testing"))
    reference = investigation.case.reference
    assert forms_posting_to(page(alice_client, reference), f"/cases/{reference}/close/") == 1


def test_releases(alice_client, rita):
    from django.test import Client

    from tests.releases.conftest import SEED, submit

    made, _run = submit(SEED)
    release_manager = Client()
    release_manager.force_login(rita)
    html = page(release_manager, made.case.reference)
    assert forms_posting_to(html, f"/releases/{made.release_id}/decide/") == 1
    assert forms_posting_to(html, f"/cases/{made.case.reference}/close/") == 0
    # An investigator reads the release and its report but is offered no decision form.
    html = page(alice_client, made.case.reference)
    assert forms_posting_to(html, f"/releases/{made.release_id}/decide/") == 0
    assert forms_posting_to(html, f"/cases/{made.case.reference}/close/") == 0
