"""Need-to-know on the dashboard: every count and chart is over the cases the person may see
(their teams' types, restricted cases only for their named people); a manager sees their teams'
figures, a manager in no team zeros, an admin everything; a type's team panel only for those
who see the type."""

from __future__ import annotations

from decimal import Decimal

import pytest

from agents.models import AgentCall, AgentRun
from casework.cases.models import Case, CaseRestriction, Decision
from casework.cases.services import case_create
from casework.people.roles import ADMIN, MANAGER
from tests.cases.need_to_know import FRAUD, SUPPORT, person

pytestmark = pytest.mark.django_db


@pytest.fixture
def cases(db):
    """Three open fraud cases (one decided besides, one restricted to nobody), two support cases;
    a failed agent call on a fraud case."""
    fraud = [case_create(actor="system", case_type=FRAUD, title=f"Card skimming {i}") for i in range(4)]
    support = [case_create(actor="system", case_type=SUPPORT, title=f"Login help {i}") for i in range(2)]
    Case.objects.filter(pk=fraud[0].pk).update(status="closed", closed_at=fraud[0].created_at)
    Decision.objects.create(case=fraud[0], outcome=fraud[0].type_info.outcomes[0][0], reason="seen")
    # Restricted to one named person (nobody here): only admins count it.
    Case.objects.filter(pk=fraud[3].pk).update(restricted=True)
    run = AgentRun.objects.create(case=fraud[1], pipeline="fraud", status="completed")
    AgentCall.objects.create(run=run, key="orchestrator", name="orchestrator", status="error", output={},
                             cost_usd=Decimal("0.5"))
    return {"fraud": fraud, "support": support}


def figures(client, user) -> dict:
    client.force_login(user)
    response = client.get("/")
    assert response.status_code == 200
    return response.context["figures"] | {"html": response.content.decode()}


def test_a_support_agent_counts_support_cases_only(client, cases):
    sue = person("sue", SUPPORT)
    seen = figures(client, sue)
    assert seen["open"]["total"] == 2
    assert seen["open"]["by_type"] == [("Support ticket", 2)]
    assert sum(seen["per_day"]["opened"]) == 2 and sum(seen["per_day"]["decided"]) == 0
    assert seen["time_to_decision"] == [] and seen["agreement"]["rows"] == []
    # The failed agent call was on a fraud case: not in their error rate or cost.
    assert seen["agents"]["calls"] == 0 and seen["agents"]["cost"] == 0
    assert "Fraud alert" not in seen["html"]


def test_a_fraud_investigator_counts_their_visible_fraud_cases(client, cases):
    fay = person("fay", FRAUD)
    seen = figures(client, fay)
    # Four fraud cases: one closed, one restricted to others.
    assert seen["open"]["total"] == 2 and seen["open"]["by_type"] == [("Fraud alert", 2)]
    assert sum(seen["per_day"]["opened"]) == 3 and sum(seen["per_day"]["decided"]) == 1
    assert [row["type"] for row in seen["time_to_decision"]] == ["Fraud alert"]
    assert seen["agents"]["calls"] == 1 and seen["agents"]["cost"] == 0.5
    # Named on the restricted case, they count it too.
    CaseRestriction.objects.create(case=cases["fraud"][3], user=fay, granted_by=fay)
    assert figures(client, fay)["open"]["total"] == 3


def test_a_manager_sees_their_teams_figures_one_in_no_team_zeros_an_admin_all(client, cases):
    manager = person("max", SUPPORT, role=MANAGER)
    assert figures(client, manager)["open"]["by_type"] == [("Support ticket", 2)]
    lone = person("lou", role=MANAGER)
    seen = figures(client, lone)
    assert seen["open"]["total"] == 0 and sum(seen["per_day"]["opened"]) == 0 and seen["agents"]["calls"] == 0
    assert 'id="manager-requests"' in seen["html"]  # their own section still
    root = person("root", role=ADMIN)
    seen = figures(client, root)
    assert seen["open"]["total"] == 5 and sum(seen["per_day"]["opened"]) == 6 and seen["agents"]["calls"] == 1


def test_a_types_team_panel_shows_only_to_those_who_see_the_type(client, cases):
    html = figures(client, person("fay", FRAUD))["html"]
    assert 'id="support-auto-answers"' not in html
    assert 'id="support-auto-answers"' in figures(client, person("sue", SUPPORT))["html"]
