"""What the case types register on their CaseType (issue 22) and what the shared core does with
it: the bulk close asks the type's decision service, the chat and the evaluation harness read
the type's tools and adapter, a manager's dashboard lists the type's panels. And the bulk
form and API share one assignee helper and one set of rules (the service's)."""

from __future__ import annotations

import pytest

from agents.chat.context import tools_for
from casework.cases.bulk import bulk_validate, cases_bulk_apply
from casework.cases.models import Case, Decision
from casework.cases.services import case_create
from casework.cases.types import CASE_TYPES

pytestmark = pytest.mark.django_db


def test_every_case_type_registers_its_chat_tools_and_evaluation_adapter():
    for ct in CASE_TYPES.values():
        assert ct.chat is not None and ct.chat.tools is not None, ct.key
        assert ct.evaluation is not None and ct.evaluation.export is not None, ct.key
        # The person's outcomes the adapter expects fields for are the type's own.
        assert set(ct.evaluation.decision_fields) <= set(dict(ct.outcomes)), ct.key
        assert {t.name for t in tools_for(ct.key)} > {"get_case_timeline"}, ct.key
    # The types whose closes need more than case_close registered their decision service.
    assert {ct.key for ct in CASE_TYPES.values() if ct.decide} == {"support_ticket", "access_change", "release_risk"}


def test_the_bulk_close_goes_through_the_decision_service_the_type_registered(alice, monkeypatch):
    case = case_create(actor=alice, case_type="fraud_alert", title="Alert")
    asked = []

    def decide(*, actor, case, outcome, reason):
        asked.append((case.reference, outcome, reason))
        return Decision(case=case, outcome=outcome, reason=reason)

    monkeypatch.setattr(CASE_TYPES["fraud_alert"], "decide", decide)
    monkeypatch.setattr(Case, "record", property(lambda self: object()))  # a case with its record

    result = cases_bulk_apply(actor=alice, references=[case.reference], action="close", outcome="legit",
                              reason="Known customer")

    assert result.done == [case.reference]
    assert asked == [(case.reference, "legit", "Known customer")]
    assert not Decision.objects.filter(case=case).exists()  # the type decided, not case_close


def test_a_type_with_no_decision_service_is_closed_by_case_close(alice):
    case = case_create(actor=alice, case_type="fraud_alert", title="Alert")
    result = cases_bulk_apply(actor=alice, references=[case.reference], action="close", outcome="legit",
                              reason="Known customer")
    assert result.done == [case.reference]
    assert Decision.objects.get(case=case, final=True).outcome == "legit"


def test_a_managers_dashboard_lists_the_panels_the_types_registered(client, mona):
    client.force_login(mona)
    html = client.get("/").content.decode()
    for panel in (p for ct in CASE_TYPES.values() for p in ct.dashboard_panels if p.audience == "manager"):
        assert f'id="{panel.id}"' in html and panel.title in html


def test_the_teams_dashboard_lists_the_team_panels_and_a_manager_does_not_see_them(client, alice, mona):
    team = [p for ct in CASE_TYPES.values() for p in ct.dashboard_panels if p.audience == "team"]
    assert team, "support registers a team panel (the auto-answer resolution rate)"
    client.force_login(alice)
    html = client.get("/").content.decode()
    for panel in team:
        assert f'id="{panel.id}"' in html and panel.title in html
    client.force_login(mona)
    html = client.get("/").content.decode()
    assert all(f'id="{panel.id}"' not in html for panel in team)


# --- the bulk form and API: one assignee helper, the service's rules ------------------------

def test_the_bulk_form_and_the_api_resolve_an_assignee_alike(alice_client, api, alice, mona):
    case = case_create(actor=alice, case_type="fraud_alert", title="Alert")
    form = {"references": [case.reference], "action": "assign", "assignee": "mona"}
    page = alice_client.post("/cases/bulk/", form).content.decode()
    response = api.post("/api/cases/bulk/", {**form, "references": [case.reference]}, format="json")
    assert "assignee: mona is not an investigator." in page
    assert response.status_code == 400 and response.json()["assignee"] == ["mona is not an investigator."]


def test_the_service_names_every_broken_rule_at_once():
    with pytest.raises(Exception) as caught:
        bulk_validate(action="close", references=[" "], outcome="nonsense", reason=" ")
    assert caught.value.message_dict == {"references": ["Select at least one case."],
                                         "outcome": ["Choose an outcome."],
                                         "reason": ["Give a reason for the decision."]}
    assert bulk_validate(action="priority", references=["fra-1", "FRA-1 ", "FRA-2"], priority="high") == [
        "FRA-1", "FRA-2"]


def test_the_bulk_form_shows_the_services_rules(alice_client, alice):
    case = case_create(actor=alice, case_type="fraud_alert", title="Alert")
    response = alice_client.post("/cases/bulk/", {"references": [case.reference], "action": "priority",
                                                  "priority": ""})
    assert response.status_code == 400
    assert "priority: Choose a priority: critical, high, medium, low." in response.content.decode()
