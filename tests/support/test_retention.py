"""A support ticket's own personal data goes two years after it closed (issue 42.1): the thread's
messages, the raw e-mail received for it, the suggested reply; the ticket's classification and
the decision stay."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from casework.cases.models import Case, Decision
from casework.privacy.retention import retention_run
from casework.support.models import InboundEmail, TicketMessage
from casework.support.retention import REMOVED
from tests.support.conftest import send

NOW = datetime(2030, 6, 1, tzinfo=UTC)


# The intake and triage runs start on commit: a transactional database, as the other thread tests.
@pytest.mark.django_db(transaction=True)
def test_the_thread_and_the_raw_mail_go_two_years_after_close(support_data, alice):
    _, ticket = send(alice, "CUST-002", "I was charged twice for invoice 1234, please refund.")
    InboundEmail.objects.create(provider="test", message_id="<m1@example.net>", from_email="jane@example.net",
                                from_name="Jane", subject="Double charge", raw="From: jane@example.net\n\nHello",
                                text="Hello", stripped="Hello", outcome="opened", ticket=ticket,
                                customer=ticket.customer)
    closed = NOW - timedelta(days=731)
    Case.objects.filter(pk=ticket.case_id).update(status="closed", closed_at=closed)
    Decision.objects.create(case=ticket.case, outcome="no_action", reason="Refunded.", final=True)

    assert retention_run(now=NOW - timedelta(days=2)).purged == {}
    report = retention_run(now=NOW)

    assert report.purged == {ticket.case.reference: "support_ticket=730@closed"}
    assert {m.text for m in TicketMessage.objects.filter(ticket=ticket)} == {REMOVED}
    mail = InboundEmail.objects.get(ticket=ticket)
    assert (mail.raw, mail.from_email, mail.subject) == ("", "", "")
    ticket.refresh_from_db()
    assert ticket.suggested_reply == "" and ticket.ticket_type  # the classification stays
    assert Decision.objects.get(case=ticket.case).outcome == "no_action"
