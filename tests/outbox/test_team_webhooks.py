"""Need-to-know in webhooks: an endpoint that belongs to a team (Endpoint.team) receives only
events of the case types its team owns, and none about a restricted case, whatever it subscribed
to; an admin-owned endpoint (no team) receives what it subscribed to. Real receivers on
127.0.0.1 verify every signature (tests/outbox/conftest.py)."""

from __future__ import annotations

import json

import pytest
from django.core.exceptions import ValidationError
from rest_framework.test import APIClient

from casework.cases.models import Case, CaseRestriction
from casework.cases.services import case_assign, case_create
from casework.outbox.services import endpoint_create, endpoint_update
from tests.cases.need_to_know import FRAUD, SUPPORT, person, team_of
from tests.outbox.conftest import Receiver

pytestmark = pytest.mark.django_db


@pytest.fixture
def admins_receiver(receiver):  # after `receiver`: its settings allow 127.0.0.1
    other = Receiver()
    yield other
    other.close()


def cases_in(receiver) -> list[tuple[str, str]]:
    assert all(r.verified_by for r in receiver.received), "every delivery signed with the endpoint's secret"
    return [(body["type"], body["data"]["case"]["reference"])
            for body in (json.loads(r.body) for r in receiver.received)]


def test_a_support_teams_endpoint_subscribed_to_everything_never_receives_a_fraud_event(
        admin_user, receiver, admins_receiver, django_capture_on_commit_callbacks):
    support_team = team_of(SUPPORT)
    sue = person("sue", SUPPORT)
    endpoint, secret = endpoint_create(actor=admin_user, url=receiver.url, description="Support desk",
                                       team=support_team)
    receiver.secrets = [secret]
    _, admins_secret = endpoint_create(actor=admin_user, url=admins_receiver.url, description="Data warehouse")
    admins_receiver.secrets = [admins_secret]
    assert endpoint.event_types == [] and endpoint.case_types == []  # subscribed to everything
    with django_capture_on_commit_callbacks(execute=True):
        fraud = case_create(actor="system", case_type=FRAUD, title="Card skimming")
        ticket = case_create(actor="system", case_type=SUPPORT, title="Cannot log in")
        secret_ticket = case_create(actor="system", case_type=SUPPORT, title="Executive's account")
    # Restricted to sue: the team's system is not one of its named people.
    Case.objects.filter(pk=secret_ticket.pk).update(restricted=True)
    CaseRestriction.objects.create(case=secret_ticket, user=sue, granted_by=admin_user)
    secret_ticket.refresh_from_db()
    with django_capture_on_commit_callbacks(execute=True):
        case_assign(actor=admin_user, case=secret_ticket, assignee=sue)
        case_assign(actor=admin_user, case=ticket, assignee=sue)

    # Created before it was restricted, the ticket's first event went; none after.
    assert cases_in(receiver) == [("case.created", ticket.reference), ("case.created", secret_ticket.reference),
                                  ("case.assigned", ticket.reference)]
    assert sorted(cases_in(admins_receiver)) == sorted([
        ("case.created", fraud.reference), ("case.created", ticket.reference),
        ("case.created", secret_ticket.reference), ("case.assigned", secret_ticket.reference),
        ("case.assigned", ticket.reference)])


def test_a_teams_endpoint_subscribes_only_within_its_teams_types(admin_user, receiver):
    support_team = team_of(SUPPORT)
    with pytest.raises(ValidationError) as caught:
        endpoint_create(actor=admin_user, url=receiver.url, team=support_team, case_types=[FRAUD])
    assert "case_types" in caught.value.message_dict
    endpoint, _ = endpoint_create(actor=admin_user, url=receiver.url, team=support_team, case_types=[SUPPORT])
    with pytest.raises(ValidationError) as caught:
        endpoint_update(actor=admin_user, endpoint=endpoint, case_types=[SUPPORT, FRAUD])
    assert "case_types" in caught.value.message_dict

    api = APIClient()
    api.force_authenticate(admin_user)
    refused = api.post("/api/webhooks/endpoints/", {"url": receiver.url, "team": support_team.slug,
                                                    "case_types": [FRAUD]}, format="json")
    assert refused.status_code == 400 and "case_types" in refused.json()
    made = api.post("/api/webhooks/endpoints/", {"url": receiver.url, "team": support_team.slug}, format="json")
    assert made.status_code == 201 and made.json()["team"] == support_team.name
    unknown = api.post("/api/webhooks/endpoints/", {"url": receiver.url, "team": "nobody"}, format="json")
    assert unknown.status_code == 400 and "team" in unknown.json()
