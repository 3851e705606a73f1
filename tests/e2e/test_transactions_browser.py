"""A transaction investigation in a real browser: an admin (an investigator who may promote)
opens the investigation, reads the verdict, accepts a recommendation without a reload,
promotes the drafted rule and finds it on the promoted rules page."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from casework.transactions.models import Recommendation, RuleDraft
from tests.e2e.conftest import POLL_GUARD_MS
from tests.transactions.conftest import investigate, load

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def test_an_investigator_accepts_a_recommendation_and_promotes_the_rule(page, log_in, admin_user):
    investigation = investigate(load("card_testing"))
    assert investigation.status == "COMPLETED", investigation.error
    reference = investigation.case.reference

    log_in(page, "root", "root-pass-123", next_path=f"/cases/{reference}/")
    expect(page.get_by_test_id("txn-status")).to_have_text("Completed")
    expect(page.locator("#txn-verdict")).to_contain_text("Card testing")

    row = page.locator("tr[data-action='block_card']")
    row.get_by_role("button", name="Accept").click()
    expect(row.get_by_test_id("rec-status")).to_have_text("Accepted")
    assert Recommendation.objects.get(investigation=investigation, action="block_card").status == "accepted"

    page.get_by_role("tab", name="Rule draft").click()
    expect(page.get_by_test_id("rule-backtest")).to_contain_text("Would have fired on")
    page.get_by_role("button", name="Promote rule").click()
    # Issue 43: a proposal in shadow mode until another manager approves it, not "Promoted".
    expect(page.get_by_test_id("rule-status")).to_have_text("Proposed, in shadow mode: awaiting approval")
    rule = RuleDraft.objects.get(investigation=investigation)
    assert rule.status == "promoted" and rule.promoted_by == admin_user

    page.goto("/transactions/rules/")
    expect(page.locator("main, body").first).to_contain_text(rule.name)
    assert page.js_errors == []


def test_the_page_follows_a_queued_investigation_until_the_worker_finishes(page, log_in, alice):
    from unittest import mock

    from agents.models import AgentRun
    from agents.tasks import run_pipeline

    with mock.patch("agents.tasks.run_pipeline.delay"):  # no worker yet: the run waits, queued
        investigation = investigate(load("cnp_burst"))
    log_in(page, "alice", "alice-pass-123", next_path=f"/cases/{investigation.case.reference}/")
    expect(page.get_by_test_id("txn-status")).to_have_text("Pending")

    run_pipeline(AgentRun.objects.get(case=investigation.case).pk)  # the worker, now

    # Polled in, no reload (the guard is only a guard: tests/e2e/conftest.py, POLL_GUARD_MS).
    expect(page.get_by_test_id("txn-status")).to_have_text("Completed", timeout=POLL_GUARD_MS)
    expect(page.locator("#txn-timelines")).to_contain_text("rule_draft_tool")
