"""An alert is "Assessed" only when a specialist finished (issue 43): five failed specialists
leave nothing to assess, so the orchestrator's guess neither reads as an assessment nor moves
the case's priority. And the Decided state names the outcomes that exist."""

from __future__ import annotations

import pytest

from agents.llm.offline_registry import OFFLINE_ANALYSTS
from audit.models import AuditEntry
from casework.cases.types import CASE_TYPES
from casework.fraud.agents import SPECIALISTS
from casework.fraud.models import Alert
from casework.fraud.services import alert_create
from casework.fraud.states import FRAUD_LIFECYCLE
from tests.fraud.conftest import CLEAN


@pytest.mark.django_db(transaction=True)  # the assessment runs when the alert commits
def test_an_alert_whose_five_specialists_all_failed_is_not_assessed_and_keeps_its_priority(alice, monkeypatch):
    for key in SPECIALISTS:
        monkeypatch.setitem(OFFLINE_ANALYSTS, key, lambda data: {"not": "the schema"})
    alert = alert_create(actor=alice, data=CLEAN)
    alert = Alert.objects.select_related("case").get(pk=alert.pk)
    run = alert.case.agent_runs.latest("id")
    assert all(run.state["results"][key].get("error") for key in SPECIALISTS)
    assert run.state["results"]["orchestrator"].get("output")  # it answered: a guess over nothing
    assert alert.status == "assessment_failed" and alert.get_status_display() != "Assessed"
    assert alert.case.status == "in_progress" and alert.case.priority == "low"
    assert not AuditEntry.objects.filter(case_id=alert.case_id, action="case.priority_changed").exists()
    move = AuditEntry.objects.filter(case_id=alert.case_id, action="fraud.status_changed").latest("id")
    assert move.data["to"] == "assessment_failed" and "every specialist failed" in move.data["reason"]


def test_the_decided_state_names_every_outcome_a_person_can_choose_and_no_other():
    meaning = FRAUD_LIFECYCLE.state("decided").meaning.lower()
    for _, label in CASE_TYPES["fraud_alert"].outcomes:
        assert label.lower() in meaning, label
    assert "escalated" not in meaning
