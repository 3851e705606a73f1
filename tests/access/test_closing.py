"""Closing an access case ends its waiting runs (issue 13): nobody is left to answer them,
and /metrics agrees. Transactional: the agents' tools run on their own connections."""

from __future__ import annotations

import pytest

from agents.models import AgentRun
from audit.models import AuditEntry

pytestmark = pytest.mark.django_db(transaction=True)


def test_closing_a_case_ends_its_waiting_runs_and_metrics_agree(org, submit, client, alice):
    mutation = submit()
    run = AgentRun.objects.get(case=mutation.case)
    assert run.status == AgentRun.Status.WAITING
    assert 'casework_agent_runs{pipeline="access",status="waiting"} 1.0' in client.get("/metrics").content.decode()

    client.force_login(alice)
    client.post(f"/cases/{mutation.case.reference}/close/", {"outcome": "manual", "reason": "Handled by phone."})

    run.refresh_from_db()
    assert run.status == AgentRun.Status.CANCELLED
    assert run.finished_at is not None and "case was closed" in run.error
    entry = AuditEntry.objects.get(case_id=mutation.case_id, action="agent.run_cancelled")
    assert entry.data["run"] == run.pk and entry.data["from"] == "waiting"
    assert not AgentRun.objects.filter(case=mutation.case, status=AgentRun.Status.WAITING).exists()
    client.logout()
    body = client.get("/metrics").content.decode()
    assert 'casework_agent_runs{pipeline="access",status="waiting"} 0.0' in body
    assert 'casework_agent_runs{pipeline="access",status="cancelled"} 1.0' in body
