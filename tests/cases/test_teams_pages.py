"""/people/teams/ (admins) and /people/<username>/access/: what a person may see, and why."""

from __future__ import annotations

import pytest

from casework.cases.models import Case, CaseRestriction
from casework.people.models import ExternalAccount
from casework.people.teams import user_teams_sync
from tests.cases.teams_people import teams_made

pytestmark = pytest.mark.django_db


def test_an_admin_sees_every_team_with_its_types_groups_and_people(client, admin_user):
    teams_made()
    client.force_login(admin_user)

    response = client.get("/people/teams/")

    assert response.status_code == 200
    rows = {t.name: t for t in response.context["teams"]}
    fraud = rows["Fraud and transactions"]
    assert fraud.labels == ["Fraud alert", "Transaction investigation"]
    assert [(m.user.username, m.role) for m in fraud.rows] == [("leo", "lead"), ("fay", "member")]
    page = response.content.decode()
    assert "<code>fraud-analysts</code>" in page and "<code>fraud-leads</code>" in page
    assert [(m.user.username, m.role) for m in rows["Support desk"].rows] == [("sam", "member")]


def test_only_admins_see_the_teams_page(client):
    t = teams_made()
    client.force_login(t.leo)  # a lead, not an admin

    assert client.get("/people/teams/").status_code == 403
    assert 'href="/people/teams/"' not in client.get("/cases/").content.decode()


def test_the_navigation_links_admins_to_the_teams_page(client, admin_user):
    client.force_login(admin_user)
    assert 'href="/people/teams/"' in client.get("/cases/").content.decode()


def test_a_persons_access_page_says_which_team_gives_what_and_from_where(client, admin_user):
    t = teams_made()
    # fay is also in the fraud team through the provider's group (the hand-made membership stays
    # hand-made), and sam through it too.
    ExternalAccount.objects.create(user=t.sam, source="oidc", oidc_issuer="https://idp", oidc_subject="sam",
                                   groups=["fraud-analysts", "unrelated"])
    user_teams_sync(actor="system", user=t.sam, groups=["fraud-analysts", "unrelated"], source="oidc")
    secret = t.fraud_case
    Case.objects.filter(pk=secret.pk).update(restricted=True)  # the restrict service is another part's
    CaseRestriction.objects.create(case=secret, user=t.sam, granted_by=t.leo)
    client.force_login(admin_user)

    response = client.get("/people/sam/access/")

    assert response.status_code == 200
    access = response.context["access"]
    assert [(a.team.name, a.role, a.source, a.groups) for a in access.teams] == [
        ("Fraud and transactions", "member", "sso", ["fraud-analysts"]), ("Support desk", "member", "manual", [])]
    assert access.case_type_labels == ["Fraud alert", "Transaction investigation", "Support ticket"]
    assert [r.case.reference for r in access.restricted] == [secret.reference]
    page = response.content.decode()
    assert "<code>fraud-analysts</code>" in page and "added by hand" in page and secret.reference in page


def test_an_admin_is_said_to_see_everything(client, admin_user):
    client.force_login(admin_user)

    response = client.get(f"/people/{admin_user.username}/access/")

    assert response.status_code == 200 and response.context["access"].admin
    assert "Admin: sees every case" in response.content.decode()


def test_a_person_sees_their_own_access_but_not_anothers(client):
    t = teams_made()
    client.force_login(t.fay)

    assert client.get("/people/fay/access/").status_code == 200
    assert client.get("/people/leo/access/").status_code == 403


def test_an_unknown_person_is_a_404(client, admin_user):
    client.force_login(admin_user)

    assert client.get("/people/nobody/access/").status_code == 404
