"""Teams in the Django admin: a team and its memberships made, changed and removed there go
through casework.people.teams, so each change is audited, and case types are only registered ones."""

from __future__ import annotations

import pytest

from audit.models import AuditEntry
from casework.people.models import Team, TeamMembership
from casework.people.roles import INVESTIGATOR
from casework.people.services import user_create
from casework.people.teams import team_create, team_member_set

pytestmark = pytest.mark.django_db


def _inline(prefix="memberships", rows=(), extra=()):
    """The membership inline's management form and rows: [(id, user_pk, role, delete)], then new [(user_pk, role)]."""
    data = {f"{prefix}-TOTAL_FORMS": str(len(rows) + len(extra)), f"{prefix}-INITIAL_FORMS": str(len(rows)),
            f"{prefix}-MIN_NUM_FORMS": "0", f"{prefix}-MAX_NUM_FORMS": "1000"}
    for i, (pk, user_pk, role, delete) in enumerate(rows):
        data.update({f"{prefix}-{i}-id": str(pk), f"{prefix}-{i}-user": str(user_pk), f"{prefix}-{i}-role": role})
        if delete:
            data[f"{prefix}-{i}-DELETE"] = "on"
    for j, (user_pk, role) in enumerate(extra, start=len(rows)):
        data.update({f"{prefix}-{j}-user": str(user_pk), f"{prefix}-{j}-role": role})
    return data


def test_an_admin_makes_a_team_with_a_lead_and_it_is_audited(client, admin_user):
    fiona = user_create(actor="system", username="fiona", password="fiona-pass-123", role=INVESTIGATOR)
    client.force_login(admin_user)

    response = client.post("/admin/people/team/add/", {
        "name": "Fraud and transactions", "slug": "fraud", "case_types": ["fraud_alert", "transaction_investigation"],
        "sso_groups": "fraud-analysts\n\n fraud-oncall ", "sso_lead_groups": "fraud-leads",
        **_inline(extra=[(fiona.pk, "lead")])})

    assert response.status_code == 302, response.content.decode()[:2000]
    team = Team.objects.get(slug="fraud")
    assert team.case_types == ["fraud_alert", "transaction_investigation"]
    assert (team.sso_groups, team.sso_lead_groups) == (["fraud-analysts", "fraud-oncall"], ["fraud-leads"])
    membership = TeamMembership.objects.get(team=team)
    assert (membership.user, membership.role, membership.source) == (fiona, "lead", "manual")
    actions = list(AuditEntry.objects.filter(actor="root").values_list("action", "data__username"))
    assert ("team.created", None) in actions and ("team.member_set", "fiona") in actions


def test_a_case_type_that_is_not_registered_is_refused_naming_the_field(client, admin_user):
    client.force_login(admin_user)

    response = client.post("/admin/people/team/add/", {"name": "Warranty", "slug": "warranty",
                                                       "case_types": ["warranty_claim"], **_inline()})

    assert response.status_code == 200  # the form again, with the error on its field
    assert "warranty_claim is not one of the available choices" in response.content.decode()
    assert response.context["adminform"].form.errors.keys() == {"case_types"}
    assert not Team.objects.exists()


def test_changing_a_team_and_its_members_in_the_admin_is_audited(client, admin_user):
    gus = user_create(actor="system", username="gus", password="gus-pass-123", role=INVESTIGATOR)
    hal = user_create(actor="system", username="hal", password="hal-pass-123", role=INVESTIGATOR)
    team = team_create(actor="system", name="Support desk", case_types=["support_ticket"])
    gus_in = team_member_set(actor="system", team=team, user=gus)
    hal_in = team_member_set(actor="system", team=team, user=hal)
    client.force_login(admin_user)

    response = client.post(f"/admin/people/team/{team.pk}/change/", {
        "name": "Support desk", "slug": team.slug, "case_types": ["support_ticket", "access_change"],
        "sso_groups": "", "sso_lead_groups": "",
        **_inline(rows=[(gus_in.pk, gus.pk, "lead", False), (hal_in.pk, hal.pk, "member", True)])})

    assert response.status_code == 302, response.content.decode()[:2000]
    team.refresh_from_db()
    assert team.case_types == ["support_ticket", "access_change"]
    assert list(team.memberships.values_list("user__username", "role")) == [("gus", "lead")]
    entries = {e.action: e.data for e in AuditEntry.objects.filter(actor="root")}
    assert entries["team.changed"]["changed"] == {"case_types": {"from": ["support_ticket"],
                                                                 "to": ["support_ticket", "access_change"]}}
    assert (entries["team.member_set"]["from"], entries["team.member_set"]["to"]) == ("member", "lead")
    assert entries["team.member_removed"]["username"] == "hal"


def test_deleting_a_team_in_the_admin_is_audited_with_its_members(client, admin_user):
    gus = user_create(actor="system", username="gus", password="gus-pass-123", role=INVESTIGATOR)
    team = team_create(actor="system", name="IAM", case_types=["access_change"])
    team_member_set(actor="system", team=team, user=gus)
    client.force_login(admin_user)

    response = client.post(f"/admin/people/team/{team.pk}/delete/", {"post": "yes"})

    assert response.status_code == 302
    assert not Team.objects.exists() and not TeamMembership.objects.exists()
    deleted = AuditEntry.objects.get(action="team.deleted")
    assert (deleted.actor, deleted.data["members"]) == ("root", ["gus"])
