"""The customer's one-click answer in a real browser (no login): the link under an auto-answer
opens a page with two buttons; "No, not solved" sends the ticket back to a person."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from casework.support.agents.language import detect_language
from casework.support.models import Ticket, TicketFeedback
from tests.support.conftest import send, support_data, with_address  # noqa: F401 - fixtures

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def test_the_customer_says_not_solved_and_the_ticket_goes_back_to_a_person(page, alice, support_data,  # noqa: F811
                                                                           settings):
    detect_language("Loading the language models before the clock starts.")
    settings.SUPPORT_AUTO_SEND = True
    with_address("CUST-003")  # an automatic answer goes only to a customer it can reach (issue 43)
    _, ticket = send(alice, "CUST-003", "How do I download an invoice?")
    reply = ticket.messages.get(direction="agent")
    path = re.search(r"https?://[^/]+(/support/feedback/[^/\s]+/)", reply.text).group(1)

    page.goto(path)
    expect(page.locator("h1")).to_have_text("Did this answer your question?")
    expect(page.locator("#support-feedback")).to_contain_text(ticket.ticket_id)
    with page.expect_navigation():
        page.get_by_role("button", name="No, not solved").click()
    expect(page.locator("#feedback-thanks")).to_contain_text("back with a person")
    assert Ticket.objects.get(pk=ticket.pk).lifecycle == "reopened"
    assert TicketFeedback.objects.get().solved is False

    page.goto(path)  # the link has been used: it says so, and nothing changes
    expect(page.locator("#link-refused")).to_contain_text("already told us")
    assert page.js_errors == []
