"""Teams from the identity provider's groups, with the real provider (tests/fakes/oidc): a
person whose groups change at the provider changes teams at their next renewal, and with them
the cases they see."""

from __future__ import annotations

import pytest

from audit.models import AuditEntry
from casework.cases.services import case_create
from casework.people.models import TeamMembership
from casework.people.teams import team_create
from tests.fakes.oidc_provider import callback_path, oidc_settings, query

pytestmark = pytest.mark.django_db


@pytest.fixture
def idp(settings, oidc_provider):
    oidc_settings(settings, oidc_provider)
    settings.OIDC_RENEW_ID_TOKEN_EXPIRY_SECONDS = 300
    return oidc_provider


def test_a_group_change_at_the_provider_moves_the_person_to_another_team_at_renewal(client, idp, idp_browser):
    team_create(actor="system", name="Fraud and transactions", case_types=["fraud_alert", "transaction_investigation"],
                sso_groups=["fraud-analysts"])
    team_create(actor="system", name="Support desk", case_types=["support_ticket"], sso_groups=["support-agents"],
                sso_lead_groups=["support-leads"])
    fraud = case_create(actor="system", case_type="fraud_alert", title="Card testing")
    ticket = case_create(actor="system", case_type="support_ticket", title="Cannot log in")
    idp.account("ines", groups=["casework-investigators", "fraud-analysts"])
    start = client.get("/oidc/authenticate/?next=/cases/")
    client.get(callback_path(idp_browser.authorize(start["Location"], login="ines")))
    assert client.get(f"/cases/{fraud.reference}/").status_code == 200
    assert client.get(f"/cases/{ticket.reference}/").status_code == 404

    idp.account("ines", groups=["casework-investigators", "support-leads"])  # moved at the provider
    session = client.session
    session["oidc_id_token_expiration"] = 0  # the sign-in is due for renewal
    session.save()
    renew = client.get(f"/cases/{ticket.reference}/")
    assert renew.status_code == 302 and query(renew["Location"])["prompt"] == "none"
    back = client.get(callback_path(idp_browser.authorize(renew["Location"])))
    assert back["Location"] == f"/cases/{ticket.reference}/"

    assert client.get(f"/cases/{ticket.reference}/").status_code == 200
    assert client.get(f"/cases/{fraud.reference}/").status_code == 404
    assert list(TeamMembership.objects.filter(user__username="ines").values_list("team__name", "role", "source")) == [
        ("Support desk", "lead", "sso")]
    moves = AuditEntry.objects.filter(actor="oidc", action__startswith="team.member").order_by("id")
    assert [(e.action, e.data["team"]) for e in moves] == [
        ("team.member_set", "Fraud and transactions"), ("team.member_set", "Support desk"),
        ("team.member_removed", "Fraud and transactions")]
