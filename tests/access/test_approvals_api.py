"""The approvals inbox and API through the one visibility rule: a person sees and answers only
the approvals of cases they may see (another's is a 404, as for none); filters by team, case
type and status; the inbox page and the case page's panel approve and deny."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from agents.models import AgentRun, RunPause
from casework.access.models import InfoRequest
from casework.people.roles import INVESTIGATOR
from casework.people.services import user_create
from casework.people.teams import team_create, team_member_set

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def approvals_on(settings):
    settings.AGENT_APPROVALS = {"send_notification": {"*": "always"}}


@pytest.fixture
def fiona(db):
    """An investigator of the fraud team only: access changes are not hers to see."""
    user = user_create(actor="system", username="fiona", password="fiona-pass-123", role=INVESTIGATOR)
    team = team_create(actor="system", name="Fraud only", case_types=["fraud_alert"], slug="fraud-only")
    team_member_set(actor="system", team=team, user=user)
    return user


def client_for(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def test_a_person_sees_and_answers_only_approvals_of_cases_they_may_see(approvals_on, submit, api, fiona):
    mutation = submit()
    pause = RunPause.objects.get()

    listed = api.get("/api/approvals/").json()
    assert [row["id"] for row in listed["results"]] == [pause.pk]
    assert listed["results"][0]["case"] == mutation.case.reference
    assert listed["results"][0]["tool"] == "send_notification"

    outsider = client_for(fiona)
    assert outsider.get("/api/approvals/").json()["results"] == []
    assert outsider.get("/api/approvals/?status=all").json()["results"] == []
    for verb, body in (("approve", {}), ("deny", {"reason": "No."})):
        refused = outsider.post(f"/api/approvals/{pause.pk}/{verb}/", body, format="json")
        assert refused.status_code == 404
    assert api.post("/api/approvals/999999/approve/", {}, format="json").status_code == 404
    pause.refresh_from_db()
    assert pause.status == "pending" and InfoRequest.objects.count() == 0
    # The inbox page, the same rule.
    fiona_page = APIClient()
    fiona_page.force_login(fiona)
    assert mutation.case.reference not in fiona_page.get("/approvals/").content.decode()


def test_the_list_filters_by_team_type_and_status(approvals_on, submit, api, alice):
    from casework.people.models import Team

    submit()
    pause = RunPause.objects.get()
    team = Team.objects.filter(memberships__user=alice).first()
    assert [r["id"] for r in api.get(f"/api/approvals/?team={team.slug}").json()["results"]] == [pause.pk]
    assert api.get("/api/approvals/?case_type=fraud_alert").json()["results"] == []
    assert len(api.get("/api/approvals/?case_type=access_change").json()["results"]) == 1
    assert api.get("/api/approvals/?status=approved").json()["results"] == []
    bad = api.get("/api/approvals/?status=maybe")
    assert bad.status_code == 400 and "status" in bad.json()
    unknown = api.get("/api/approvals/?team=not-mine")
    assert unknown.status_code == 400 and "team" in unknown.json()


def test_the_schema_documents_the_approvals_operations(api):
    schema = api.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    assert {"get"} <= set(schema["paths"]["/api/approvals/"])
    assert "post" in schema["paths"]["/api/approvals/{id}/approve/"]
    assert "post" in schema["paths"]["/api/approvals/{id}/deny/"]
    body = schema["components"]["schemas"]["ApprovalDenyRequest"]
    assert body["required"] == ["reason"]


def test_the_case_page_panel_denies_with_a_reason_and_refuses_without_one(approvals_on, submit, alice_client):
    mutation = submit()
    pause = RunPause.objects.get()
    page = alice_client.get(f"/cases/{mutation.case.reference}/").content.decode()
    assert f'id="approval-{pause.pk}"' in page and "send_notification" in page

    url = f"/cases/{mutation.case.reference}/approvals/{pause.pk}/decide/"
    refused = alice_client.post(url, {"decision": "deny", "reason": ""}, follow=True)
    assert "A denial says why" in refused.content.decode()
    pause.refresh_from_db()
    assert pause.status == "pending"
    bad_json = alice_client.post(url, {"decision": "approve", "arguments": "{not json"}, follow=True)
    assert "arguments: not valid JSON" in bad_json.content.decode()

    alice_client.post(url, {"decision": "deny", "reason": "Ask the manager first."})
    pause.refresh_from_db()
    assert pause.status == "denied" and pause.answer == "Ask the manager first."
    assert AgentRun.objects.get(case=mutation.case, mode="investigate").status != AgentRun.Status.WAITING_APPROVAL
    assert InfoRequest.objects.count() == 0
    inbox = alice_client.get("/approvals/").content.decode()
    assert "Nothing waits for an approval." in inbox
