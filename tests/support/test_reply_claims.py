"""A reply is "sent", and the case "replied", only once the customer's mail server accepted the
e-mail (issue 43): until then the case stays open, a failed e-mail brings it back to the queue
and tells the people working it, and a customer with no address gets no "Reply sent"."""

from __future__ import annotations

import pytest

from casework.cases.models import Decision
from casework.cases.notifications.models import Notification
from casework.outbox.models import OutboundEmail, OutboxEvent
from casework.support.models import Ticket
from tests.support.conftest import send

pytestmark = pytest.mark.django_db(transaction=True)  # the email is sent when the reply commits


def _fresh(ticket: Ticket) -> Ticket:
    return Ticket.objects.select_related("case", "customer").get(pk=ticket.pk)


@pytest.fixture
def emailed_customer(support_data):
    from casework.support.services import customer_save

    return customer_save(actor="system", data={"customer_id": "CUST-002", "email": "piet@example.net"})


def test_a_persons_reply_leaves_the_case_open_until_the_mail_server_accepts_it_then_closes_it_as_replied(
        smtp_server, emailed_customer, alice, alice_client, settings):
    from casework.outbox.tasks import outbox_email_send_due

    settings.WEBHOOK_RETRY_JITTER = 0
    smtp_server.refuse = "451 4.3.0 Try again later"
    _, ticket = send(alice, "CUST-002", "The CSV export stopped working, it fails with an error.")
    alice_client.post(f"/support/tickets/{ticket.ticket_id}/reply/", {"body": "Please retry the export now."})
    ticket = _fresh(ticket)
    # Queued, turned away once: nothing reached the customer, so nothing is "replied".
    assert ticket.lifecycle == "reply_queued" and not ticket.case.is_closed
    assert ticket.case.status == "awaiting_response" and not Decision.objects.filter(case=ticket.case).exists()
    assert not OutboxEvent.objects.filter(type__in=("support.reply_sent", "case.decided")).exists()

    smtp_server.refuse = ""
    assert outbox_email_send_due(now=OutboundEmail.objects.get().next_attempt_at) == 1
    ticket = _fresh(ticket)
    assert ticket.lifecycle == "replied" and ticket.case.is_closed
    decision = Decision.objects.get(case=ticket.case, final=True)
    assert (decision.outcome, decision.decided_by) == ("replied", alice)
    assert OutboxEvent.objects.filter(type="support.reply_sent").count() == 1


def test_a_failed_reply_email_puts_the_case_back_in_the_queue_and_tells_its_assignee_not_only_the_author(
        smtp_server, emailed_customer, alice, ivan, settings):
    from casework.cases.services import case_assign
    from casework.support.selectors import support_queue
    from casework.support.services import ticket_reply

    settings.EMAIL_RETRY_SCHEDULE = []  # the first refusal is the last
    smtp_server.refuse = "550 5.1.1 <piet@example.net>: Recipient address rejected"
    _, ticket = send(alice, "CUST-002", "The CSV export stopped working, it fails with an error.")
    case_assign(actor=alice, case=ticket.case, assignee=ivan)
    ticket_reply(actor=alice, ticket=ticket, body="Please retry the export now.")
    ticket = _fresh(ticket)
    assert OutboundEmail.objects.get().state == "failed"
    assert ticket.lifecycle == "reply_failed" and not ticket.case.is_closed and ticket.case.status == "in_progress"
    assert ticket in list(support_queue(ivan)) and ticket in list(support_queue(alice))
    told = set(Notification.objects.filter(case=ticket.case, subject__contains="was not delivered")
               .values_list("recipient_user__username", flat=True))
    assert told == {"alice", "ivan"}
    assert not Decision.objects.filter(case=ticket.case).exists()


def test_nobody_assigned_the_team_hears_of_a_failed_reply(smtp_server, emailed_customer, alice, ivan, settings):
    from casework.support.services import ticket_reply

    settings.EMAIL_RETRY_SCHEDULE = []
    smtp_server.refuse = "550 5.1.1 Recipient address rejected"
    _, ticket = send(alice, "CUST-002", "The CSV export stopped working, it fails with an error.")
    assert ticket.case.assignee_id is None
    ticket_reply(actor=alice, ticket=ticket, body="Please retry the export now.")
    told = set(Notification.objects.filter(case=ticket.case, subject__contains="was not delivered")
               .values_list("recipient_user__username", flat=True))
    assert told == {"alice", "ivan"}


def test_a_reply_to_a_customer_without_an_address_is_not_called_sent_until_one_is_added_and_it_goes_out(
        smtp_server, support_data, alice, alice_client):
    from casework.support.services import customer_save

    _, ticket = send(alice, "CUST-003", "The CSV export stopped working, it fails with an error.")
    alice_client.post(f"/support/tickets/{ticket.ticket_id}/reply/", {"body": "Please retry."})
    ticket = _fresh(ticket)
    assert ticket.lifecycle != "replied" and "sent" not in ticket.get_lifecycle_display().replace("not sent", "")
    assert not ticket.case.is_closed and ticket.case.status == "in_progress"
    assert not OutboundEmail.objects.exists() and not OutboxEvent.objects.filter(type="support.reply_sent").exists()
    page = alice_client.get(f"/cases/{ticket.case.reference}/").content.decode()
    assert "Reply sent" not in page and "Not emailed: the customer has no email address" in page

    # The address is found; the same reply goes out, and only then is the case replied.
    customer_save(actor="system", data={"customer_id": "CUST-003", "email": "fran@example.net"})
    alice_client.post(f"/support/tickets/{ticket.ticket_id}/resend/")
    ticket = _fresh(ticket)
    [received] = smtp_server.received
    assert received["To"] == "fran@example.net" and received.get_content().startswith("Please retry.")
    assert ticket.lifecycle == "replied" and ticket.case.is_closed
    assert OutboxEvent.objects.filter(type="support.reply_sent").count() == 1


def test_auto_send_sends_nothing_to_a_customer_without_an_address(support_data, alice, settings):
    from audit.models import AuditEntry

    settings.SUPPORT_AUTO_SEND = True
    _, ticket = send(alice, "CUST-003", "How do I download an invoice?")
    ticket = _fresh(ticket)
    assert ticket.lifecycle == "answer_ready" and not ticket.messages.filter(direction="agent").exists()
    assert AuditEntry.objects.filter(case_id=ticket.case_id, action="support.guard_applied",
                                     data__rule="no_address_never_auto_sent").exists()
