"""Support replies are emailed through the outbox (issue 23.4): a real SMTP server (aiosmtpd)
receives them, threaded; the ticket and its page follow the email's real state (queued, sent,
failed after the retries, sent again), and `support.reply_sent` goes out only once it was sent."""

from __future__ import annotations

import re

import pytest

from casework.outbox.models import OutboundEmail, OutboxEvent
from casework.support.models import Ticket, TicketMessage
from tests.fakes.fixtures import fake_openai  # noqa: F401 - fixture
from tests.support.conftest import send

pytestmark = pytest.mark.django_db(transaction=True)  # the email is sent when the reply commits

CUSTOMER_MESSAGE_ID = "<CAF=reply.1234@mail.example.net>"


def _fresh(ticket: Ticket) -> Ticket:
    return Ticket.objects.select_related("case", "customer").get(pk=ticket.pk)


@pytest.fixture
def emailed_customer(support_data):
    from casework.support.services import customer_save

    return customer_save(actor="system", data={"customer_id": "CUST-002", "email": "piet@example.net"})


def _ticket_from_email(alice) -> Ticket:
    """A ticket whose first message came by email (its Message-ID and subject as received)."""
    _, ticket = send(alice, "CUST-002", "The CSV export stopped working, it fails with an error.", channel="email")
    TicketMessage.objects.filter(ticket=ticket).update(email_message_id=CUSTOMER_MESSAGE_ID,
                                                       email_subject="Re: CSV export broken")
    return ticket


def test_a_persons_reply_reaches_the_smtp_server_threaded_and_the_ticket_follows_the_email(
        smtp_server, emailed_customer, alice, alice_client):
    ticket = _ticket_from_email(alice)
    response = alice_client.post(f"/support/tickets/{ticket.ticket_id}/reply/",
                                 {"body": "Please retry the export now."}, follow=True)
    assert "Reply queued" in response.content.decode()

    [received] = smtp_server.received
    reply = TicketMessage.objects.select_related("email").get(ticket=ticket, direction="agent")
    assert received["Message-ID"] == reply.email_message_id == reply.email.message_id
    assert reply.email_message_id.endswith("@casework.test>") and ticket.ticket_id.lower() in reply.email_message_id
    assert received["In-Reply-To"] == CUSTOMER_MESSAGE_ID
    assert received["References"].split() == [CUSTOMER_MESSAGE_ID]
    assert received["Subject"] == f"[{ticket.ticket_id}] Re: CSV export broken"
    assert received["To"] == "piet@example.net" and "support@casework.test" in received["From"]
    # The reply as written, then its signed "Did this answer your question?" link (issue 25.5).
    body = received.get_content().strip().replace("\r\n", "\n")
    assert body.startswith("Please retry the export now.\n\nDid this answer your question?")
    assert re.search(r"/support/feedback/[^/\s]+/$", body)

    ticket = _fresh(ticket)
    assert reply.email.state == "sent" and reply.email.sent_at and ticket.lifecycle == "replied"
    assert ticket.completed_at == reply.email.sent_at
    [event] = OutboxEvent.objects.filter(type="support.reply_sent")
    assert event.case_id == ticket.case_id and event.payload["data"]["message"]["message_id"] == reply.email_message_id
    page = alice_client.get(f"/cases/{ticket.case.reference}/").content.decode()
    assert f"Emailed {reply.email.sent_at:%H:%M}" in page and "Reply queued" not in page


def test_an_auto_sent_reply_is_queued_not_sent_until_the_server_takes_it(
        smtp_server, emailed_customer, alice, alice_client, settings):
    from casework.outbox.tasks import outbox_email_send_due

    settings.SUPPORT_AUTO_SEND = True
    settings.WEBHOOK_RETRY_JITTER = 0
    smtp_server.refuse = "451 4.3.0 Try again later"
    _, ticket = send(alice, "CUST-002", "How do I download an invoice?")
    ticket = _fresh(ticket)
    email = OutboundEmail.objects.get()
    # Written and queued in the triage's transaction; the first attempt was turned away.
    assert email.state == "retrying" and email.last_error == "451 4.3.0 Try again later"
    assert ticket.lifecycle == "reply_queued" and ticket.completed_at is None and not smtp_server.received
    page = alice_client.get(f"/cases/{ticket.case.reference}/").content.decode()
    assert "Reply queued" in page and "automatic reply queued" in page and "Emailed" not in page
    assert not OutboxEvent.objects.filter(type="support.reply_sent").exists()

    smtp_server.refuse = ""
    assert outbox_email_send_due(now=email.next_attempt_at) == 1
    ticket = _fresh(ticket)
    assert len(smtp_server.received) == 1 and ticket.lifecycle == "replied" and not ticket.case.is_closed
    assert smtp_server.received[0]["Subject"].startswith(f"[{ticket.ticket_id}] Re: ")
    assert smtp_server.received[0]["Auto-Submitted"] == "auto-replied"  # no person wrote it (RFC 3834)
    assert OutboxEvent.objects.filter(type="support.reply_sent", case=ticket.case).count() == 1
    assert "reply sent automatically" in alice_client.get(f"/cases/{ticket.case.reference}/").content.decode()


def test_a_refusing_server_fails_the_email_after_its_retries_with_the_reason_then_it_can_be_sent_again(
        smtp_server, emailed_customer, alice, alice_client, settings):
    from casework.cases.notifications.models import Notification
    from casework.outbox.tasks import outbox_email_send_due

    settings.EMAIL_RETRY_SCHEDULE = [60, 300]
    settings.WEBHOOK_RETRY_JITTER = 0
    smtp_server.refuse = "550 5.1.1 <piet@example.net>: Recipient address rejected"
    ticket = _ticket_from_email(alice)
    alice_client.post(f"/support/tickets/{ticket.ticket_id}/reply/", {"body": "Please retry the export now."})
    email = OutboundEmail.objects.get()
    assert email.state == "retrying" and email.attempts == 1 and email.last_error.startswith("550 5.1.1")
    assert _fresh(ticket).lifecycle == "reply_queued"
    page = alice_client.get(f"/cases/{ticket.case.reference}/").content.decode()
    assert "Reply queued" in page and "attempt 1 failed (550 5.1.1" in page and "Emailed" not in page

    # The sweep, on the schedule's clock: nothing is due before the next attempt's time.
    assert outbox_email_send_due(now=email.next_attempt_at.replace(microsecond=0) - _seconds(1)) == 0
    assert outbox_email_send_due(now=email.next_attempt_at) == 1
    email.refresh_from_db()
    assert email.state == "retrying" and email.attempts == 2
    assert outbox_email_send_due(now=email.next_attempt_at) == 1
    email.refresh_from_db()
    assert email.state == "failed" and email.attempts == 3 and not smtp_server.received
    assert email.last_error == "550 5.1.1 <piet@example.net>: Recipient address rejected"
    ticket = _fresh(ticket)
    assert ticket.lifecycle == "reply_failed" and ticket.completed_at is None
    assert not OutboxEvent.objects.filter(type="support.reply_sent").exists()
    assert Notification.objects.filter(recipient_user=alice, subject__contains="was not delivered").count() == 1
    page = alice_client.get(f"/cases/{ticket.case.reference}/").content.decode()
    assert "Email failed: 550 5.1.1 &lt;piet@example.net&gt;: Recipient address rejected" in page
    assert "Reply queued" not in page and "Emailed" not in page

    # The address is fixed on the server's side; a person sends the same email again.
    smtp_server.refuse = ""
    alice_client.post(f"/support/tickets/{ticket.ticket_id}/resend/")
    email.refresh_from_db()
    [received] = smtp_server.received
    assert email.state == "sent" and received["Message-ID"] == email.message_id
    assert _fresh(ticket).lifecycle == "replied"
    assert OutboxEvent.objects.filter(type="support.reply_sent").count() == 1


def test_an_admin_sends_a_failed_email_again_and_the_ticket_follows(smtp_server, emailed_customer, alice,
                                                                      admin_client, settings):
    from casework.support.services import ticket_reply

    settings.EMAIL_RETRY_SCHEDULE = [60]
    smtp_server.refuse = "550 5.7.1 Relaying denied"
    ticket = _ticket_from_email(alice)
    message = ticket_reply(actor=alice, ticket=ticket, body="Please retry the export now.")
    from casework.outbox.tasks import outbox_email_send_due

    outbox_email_send_due(now=OutboundEmail.objects.get().next_attempt_at)
    assert _fresh(ticket).lifecycle == "reply_failed"
    smtp_server.refuse = ""
    admin_client.post("/admin/outbox/outboundemail/", {"action": "send_again", "_selected_action": [message.email_id]})
    assert len(smtp_server.received) == 1 and _fresh(ticket).lifecycle == "replied"


def test_a_second_wake_up_of_a_sent_email_sends_nothing(smtp_server, emailed_customer, alice):
    from casework.outbox.tasks import outbox_email_send
    from casework.support.services import ticket_reply

    ticket = _ticket_from_email(alice)
    message = ticket_reply(actor=alice, ticket=ticket, body="Please retry the export now.")
    # The first wake-up, on the reply's commit, sent it.
    email = OutboundEmail.objects.get(pk=message.email_id)
    [first] = smtp_server.received
    assert (email.state, email.attempts) == ("sent", 1) and first["Message-ID"] == email.message_id
    sent_at = email.sent_at

    outbox_email_send(message.email_id)  # a duplicate of the broker's message

    email.refresh_from_db()
    assert len(smtp_server.received) == 1
    assert (email.state, email.attempts, email.sent_at) == ("sent", 1, sent_at)
    assert OutboxEvent.objects.filter(type="support.reply_sent").count() == 1


def test_a_customer_without_an_address_is_not_emailed_and_the_page_says_so(support_data, alice, alice_client):
    _, ticket = send(alice, "CUST-003", "The CSV export stopped working, it fails with an error.")
    alice_client.post(f"/support/tickets/{ticket.ticket_id}/reply/", {"body": "Please retry."})
    # Issue 43: nothing went out, so it is not "Reply sent" (tests/support/test_reply_claims.py).
    assert _fresh(ticket).lifecycle == "reply_unsent" and not OutboundEmail.objects.exists()
    page = alice_client.get(f"/cases/{ticket.case.reference}/").content.decode()
    assert "Not emailed: the customer has no email address" in page


def _seconds(n: int):
    from datetime import timedelta

    return timedelta(seconds=n)


# --- the reply in the customer's language (issue 25.3) -------------------------------------

PORTUGUESE = "Olá, não consigo exportar o relatório CSV, dá sempre um erro quando tento descarregar."


def test_offline_a_reply_to_a_non_english_customer_goes_as_written_and_the_page_says_no_translation_was_made(
        smtp_server, support_data, alice, alice_client):
    from casework.support.services import customer_save

    customer_save(actor="system", data={"customer_id": "CUST-003", "email": "fran@example.pt"})
    _, ticket = send(alice, "CUST-003", PORTUGUESE)
    assert _fresh(ticket).language == "pt"
    alice_client.post(f"/support/tickets/{ticket.ticket_id}/reply/", {"body": "We fixed the export, please retry."})
    reply = TicketMessage.objects.get(ticket=ticket, direction="agent")
    assert reply.translation["status"] == "not_translated_offline"
    assert reply.text.startswith("We fixed the export, please retry.\n\nDid this answer your question?")
    [received] = smtp_server.received
    assert received.get_content().strip().replace("\r\n", "\n") == reply.text
    assert _fresh(ticket).lifecycle == "replied"
    page = alice_client.get(f"/cases/{ticket.case.reference}/").content.decode()
    assert "No translation was made (no language model is configured): the reply went as written, not in pt." in page


def test_with_a_model_the_reply_is_emailed_in_the_customers_language_with_the_english_beside_it(
        smtp_server, support_data, alice, alice_client, fake_openai):  # noqa: F811 - the fixture imported above
    from casework.support.services import customer_save
    from tests.fakes.llm_servers import json_answer
    from tests.support.test_pipeline_http import SPANISH, SupportLLM, case_data

    llm = SupportLLM(fake_openai)
    customer_save(actor="system", data={"customer_id": "CUST-003", "email": "fran@example.es"})
    _, ticket = send(alice, "CUST-003", SPANISH)
    assert _fresh(ticket).language == "es"
    asked = []

    def translate(body):
        asked.append(case_data(body))
        return json_answer({"language": "es", "reply": "Hola Fran: la factura está en Ajustes, Facturación.",
                            "reply_en": "Hello Fran: the invoice is under Settings, Billing.", "translated": True})

    llm.queue("reply_translator", translate)
    alice_client.post(f"/support/tickets/{ticket.ticket_id}/reply/",
                      {"body": "Hello Fran: the invoice is under Settings, Billing."})
    assert asked == [{"customer_language": "es", "reply": "Hello Fran: the invoice is under Settings, Billing."}]
    [received] = smtp_server.received
    # The translator saw the reply without the feedback link; the link follows the translation.
    assert received.get_content().replace("\r\n", "\n").startswith(
        "Hola Fran: la factura está en Ajustes, Facturación.\n\nDid this answer your question?")
    reply = TicketMessage.objects.get(ticket=ticket, direction="agent")
    assert reply.translation["status"] == "translated" and reply.text_en.startswith("Hello Fran")
    assert reply.translation["as_written"] == "Hello Fran: the invoice is under Settings, Billing."
    page = alice_client.get(f"/cases/{ticket.case.reference}/").content.decode()
    assert "Hola Fran: la factura está en Ajustes, Facturación." in page
    assert "Hello Fran: the invoice is under Settings, Billing." in page and "Translated to es by the model" in page


def test_only_automatic_mail_says_so_a_persons_reply_does_not(smtp_server, emailed_customer, alice, ivan, settings):
    """RFC 3834: `Auto-Submitted` marks mail no person wrote, and the customer's filters may
    drop it. A person's reply and a person's question carry none; the automatic reply
    (auto-replied), the auto-close notice and a notification (auto-generated) carry it."""
    from datetime import timedelta

    from django.utils import timezone

    from casework.cases.notifications.email import notification_email
    from casework.cases.notifications.services import notify_case_assigned
    from casework.support.services import ticket_reply
    from casework.support.waiting import support_auto_close, ticket_set_pending

    settings.SUPPORT_AUTO_CLOSE_DAYS = 5
    ticket = _ticket_from_email(alice)
    t0 = timezone.now()
    ticket_set_pending(actor=alice, ticket=_fresh(ticket), body="Which browser do you use?", now=t0)
    support_auto_close(now=t0 + timedelta(days=5))  # no answer: the system's notice
    ticket_reply(actor=alice, ticket=_fresh(ticket), body="Please retry the export now.")
    alice.email = "alice@example.com"
    alice.save()
    note = notify_case_assigned(case=ticket.case, assignee=alice, actor=ivan)  # emailed once it commits
    notification_email(note.pk)  # (nothing more if it went already)

    question, notice, reply, notification = smtp_server.received
    assert question.get_content().startswith("Which browser do you use?")
    assert "5 days" in notice.get_content() and reply.get_content().startswith("Please retry the export now.")
    assert notification["To"] == "alice@example.com"
    assert question["Auto-Submitted"] is None and reply["Auto-Submitted"] is None
    assert notice["Auto-Submitted"] == "auto-generated"
    assert notification["Auto-Submitted"] == "auto-generated"
