"""Inbound support email (issue 25.1-2): raw RFC 5322 and each provider's format (Postmark,
Mailgun, SendGrid, Amazon SES) posted to the endpoints, signed and unsigned; auto-replies and
loops open nothing; threading by headers and subject before any model; reopening within
SUPPORT_REOPEN_DAYS and a following ticket after; and the whole conversation over HTTP and a
real SMTP server."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from datetime import timedelta
from email.message import EmailMessage

import pytest

from agents.models import AgentRun
from casework.support.models import Customer, InboundEmail, Ticket, TicketMessage

pytestmark = pytest.mark.django_db(transaction=True)

AUTH = "inbound:s3cret-pass"
SIGNING_KEY = "key-mailgun-signing"


def basic(auth: str = AUTH) -> dict:
    return {"HTTP_AUTHORIZATION": "Basic " + base64.b64encode(auth.encode()).decode()}


@pytest.fixture
def inbound(settings, support_data):
    from casework.support.services import customer_save

    settings.ANYMAIL = {"WEBHOOK_SECRET": [AUTH], "MAILGUN_WEBHOOK_SIGNING_KEY": SIGNING_KEY,
                        "AMAZON_SES_AUTO_CONFIRM_SNS_SUBSCRIPTIONS": False}
    settings.SUPPORT_EMAIL_FROM = "Support <support@casework.test>"
    settings.EMAIL_MESSAGE_ID_DOMAIN = "casework.test"
    customer_save(actor="system", data={"customer_id": "CUST-002", "email": "piet@example.net"})


def mime(*, body: str = "The CSV export stopped working, it fails with an error.", subject: str = "CSV export broken",
         sender: str = "Piet Pro <piet@example.net>", message_id: str = "<first.1@mail.example.net>",
         in_reply_to: str = "", references: str = "", headers: dict | None = None,
         attachments: list[tuple[str, bytes, str]] = ()) -> bytes:
    message = EmailMessage()
    message["From"], message["To"], message["Subject"] = sender, "support@casework.test", subject
    message["Message-ID"] = message_id
    if in_reply_to:
        message["In-Reply-To"] = in_reply_to
    if references:
        message["References"] = references
    for name, value in (headers or {}).items():
        message[name] = value
    message.set_content(body)
    for filename, content, content_type in attachments:
        maintype, subtype = content_type.split("/")
        message.add_attachment(content, maintype=maintype, subtype=subtype, filename=filename)
    return message.as_bytes()


def post_raw(client, raw: bytes, **extra):
    return client.post("/support/inbound/raw/", raw, content_type="message/rfc822", **{**basic(), **extra})


def ticket_of(message_id: str) -> Ticket:
    return Ticket.objects.select_related("case", "customer").get(messages__email_message_id=message_id)


# --- each provider, signed and unsigned ------------------------------------------------------

def test_a_raw_mime_post_opens_a_ticket_and_an_unsigned_or_wrongly_signed_one_nothing(client, inbound):
    raw = mime()
    assert client.post("/support/inbound/raw/", raw, content_type="message/rfc822").status_code == 400
    assert post_raw(client, raw, **basic("inbound:wrong")).status_code == 400
    assert not InboundEmail.objects.exists() and not Ticket.objects.exists()

    assert post_raw(client, raw).status_code == 200
    record = InboundEmail.objects.get()
    assert record.outcome == "intake" and record.provider == "raw" and record.customer.customer_id == "CUST-002"
    ticket = ticket_of("<first.1@mail.example.net>")
    assert ticket.channel == "email" and record.ticket == ticket
    assert ticket.messages.get().email_subject == "CSV export broken"
    # The provider retries the same post: nothing more happens.
    assert post_raw(client, raw).status_code == 200
    assert InboundEmail.objects.count() == 1 and TicketMessage.objects.count() == 1


def test_an_unconfigured_provider_refuses_every_post(client, inbound, settings):
    settings.ANYMAIL = {"WEBHOOK_SECRET": [], "MAILGUN_WEBHOOK_SIGNING_KEY": ""}
    for provider in ("raw", "postmark", "sendgrid", "amazon-ses", "mailgun"):
        response = client.post(f"/support/inbound/{provider}/", mime(), content_type="message/rfc822", **basic())
        assert response.status_code == 403 and response.json()["code"] == "not_configured", provider
    assert not InboundEmail.objects.exists()


def test_postmarks_parsed_json_is_taken_with_basic_auth_only(client, inbound):
    payload = {"FromFull": {"Email": "piet@example.net", "Name": "Piet Pro"},
               "ToFull": [{"Email": "support@casework.test", "Name": ""}], "Subject": "Invoice question",
               "MessageID": "5f0c-postmark-uuid", "TextBody": "Where do I download my invoice?",
               "Headers": [{"Name": "Message-ID", "Value": "<pm.1@mail.example.net>"}],
               "Attachments": [{"Name": "invoice.txt", "ContentType": "text/plain",
                                "Content": base64.b64encode(b"INV-2026-0042 total 120 EUR").decode()}]}
    body = json.dumps(payload)
    assert client.post("/support/inbound/postmark/", body, content_type="application/json").status_code == 400
    assert client.post("/support/inbound/postmark/", body, content_type="application/json", **basic()).status_code == 200
    record = InboundEmail.objects.get(provider="postmark")
    ticket = ticket_of("<pm.1@mail.example.net>")
    assert record.stripped == "Where do I download my invoice?" and record.ticket == ticket
    [attachment] = ticket.case.attachments.all()
    assert attachment.sha256 == hashlib.sha256(b"INV-2026-0042 total 120 EUR").hexdigest()
    assert attachment.uploaded_by is None and attachment.received_from == "piet@example.net"
    assert record.attachments[0]["sha256"] == attachment.sha256


def _mailgun_signature(token: str, timestamp: str, key: str = SIGNING_KEY) -> str:
    return hmac.new(key.encode(), f"{timestamp}{token}".encode(), hashlib.sha256).hexdigest()


def test_mailgun_needs_its_hmac_signature(client, inbound):
    form = {"body-mime": mime(message_id="<mg.1@mail.example.net>").decode(), "recipient": "support@casework.test",
            "sender": "piet@example.net", "token": "tok-1", "timestamp": "1764000000"}
    # Basic auth (in the route's URL) is checked too while INBOUND_EMAIL_WEBHOOK_SECRET is set.
    assert client.post("/support/inbound/mailgun/", form, **basic()).status_code == 400
    bad = {**form, "signature": _mailgun_signature("tok-1", "1764000000", key="another-key")}
    assert client.post("/support/inbound/mailgun/", bad, **basic()).status_code == 400
    good = {**form, "signature": _mailgun_signature("tok-1", "1764000000")}
    assert client.post("/support/inbound/mailgun/", good).status_code == 400
    assert not InboundEmail.objects.exists()
    assert client.post("/support/inbound/mailgun/", good, **basic()).status_code == 200
    assert InboundEmail.objects.get().provider == "mailgun" and ticket_of("<mg.1@mail.example.net>")


def test_sendgrid_raw_and_amazon_ses_sns_posts_with_basic_auth(client, inbound):
    form = {"email": mime(message_id="<sg.1@mail.example.net>").decode(), "envelope": json.dumps(
        {"to": ["support@casework.test"], "from": "piet@example.net"})}
    assert client.post("/support/inbound/sendgrid/", form).status_code == 400
    assert client.post("/support/inbound/sendgrid/", form, **basic()).status_code == 200
    assert ticket_of("<sg.1@mail.example.net>").customer.customer_id == "CUST-002"

    raw = mime(message_id="<ses.1@mail.example.net>", subject="Login problem",
               body="I cannot log in since this morning.")
    ses_event = {"notificationType": "Received",
                 "mail": {"source": "piet@example.net", "destination": ["support@casework.test"],
                          "messageId": "ses-id-1", "timestamp": "2026-11-25T10:00:00.000Z"},
                 "receipt": {"action": {"type": "SNS", "encoding": "BASE64", "topicArn": "arn:aws:sns:x"},
                             "spamVerdict": {"status": "PASS"}, "virusVerdict": {"status": "PASS"}},
                 "content": base64.b64encode(raw).decode()}
    sns = {"Type": "Notification", "MessageId": "sns-msg-1", "TopicArn": "arn:aws:sns:x",
           "Message": json.dumps(ses_event), "Timestamp": "2026-11-25T10:00:00.000Z"}
    headers = {"HTTP_X_AMZ_SNS_MESSAGE_TYPE": "Notification", "HTTP_X_AMZ_SNS_MESSAGE_ID": "sns-msg-1"}
    unsigned = client.post("/support/inbound/amazon-ses/", json.dumps(sns), content_type="text/plain", **headers)
    assert unsigned.status_code == 401  # SNS is asked for its credentials first
    signed = client.post("/support/inbound/amazon-ses/", json.dumps(sns), content_type="text/plain",
                         **headers, **basic())
    assert signed.status_code == 200
    assert InboundEmail.objects.get(message_id="<ses.1@mail.example.net>").provider == "amazon-ses"


# --- what opens nothing ---------------------------------------------------------------------

@pytest.mark.parametrize(("headers", "sender", "message_id", "outcome"), [
    ({"Auto-Submitted": "auto-replied"}, "piet@example.net", "<a1@mail.example.net>", "auto_reply"),
    ({"X-Autoreply": "yes"}, "piet@example.net", "<a2@mail.example.net>", "auto_reply"),
    ({"Precedence": "bulk"}, "piet@example.net", "<a3@mail.example.net>", "auto_reply"),
    ({"Subject": "Out of Office: back on Monday"}, "piet@example.net", "<a4@mail.example.net>", "auto_reply"),
    ({}, "Support <support@casework.test>", "<a5@mail.example.net>", "loop"),
    ({}, "piet@example.net", "<tkt-x.0a1b@casework.test>", "loop"),
])
def test_auto_replies_and_loops_open_nothing(client, inbound, headers, sender, message_id, outcome):
    subject = headers.pop("Subject", "Re: CSV export broken")
    assert post_raw(client, mime(sender=sender, message_id=message_id, subject=subject, headers=headers)).status_code \
        == 200
    record = InboundEmail.objects.get()
    assert record.outcome == outcome and record.note
    assert not Ticket.objects.exists() and not AgentRun.objects.exists()


BROKEN_MULTIPART = (b'From: Piet Pro <piet@example.net>\r\nSubject: Export\r\nMessage-ID: <b1@mail.example.net>\r\n'
                    b'MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary="aaa"\r\n\r\n'
                    b'--bbb\r\nContent-Type: text/plain\r\n\r\nThe export fails.\r\n--bbb--\r\n')


@pytest.mark.parametrize(("body", "named"), [
    (b"", "Empty message"),
    (bytes(range(256)) * 4, "no e-mail header was found"),
    (b"From: piet@example.net\r\nSubject: Export\r\nMessage-ID: <h1@mail.example.net>\r\n\r\n", "No text."),
    (BROKEN_MULTIPART, "the MIME structure is broken"),
], ids=["empty", "binary noise", "headers only", "broken multipart"])
def test_a_refused_raw_message_is_stored_and_answered_422_naming_why(client, inbound, body, named):
    response = post_raw(client, body)
    assert response.status_code == 422, response.content
    answer = response.json()
    assert answer["code"] == "refused" and named in answer["detail"], answer
    record = InboundEmail.objects.get()
    assert record.outcome == "refused" and named in record.note and answer["message_id"] == record.message_id
    assert not Ticket.objects.exists()
    # The relay retries: still refused, still one record.
    assert post_raw(client, body).status_code == 422 and InboundEmail.objects.count() == 1


def test_an_unknown_sender_is_held_or_opens_a_new_customer_by_the_setting(client, admin_client, inbound, settings):
    stranger = "Sam Stranger <sam@elsewhere.example>"
    assert post_raw(client, mime(sender=stranger, message_id="<s1@elsewhere.example>")).status_code == 200
    held = InboundEmail.objects.get()
    assert held.outcome == "held" and held.customer is None and not Ticket.objects.exists()
    # A person lets it in from the admin: the sender becomes a customer, the message goes to intake.
    admin_client.post("/admin/support/inboundemail/", {"action": "release", "_selected_action": [held.pk]})
    assert ticket_of("<s1@elsewhere.example>").customer.email == "sam@elsewhere.example"
    assert InboundEmail.objects.get(message_id="<s1@elsewhere.example>").outcome == "intake"

    settings.SUPPORT_UNKNOWN_SENDER = "open"
    assert post_raw(client, mime(sender=stranger, message_id="<s2@elsewhere.example>")).status_code == 200
    customer = Customer.objects.get(email="sam@elsewhere.example")
    assert customer.name == "Sam Stranger" and ticket_of("<s2@elsewhere.example>").customer == customer
    settings.SUPPORT_UNKNOWN_SENDER = "open"
    stranger2 = "Nia New <nia@elsewhere.example>"
    assert post_raw(client, mime(sender=stranger2, message_id="<s3@elsewhere.example>")).status_code == 200
    assert ticket_of("<s3@elsewhere.example>").customer.name == "Nia New"


def test_quoted_history_and_signature_are_stripped_for_triage_and_the_original_kept(client, inbound):
    body = ("The export still fails after the update.\n\nThanks,\nPiet\n-- \nPiet Pro | ACME Ltd\n\n"
            "On Tue, 24 Nov 2026 at 10:00, Support <support@casework.test> wrote:\n> Please retry the export.\n")
    assert post_raw(client, mime(body=body, attachments=[("run.exe", b"MZ\x90\x00", "application/octet-stream")])) \
        .status_code == 200
    record = InboundEmail.objects.get()
    message = ticket_of("<first.1@mail.example.net>").messages.get()
    assert message.text == "The export still fails after the update." == record.stripped
    assert "> Please retry the export." in record.raw and "Piet Pro | ACME Ltd" in record.text
    # The executable is refused under the evidence rules; the message still counts.
    assert record.attachments[0]["name"] == "run.exe" and "refused" in record.attachments[0]
    assert not record.ticket.case.attachments.exists()


# --- threading ------------------------------------------------------------------------------

def _routed_ticket(client) -> Ticket:
    post_raw(client, mime())
    ticket = ticket_of("<first.1@mail.example.net>")
    assert ticket.lifecycle == "routed"
    return ticket


def test_a_reply_naming_its_open_ticket_joins_it_before_any_model_is_asked(client, inbound):
    ticket = _routed_ticket(client)
    intakes = AgentRun.objects.filter(pipeline="support", mode="intake").count()
    post_raw(client, mime(body="Also, the PDF export fails.", message_id="<second@mail.example.net>",
                          subject="Re: CSV export broken", in_reply_to="<first.1@mail.example.net>"))
    post_raw(client, mime(body="And the XLSX one.", message_id="<third@mail.example.net>",
                          subject=f"Another thing [{ticket.ticket_id}]"))
    assert AgentRun.objects.filter(pipeline="support", mode="intake").count() == intakes  # no matcher
    assert list(ticket.messages.values_list("email_message_id", flat=True)) == [
        "<first.1@mail.example.net>", "<second@mail.example.net>", "<third@mail.example.net>"]
    assert [r.outcome for r in InboundEmail.objects.order_by("id")] == ["intake", "joined", "joined"]


def test_a_reply_to_a_solved_ticket_reopens_it_within_the_window_and_opens_a_follower_after(
        client, inbound, alice, settings):
    from casework.support.inbound import email_receive
    from casework.support.services import ticket_reply

    settings.SUPPORT_REOPEN_DAYS = 7
    ticket = _routed_ticket(client)
    message = ticket_reply(actor=alice, ticket=ticket, body="Please retry the export now.")
    ticket.refresh_from_db()
    assert ticket.case.is_closed and ticket.lifecycle in ("replied", "reply_queued")
    sent_id = TicketMessage.objects.get(pk=message.pk).email_message_id

    from anymail.inbound import AnymailInboundMessage

    later = ticket.completed_at or ticket.case.closed_at
    answer = AnymailInboundMessage.parse_raw_mime_bytes(mime(
        body="That didn't help.", message_id="<r1@mail.example.net>", in_reply_to=sent_id))
    record = email_receive(message=answer, provider="raw", now=(later or ticket.updated_at) + timedelta(days=6))
    ticket = Ticket.objects.select_related("case").get(pk=ticket.pk)
    assert record.outcome == "reopened" and ticket.lifecycle == "reopened" and ticket.case.status == "in_progress"
    assert ticket.case.decisions.get().final is False  # kept on record, no longer final

    alice_client = client
    alice_client.force_login(alice)
    alice_client.post(f"/support/tickets/{ticket.ticket_id}/reply/", {"body": "Fixed now, sorry."})
    ticket.refresh_from_db()
    assert ticket.case.is_closed and ticket.case.decisions.filter(final=True).count() == 1
    solved_at = ticket.completed_at or ticket.case.closed_at
    late = AnymailInboundMessage.parse_raw_mime_bytes(mime(
        body="It broke again.", message_id="<r2@mail.example.net>", subject=f"Re: [{ticket.ticket_id}] CSV export"))
    record = email_receive(message=late, provider="raw", now=solved_at + timedelta(days=8))
    follower = record.ticket
    assert record.outcome == "follow_up" and follower != ticket and follower.follows == ticket
    page = alice_client.get(f"/cases/{follower.case.reference}/").content.decode()
    assert f"Follows <a href=\"/cases/{ticket.case.reference}/\">{ticket.ticket_id}</a>" in page
    assert Ticket.objects.get(pk=ticket.pk).case.is_closed


# --- the whole conversation -----------------------------------------------------------------

def test_the_conversation_auto_answer_then_that_didnt_help_then_a_person_replies_threaded_then_solved(
        client, inbound, smtp_server, settings, alice):
    settings.SUPPORT_AUTO_SEND = True
    assert post_raw(client, mime(body="How do I download an invoice?", subject="Invoices",
                                 message_id="<c1@mail.example.net>")).status_code == 200
    ticket = ticket_of("<c1@mail.example.net>")
    [auto] = smtp_server.received
    assert ticket.lifecycle == "replied" and auto["In-Reply-To"] == "<c1@mail.example.net>"
    assert auto["Subject"] == f"[{ticket.ticket_id}] Re: Invoices"

    # The customer answers from their mail client: In-Reply-To names the auto-answer.
    assert post_raw(client, mime(body="That didn't help, there is no Download button.\n\n"
                                      f"On Wed, Support wrote:\n> {auto.get_content().strip()[:40]}",
                                 subject=f"Re: {auto['Subject']}", message_id="<c2@mail.example.net>",
                                 in_reply_to=auto["Message-ID"],
                                 references=f"<c1@mail.example.net> {auto['Message-ID']}")).status_code == 200
    ticket = Ticket.objects.select_related("case").get(pk=ticket.pk)
    assert ticket.lifecycle == "reopened" and ticket.case.status == "in_progress"
    assert len(smtp_server.received) == 1  # not auto-answered again: a person's now
    assert ticket.messages.get(email_message_id="<c2@mail.example.net>").text == \
        "That didn't help, there is no Download button."

    # The person replies; the customer's client threads it under the whole conversation.
    client.force_login(alice)
    assert "The customer wrote back" in client.get(f"/cases/{ticket.case.reference}/").content.decode()
    page = client.post(f"/support/tickets/{ticket.ticket_id}/reply/",
                       {"body": "The button is under Settings, Billing, Invoices."}, follow=True).content.decode()
    assert "Emailed" in page
    person = smtp_server.received[1]
    assert person["In-Reply-To"] == "<c2@mail.example.net>"
    assert person["References"].split() == ["<c1@mail.example.net>", auto["Message-ID"], "<c2@mail.example.net>"]
    assert person["Subject"] == f"[{ticket.ticket_id}] Re: Invoices"
    assert Ticket.objects.get(pk=ticket.pk).lifecycle == "replied"

    # The customer follows the reply's "did this answer your question?" link, with no account,
    # and marks it solved.
    import re

    from django.test import Client

    from casework.support.models import TicketFeedback

    link = re.search(r"https?://\S+(/support/feedback/[^/\s]+/)", person.get_content()).group(1)
    customer = Client(enforce_csrf_checks=False)
    assert b'id="feedback-solved"' in customer.get(link).content
    thanks = customer.post(link, {"answer": "solved"})
    assert thanks.status_code == 200 and b'data-solved="true"' in thanks.content
    feedback = TicketFeedback.objects.get(ticket=ticket)
    assert feedback.solved and not feedback.auto_sent
