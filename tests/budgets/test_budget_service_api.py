"""A lead sets a case's budget (the service, the API, the case page), everyone who sees the case
reads its spend, the assignee is warned once at 80%, the chat says plainly when the budget is
reached, and the dashboard shows spend per type and the cases at their budget, only of the
cases the person may see."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from agents.chat.models import ChatMessage
from agents.runtime import charging
from agents.runtime.runner import run_agent
from audit.models import AuditEntry
from casework.budgets.models import CaseBudget, CaseTypeBudget
from casework.budgets.services import budget_set
from casework.cases.notifications.models import Notification
from casework.cases.services import case_create
from tests.budgets.test_reservation import AGENTS, INPUT, one_call_estimate
from tests.fakes.llm_servers import json_answer

pytestmark = pytest.mark.django_db(transaction=True)


def api_for(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


@pytest.fixture
def case(lena):
    return case_create(actor=lena, case_type="fraud_alert", title="A case with a budget")


def test_a_lead_sets_the_budget_through_the_api_audited_and_others_read_it(case, lena, alice):
    answer = api_for(lena).post(f"/api/cases/{case.reference}/budget/",
                                {"limit_usd": "12.50", "limit_tokens": 40000, "reason": "A long review."},
                                format="json")
    assert answer.status_code == 200, answer.content
    assert answer.json()["limit_usd"] == "12.500000" and answer.json()["limit_tokens"] == 40000
    assert answer.json()["overridden"] is True
    entry = AuditEntry.objects.get(case_id=case.pk, action="budget.changed")
    assert entry.actor == "lena" and entry.data["reason"] == "A long review."
    assert entry.data["to"] == {"limit_usd": "$12.50", "limit_tokens": 40000}

    read = api_for(alice).get(f"/api/cases/{case.reference}/budget/")
    assert read.status_code == 200 and read.json()["spent_usd"] == "0.000000"
    refused = api_for(alice).post(f"/api/cases/{case.reference}/budget/", {"limit_usd": "99", "reason": "x"},
                                  format="json")
    assert refused.status_code == 403
    assert CaseBudget.objects.get(case=case).limit_musd == 12_500_000


@pytest.mark.parametrize("body, field", [
    ({"limit_usd": "-1", "reason": "x"}, "limit_usd"),
    ({"limit_usd": "abc", "reason": "x"}, "limit_usd"),
    ({"limit_tokens": 1.5, "reason": "x"}, "limit_tokens"),
    ({"limit_usd": "5"}, "reason"),
])
def test_bad_input_is_a_400_naming_the_field(case, lena, body, field):
    answer = api_for(lena).post(f"/api/cases/{case.reference}/budget/", body, format="json")
    assert answer.status_code == 400
    assert field in answer.content.decode()


def test_a_type_budget_set_in_the_admin_applies_to_its_cases_a_lead_did_not_override(case, lena, admin_user):
    other = case_create(actor=lena, case_type="fraud_alert", title="Overridden")
    budget_set(actor=lena, case=other, limit_usd="50", limit_tokens=None, reason="Its own.")
    from casework.budgets.services import budget_for_case

    budget_for_case(case)
    client = __import__("django.test", fromlist=["Client"]).Client()
    client.force_login(admin_user)
    page = client.get("/admin/budgets/casetypebudget/").content.decode()
    assert "Prices" in page and "gpt-4o-mini" in page and "claude-sonnet-4-5" in page
    answer = client.post("/admin/budgets/casetypebudget/add/",
                         {"case_type": "fraud_alert", "limit_usd": "3.00", "limit_tokens": "1000"})
    assert answer.status_code == 302
    assert CaseTypeBudget.objects.get(case_type="fraud_alert").limit_tokens == 1000
    assert CaseBudget.objects.get(case=case).limit_musd == 3_000_000
    assert CaseBudget.objects.get(case=other).limit_musd == 50_000_000  # the lead's stands
    assert AuditEntry.objects.filter(action="budget.type_changed", actor="root").count() == 1


def test_the_assignee_is_warned_once_at_eighty_percent(budgets_on, fake_openai, lena, alice):
    from casework.cases.services import case_assign

    case = case_create(actor=lena, case_type="fraud_alert", title="Warned")
    case_assign(actor=lena, case=case, assignee=alice)
    musd, _, prompt = one_call_estimate()
    fake_openai.default = json_answer({"note": "ok"}, input_tokens=prompt, output_tokens=AGENTS[0].max_tokens)
    budget_set(actor=lena, case=case, limit_usd=f"{10 * musd / 1_000_000:.6f}", limit_tokens=None, reason="Ten.")

    for number in range(1, 10):
        run_agent(AGENTS[0], dict(INPUT), metadata={"case": case.reference})
        charging.flush()
        warned = Notification.objects.filter(case=case, kind="budget_warning", recipient_user=alice).count()
        assert warned == (1 if number >= 8 else 0), number
    assert "80%" in Notification.objects.get(case=case, kind="budget_warning").subject
    assert AuditEntry.objects.filter(case_id=case.pk, action="budget.warned").count() == 1


def test_the_chat_says_plainly_that_the_budget_is_reached(budgets_on, lena):
    from django.test import Client

    case = case_create(actor=lena, case_type="fraud_alert", title="Chat at budget")
    budget_set(actor=lena, case=case, limit_usd="0", limit_tokens=None, reason="Nothing to spend.")
    client = Client()
    client.force_login(lena)
    page = client.post(f"/cases/{case.reference}/ask/send/", {"content": "What was found?"},
                       HTTP_HX_REQUEST="true").content.decode()
    answer = ChatMessage.objects.get(conversation__case=case, role="assistant")
    assert answer.error == "This case has reached its budget of $0.00; a lead can raise it."
    assert "This case has reached its budget of $0.00; a lead can raise it." in page


def test_the_case_page_shows_spend_and_only_a_lead_gets_the_form(case, lena, alice):
    from django.test import Client

    budget_set(actor=lena, case=case, limit_usd="4", limit_tokens=None, reason="Four.")
    CaseBudget.objects.filter(case=case).update(spent_musd=1_000_000, spent_tokens=1234, calls=3)
    as_lead, as_alice = Client(), Client()
    as_lead.force_login(lena)
    as_alice.force_login(alice)
    lead_page = as_lead.get(f"/cases/{case.reference}/").content.decode()
    alice_page = as_alice.get(f"/cases/{case.reference}/").content.decode()
    for page in (lead_page, alice_page):
        assert "Spent <strong>$1.00</strong> of $4.00 (25%)" in page
        assert "<strong>1,234</strong> tokens of no limit" in page  # grouped, as the money is
    assert 'id="budget-form"' in lead_page and 'id="budget-form"' not in alice_page
    answer = as_lead.post(f"/cases/{case.reference}/budget/", {"action": "set", "limit_usd": "8", "limit_tokens": "",
                                                               "reason": "More."}, HTTP_HX_REQUEST="true")
    assert "of $8.00 (12%)" in answer.content.decode()
    assert as_alice.post(f"/cases/{case.reference}/budget/", {"action": "set", "limit_usd": "80",
                                                              "reason": "Mine."}).status_code == 403


def test_the_dashboard_shows_spend_per_type_and_cases_at_budget_only_to_those_who_see_them(case, lena):
    from django.test import Client

    from casework.people.roles import INVESTIGATOR
    from casework.people.services import user_create
    from casework.people.teams import team_create, team_member_set

    budget_set(actor=lena, case=case, limit_usd="1", limit_tokens=None, reason="One.")
    CaseBudget.objects.filter(case=case).update(spent_musd=1_000_000, spent_tokens=99, calls=4,
                                                reached_at="2026-11-29T06:00:00Z")
    outsider = user_create(actor="system", username="oscar", password="oscar-pass-123", role=INVESTIGATOR)
    team_member_set(actor="system", team=team_create(actor="system", name="Support only", case_types=["support_ticket"]),
                    user=outsider)
    as_lead, as_outsider = Client(), Client()
    as_lead.force_login(lena)
    as_outsider.force_login(outsider)
    seen = as_lead.get("/").content.decode()
    hidden = as_outsider.get("/").content.decode()
    assert 'id="budget-hit-list"' in seen and case.reference in seen and "$1.00" in seen
    assert case.reference not in hidden and "No model call charged to a case yet." in hidden


def test_the_run_lifecycle_with_budget_reached_is_drawn(lena):
    from django.test import Client

    client = Client()
    client.force_login(lena)
    page = client.get("/lifecycles/").content.decode()
    assert 'id="lifecycle-agent_run"' in page and 'id="state-agent_run-budget_reached"' in page
    assert "a lead raises the budget" in page
