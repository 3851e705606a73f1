"""A bulk close goes through each type's own decision service: a support ticket is escalated
or closed as the ticket's own buttons do (a reply needs its text), a release is decided by the
release service (its role and its override rule apply)."""

from __future__ import annotations

import pytest

from audit.models import AuditEntry
from casework.cases.bulk import cases_bulk_apply
from casework.cases.models import Case
from casework.support.models import Ticket
from tests.releases.conftest import SEED, submit
from tests.support.conftest import send, support_data  # noqa: F401 - fixture

pytestmark = pytest.mark.django_db(transaction=True)


def test_support_tickets_close_through_the_ticket_service(alice, support_data):  # noqa: F811
    _, first = send(alice, "CUST-001", "I was charged twice for invoice 2291.")
    _, second = send(alice, "CUST-002", "How do I download an invoice?")
    refs = [first.case.reference, second.case.reference]
    result = cases_bulk_apply(actor=alice, references=refs[:1], action="close", outcome="replied", reason="Done")
    assert result.done == [] and result.skipped == [(refs[0], "A reply needs its text; send it from the ticket's page.")]
    result = cases_bulk_apply(actor=alice, references=refs, action="close", outcome="no_action", reason="Duplicate")
    assert result.done == refs
    # The ticket's own service ran: the ticket is closed without a reply, not only the case closed.
    assert set(Ticket.objects.filter(case__reference__in=refs).values_list("lifecycle", flat=True)) == {
        Ticket.Lifecycle.CLOSED_NO_REPLY}
    assert AuditEntry.objects.filter(action="case.closed", case_ref__in=refs).count() == 2


def test_releases_close_through_the_release_service(alice, rita):
    release, _ = submit(SEED)
    ref = release.case.reference
    result = cases_bulk_apply(actor=alice, references=[ref], action="close", outcome="deferred", reason="Later")
    assert result.skipped and "release manager" in result.skipped[0][1]
    # The detective rated this release high: a go is an override, which bulk never confirms.
    result = cases_bulk_apply(actor=rita, references=[ref], action="close", outcome="go", reason="Ship it")
    assert result.skipped and "Confirm to decide against the report" in result.skipped[0][1]
    result = cases_bulk_apply(actor=rita, references=[ref], action="close", outcome="no_go", reason="Payments fail")
    assert result.done == [ref]
    assert Case.objects.get(reference=ref).status == "closed"
    assert AuditEntry.objects.filter(action="release.decided", case_ref=ref).exists()
