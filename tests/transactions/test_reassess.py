"""A hit that joins a card's case and raises the stakes re-assesses its investigation.

A card-testing case opened on its first hit (a 1 EUR test charge) was investigated on that
charge, and the 1,899 EUR purchase that joined it later was never assessed: the case kept
the verdict of the test charge. Here the purchase's hit re-runs the investigation on the
purchase (a second round, audited), and a smaller hit re-runs nothing."""

from __future__ import annotations

import pytest

from agents.models import AgentRun
from audit.models import AuditEntry
from casework.cases.models import Case
from casework.transactions.demo_data import card_history, planted
from casework.transactions.ingest import transactions_import
from casework.transactions.models import Investigation, ToolExecution
from casework.transactions.monitoring.evaluate import transactions_evaluate
from tests.transactions.test_monitoring import running

pytestmark = pytest.mark.django_db(transaction=True)

CARD = "CARD-7001"


def evaluate(rows: list[dict]) -> None:
    """Store and evaluate rows (their on-commit evaluation, and the investigation it queues,
    run eagerly)."""
    stored = transactions_import(actor="system", rows=rows)
    transactions_evaluate([t.pk for t in stored])


@pytest.fixture
def card_testing(alice, mona):
    """The card's history (evaluated: no rule matches it), then its three test charges."""
    running(alice, mona, name="Small CNP test charges", conditions=[
        {"field": "amount", "op": "lte", "value": 5}, {"field": "channel", "op": "eq", "value": "ecommerce"}])
    running(alice, mona, name="Big electronics", conditions=[{"field": "amount", "op": "gte", "value": 500}])
    history = card_history(CARD, days=30, per_day=2.0)
    *tests, purchase = planted("card_testing", CARD, history)
    evaluate([r for r in history if float(r["amount"]) < 500])
    evaluate(tests)
    return tests, purchase


def test_a_joined_purchase_larger_than_any_assessed_re_assesses_the_case_on_it(card_testing, alice):
    tests, purchase = card_testing
    investigation = Investigation.objects.select_related("case").get()
    first = investigation.state
    assert investigation.status == "COMPLETED" and first["transaction_id"] == tests[0]["transaction_id"]

    evaluate([purchase])

    investigation.refresh_from_db()
    assert Case.objects.filter(case_type="transaction_investigation").count() == 1  # joined, not a new case
    assert investigation.status == "COMPLETED", investigation.error
    state = investigation.state
    # The second round assessed the purchase, with every tool; the first round's verdict is kept.
    assert state["transaction_id"] == purchase["transaction_id"] and state["assessment"] == 2
    assert state["assessed"] == [tests[0]["transaction_id"], purchase["transaction_id"]]
    assert state["assessments"][0]["transaction_id"] == tests[0]["transaction_id"]
    assert state["assessments"][0]["severity"] == first["severity"]
    assert state["context"]["transaction"]["transaction_id"] == purchase["transaction_id"]
    # Its findings are the purchase's: 1,899 EUR after the test charges.
    amount = next(p for p in state["pattern_results"]["patterns"] if p["type"] == "amount")
    assert amount["flagged"] and "1,899.00" in amount["detail"] and "small test charges" in amount["detail"]
    assert investigation.severity == state["severity"] and state["reasoning"] and state["recommendations"]
    rounds = ToolExecution.objects.filter(investigation=investigation)
    assert rounds.filter(assessment=1).count() == 6 and rounds.filter(assessment=2, tool_name="pattern_tool").exists()
    assert AgentRun.objects.filter(case=investigation.case, pipeline="transactions").count() == 2
    entry = AuditEntry.objects.get(action="txn.investigation_reassessed")
    assert entry.actor == "system" and entry.case_id == investigation.case_id
    assert entry.data["transaction_id"] == purchase["transaction_id"] and entry.data["was"] == "COMPLETED"
    assert entry.data["assessed"] == [tests[0]["transaction_id"]] and "more than" in entry.data["why"]

    # The case page says so.
    from django.test import Client
    from django.urls import reverse

    page = Client()
    page.force_login(alice)
    body = page.get(reverse("cases:detail", args=[investigation.case.reference])).content.decode()
    assert f"Re-assessed on {purchase['transaction_id']}" in body and tests[0]["transaction_id"] in body

    # A later, smaller purchase joins the case and changes nothing: it raises no stakes.
    smaller = {**purchase, "transaction_id": f"{purchase['transaction_id']}-B", "amount": "600.00"}
    evaluate([smaller])
    assert AgentRun.objects.filter(case=investigation.case, pipeline="transactions").count() == 2
    assert AuditEntry.objects.filter(action="txn.investigation_reassessed").count() == 1


def test_a_hit_that_joins_before_the_investigation_ends_is_re_assessed_at_its_end(alice, mona, monkeypatch):
    """The purchase joins while the investigation of the test charge is still queued: the
    evaluation leaves it alone, and the run's end re-assesses the case on the purchase."""
    from agents import tasks as agent_tasks

    queued: list[int] = []
    run_now = agent_tasks.run_pipeline.delay
    monkeypatch.setattr(agent_tasks.run_pipeline, "delay", lambda run_id: queued.append(run_id))
    running(alice, mona, name="Small CNP test charges", conditions=[{"field": "amount", "op": "lte", "value": 5}])
    running(alice, mona, name="Big electronics", conditions=[{"field": "amount", "op": "gte", "value": 500}])
    *tests, purchase = planted("card_testing", CARD, [])
    evaluate([{**tests[0], "home_country": "NL"}])
    evaluate([{**purchase, "home_country": "NL"}])
    investigation = Investigation.objects.get()
    assert investigation.status == "PENDING" and len(queued) == 1
    assert not AuditEntry.objects.filter(action="txn.investigation_reassessed").exists()

    run_now(queued.pop())  # the first round, on the test charge; its end finds the purchase

    assert AuditEntry.objects.filter(action="txn.investigation_reassessed").count() == 1 and len(queued) == 1
    run_now(queued.pop())  # the second round, on the purchase
    investigation.refresh_from_db()
    assert investigation.status == "COMPLETED", investigation.error
    assert investigation.state["assessed"] == [tests[0]["transaction_id"], purchase["transaction_id"]]
    assert investigation.state["assessments"][0]["status"] == "COMPLETED"
