"""A support ticket in a real browser: a customer's message arrives, the agent reads the
triage, edits the suggested reply and sends it; the case closes as replied."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from casework.support.agents.language import detect_language
from casework.support.models import Ticket
from tests.e2e.conftest import POLL_GUARD_MS
from tests.support.conftest import smtp_server, support_data  # noqa: F401 - fixtures

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def test_a_message_arrives_and_the_agent_edits_and_sends_the_reply(page, log_in, alice, support_data):  # noqa: F811
    # The message is triaged inside the request (eager queue); load the offline translator's
    # language models first, which the first triage of a process would otherwise do (~3 s).
    detect_language("Loading the language models before the clock starts.")
    # A reply is sent, and the case replied, once the mail server accepted its email (issue 43).
    from tests.support.conftest import with_address

    with_address("CUST-002", "piet@example.net")
    log_in(page, "alice", "alice-pass-123", next_path="/support/messages/new/")
    page.get_by_label("Customer").select_option("CUST-002")
    page.get_by_label("Message").fill("The CSV export stopped working this morning, it fails with an error.")
    with page.expect_navigation(timeout=30_000):
        page.get_by_role("button", name="Send").click(no_wait_after=True)

    ticket = Ticket.objects.get(customer__customer_id="CUST-002")
    assert page.url.endswith(f"/cases/{ticket.case.reference}/")
    expect(page.locator("#support-thread")).to_contain_text("The CSV export stopped working")
    expect(page.locator("#support-customer")).to_contain_text("Pro")
    expect(page.locator("#support-supervisor")).to_contain_text("technical specialist")
    expect(page.locator("#support-result")).to_contain_text("route_specialist")
    reply = page.locator("#support-reply")
    expect(reply).to_have_value(ticket.suggested_reply)

    reply.fill("Hello Piet,\n\nWe fixed the export on our side; please try again.\n\nBest regards")
    with page.expect_navigation():
        page.get_by_role("button", name="Send reply").click()

    expect(page.locator("#decision")).to_contain_text("Replied")
    expect(page.locator("#support-thread")).to_contain_text("We fixed the export on our side")
    ticket.refresh_from_db()
    assert ticket.case.is_closed and ticket.lifecycle == "replied"
    assert ticket.messages.filter(direction="agent", sent_by__username="alice").count() == 1
    assert page.js_errors == []


def test_the_page_follows_a_triage_until_the_worker_finishes(page, log_in, alice, support_data, monkeypatch):  # noqa: F811
    from agents.models import AgentRun
    from agents.runtime.pipeline import execute_run
    from agents.tasks import run_pipeline
    from tests.support.conftest import send

    detect_language("Loading the language models before the clock starts.")
    from casework.support.services import intake_resolve

    _, ticket = send(alice, "CUST-002", "The CSV export stopped working, it fails with an error.")
    monkeypatch.setattr(run_pipeline, "delay", lambda *args, **kwargs: None)  # no worker picks it up yet
    # A follow-up matched to the ticket: its new triage is queued.
    intake_resolve(actor="agent:ticket_matcher", customer_id="CUST-002", channel="chat",
                   message="Still failing: the CSV export gives the same error.",
                   match={"matched_ticket_id": ticket.ticket_id, "confidence": "high"})
    (queued,) = AgentRun.objects.filter(case=ticket.case, mode="triage", status="queued")

    log_in(page, "alice", "alice-pass-123", next_path=f"/cases/{ticket.case.reference}/")
    expect(page.locator("#support-triage")).to_contain_text("running")
    execute_run(queued.pk)  # the worker
    expect(page.locator("#support-triage")).not_to_contain_text("running", timeout=POLL_GUARD_MS)
    expect(page.locator("#support-thread")).to_contain_text("Still failing")
    expect(page.locator("#support-reply")).to_have_value(Ticket.objects.get(pk=ticket.pk).suggested_reply)
    assert page.js_errors == []


def test_a_reopened_email_ticket_is_answered_by_a_person_and_the_page_says_when_it_was_emailed(
        page, log_in, alice, support_data, smtp_server, settings, client):  # noqa: F811
    """The person's part of the email conversation (tests/support/test_email_in.py has the
    rest): the customer's "that didn't help" reopened the auto-answered ticket; the person
    reads it, replies, and the page says the reply was emailed, threaded under the thread."""
    from tests.support.test_email_in import AUTH, basic, mime, ticket_of

    detect_language("Loading the language models before the clock starts.")
    from casework.support.services import customer_save

    settings.ANYMAIL = {"WEBHOOK_SECRET": [AUTH], "MAILGUN_WEBHOOK_SIGNING_KEY": ""}
    settings.SUPPORT_AUTO_SEND = True
    customer_save(actor="system", data={"customer_id": "CUST-002", "email": "piet@example.net"})

    def post(raw: bytes) -> None:
        assert client.post("/support/inbound/raw/", raw, content_type="message/rfc822", **basic()).status_code == 200

    post(mime(body="How do I download an invoice?", subject="Invoices", message_id="<b1@mail.example.net>"))
    [auto] = smtp_server.received
    post(mime(body="That didn't help, there is no Download button.", subject=f"Re: {auto['Subject']}",
              message_id="<b2@mail.example.net>", in_reply_to=auto["Message-ID"]))
    ticket = ticket_of("<b1@mail.example.net>")
    assert ticket.lifecycle == "reopened"

    log_in(page, "alice", "alice-pass-123", next_path=f"/cases/{ticket.case.reference}/")
    expect(page.locator("#support-state")).to_contain_text("Reopened")
    expect(page.locator("#support-reopened")).to_contain_text("The customer wrote back")
    expect(page.locator("#support-thread")).to_contain_text("there is no Download button")
    page.locator("#support-reply").fill("The button is under Settings, Billing, Invoices.")
    with page.expect_navigation():
        page.get_by_role("button", name="Send reply").click()

    expect(page.locator("#support-state")).to_contain_text("Reply sent")
    expect(page.locator("[data-email-state=sent]").last).to_contain_text("Emailed")
    person = smtp_server.received[1]
    assert person["In-Reply-To"] == "<b2@mail.example.net>" and person["Subject"] == auto["Subject"]
    assert page.js_errors == []
