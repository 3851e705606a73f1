"""The support demo: every ticket made by the pipeline, in every state, in several languages."""

from __future__ import annotations

from collections import Counter

import pytest

from agents.models import AgentRun
from casework.cases.demo import DEMO_LOADERS
from casework.cases.models import Case
from casework.support.demo import demo_load_support
from casework.support.models import Customer, KBArticle, Ticket, TicketMessage

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_demo_makes_real_tickets_in_every_state_once(alice):
    assert DEMO_LOADERS["support_ticket"] is demo_load_support
    assert demo_load_support(users={"alice": alice}) >= 24
    assert Customer.objects.count() == 20 and KBArticle.objects.count() == 30
    tickets = Ticket.objects.select_related("case")
    assert tickets.count() >= 24
    # Every ticket was triaged by a completed pipeline run, none by hand.
    for ticket in tickets:
        run = AgentRun.objects.filter(case=ticket.case, mode="triage").latest("id")
        assert run.status == AgentRun.Status.COMPLETED and ticket.triage["run"] == run.pk
    actions = Counter(t.recommended_action for t in tickets)
    assert set(actions) == {"auto_respond", "route_specialist", "escalate_human"}
    assert {t.lifecycle for t in tickets} >= {"routed", "answer_ready", "escalated", "replied", "closed_no_reply"}
    assert {d for t in tickets if t.case.is_closed for d in t.case.decisions.values_list("outcome", flat=True)} == {
        "replied", "escalated", "no_action"}
    assert len({t.language for t in tickets}) >= 4
    assert any(t.messages.filter(direction="customer").count() > 1 for t in tickets)  # a matched follow-up
    assert Case.objects.filter(case_type="support_ticket").count() == tickets.count()
    assert TicketMessage.objects.filter(auto_sent=True).count() == 2  # for the spot-check list
    assert tickets.filter(lifecycle="answer_ready", case__status="awaiting_decision").exists()  # one click away

    assert demo_load_support(users={"alice": alice}) == 0
