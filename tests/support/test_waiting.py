"""Pending on the customer (issue 25.4): the SLA clock stops while the ticket waits and the
deadline moves later by the wait; after SUPPORT_AUTO_CLOSE_DAYS of silence the ticket is closed
for inactivity (the system's move under that policy, the case left for a person), with a last
message to the customer. Every clock is injected (now=), none read from the wall."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError
from django.utils import timezone

from audit.models import AuditEntry
from casework.cases.models import Case
from casework.cases.sla import case_countdown, sla_breached_q
from casework.errors import Conflict
from casework.support.models import Ticket
from casework.support.selectors import sla_clock
from casework.support.waiting import support_auto_close, ticket_customer_answered, ticket_set_pending
from tests.support.conftest import send

pytestmark = pytest.mark.django_db(transaction=True)

EXPORT = "The CSV export stopped working this morning, it fails with an error."


def _routed(alice):
    _, ticket = send(alice, "CUST-002", EXPORT)
    assert ticket.lifecycle == "routed"
    return ticket


def test_pending_stops_the_clock_and_the_answer_moves_the_deadline_by_the_wait(alice, support_data):
    ticket = _routed(alice)
    due = Case.objects.get(pk=ticket.case_id).due_at
    t0 = timezone.now()
    ticket_set_pending(actor=alice, ticket=ticket, body="Which browser do you use?", now=t0)
    ticket.refresh_from_db()
    case = Case.objects.get(pk=ticket.case_id)
    assert ticket.lifecycle == "pending" and ticket.pending_since == t0
    assert case.status == "awaiting_response" and case.sla_paused_at == t0 and case.due_at == due
    # Paused: never breached, whatever the time; the countdown says so.
    assert not Case.objects.filter(sla_breached_q(now=due + timedelta(days=30)), pk=case.pk).exists()
    assert case_countdown(case, now=due + timedelta(days=30)).state == "paused"
    # The ticket's own resolution clock stands still too.
    left = sla_clock(ticket, now=t0 + timedelta(hours=1)).minutes_left
    assert sla_clock(ticket, now=t0 + timedelta(hours=20)).minutes_left == left
    assert ticket.messages.filter(direction="agent").get().text == "Which browser do you use?"

    ticket_customer_answered(actor="system", ticket=ticket, now=t0 + timedelta(hours=3))
    ticket.refresh_from_db()
    case.refresh_from_db()
    assert ticket.lifecycle == "routed" and ticket.pending_since is None
    assert ticket.sla_paused_seconds == 3 * 3600
    assert case.sla_paused_at is None and case.due_at == due + timedelta(hours=3)
    resumed = AuditEntry.objects.get(action="case.sla_resumed", case_id=case.pk)
    assert resumed.data["paused_seconds"] == 3 * 3600


def test_the_customers_follow_up_resumes_a_pending_ticket(alice, support_data):
    ticket = _routed(alice)
    ticket_set_pending(actor=alice, ticket=ticket, body="Which browser do you use?")
    _, again = send(alice, "CUST-002", "Still the same: the CSV export fails with the same error, in Firefox.")
    assert again.pk == ticket.pk
    again.refresh_from_db()
    assert again.lifecycle in ("routed", "answer_ready", "escalated") and again.pending_since is None
    assert Case.objects.get(pk=ticket.case_id).sla_paused_at is None


def test_pending_needs_a_question_and_a_state_that_allows_it(alice, support_data):
    ticket = _routed(alice)
    with pytest.raises(ValidationError) as err:
        ticket_set_pending(actor=alice, ticket=ticket, body="  ")
    assert "body" in err.value.message_dict
    ticket_set_pending(actor=alice, ticket=ticket, body="Which browser?")
    with pytest.raises(Conflict):  # pending -> pending by a person is not a move of the table
        ticket_set_pending(actor="system", ticket=ticket, body="Again?")


def test_silence_closes_the_ticket_for_inactivity_with_a_last_message(alice, support_data, settings):
    settings.SUPPORT_AUTO_CLOSE_DAYS = 5
    ticket = _routed(alice)
    t0 = timezone.now()
    ticket_set_pending(actor=alice, ticket=ticket, body="Which browser do you use?", now=t0)
    assert support_auto_close(now=t0 + timedelta(days=5) - timedelta(seconds=1)) == {"closed": 0}
    assert support_auto_close(now=t0 + timedelta(days=5)) == {"closed": 1}
    assert support_auto_close(now=t0 + timedelta(days=6)) == {"closed": 0}  # a second scan does nothing
    ticket = Ticket.objects.select_related("case").get(pk=ticket.pk)
    assert ticket.lifecycle == "closed_inactive"
    last = ticket.messages.order_by("id").last()
    assert last.direction == "agent" and last.auto_sent and "5 days" in last.text and ticket.ticket_id in last.text
    # The system's move under the policy, recorded as such; the case waits for a person's decision.
    move = AuditEntry.objects.filter(action="support.state_changed", case_id=ticket.case_id).latest("id")
    assert move.actor == "system" and move.data["to"] == "closed_inactive"
    assert move.data["policy"] == "SUPPORT_AUTO_CLOSE_DAYS" and move.data["days"] == 5
    assert not ticket.case.is_closed and ticket.case.status == "awaiting_decision"
    assert not ticket.case.decisions.exists()


def test_a_person_confirms_an_inactive_close_and_the_page_says_whose_move_it_was(alice, alice_client, support_data):
    from casework.support.services import ticket_close_no_action

    ticket = _routed(alice)
    t0 = timezone.now()
    ticket_set_pending(actor=alice, ticket=ticket, body="Which browser do you use?", now=t0)
    support_auto_close(now=t0 + timedelta(days=30))
    page = alice_client.get(f"/cases/{ticket.case.reference}/")
    assert b"support-inactive-note" in page.content and b"SUPPORT_AUTO_CLOSE_DAYS" in page.content
    ticket_close_no_action(actor=alice, ticket=ticket, reason="The customer never answered.")
    ticket.refresh_from_db()
    assert ticket.lifecycle == "closed_no_reply" and ticket.case.is_closed


def test_the_pending_form_on_the_ticket_page(alice, alice_client, support_data):
    ticket = _routed(alice)
    assert b"support-pending-form" in alice_client.get(f"/cases/{ticket.case.reference}/").content
    response = alice_client.post(f"/support/tickets/{ticket.ticket_id}/pending/", {"body": "Which browser?"})
    assert response.status_code == 302
    ticket.refresh_from_db()
    assert ticket.lifecycle == "pending"
    page = alice_client.get(f"/cases/{ticket.case.reference}/").content
    assert b"support-sla-paused" in page and b"support-pending-note" in page
