"""Access, what a second look found (issue 13): self-changes flagged, inbox items that name
their case and carry the change, the status history in the API and on the case page."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from casework.access.services import rights_check_record
from casework.access.states import AccessStatus, mutation_transition

pytestmark = pytest.mark.django_db


def api_for(user) -> APIClient:
    api = APIClient()
    api.force_authenticate(user)
    return api


def test_a_self_change_is_flagged_on_the_case_and_in_the_rights_evidence(org, submit, alice, alice_client):
    mutation = submit(changed_for=org.priya, investigate=False)
    mutation_transition(actor="system", mutation=mutation, to=AccessStatus.INVESTIGATION_STARTED, reason="test")
    check = rights_check_record(mutation=mutation, message="Priya held Write only.", result={
        "authorized": False, "held_level": "Write",
        "evidence": [{"source": "direct", "reference": "A1", "covers": False, "note": "Write is below Admin"}]})
    assert check.evidence[0]["source"] == "self_change"
    assert check.evidence[0]["note"] == "self-change: Priya Patel changed their own access"
    html = alice_client.get(f"/cases/{mutation.case.reference}/").content.decode()
    assert 'id="self-change">Self-change: Priya Patel changed their own access' in html
    body = api_for(alice).get(f"/api/access/mutations/{mutation.case.reference}/").json()
    assert body["mutation"]["self_change"] is True
    assert body["rights_check"]["evidence"][0]["source"] == "self_change"


def test_a_change_for_someone_else_is_not_flagged(submit, alice_client):
    mutation = submit(investigate=False)
    assert not mutation.is_self_change
    assert 'id="self-change"' not in alice_client.get(f"/cases/{mutation.case.reference}/").content.decode()


def test_a_manager_inbox_item_names_its_case_and_shows_the_change(org, awaiting_manager, client):
    mutation = awaiting_manager.mutation
    (item,) = api_for(org.mona_user).get("/api/access/inbox/").json()
    assert item["reference"] == mutation.case.reference and item["mutation_id"] == mutation.mutation_id
    change = item["change"]
    assert (change["changed_by"], change["changed_by_name"], change["changed_for_name"]) == (
        "u001", "Priya Patel", "Jan de Vries")
    assert (change["system"], change["access_level"], change["old_value"], change["new_value"]) == (
        "FinanceApp", "Admin", "Read", "Write")
    assert item["claim"]["claim_type"] == "sick_leave_cover" and item["claim"]["colleague"] == "u002"
    client.force_login(org.mona_user)
    page = client.get("/access/inbox/").content.decode()
    assert mutation.case.reference in page and mutation.mutation_id in page
    assert "Read → Write" in page and "needs Admin" in page


def test_the_status_history_is_in_the_api_and_on_the_case(asked, alice, alice_client):
    mutation = asked.mutation
    body = api_for(alice).get(f"/api/access/mutations/{mutation.case.reference}/").json()
    history = body["status_history"]
    assert [h["status"] for h in history] == ["investigation_started", "clarification_requested",
                                              "user_request_queued", "awaiting_user_response"]
    assert history[-1]["label"] == "Awaiting User Response" and history[-1]["by"] == "system"
    assert all(h["at"] for h in history)
    html = alice_client.get(f"/cases/{mutation.case.reference}/").content.decode()
    assert 'id="status-history"' in html and "Status history (4)" in html


def decision_forms(html: str, reference: str) -> int:
    return html.count(f'action="/access/cases/{reference}/decide/"') + html.count(f'action="/cases/{reference}/close/"')


def test_one_decision_form_per_case_next_to_the_recommendation_shown_on_overview(asked, alice_client):
    from casework.access.services import report_record

    mutation = asked.mutation
    report_record(mutation=mutation, report_id="RPT-1", kind="standard", summary="The claim was not confirmed.",
                  recommendation="reject_investigate", details=["Rights check: not authorised."])
    reference = mutation.case.reference
    html = alice_client.get(f"/cases/{reference}/").content.decode()
    assert decision_forms(html, reference) == 1
    assert f'action="/access/cases/{reference}/decide/"' in html  # the one beside the report
    assert 'id="access-overview-recommendation">Recommendation: Reject' in html
    assert 'id="access-decide-where"' in html  # the sidebar points to it


def test_every_case_type_has_one_decision_form(alice, alice_client, make_fraud_alert):
    html = alice_client.get(f"/cases/{make_fraud_alert.case.reference}/").content.decode()
    assert html.count(f'action="/cases/{make_fraud_alert.case.reference}/close/"') == 1


@pytest.fixture
def make_fraud_alert(alice):
    from casework.fraud.services import alert_create
    from tests.fraud.conftest import CYCLING

    return alert_create(actor=alice, data=CYCLING)
