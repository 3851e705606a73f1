"""A lead raises a case's budget from the case page, and the run that waited in "Budget
reached" goes on to its end (headless Chromium against the live server)."""

from __future__ import annotations

import pytest
from django.db import transaction
from playwright.sync_api import expect

from agents.models import AgentRun
from agents.tasks import pipeline_enqueue
from casework.cases.services import case_create
from tests.budgets.conftest import budgets_on, lena  # noqa: F401 - fixtures
from tests.budgets.test_reservation import AGENTS, FIFTY, endpoint, ten_calls_budget  # noqa: F401 - fixture
from tests.fakes.fixtures import fake_openai  # noqa: F401 - fixture

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def test_a_lead_raises_the_budget_from_the_case_page_and_the_run_finishes(page, log_in, endpoint, lena):  # noqa: F811
    case = case_create(actor=lena, case_type="fraud_alert", title="Raised from the page")
    ten_calls_budget(lena, case)
    with transaction.atomic():
        run = pipeline_enqueue(case=case, pipeline="test_budget_fifty", mode="full", actor="system")
    run.refresh_from_db()
    assert run.status == AgentRun.Status.BUDGET_REACHED

    log_in(page, "lena", "lena-pass-123", next_path=f"/cases/{case.reference}/")
    panel = page.locator("#case-budget")
    expect(panel.locator("#budget-reached")).to_contain_text("1 run waits for a lead to raise the budget or stop it")
    panel.get_by_label("Money (US$)").fill("100")
    panel.get_by_label("Reason").first.fill("Worth finishing.")
    panel.get_by_role("button", name="Save budget and resume").click()

    expect(panel.locator("#budget-done")).to_have_text("Budget saved.")
    expect(panel.locator("#budget-spend")).to_contain_text("of $100.00")
    expect(panel.locator("#budget-reached")).to_have_count(0)
    run.refresh_from_db()
    assert run.status == AgentRun.Status.COMPLETED
    assert len(endpoint.requests) == FIFTY + 1
    assert page.js_errors == []
