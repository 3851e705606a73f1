"""Support pages: the ticket on the case page, the queue with SLA clocks, the actions."""

from __future__ import annotations

import pytest
from django.utils.html import escape

from casework.support.models import Ticket
from tests.support.conftest import send, with_address

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_case_page_shows_thread_customer_supervisor_kb_hits_triage_and_the_reply_box(alice_client, alice,
                                                                                          support_data):
    _, ticket = send(alice, "CUST-001", "We were charged twice for the March invoice.")
    ticket.refresh_from_db()
    page = alice_client.get(f"/cases/{ticket.case.reference}/").content.decode()
    assert ticket.thread_id in page
    assert "Ana Enterprise" in page and "Enterprise" in page and "us-west" in page
    assert 'id="support-supervisor"' in page and "→ billing specialist" in page
    assert '/support/kb/kb_001/' in page
    assert "route_specialist" in page
    assert escape(ticket.suggested_reply.splitlines()[0]) in page
    assert 'id="support-reply"' in page
    assert "opened the ticket" in page


def test_an_untranslated_ticket_says_so(alice_client, alice, support_data):
    _, ticket = send(alice, "CUST-003", "Hola, ¿cómo puedo descargar mi factura de marzo?")
    page = alice_client.get(f"/cases/{ticket.case.reference}/").content.decode()
    assert "not translated (no language model configured)" in page


def test_a_failure_is_named_on_the_page(alice_client, alice, support_data, monkeypatch):
    from agents.llm import errors
    from agents.llm.offline_registry import OFFLINE_ANALYSTS

    def broken(data, messages=None):
        raise errors.AuthenticationError("bad key for the supervisor")

    monkeypatch.setitem(OFFLINE_ANALYSTS, "support_supervisor", broken)
    _, ticket = send(alice, "CUST-003", "How do I download an invoice?")
    page = alice_client.get(f"/cases/{ticket.case.reference}/").content.decode()
    assert "The supervisor failed" in page and "bad key for the supervisor" in page


def test_the_queue_lists_routed_and_escalated_tickets_by_urgency_with_sla(alice_client, alice, support_data):
    _, low = send(alice, "CUST-003", "The PDF import stopped working yesterday.")  # free + disruption: medium
    _, critical = send(alice, "CUST-003", "Someone hacked my account!")  # escalated
    page = alice_client.get("/support/").content.decode()
    assert page.index(critical.case.reference) < page.index(low.case.reference)
    assert "first response:" in page and "left" in page
    escalated = alice_client.get("/support/", {"show": "escalated"}).content.decode()
    assert critical.case.reference in escalated and low.case.reference not in escalated


def test_sending_the_edited_reply_closes_the_ticket_and_a_second_send_is_refused(alice_client, alice, support_data):
    with_address("CUST-002")
    _, ticket = send(alice, "CUST-002", "The CSV export stopped working, it fails with an error.")
    url = f"/support/tickets/{ticket.ticket_id}/reply/"
    response = alice_client.post(url, {"body": "Edited: please retry the export now."}, follow=True)
    # The test email backend accepted the email as the reply committed: the case closed as replied then.
    assert "Reply queued: the case closes as replied once the customer&#x27;s mail server accepts" in \
        response.content.decode()
    ticket.refresh_from_db()
    assert ticket.case.is_closed and ticket.lifecycle == Ticket.Lifecycle.REPLIED
    sent = ticket.messages.filter(direction="agent").get().text
    # What the customer gets: the reply as written, then the "Did this answer your question?" link.
    assert sent.startswith("Edited: please retry the export now.\n\nDid this answer your question?")
    assert "/support/feedback/" in sent
    again = alice_client.post(url, {"body": "Twice"}, follow=True).content.decode()
    assert "already closed" in again
    assert ticket.messages.filter(direction="agent").count() == 1


def test_logging_a_message_from_the_page_opens_the_ticket(alice_client, support_data):
    response = alice_client.post("/support/messages/new/", {"customer_id": "CUST-002", "channel": "email",
                                                            "message": "How do I change my profile name?"})
    assert response.status_code == 302
    ticket = Ticket.objects.get(customer__customer_id="CUST-002")
    assert response["Location"] == f"/cases/{ticket.case.reference}/"


def test_kb_article_page_and_auto_sent_list(alice_client, alice, support_data, settings):
    settings.SUPPORT_AUTO_SEND = True
    with_address("CUST-003")
    _, ticket = send(alice, "CUST-003", "How do I download an invoice?")
    assert "How to download an invoice" in alice_client.get("/support/kb/kb_002/").content.decode()
    assert ticket.case.reference in alice_client.get("/support/auto-sent/").content.decode()


def test_pages_need_an_investigator(client, mona, support_data):
    client.force_login(mona)
    assert client.get("/support/").status_code == 403


def test_the_triage_block_polls_while_a_run_is_active_and_reloads_the_page_when_it_ends(
        alice_client, alice, support_data, monkeypatch):
    from agents.models import AgentRun
    from agents.tasks import run_pipeline
    from casework.support.services import ticket_triage

    _, ticket = send(alice, "CUST-002", "The CSV export stopped working, it fails with an error.")
    monkeypatch.setattr(run_pipeline, "delay", lambda run_id: None)  # the message to the worker is lost
    ticket_triage(actor=alice, ticket=ticket)
    assert AgentRun.objects.filter(case=ticket.case, status="queued").exists()
    page = alice_client.get(f"/cases/{ticket.case.reference}/").content.decode()
    assert f'hx-get="/support/tickets/{ticket.ticket_id}/triage/?was_running=1"' in page
    AgentRun.objects.filter(case=ticket.case, status="queued").update(status="completed")
    poll = alice_client.get(f"/support/tickets/{ticket.ticket_id}/triage/?was_running=1", HTTP_HX_REQUEST="true")
    assert poll.status_code == 200 and poll["HX-Refresh"] == "true"


def test_the_sla_clock_follows_the_plan_targets(alice, support_data, settings):
    from datetime import timedelta

    from casework.support.selectors import sla_clock

    settings.SUPPORT_SLA = {"free": {"first_response_minutes": 60, "resolution_hours": 24},
                            "pro": {"first_response_minutes": 30, "resolution_hours": 8},
                            "enterprise": {"first_response_minutes": 15, "resolution_hours": 4}}
    _, ticket = send(alice, "CUST-001", "We were charged twice for the March invoice.")
    clock = sla_clock(ticket, now=ticket.created_at + timedelta(minutes=10))
    assert clock.next_label == "first response" and clock.minutes_left == 5 and not clock.breached
    late = sla_clock(ticket, now=ticket.created_at + timedelta(minutes=20))
    assert late.breached and late.minutes_left == -5
    ticket.first_response_at = ticket.created_at + timedelta(minutes=12)
    answered = sla_clock(ticket, now=ticket.created_at + timedelta(hours=5))
    assert answered.next_label == "resolution" and answered.breached and not answered.first_response_breached
