"""The fraud alert's declared lifecycle (casework/fraud/states.py) and the wrong states of
issue 22: a failed orchestrator that read "New" and told nobody, a re-assessment over another
alert's findings, a knowledge capture that could never be retried; and the guard that keeps
the orchestrator's priority at or above the alert's own score's.

The model's answers come from the fake OpenAI server (tests/fakes), scripted per agent as in
test_pipeline_http.py; Celery runs eagerly, so each call returns with its run finished."""

from __future__ import annotations

import pytest

from agents.models import AgentRun
from agents.tasks import run_pipeline
from audit.models import AuditEntry
from casework.cases.notifications.models import Notification
from casework.cases.services import case_assign, case_close
from casework.errors import Conflict
from casework.fraud.models import Alert, KnowledgePattern
from casework.fraud.services import alert_capture_retry, alert_create, alert_reassess
from tests.fakes.fixtures import fake_openai  # noqa: F401 - fixture
from tests.fakes.llm_servers import error, json_answer
from tests.fraud.conftest import CLEAN, CYCLING
from tests.fraud.test_pipeline_http import ANSWERS, FraudLLM

pytestmark = pytest.mark.django_db(transaction=True)

FAILING = [error(503, "overloaded")] * 4  # one try and three retries, all refused


@pytest.fixture
def llm(fake_openai):  # noqa: F811 - the fixture imported above
    return FraudLLM(fake_openai)


def statuses(alert) -> tuple[str, str]:
    alert = Alert.objects.select_related("case").get(pk=alert.pk)
    return alert.status, alert.case.status


def moves(alert) -> list[tuple[str, str, str]]:
    return [(e.data["from"], e.data["to"], e.data["by"])
            for e in AuditEntry.objects.filter(case_id=alert.case_id, action="fraud.status_changed").order_by("id")]


# --- The lifecycle as it runs ---------------------------------------------------------------


def test_an_assessed_alert_went_received_assessing_assessed_and_a_decision_captures_knowledge(llm, alice):
    alert = alert_create(actor=alice, data=CYCLING)
    assert statuses(alert) == ("assessed", "awaiting_decision")
    case_close(actor=alice, case=alert.case, outcome="confirmed_fraud", reason="Checked with the bank.")
    assert statuses(alert) == ("knowledge_captured", "closed")
    assert moves(alert) == [("received", "assessing", "system"), ("assessing", "assessed", "agent"),
                            ("assessed", "decided", "person"), ("decided", "knowledge_captured", "agent")]


# --- A failed orchestrator: it says so, and people are told ---------------------------------


def test_a_failed_orchestrator_reads_assessment_failed_and_every_investigator_is_told(
        llm, alice, ivan, mona, alice_client):
    llm.queue("orchestrator", *FAILING)
    alert = alert_create(actor="system", data=CYCLING)

    # Before issue 22 the case still read "New" and nobody heard of it.
    assert statuses(alert) == ("assessment_failed", "in_progress")
    notes = Notification.objects.filter(case_id=alert.case_id, kind=Notification.Kind.RUN_FAILED)
    assert {n.recipient_user.username for n in notes} == {"alice", "ivan"}  # nobody is assigned
    assert all("the fraud assessment failed" in n.subject for n in notes)
    assert "rule-based risk factors" in notes[0].body
    page = alice_client.get(f"/cases/{alert.case.reference}/").content.decode()
    assert 'id="fraud-status">Assessment failed</span>' in page


def test_a_failed_orchestrator_tells_the_assignee_alone(llm, alice, ivan):
    llm.queue("orchestrator", *FAILING)
    held: list[int] = []
    original = run_pipeline.delay
    run_pipeline.delay = held.append
    try:
        alert = alert_create(actor="system", data=CYCLING)
    finally:
        run_pipeline.delay = original
    case_assign(actor=alice, case=alert.case, assignee=ivan)
    run_pipeline(held[0])

    assert statuses(alert) == ("assessment_failed", "in_progress")
    notes = Notification.objects.filter(case_id=alert.case_id, kind=Notification.Kind.RUN_FAILED)
    assert [n.recipient_user.username for n in notes] == ["ivan"]


def test_a_run_that_fails_while_writing_back_reads_assessment_failed(llm, alice, monkeypatch):
    import casework.fraud.services as services

    def broken(**kwargs):
        raise RuntimeError("database went away")

    monkeypatch.setattr(services, "case_set_priority", broken)
    llm.queue("orchestrator", json_answer({**ANSWERS["orchestrator"], "priority": "critical"}))
    alert = alert_create(actor=alice, data={**CYCLING, "fraud_probability": 0.5, "risk_level": "medium"})

    run = AgentRun.objects.get(case=alert.case)
    assert run.status == AgentRun.Status.FAILED and "database went away" in run.error
    # The write-back rolled back whole; the run's failure is what the alert says.
    assert statuses(alert) == ("assessment_failed", "in_progress")


# --- Re-assess reads only this alert's specialists -------------------------------------------


def test_reassessing_uses_this_alerts_own_specialists_not_a_later_alert_on_the_account(llm, alice):
    first = alert_create(actor=alice, data=CYCLING)
    own = AgentRun.objects.get(case=first.case)
    second = alert_create(actor=alice, data={**CLEAN, "account_id": CYCLING["account_id"]})
    assert second.account_id == first.account_id

    alert_reassess(actor=alice, alert=first)
    run = AgentRun.objects.filter(case=first.case, mode="case_open").get()
    # Before issue 22 it read the account's latest assessment: the second alert's.
    assert run.state["input_cached_from_run"] == own.pk
    assert all(run.results[key]["output"] == own.results[key]["output"]
               for key in ("transaction", "identity", "geo", "network", "outcome_similarity"))


def test_an_alert_without_a_finished_assessment_of_its_own_cannot_be_reassessed(llm, alice, alice_client):
    alert_create(actor=alice, data=CYCLING)
    second = alert_create(actor=alice, data={**CLEAN, "account_id": CYCLING["account_id"]})
    AgentRun.objects.filter(case=second.case).update(status=AgentRun.Status.FAILED)

    with pytest.raises(Conflict, match="cannot be re-assessed: it has no finished assessment of its own"):
        alert_reassess(actor=alice, alert=second)
    assert not AgentRun.objects.filter(case=second.case, mode="case_open").exists()
    page = alice_client.get(f"/cases/{second.case.reference}/").content.decode()
    assert ">Re-assess</button>" not in page and ">Re-run all</button>" in page


# --- A failed knowledge capture can be retried -----------------------------------------------


def test_a_failed_knowledge_capture_is_retried_by_a_person_from_the_page(llm, alice, alice_client):
    alert = alert_create(actor=alice, data=CYCLING)
    llm.queue("knowledge_capture", *FAILING)
    case_close(actor=alice, case=alert.case, outcome="confirmed_fraud", reason="Checked with the bank.")
    assert statuses(alert) == ("capture_failed", "closed")
    assert not KnowledgePattern.objects.filter(case=alert.case).exists()
    page = alice_client.get(f"/cases/{alert.case.reference}/").content.decode()
    assert "Retry knowledge capture</button>" in page

    response = alice_client.post(f"/fraud/cases/{alert.case.reference}/capture-retry/")
    assert response.status_code == 302
    assert statuses(alert) == ("knowledge_captured", "closed")
    assert KnowledgePattern.objects.filter(case=alert.case).exists()
    retry = AuditEntry.objects.get(case_id=alert.case_id, action="fraud.status_changed", data__to="decided",
                                   data__from="capture_failed")
    assert retry.actor == "alice" and retry.data["reason"] == "Retry knowledge capture."
    assert AgentRun.objects.filter(case=alert.case, mode="close").count() == 2
    # Captured now: nothing more to retry.
    with pytest.raises(Conflict, match="knowledge captured: only a failed knowledge capture is retried"):
        alert_capture_retry(actor=alice, alert=alert)


def test_the_api_retries_a_failed_capture_and_refuses_one_that_did_not_fail(llm, alice, api):
    alert = alert_create(actor=alice, data=CYCLING)
    url = f"/api/fraud/alerts/{alert.case.reference}/capture-retry/"
    assert api.post(url).status_code == 409  # not decided yet
    llm.queue("knowledge_capture", *FAILING)
    case_close(actor=alice, case=alert.case, outcome="confirmed_fraud", reason="Checked with the bank.")
    body = api.get(f"/api/fraud/alerts/{alert.case.reference}/").json()
    assert (body["status"], body["status_label"]) == ("capture_failed", "Knowledge capture failed")

    response = api.post(url)
    assert response.status_code == 202 and response.json()["mode"] == "close"
    assert statuses(alert) == ("knowledge_captured", "closed")
    refused = api.post(url)
    assert refused.status_code == 409 and "only a failed knowledge capture is retried" in refused.json()["detail"]


# --- The guard: the orchestrator never lowers the priority below the alert's own score -------


def test_an_orchestrator_answer_below_the_scorers_critical_is_floored_and_the_override_shown(
        llm, alice, alice_client):
    llm.queue("orchestrator", json_answer({**ANSWERS["orchestrator"], "risk_level": "low", "priority": "low",
                                           "investigation_summary": "Nothing to see here."}))
    alert = alert_create(actor=alice, data=CYCLING)
    assert alert.risk_level == "critical" and alert.score_source == "casework_scorer"

    alert.case.refresh_from_db()
    # Before issue 22 the case dropped to low on the model's word.
    assert alert.case.priority == "critical"
    guarded = AuditEntry.objects.get(case_id=alert.case_id, action="fraud.priority_guarded")
    assert guarded.data["proposed"] == "low" and guarded.data["applied"] == "critical"
    assert "below the critical risk of the casework scorer" in guarded.data["reason"]
    assert not AuditEntry.objects.filter(case_id=alert.case_id, action="case.priority_changed").exists()
    page = alice_client.get(f"/cases/{alert.case.reference}/").content.decode()
    assert 'id="fraud-priority-override"' in page and "Priority kept at critical:" in page
    assert "the orchestrator proposed low" in page


def test_the_upstream_models_level_is_a_floor_too_and_a_higher_answer_stands(llm, alice):
    upstream = {**CLEAN, "fraud_probability": 0.81, "anomaly_score": 0.7, "risk_level": "high",
                "one_line_explanation": "Upstream saw a mule pattern.", "risk_factors": ["upstream: mule"]}
    llm.queue("orchestrator", json_answer({**ANSWERS["orchestrator"], "risk_level": "medium", "priority": "medium"}))
    floored = alert_create(actor=alice, data=upstream)
    floored.case.refresh_from_db()
    assert floored.score_source == "upstream" and floored.case.priority == "high"
    change = AuditEntry.objects.get(case_id=floored.case_id, action="fraud.priority_guarded")
    assert "the high risk of the upstream model" in change.data["reason"]

    llm.queue("orchestrator", json_answer({**ANSWERS["orchestrator"], "priority": "critical"}))
    raised = alert_create(actor=alice, data={**upstream, "account_id": "ACC-9001"})
    raised.case.refresh_from_db()
    assert raised.case.priority == "critical"
    assert not AuditEntry.objects.filter(case_id=raised.case_id, action="fraud.priority_guarded").exists()


def test_a_person_may_still_lower_the_priority(llm, alice):
    from casework.cases.services import case_set_priority

    alert = alert_create(actor=alice, data=CYCLING)
    case_set_priority(actor=alice, case=alert.case, priority="low", reason="Known customer; checked by phone.")
    alert.case.refresh_from_db()
    assert alert.case.priority == "low"


# --- The data migration: existing alerts get the status their case and runs show ------------


def test_the_migration_gives_existing_alerts_the_status_their_case_and_runs_show(llm, alice):
    import importlib

    from django.apps import apps

    migration = importlib.import_module("casework.fraud.migrations.0004_alert_status")
    assessed = alert_create(actor=alice, data=CYCLING)
    llm.queue("orchestrator", *FAILING)
    failed = alert_create(actor=alice, data={**CYCLING, "account_id": "ACC-5001"})
    captured = alert_create(actor=alice, data={**CYCLING, "account_id": "ACC-5002"})
    case_close(actor=alice, case=captured.case, outcome="confirmed_fraud", reason="Checked with the bank.")
    llm.queue("knowledge_capture", *FAILING)
    uncaptured = alert_create(actor=alice, data={**CYCLING, "account_id": "ACC-5003"})
    case_close(actor=alice, case=uncaptured.case, outcome="legit", reason="Known customer.")
    held: list[int] = []
    original = run_pipeline.delay
    run_pipeline.delay = held.append
    try:
        queued = alert_create(actor=alice, data={**CYCLING, "account_id": "ACC-5004"})
    finally:
        run_pipeline.delay = original
    expected = {assessed.pk: "assessed", failed.pk: "assessment_failed", captured.pk: "knowledge_captured",
                uncaptured.pk: "capture_failed", queued.pk: "received"}
    assert dict(Alert.objects.values_list("pk", "status")) == expected  # as the services moved them
    Alert.objects.update(status="received")  # as the column's default fills it for existing rows

    migration.fill(apps, None)
    assert dict(Alert.objects.values_list("pk", "status")) == expected
