"""Saved views: named queue filters per person, shared with a team or everyone, pinned into
the navigation; saved, renamed and deleted with an audit entry; the same through the API."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from audit.models import AuditEntry
from casework.cases.saved_views.models import SavedView
from casework.cases.saved_views.services import saved_view_create, saved_view_delete, saved_view_update
from casework.cases.services import case_create
from casework.people.teams import team_create, team_member_set

pytestmark = pytest.mark.django_db


@pytest.fixture
def team(alice, ivan):
    team = team_create(actor="system", name="fraud-team", case_types=["fraud_alert"])
    team_member_set(actor="system", team=team, user=alice)
    return team


def test_saving_keeps_only_the_queue_filters_and_audits(alice):
    view = saved_view_create(actor=alice, name=" Critical mine ", query="?priority=critical&assignee=me&page=3&x=1")
    assert view.name == "Critical mine" and view.query == "priority=critical&assignee=me"
    entry = AuditEntry.objects.get(action="saved_view.created")
    assert entry.actor == "alice" and entry.data["query"] == "priority=critical&assignee=me"


def test_a_bad_filter_or_a_duplicate_name_is_named(alice):
    with pytest.raises(ValidationError) as caught:
        saved_view_create(actor=alice, name="Bad", query="priority=urgent")
    assert "priority" in caught.value.message_dict["query"][0]
    saved_view_create(actor=alice, name="Mine", query="assignee=me")
    with pytest.raises(ValidationError) as caught:
        saved_view_create(actor=alice, name="Mine", query="")
    assert "name" in caught.value.message_dict


def test_sharing_with_a_team_shows_it_to_the_team_only(client, alice, ivan, mona, team):
    view = saved_view_create(actor=alice, name="Team fraud", query="case_type=fraud_alert", team=team, pinned=True)
    team_member_set(actor="system", team=team, user=ivan)
    client.force_login(ivan)
    assert "Team fraud" in client.get("/cases/").content.decode()  # pinned in the navigation
    other = SavedView.objects.create(owner=mona, name="Private", query="")
    assert client.get(f"/saved-views/{other.pk}/").status_code == 404
    # A team member opens it, but only the owner changes it.
    assert client.get(f"/saved-views/{view.pk}/").status_code == 302
    assert client.post(f"/saved-views/{view.pk}/delete/").status_code == 403


def test_sharing_with_a_team_one_is_not_in_is_refused(alice):
    others = team_create(actor="system", name="others", case_types=["support_ticket"])
    with pytest.raises(ValidationError) as caught:
        saved_view_create(actor=alice, name="X", query="", team=others)
    assert "team" in caught.value.message_dict


def test_rename_and_delete_are_audited(alice):
    view = saved_view_create(actor=alice, name="Old", query="status=new")
    saved_view_update(actor=alice, view=view, name="New", pinned=True)
    entry = AuditEntry.objects.get(action="saved_view.updated")
    assert entry.data == {"name": {"from": "Old", "to": "New"}, "pinned": {"from": False, "to": True}}
    saved_view_delete(actor=alice, view=view)
    assert not SavedView.objects.exists()
    assert AuditEntry.objects.get(action="saved_view.deleted").data["name"] == "New"


def test_save_from_the_queue_then_open_it_with_its_filters(alice_client, alice):
    case_create(actor=alice, case_type="fraud_alert", title="Hot", priority="critical")
    response = alice_client.post("/saved-views/new/", {"name": "Hot ones", "query": "priority=critical&page=2",
                                                       "pinned": "on", "share": "everyone"})
    view = SavedView.objects.get()
    assert view.everyone and view.pinned and view.query == "priority=critical"
    assert response["Location"] == f"/saved-views/{view.pk}/"
    opened = alice_client.get(response["Location"])
    assert opened["Location"] == f"/cases/?priority=critical&view={view.pk}"
    html = alice_client.get(opened["Location"]).content.decode()
    assert "<h1>Hot ones</h1>" in html
    assert '<option value="critical" selected>Critical</option>' in html
    assert f'href="/saved-views/{view.pk}/" class="nav-view" aria-current="page">Hot ones</a>' in html


def test_the_list_page_renames_and_deletes(alice_client, alice):
    view = saved_view_create(actor=alice, name="Mine", query="assignee=me")
    html = alice_client.get("/saved-views/").content.decode()
    assert "Mine" in html and "assignee=me" in html
    alice_client.post(f"/saved-views/{view.pk}/edit/", {"name": "Mine, renamed", "share": ""})
    assert SavedView.objects.get().name == "Mine, renamed"
    alice_client.post(f"/saved-views/{view.pk}/delete/")
    assert not SavedView.objects.exists()


def test_the_api(api, alice, ivan, team):
    response = api.post("/api/saved-views/", {"name": "Urgent", "query": "priority=critical", "team": "fraud-team",
                                               "pinned": True}, format="json")
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["team"] == "fraud-team" and body["url"] == "/cases/?priority=critical"
    assert [v["name"] for v in api.get("/api/saved-views/").json()] == ["Urgent"]
    response = api.patch(f"/api/saved-views/{body['id']}/", {"name": "Very urgent"}, format="json")
    assert response.status_code == 200 and response.json()["name"] == "Very urgent"
    assert response.json()["team"] == "fraud-team"  # a partial change keeps the rest
    bad = api.post("/api/saved-views/", {"name": "Bad", "query": "status=nope"}, format="json")
    assert bad.status_code == 400 and "query" in bad.json()
    assert api.delete(f"/api/saved-views/{body['id']}/").status_code == 204
    assert api.get(f"/api/saved-views/{body['id']}/").status_code == 404
