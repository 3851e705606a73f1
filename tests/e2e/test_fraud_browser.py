"""A fraud case in a real browser: the investigator reads the assessment and each evidence
tab, confirms fraud with a reason and sees the decision and the captured pattern; and the
page follows a run live, showing the findings when the worker finishes without a reload."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from agents.models import AgentRun
from agents.runtime.pipeline import execute_run
from agents.tasks import run_pipeline
from casework.cases.models import Case
from casework.fraud.models import KnowledgePattern
from casework.fraud.services import alert_create
from tests.fraud.conftest import CYCLING

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

# Each evidence tab: its panel, and what its agent wrote that must be visible there.
EVIDENCE = [
    ("Transactions", "#fraud-evidence-transaction", "Anomaly score", lambda r: r["transaction"]["detected_patterns"][0]),
    ("Access & Geo", "#fraud-evidence-geo", "Geo risk", lambda r: r["geo"]["indicators"][0]),
    ("Identity", "#fraud-evidence-identity", "Identity risk", lambda r: r["identity"]["indicators"][0]),
    ("Network", "#fraud-evidence-network", "Cluster size", lambda r: r["network"]["shared_signals"][0]),
    ("Similar Cases", "#fraud-evidence-similar", "Fraud likelihood",
     lambda r: r["outcome_similarity"]["explanation"][:60]),
]


def test_an_investigator_reads_the_evidence_and_confirms_fraud(page, log_in, alice):
    # alert_create commits, and the eager queue runs the six agents on that commit.
    alert = alert_create(actor=alice, data=CYCLING)
    run = AgentRun.objects.get(case=alert.case)
    assert run.status == AgentRun.Status.COMPLETED
    results = {key: entry["output"] for key, entry in run.results.items()}

    log_in(page, "alice", "alice-pass-123", next_path=f"/cases/{alert.case.reference}/")
    # The agents are done and recommend; the case waits for a person (issue 13).
    expect(page.locator("#case-meta .badge-status-awaiting_decision")).to_have_text("Awaiting decision")
    # The overview comes first: why the account was flagged, the copilot, the specialists.
    expect(page.get_by_role("heading", name="Why this account was flagged")).to_be_visible()
    expect(page.locator("#fraud-copilot")).to_contain_text("30-second summary")
    expect(page.locator("#fraud-predictive")).to_contain_text("likelihood of fraud")
    expect(page.locator("#fraud-specialists")).to_contain_text("The specialists disagree.")
    expect(page.locator(".badge-offline")).to_have_text("Offline rule-based analyst")

    for tab, panel, field, finding in EVIDENCE:
        page.get_by_role("tab", name=tab, exact=True).click()
        evidence = page.locator(panel)
        expect(evidence).to_be_visible()
        expect(evidence.get_by_text(field, exact=True)).to_be_visible()
        expect(evidence).to_contain_text(finding(results))
        expect(page.locator("#fraud-risk")).to_be_hidden()  # the overview is behind its tab now

    page.get_by_role("tab", name="Overview").click()
    # No reason, no decision: the browser holds the form back.
    page.get_by_role("button", name="Confirm Fraud").click()
    assert Case.objects.get(pk=alert.case_id).status != Case.Status.CLOSED

    page.get_by_label("Reason").fill("Deposits leave within two days; four times the declared income.")
    with page.expect_navigation():
        page.get_by_role("button", name="Confirm Fraud").click()
    decision = page.locator("#decision")
    expect(decision.locator(".fraud-outcome")).to_have_text("Confirmed fraud")
    expect(decision).to_contain_text("Deposits leave within two days; four times the declared income.")
    expect(decision).to_contain_text("by alice")
    pattern = KnowledgePattern.objects.get(case=alert.case)
    expect(decision.get_by_role("heading", name="What this case taught us")).to_be_visible()
    expect(decision).to_contain_text(pattern.one_sentence_description)
    expect(page.get_by_role("button", name="Confirm Fraud")).to_have_count(0)
    # The flash itself (the live region repeats its words for screen readers, visually hidden).
    expect(page.locator("#main").get_by_text(f"{alert.case.reference} closed.")).to_be_visible()
    expect(page.locator("#case-meta .badge-status-closed")).to_have_text("Closed")  # decided by a person
    assert page.js_errors == []


def test_the_page_shows_the_findings_when_the_run_finishes(page, log_in, alice, monkeypatch):
    # The queue holds the run: no worker picks it up until the test runs it below.
    monkeypatch.setattr(run_pipeline, "delay", lambda *args, **kwargs: None)
    alert = alert_create(actor=alice, data=CYCLING)
    run = AgentRun.objects.get(case=alert.case)
    assert run.status == AgentRun.Status.QUEUED

    log_in(page, "alice", "alice-pass-123", next_path=f"/cases/{alert.case.reference}/")
    expect(page.get_by_text("The agents are working")).to_be_visible()
    expect(page.locator("#fraud-risk")).to_contain_text("The orchestrator has not answered yet")

    execute_run(run.pk)  # the worker
    expect(page.locator("#fraud-risk")).to_contain_text("Key drivers", timeout=8_000)
    expect(page.get_by_text("The agents are working")).to_have_count(0)
    page.get_by_role("tab", name="Transactions").click()
    expect(page.locator("#fraud-evidence-transaction")).to_contain_text(
        run.__class__.objects.get(pk=run.pk).results["transaction"]["output"]["detected_patterns"][0])
    # Polling has stopped: the block no longer asks for itself.
    assert page.locator("#fraud-assessment[hx-trigger]").count() == 0
    assert re.search(r"Assessment #\d+", page.locator("#fraud-assessment").inner_text())
    assert page.js_errors == []
