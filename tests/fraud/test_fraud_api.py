"""The fraud case API: every agent's latest result and the run's status, re-assess, re-run
and close, with their refusals (409 while a run is active or after a close, 400 naming the
field, 403 for anyone but an investigator)."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from agents.llm.offline_registry import OFFLINE_ANALYSTS
from agents.models import AgentCall, AgentRun
from casework.cases.models import Case
from casework.cases.services import case_create
from casework.fraud.models import KnowledgePattern
from casework.fraud.services import alert_create
from tests.fraud.conftest import CYCLING

committed = pytest.mark.django_db(transaction=True)
SPECIALISTS = ("transaction", "identity", "geo", "network", "outcome_similarity")
FIELDS = {
    "transaction": {"anomaly_score", "detected_patterns", "short_explanation"},
    "identity": {"identity_risk", "indicators", "explanation"},
    "geo": {"geo_risk", "indicators", "explanation"},
    "network": {"cluster_size", "known_fraud_links", "shared_signals", "explanation"},
    "outcome_similarity": {"fraud_likelihood", "similar_confirmed_cases_count", "explanation"},
    "orchestrator": {"risk_level", "confidence", "key_drivers", "priority", "investigation_summary"},
}


def url(alert, action: str = "") -> str:
    return f"/api/fraud/alerts/{alert.case.reference}/{action + '/' if action else ''}"


@pytest.fixture
def queued(alice):
    """An alert whose creation run is still queued (this test's transaction never commits)."""
    return alert_create(actor=alice, data=CYCLING)


# --- reading -----------------------------------------------------------------------------

@committed
def test_the_detail_carries_every_agents_latest_result_and_the_runs_status(api, alice):
    alert = alert_create(actor=alice, data=CYCLING)
    response = api.get(url(alert))
    assert response.status_code == 200
    body = response.json()
    run = body["assessment"]["run"]
    assert run["mode"] == "alert_creation" and run["status"] == "completed" and run["active"] is False
    assert run["provider"] == "offline" and run["finished_at"]
    agents = body["assessment"]["agents"]
    assert set(agents) == set(FIELDS)
    for key, fields in FIELDS.items():
        assert agents[key]["status"] == "completed", key
        assert set(agents[key]["output"]) == fields
        assert agents[key]["error"] == "" and agents[key]["cached"] is False
    assert body["assessment"]["similar_confirmed_cases"] == []
    assert body["decision"] is None and body["knowledge_pattern"] is None and body["knowledge_capture"] is None
    # The alert's own fields are still there.
    assert body["reference"] == alert.case.reference and body["features"]["deposits_count"] == 41


@committed
def test_a_failed_agent_reads_as_its_error(api, alice, monkeypatch):
    monkeypatch.setitem(OFFLINE_ANALYSTS, "orchestrator", lambda data: {"risk_level": "banana"})
    alert = alert_create(actor=alice, data=CYCLING)
    orchestrator = api.get(url(alert)).json()["assessment"]["agents"]["orchestrator"]
    assert orchestrator["status"] == "failed"
    assert orchestrator["output"] is None
    assert orchestrator["error"] and orchestrator["error_type"] == "invalid_output"


def test_a_rate_limited_agent_reads_as_the_rate_limit_message(api, queued):
    run = AgentRun.objects.get(case=queued.case)
    run.state = {"results": {"geo": {"output": None, "error": "429 quota exceeded", "error_type": "rate_limit",
                                     "attempts": 4, "latency_ms": 9000}}}
    run.status = AgentRun.Status.COMPLETED
    run.save()
    geo = api.get(url(queued)).json()["assessment"]["agents"]["geo"]
    assert geo == {"status": "failed", "output": None, "error": "Rate limit reached. Please try again in a minute.",
                   "error_type": "rate_limit", "cached": False, "latency_ms": 9000, "attempts": 4}


def test_while_the_run_is_queued_every_agent_is_pending(api, queued):
    body = api.get(url(queued)).json()
    assert body["assessment"]["run"]["status"] == "queued" and body["assessment"]["run"]["active"] is True
    assert {a["status"] for a in body["assessment"]["agents"].values()} == {"pending"}


@committed
def test_similar_confirmed_cases_are_listed_and_the_pattern_after_close(api, alice):
    earlier = alert_create(actor=alice, data={**CYCLING, "account_id": "ACC-1"})
    assert api.post(url(earlier, "close"), {"outcome": "confirmed_fraud", "reason": "Cycling."},
                    format="json").status_code == 201
    body = api.get(url(earlier)).json()
    assert body["decision"]["outcome"] == "confirmed_fraud"
    assert body["knowledge_pattern"]["behavioral_pattern"]
    assert body["knowledge_capture"]["status"] == "completed"

    alert = alert_create(actor=alice, data={**CYCLING, "account_id": "ACC-2"})
    similar = api.get(url(alert)).json()["assessment"]["similar_confirmed_cases"]
    assert [(s["reference"], s["account_id"]) for s in similar] == [(earlier.case.reference, "ACC-1")]
    assert similar[0]["distance"] == 0


def test_an_unknown_case_or_one_without_an_alert_is_404(api, alice):
    case = case_create(actor=alice, case_type="fraud_alert", title="By hand")
    support = case_create(actor=alice, case_type="support_ticket", title="Refund")
    for reference in ("FRA-999999", case.reference, support.reference):
        assert api.get(f"/api/fraud/alerts/{reference}/").status_code == 404
        assert api.post(f"/api/fraud/alerts/{reference}/close/", {"outcome": "legit", "reason": "x"},
                        format="json").status_code == 404


# --- re-assess and re-run ------------------------------------------------------------------

@committed
def test_reassess_runs_only_the_orchestrator_and_answers_202(api, alice):
    alert = alert_create(actor=alice, data=CYCLING)
    before = AgentCall.objects.count()
    response = api.post(url(alert, "reassess"))
    assert response.status_code == 202
    body = response.json()
    assert body["mode"] == "case_open" and body["status"] == "completed"  # the eager queue ran it already
    assert body["id"] == AgentRun.objects.filter(case=alert.case).first().pk
    assert AgentCall.objects.count() == before + 1
    agents = api.get(url(alert)).json()["assessment"]["agents"]
    assert all(agents[key]["cached"] for key in SPECIALISTS)
    assert agents["orchestrator"]["cached"] is False


@committed
def test_rerun_runs_all_six_agents_and_answers_202(api, alice):
    alert = alert_create(actor=alice, data=CYCLING)
    before = AgentCall.objects.count()
    response = api.post(url(alert, "rerun"))
    assert response.status_code == 202
    assert response.json()["mode"] == "alert_creation"
    assert AgentCall.objects.count() == before + 6
    assert AgentRun.objects.filter(case=alert.case).count() == 2


def test_reassess_and_rerun_while_a_run_is_active_are_409(api, queued):
    for action in ("reassess", "rerun"):
        response = api.post(url(queued, action))
        assert response.status_code == 409, action
        assert response.json()["code"] == "run_active"
        assert "already being assessed" in response.json()["detail"]
    assert AgentRun.objects.filter(case=queued.case).count() == 1


# --- closing -----------------------------------------------------------------------------

@committed
def test_closing_records_the_decision_and_answers_201(api, alice):
    alert = alert_create(actor=alice, data=CYCLING)
    response = api.post(url(alert, "close"), {"outcome": "false_positive", "reason": "Known payroll agent."},
                        format="json")
    assert response.status_code == 201
    body = response.json()
    assert body["reference"] == alert.case.reference
    assert body["outcome"] == "false_positive" and body["outcome_label"] == "Dismissed as false positive"
    assert body["reason"] == "Known payroll agent." and body["decided_by"] == "alice"
    # Knowledge capture ran on commit (eagerly here) and its pattern came back with the answer.
    assert body["knowledge_pattern"]["one_sentence_description"]
    assert KnowledgePattern.objects.filter(case=alert.case).exists()
    assert Case.objects.get(pk=alert.case_id).status == Case.Status.CLOSED


def test_a_second_close_is_409(api, queued):
    assert api.post(url(queued, "close"), {"outcome": "legit", "reason": "Known customer."},
                    format="json").status_code == 201
    response = api.post(url(queued, "close"), {"outcome": "confirmed_fraud", "reason": "Changed my mind."},
                        format="json")
    assert response.status_code == 409
    assert response.json()["code"] == "already_closed"
    assert "already closed by alice" in response.json()["detail"]
    assert queued.case.decisions.get().outcome == "legit"


@pytest.mark.parametrize(("payload", "fields"), [
    ({}, {"outcome", "reason"}),
    ({"outcome": "fraud", "reason": "Cycling."}, {"outcome"}),
    ({"outcome": "replied", "reason": "A support outcome."}, {"outcome"}),
    ({"outcome": "legit"}, {"reason"}),
    ({"outcome": "legit", "reason": "   "}, {"reason"}),
    ({"outcome": "legit", "reason": "x" * 5_001}, {"reason"}),
])
def test_a_bad_close_is_400_naming_the_field(api, queued, payload, fields):
    response = api.post(url(queued, "close"), payload, format="json")
    assert response.status_code == 400
    assert set(response.json()) == fields
    assert not queued.case.decisions.exists()


# --- who may -------------------------------------------------------------------------------

def test_a_manager_is_refused_everywhere(mona, queued):
    client = APIClient()
    client.force_authenticate(mona)
    assert client.get(url(queued)).status_code == 403
    for action in ("reassess", "rerun"):
        assert client.post(url(queued, action)).status_code == 403
    assert client.post(url(queued, "close"), {"outcome": "legit", "reason": "x"}, format="json").status_code == 403
    assert AgentRun.objects.filter(case=queued.case).count() == 1
    assert not queued.case.decisions.exists()


def test_anonymous_callers_are_401(queued):
    client = APIClient()
    assert client.get(url(queued)).status_code == 401
    assert client.post(url(queued, "close"), {"outcome": "legit", "reason": "x"}, format="json").status_code == 401


# --- schema ------------------------------------------------------------------------------

def test_the_schema_documents_the_case_operations_with_examples(api):
    schema = api.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    paths = schema["paths"]
    detail = paths["/api/fraud/alerts/{reference}/"]["get"]["responses"]["200"]["content"]["application/json"]
    assert detail["examples"]
    for action, code in (("reassess", "202"), ("rerun", "202"), ("close", "201")):
        operation = paths[f"/api/fraud/alerts/{{reference}}/{action}/"]["post"]
        assert code in operation["responses"], action
    close = paths["/api/fraud/alerts/{reference}/close/"]["post"]
    assert {"400", "409"} <= set(close["responses"])
    assert close["requestBody"]["content"]["application/json"]["examples"]
    assert "409" in paths["/api/fraud/alerts/{reference}/reassess/"]["post"]["responses"]
    components = schema["components"]["schemas"]
    assert {"FraudAssessment", "FraudAgentResult", "FraudRun", "FraudCloseInputRequest"} <= set(components)
