"""SCIM 2.0 provisioning, through its HTTP surface, as Entra ID and Okta call it."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.contrib.sessions.models import Session
from django.test import Client
from rest_framework.test import APIClient

from audit.models import AuditEntry
from casework.cases.models import Case
from casework.cases.notifications.models import Notification
from casework.cases.services import case_create, case_set_status
from casework.people.roles import user_roles
from casework.security.models import ApiToken
from casework.security.tokens import api_token_create

pytestmark = pytest.mark.django_db
TOKEN = "scim-test-token-0123456789abcdefghijklmnopqrstuvwxyz"


@pytest.fixture
def scim(settings):
    settings.SCIM_TOKEN = TOKEN
    settings.OIDC_GROUP_ROLES = {"casework-investigators": "investigator", "casework-managers": "manager"}
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    return client


def create(scim, user_name: str = "ines@example.org", **extra):
    body = {"schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"], "userName": user_name,
            "externalId": f"ext-{user_name}", "name": {"givenName": "Ines", "familyName": "Ortiz"},
            "emails": [{"value": user_name, "type": "work", "primary": True}], "active": True, **extra}
    return scim.post("/scim/v2/Users", body, format="json")


def patch(scim, path: str, operations: list[dict]):
    return scim.patch(path, {"schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"], "Operations": operations},
                      format="json")


def test_scim_is_off_without_a_token_and_refuses_a_wrong_one(settings):
    assert APIClient().get("/scim/v2/Users").status_code == 404
    settings.SCIM_TOKEN = TOKEN
    assert APIClient().get("/scim/v2/Users").status_code == 401
    wrong = APIClient()
    wrong.credentials(HTTP_AUTHORIZATION="Bearer not-the-token")
    response = wrong.get("/scim/v2/Users")
    assert response.status_code == 401 and response.json()["schemas"] == ["urn:ietf:params:scim:api:messages:2.0:Error"]


def test_the_provider_creates_finds_and_reads_a_user(scim, alice):
    response = create(scim)

    assert response.status_code == 201
    body = response.json()
    user = User.objects.get(username="ines@example.org")
    assert body["id"] == str(user.pk) and body["active"] is True and body["externalId"] == "ext-ines@example.org"
    assert response["Location"].endswith(f"/scim/v2/Users/{user.pk}")
    assert (user.first_name, user.last_name, user.email) == ("Ines", "Ortiz", "ines@example.org")
    assert not user.has_usable_password() and user_roles(user) == set()
    assert AuditEntry.objects.get(action="user.created", data__source="scim").actor == "scim"

    found = scim.get('/scim/v2/Users?filter=userName eq "Ines@Example.org"').json()
    assert found["totalResults"] == 1 and found["Resources"][0]["id"] == str(user.pk)
    assert scim.get(f"/scim/v2/Users/{user.pk}").json()["userName"] == "ines@example.org"
    # A local account is not the provider's: invisible, and its name is not free.
    assert scim.get('/scim/v2/Users?filter=userName eq "alice"').json()["totalResults"] == 0
    assert scim.get(f"/scim/v2/Users/{alice.pk}").status_code == 404
    taken = create(scim, "ALICE")
    assert taken.status_code == 409 and taken.json()["scimType"] == "uniqueness"


def test_bad_input_is_a_400_naming_the_field_and_writes_nothing(scim):
    response = create(scim, active="maybe")
    assert response.status_code == 400 and response.json()["detail"].startswith("active:")
    assert create(scim, "has spaces in it").json()["detail"].startswith("userName:")
    assert scim.get('/scim/v2/Users?filter=title co "x"').json()["scimType"] == "invalidFilter"
    assert scim.post("/scim/v2/Users", "{not json", content_type="application/scim+json").status_code == 400
    assert not User.objects.filter(username__in=["has spaces in it", "ines@example.org"]).exists()


def test_patch_put_and_group_membership_set_roles(scim):
    user_id = create(scim).json()["id"]
    # Entra ID's style: a path per change, values as strings.
    response = patch(scim, f"/scim/v2/Users/{user_id}", [
        {"op": "Replace", "path": "name.familyName", "value": "Ortega"},
        {"op": "Add", "path": "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:department", "value": "x"},
    ])
    assert response.status_code == 200 and response.json()["name"]["familyName"] == "Ortega"

    group = scim.post("/scim/v2/Groups", {"displayName": "casework-investigators",
                                           "members": [{"value": user_id}]}, format="json")
    assert group.status_code == 201
    user = User.objects.get(pk=user_id)
    assert user_roles(user) == {"investigator"}
    assert scim.get(f"/scim/v2/Users/{user_id}").json()["groups"] == [
        {"value": group.json()["id"], "display": "casework-investigators"}]

    patch(scim, f"/scim/v2/Groups/{group.json()['id']}", [
        {"op": "Remove", "path": f'members[value eq "{user_id}"]'}])
    assert user_roles(User.objects.get(pk=user_id)) == set()
    # Okta's style: a value object, and PUT to replace.
    patch(scim, f"/scim/v2/Groups/{group.json()['id']}", [{"op": "add", "value": {"members": [{"value": user_id}]}}])
    assert user_roles(User.objects.get(pk=user_id)) == {"investigator"}
    put = scim.put(f"/scim/v2/Users/{user_id}", {"userName": "ines.o@example.org", "active": True,
                                                  "emails": [{"value": "ines.o@example.org", "primary": True}]},
                   format="json")
    assert put.status_code == 200 and put.json()["name"] == {"givenName": "", "familyName": ""}
    assert [e.data["to"] for e in AuditEntry.objects.filter(action="user.roles_changed").order_by("id")] == [
        ["investigator"], [], ["investigator"]]


def test_deactivation_ends_sessions_revokes_tokens_and_returns_open_cases(scim, admin_user):
    user_id = create(scim).json()["id"]
    scim.post("/scim/v2/Groups", {"displayName": "casework-investigators", "members": [{"value": user_id}]},
              format="json")
    ines = User.objects.get(pk=user_id)
    browser = Client()
    browser.force_login(ines)
    assert browser.get("/cases/").status_code == 200
    _, secret = api_token_create(actor=admin_user, user=ines, name="her script")
    machine_token, machine_secret = api_token_create(actor=admin_user, user=admin_user, name="CI")
    open_case = case_create(actor=admin_user, case_type="fraud_alert", title="Open", assignee=ines)
    done = case_create(actor=admin_user, case_type="fraud_alert", title="Done", assignee=ines)
    case_set_status(actor=admin_user, case=done, status="resolved")
    sessions_before = Session.objects.count()

    response = patch(scim, f"/scim/v2/Users/{user_id}", [{"op": "Replace", "path": "active", "value": "False"}])

    assert response.status_code == 200 and response.json()["active"] is False
    assert Session.objects.count() == sessions_before - 1
    assert browser.get("/cases/")["Location"].startswith("/login/")
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {secret}")
    assert api.get("/api/cases/").status_code == 401
    machine = APIClient()
    machine.credentials(HTTP_AUTHORIZATION=f"Token {machine_secret}")
    assert machine.get("/api/cases/").status_code == 200  # a machine's token stays
    assert Case.objects.get(pk=open_case.pk).assignee is None
    assert Case.objects.get(pk=done.pk).assignee == ines
    note = Notification.objects.get(kind="cases_returned")
    assert note.recipient_user == admin_user and open_case.reference in note.body
    entry = AuditEntry.objects.get(action="user.deactivated")
    assert (entry.actor, entry.data["sessions_ended"], entry.data["cases_returned"]) == (
        "scim", 1, [open_case.reference])
    assert entry.data["tokens_revoked"] == [ApiToken.objects.get(user=ines).prefix]
    assert ApiToken.objects.get(pk=machine_token.pk).revoked_at is None
    # Okta's style brings them back; they sign in again to get a session.
    again = patch(scim, f"/scim/v2/Users/{user_id}", [{"op": "replace", "value": {"active": True}}])
    assert again.json()["active"] is True and AuditEntry.objects.filter(action="user.reactivated").exists()


def test_delete_takes_access_away_and_the_provider_no_longer_sees_the_user(scim):
    user_id = create(scim).json()["id"]

    assert scim.delete(f"/scim/v2/Users/{user_id}").status_code == 204

    assert scim.get(f"/scim/v2/Users/{user_id}").status_code == 404
    user = User.objects.get(pk=user_id)
    assert not user.is_active and user_roles(user) == set()
    assert AuditEntry.objects.filter(action="user.deactivated", data__username="ines@example.org").exists()


def test_groups_are_listed_filtered_renamed_and_deleted(scim):
    user_id = create(scim).json()["id"]
    group_id = scim.post("/scim/v2/Groups", {"displayName": "casework-managers", "members": [{"value": user_id}]},
                         format="json").json()["id"]
    assert scim.get('/scim/v2/Groups?filter=displayName eq "casework-managers"').json()["totalResults"] == 1
    assert scim.post("/scim/v2/Groups", {"displayName": "casework-managers"}, format="json").status_code == 409
    assert scim.post("/scim/v2/Groups", {"displayName": "x", "members": [{"value": "999999"}]},
                     format="json").json()["detail"].startswith("members:")

    patch(scim, f"/scim/v2/Groups/{group_id}", [{"op": "Replace", "path": "displayName", "value": "casework-investigators"}])
    assert user_roles(User.objects.get(pk=user_id)) == {"investigator"}
    # Okta's style: one value object naming several attributes.
    patch(scim, f"/scim/v2/Groups/{group_id}", [{"op": "replace", "value": {
        "id": group_id, "displayName": "casework-managers", "members": []}}])
    assert scim.get(f"/scim/v2/Groups/{group_id}").json()["members"] == []
    assert user_roles(User.objects.get(pk=user_id)) == set()

    assert scim.delete(f"/scim/v2/Groups/{group_id}").status_code == 204
    assert user_roles(User.objects.get(pk=user_id)) == set()
    assert scim.get("/scim/v2/ServiceProviderConfig").json()["patch"]["supported"] is True


def test_no_person_reaches_scim_with_their_session_or_api_token(settings, alice, admin_user):
    settings.SCIM_TOKEN = TOKEN
    browser = Client()
    browser.force_login(admin_user)
    assert browser.get("/scim/v2/Users").status_code == 401
    _, secret = api_token_create(actor=admin_user, user=admin_user)
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {secret}")
    assert api.get("/scim/v2/Users").status_code == 401


def test_an_admin_deactivates_someone_in_the_admin_with_the_same_effect(client, admin_user, alice):
    client.force_login(admin_user)
    case = case_create(actor=admin_user, case_type="fraud_alert", title="Open", assignee=alice)
    _, secret = api_token_create(actor=admin_user, user=alice)
    browser = Client()
    browser.force_login(alice)  # alice is signed in elsewhere
    alices_session = browser.session.session_key
    assert Session.objects.filter(session_key=alices_session).exists()

    response = client.post("/admin/auth/user/", {"action": "deactivate", "_selected_action": [alice.pk]})

    assert response.status_code == 302
    alice.refresh_from_db()
    assert not alice.is_active and Case.objects.get(pk=case.pk).assignee is None
    assert ApiToken.objects.get(user=alice).revoked_at is not None
    entry = AuditEntry.objects.get(action="user.deactivated")
    assert entry.actor == "root" and entry.data["sessions_ended"] == 1
    # Her session ended; the admin's own goes on.
    assert not Session.objects.filter(session_key=alices_session).exists()
    assert Session.objects.filter(session_key=client.session.session_key).exists()
    assert browser.get("/cases/")["Location"].startswith("/login/")
    assert client.get(f"/admin/auth/user/{alice.pk}/change/").status_code == 200
