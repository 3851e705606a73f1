"""The investigation page and the API: verdict, history, timelines, recommendations, the
rule's edit and promotion, resume, and the errors each answers with."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from audit.models import AuditEntry
from casework.transactions.models import Investigation, Recommendation, RuleDraft
from tests.conftest import in_every_team
from tests.transactions.conftest import investigate, load

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def fraud_case(transactional_db):
    return investigate(load("card_testing"))


def test_the_case_page_shows_verdict_history_similar_and_both_timelines(alice_client, fraud_case):
    page = alice_client.get(reverse("cases:detail", args=[fraud_case.case.reference])).content.decode()

    assert 'data-testid="txn-severity"' in page and fraud_case.severity in page
    assert "Card testing" in page  # the main hypothesis
    assert 'class="txn-flagged"' in page  # the test charges the amount pattern points at
    assert "Planner decisions" in page and "rule_draft_tool" in page and "SUCCESS" in page
    assert "Would have fired on" in page
    assert "Block the card" in page


def test_accepting_a_recommendation_over_htmx_answers_the_fragment_and_audits(alice_client, alice, fraud_case):
    rec = fraud_case.recommendations.get(action="block_card")
    url = reverse("transactions:recommendation", args=[fraud_case.case.reference, rec.pk])

    response = alice_client.post(url, {"decision": "accept"}, HTTP_HX_REQUEST="true")

    assert response.status_code == 200 and "Accepted" in response.content.decode()
    rec.refresh_from_db()
    assert rec.status == "accepted" and rec.decided_by == alice
    assert AuditEntry.objects.filter(action="txn.recommendation_accepted", actor="alice").count() == 1
    alice_client.post(url, {"decision": "accept"})  # a double click changes nothing
    assert AuditEntry.objects.filter(action="txn.recommendation_accepted").count() == 1


def test_only_managers_and_admins_promote_and_an_edit_is_back_tested(alice_client, client, admin_user, fraud_case):
    reference = fraud_case.case.reference
    rule = fraud_case.rule_draft
    edit = {"name": "Big electronics online", "description": "",
            "conditions": json.dumps([{"field": "amount", "op": "gte", "value": 1000},
                                      {"field": "mcc", "op": "in", "value": ["5732"]}])}
    alice_client.post(reverse("transactions:rule_edit", args=[reference]), edit)
    rule.refresh_from_db()
    # The back-test leaves out the card the rule was drafted from: its own transactions would
    # always match (the only big electronics purchase in this history is on that card).
    assert rule.name == "Big electronics online" and rule.backtest["excluded"] >= 1
    assert rule.backtest["fired"] == 0 and "it was drafted from left out" in rule.backtest["summary"]

    assert alice_client.post(reverse("transactions:rule_promote", args=[reference])).status_code == 403
    client.force_login(admin_user)
    client.post(reverse("transactions:rule_promote", args=[reference]))
    rule.refresh_from_db()
    assert rule.status == "promoted" and rule.promoted_by == admin_user
    assert "Big electronics online" in client.get(reverse("transactions:rules")).content.decode()
    bad = client.post(reverse("transactions:rule_edit", args=[reference]), edit)
    assert bad.status_code == 302 and RuleDraft.objects.get(pk=rule.pk).status == "promoted"


def test_the_api_starts_reads_and_refuses(api, mona, fraud_case):
    assert api.post("/api/transactions/investigations/", {"transaction_id": "TX-NOPE"},
                    format="json").status_code == 404
    assert Investigation.objects.count() == 1  # nothing started for the unknown id
    again = api.post("/api/transactions/investigations/", {"transaction_id": fraud_case.transaction.transaction_id},
                     format="json")
    assert again.status_code == 409 and again.json()["code"] == "already_investigating"

    body = api.get(f"/api/transactions/investigations/{fraud_case.case.reference}/").json()
    assert body["status"] == "COMPLETED" and len(body["tool_executions"]) == 6
    assert body["rule_draft"]["backtest"]["summary"].startswith("Would have fired")
    assert api.post(f"/api/transactions/investigations/{fraud_case.case.reference}/resume/").status_code == 409

    rec = Recommendation.objects.filter(investigation=fraud_case).first()
    url = f"/api/transactions/investigations/{fraud_case.case.reference}/recommendations/{rec.pk}/"
    assert api.post(url, {"decision": "reject"}, format="json").json()["status"] == "rejected"
    assert api.post(url, {"decision": "accept"}, format="json").status_code == 409
    assert api.post(f"/api/transactions/investigations/{fraud_case.case.reference}/rule/promote/").status_code == 403
    api.force_authenticate(mona)
    # Promoting shows the case: a manager outside its teams gets a 404, as for a missing case.
    assert api.post(f"/api/transactions/investigations/{fraud_case.case.reference}/rule/promote/").status_code == 404
    in_every_team(mona)
    promoted = api.post(f"/api/transactions/investigations/{fraud_case.case.reference}/rule/promote/")
    assert promoted.status_code == 200 and promoted.json()["promoted_by"] == "mona"


def test_the_import_is_all_or_nothing_and_names_the_row_and_field(api):
    good = {"transaction_id": "TX-1", "account_id": "CARD-1", "card_last4": "1111", "amount": "12.50",
            "currency": "EUR", "merchant": "Grocer", "mcc": "5411", "country": "NL", "channel": "pos",
            "occurred_at": "2026-03-01T10:00:00Z", "home_country": "NL"}
    bad = {**good, "transaction_id": "TX-2", "amount": "-3"}
    response = api.post("/api/transactions/", {"transactions": [good, bad]}, format="json")
    assert response.status_code == 400 and "row 2: amount" in response.json()
    assert api.post("/api/transactions/", {"transactions": [good]}, format="json").json() == {
        "created": 1, "transaction_ids": [good["transaction_id"]]}


def test_the_schema_documents_every_error_status(api):
    schema = api.get("/api/schema/?format=json").json()
    start = schema["paths"]["/api/transactions/investigations/"]["post"]["responses"]
    resume = schema["paths"]["/api/transactions/investigations/{reference}/resume/"]["post"]["responses"]
    assert {"201", "400", "401", "403", "404", "409"} <= set(start)
    assert {"202", "404", "409"} <= set(resume)
    body = schema["paths"]["/api/transactions/"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert "occurred_at" in body["properties"]["transactions"]["items"]["properties"]


def test_the_progress_poll_answers_the_verdict_and_the_timelines(alice_client, fraud_case):
    response = alice_client.get(reverse("transactions:progress", args=[fraud_case.case.reference]),
                                HTTP_HX_REQUEST="true")
    body = response.content.decode()
    assert response.status_code == 200
    assert 'id="txn-verdict"' in body and 'id="txn-timelines" hx-swap-oob="true"' in body
    assert "hx-trigger" not in body  # completed: the poll stops


def test_a_queued_investigation_page_polls_until_the_worker_finishes(alice_client):
    from unittest import mock

    from agents.models import AgentRun
    from agents.tasks import run_pipeline

    with mock.patch("agents.tasks.run_pipeline.delay"):  # no worker: the run stays queued
        investigation = investigate(load("ordinary"))
    url = reverse("cases:detail", args=[investigation.case.reference])
    page = alice_client.get(url).content.decode()
    assert investigation.status == "PENDING" and 'hx-trigger="every 2s"' in page

    run_pipeline(AgentRun.objects.get(case=investigation.case).pk)
    poll = alice_client.get(reverse("transactions:progress", args=[investigation.case.reference])).content.decode()
    assert "Completed" in poll and "hx-trigger" not in poll
