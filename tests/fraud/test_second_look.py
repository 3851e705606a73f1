"""Fraud, what a second look found (issue 13): the agents leave a case awaiting a decision,
and re-assess keeps the similar-case list its specialists were shown."""

from __future__ import annotations

import pytest

from agents.models import AgentRun
from casework.fraud import selectors
from casework.fraud.services import alert_create, alert_reassess
from tests.fraud.conftest import CYCLING

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_agents_leave_a_fraud_case_awaiting_a_decision(alice):
    alert = alert_create(actor=alice, data=CYCLING)
    alert.case.refresh_from_db()
    assert alert.case.status == "awaiting_decision"
    assert alert.case.get_status_display() == "Awaiting decision"


def test_reassess_uses_the_cached_similar_cases_and_does_not_recompute_them(alice, monkeypatch):
    alert = alert_create(actor=alice, data=CYCLING)
    first = AgentRun.objects.get(case=alert.case)
    first.state["input_similar_cases"] = [{"reference": "FRA-999999", "account_id": "ACC-X", "distance": 0.5}]
    first.state["input_similar_count"] = 1
    AgentRun.objects.filter(pk=first.pk).update(state=first.state)

    def recomputed(*args, **kwargs):
        raise AssertionError("re-assess recomputed the similar cases")

    monkeypatch.setattr(selectors, "similar_confirmed", recomputed)
    run = alert_reassess(actor=alice, alert=alert)
    run.refresh_from_db()
    assert run.status == AgentRun.Status.COMPLETED, run.error
    assert run.state["input_similar_cases"] == first.state["input_similar_cases"]
    assert run.state["input_similar_count"] == 1
