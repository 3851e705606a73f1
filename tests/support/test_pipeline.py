"""The support pipeline end to end on the offline provider (seed 001's routes and rules)."""

from __future__ import annotations

import pytest

from agents.models import AgentCall, AgentRun
from casework.support.models import Ticket
from tests.support.conftest import send, triage_run

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_new_message_opens_a_ticket_and_is_triaged_by_the_billing_specialist(alice, support_data):
    run, ticket = send(alice, "CUST-001", "Hello, we were charged twice for our March invoice. Please fix it.")
    assert run.status == AgentRun.Status.COMPLETED, run.error
    assert ticket is not None and ticket.ticket_id.startswith("TKT-") and len(ticket.ticket_id) == 12
    assert ticket.thread_id == f"CUST-001:{ticket.ticket_id}"
    assert set(run.results) == set()  # no active ticket: nothing to summarise or match
    triage = triage_run(ticket)
    assert triage.status == AgentRun.Status.COMPLETED, triage.error
    assert triage.correlation_id == ticket.thread_id
    assert set(triage.results) == {"translator", "supervisor", "billing"}
    assert triage.results["supervisor"]["output"]["urgency"] == "high"  # enterprise + billing error
    tools = set(AgentCall.objects.filter(run=triage, kind="tool").values_list("name", flat=True))
    assert tools == {"customer_lookup", "kb_search"}
    ticket.refresh_from_db()
    assert ticket.urgency == "high" and ticket.ticket_type == "billing"
    assert ticket.recommended_action == "route_specialist"
    assert ticket.lifecycle == Ticket.Lifecycle.ACTIVE
    assert "kb_001" in ticket.triage["result"]["relevant_articles"]
    assert ticket.case.priority == "high"
