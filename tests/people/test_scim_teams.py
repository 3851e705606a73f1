"""Teams from SCIM groups: the provider moving a person from one group to another moves them
between teams, and the cases they see follow; a membership added by hand stays."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client
from rest_framework.test import APIClient

from casework.cases.services import case_create
from casework.people.models import TeamMembership
from casework.people.teams import team_create, team_member_set
from tests.people.test_scim import TOKEN, create, patch

pytestmark = pytest.mark.django_db


@pytest.fixture
def scim(settings):
    settings.SCIM_TOKEN = TOKEN
    settings.OIDC_GROUP_ROLES = {"casework-investigators": "investigator"}
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    return client


def test_moving_a_person_between_scim_groups_moves_their_team_and_their_cases(scim):
    team_create(actor="system", name="Fraud and transactions", case_types=["fraud_alert"], sso_groups=["fraud-analysts"])
    team_create(actor="system", name="Support desk", case_types=["support_ticket"], sso_groups=["support-agents"])
    releases = team_create(actor="system", name="Releases", case_types=["release_risk"])
    fraud = case_create(actor="system", case_type="fraud_alert", title="Card testing")
    ticket = case_create(actor="system", case_type="support_ticket", title="Cannot log in")
    user_id = create(scim).json()["id"]
    scim.post("/scim/v2/Groups", {"displayName": "casework-investigators", "members": [{"value": user_id}]},
              format="json")
    fraud_group = scim.post("/scim/v2/Groups", {"displayName": "fraud-analysts", "members": [{"value": user_id}]},
                            format="json").json()["id"]
    support_group = scim.post("/scim/v2/Groups", {"displayName": "support-agents", "members": []},
                              format="json").json()["id"]
    ines = User.objects.get(pk=user_id)
    team_member_set(actor="system", team=releases, user=ines)  # by hand: the groups leave it alone
    browser = Client()
    browser.force_login(ines)
    assert browser.get(f"/cases/{fraud.reference}/").status_code == 200
    assert browser.get(f"/cases/{ticket.reference}/").status_code == 404

    patch(scim, f"/scim/v2/Groups/{fraud_group}", [{"op": "Remove", "path": f'members[value eq "{user_id}"]'}])
    patch(scim, f"/scim/v2/Groups/{support_group}", [{"op": "add", "value": {"members": [{"value": user_id}]}}])

    assert browser.get(f"/cases/{fraud.reference}/").status_code == 404
    assert browser.get(f"/cases/{ticket.reference}/").status_code == 200
    assert sorted(TeamMembership.objects.filter(user=ines).values_list("team__name", "source")) == [
        ("Releases", "manual"), ("Support desk", "sso")]
