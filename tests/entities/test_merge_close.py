"""A merge is a real close: through the shared close (the lifecycle's check, the type's
case_closing / case_closed, its record reaching its own decided state), with `case.merged` in the
outbox; only by who may decide; never undone (a merged case does not reopen, and an answer to a
merged ticket goes to the ticket it was merged into)."""

from __future__ import annotations

from email.message import EmailMessage

import pytest
from django.core.exceptions import PermissionDenied

from agents.models import AgentRun
from audit.models import AuditEntry
from casework.cases.lifecycle.table import lifecycles
from casework.cases.models import Case
from casework.cases.services import case_close, case_reopen
from casework.entities.services import case_merge
from casework.errors import Conflict
from casework.outbox.models import OutboxEvent
from tests.outbox.conftest import endpoint, receiver  # noqa: F401 - fixtures
from tests.outbox.helpers import validate

pytestmark = pytest.mark.django_db


def test_a_merged_ticket_is_closed_through_the_shared_close_with_a_case_merged_event(
        alice, ticket, django_capture_on_commit_callbacks):
    keep, dup = ticket(), ticket(customer_id="CUST-9002", email="eve@example.com")
    with django_capture_on_commit_callbacks(execute=True):
        case_merge(actor=alice, merged=dup.case, survivor=keep.case, reason="Same login problem.")

    event = OutboxEvent.objects.get(type="case.merged")
    validate(event.payload)
    data = event.payload["data"]
    assert (event.case_id, data["case"]["status"], data["survivor"]["reference"]) == (
        dup.case.pk, "closed", keep.case.reference)
    assert data["decision"]["outcome"] == "merged" and data["decision"]["decided_by"] == "alice"
    assert not OutboxEvent.objects.filter(type="case.decided").exists()
    assert AuditEntry.objects.filter(action="case.closed", case_ref=dup.case.reference,
                                     data__outcome="merged").exists()
    # case_closed reached the ticket: it ends in a state its lifecycle declares, audited.
    dup.refresh_from_db()
    support = next(lc for lc in lifecycles() if lc.record == "support.Ticket")
    assert dup.lifecycle == "closed_no_reply" and dup.lifecycle in {s.key for s in support.states}
    assert AuditEntry.objects.filter(case_ref=dup.case.reference, data__to="closed_no_reply").exists()
    keep.refresh_from_db()
    assert keep.lifecycle not in ("closed_no_reply", "replied")


def test_a_merged_alert_is_decided_and_teaches_nothing(alice, alert, django_capture_on_commit_callbacks):
    keep, dup = alert(), alert()
    AgentRun.objects.update(status=AgentRun.Status.COMPLETED)  # their assessments ran
    with django_capture_on_commit_callbacks(execute=True):
        case_merge(actor=alice, merged=dup.case, survivor=keep.case, reason="The same alert twice.")
    dup.refresh_from_db()
    assert dup.status == "decided"
    # Knowledge capture learns from a person's fraud decision, not from a duplicate.
    assert not AgentRun.objects.filter(pipeline="fraud", mode="close").exists()


def test_a_merged_case_never_reopens(alice, ticket):
    keep, dup = ticket().case, ticket(customer_id="CUST-9002", email="eve@example.com").case
    case_merge(actor=alice, merged=dup, survivor=keep, reason="Same login problem.")
    with pytest.raises(Conflict, match="does not reopen") as exc:
        case_reopen(actor=alice, case=dup, reason="Undo it.")
    assert exc.value.code == "merged"
    assert Case.objects.get(pk=dup.pk).status == "closed"
    assert not AuditEntry.objects.filter(action="case.reopened").exists()
    # A plain decided case still reopens as before.
    case_close(actor=alice, case=keep, outcome="no_action", reason="Nothing to do.")
    assert case_reopen(actor=alice, case=keep, reason="The customer wrote back.").status == "in_progress"


def test_the_customers_answer_to_a_merged_ticket_goes_to_the_survivor(alice, ticket):
    from anymail.inbound import AnymailInboundMessage

    from casework.support.inbound import email_receive

    keep, dup = ticket(), ticket(message="Second mail: someone logged into my account.")
    case_merge(actor=alice, merged=dup.case, survivor=keep.case, reason="Written twice.")
    message = EmailMessage()
    message["From"], message["To"] = "Dana Doe <dana.doe@example.com>", "support@casework.test"
    message["Subject"], message["Message-ID"] = f"Re: [{dup.ticket_id}] your ticket", "<answer.1@mail.example.com>"
    message.set_content("It happened again this morning.")

    record = email_receive(message=AnymailInboundMessage.parse_raw_mime_bytes(message.as_bytes()), provider="raw")

    assert record.ticket == keep and f"{dup.ticket_id} was merged into {keep.ticket_id}" in record.note
    assert Case.objects.get(pk=dup.case.pk).status == "closed"


def test_a_merge_refused_for_want_of_the_deciders_role_writes_nothing(alice):
    from casework.cases.services import case_create

    one = case_create(actor=alice, case_type="release_risk", title="Release 1.0")
    two = case_create(actor=alice, case_type="release_risk", title="Release 1.0 again")
    with pytest.raises(PermissionDenied):
        case_merge(actor=alice, merged=two, survivor=one, reason="Same release.")
    assert Case.objects.get(pk=two.pk).status == "new"
    assert not OutboxEvent.objects.filter(type="case.merged").exists()
    assert not AuditEntry.objects.filter(action__in=("case.merged", "case.closed")).exists()


def test_the_duplicates_outbox_events_stay_with_it_and_the_survivors_log_is_its_own(
        alice, ticket, receiver, endpoint, django_capture_on_commit_callbacks):  # noqa: F811 - fixtures
    from casework.outbox.models import Delivery
    from casework.outbox.templatetags.outbox import outgoing_events

    with django_capture_on_commit_callbacks(execute=True):
        keep, dup = ticket().case, ticket(customer_id="CUST-9002", email="eve@example.com").case
    dup_created = OutboxEvent.objects.get(type="case.created", case=dup)

    case_merge(actor=alice, merged=dup, survivor=keep, reason="Same login problem.")

    # The event describes the duplicate: it stays its (its delivery with it) ...
    dup_created.refresh_from_db()
    assert dup_created.case_id == dup.pk and dup_created.payload["data"]["case"]["reference"] == dup.reference
    assert Delivery.objects.get(event=dup_created).event.case_id == dup.pk
    # ... and the survivor's delivery log shows one `case.created`: its own.
    rows = outgoing_events(keep)["rows"]
    created = [r["event"] for r in rows if r["event"].type == "case.created"]
    assert [e.payload["data"]["case"]["reference"] for e in created] == [keep.reference]


def test_merging_a_case_merged_already_names_the_case_it_went_into(alice, ticket):
    keep, dup = ticket().case, ticket(customer_id="CUST-9002", email="eve@example.com").case
    other = ticket(customer_id="CUST-9003", email="olga@example.com").case
    case_merge(actor=alice, merged=dup, survivor=keep, reason="Same login problem.")

    with pytest.raises(Conflict) as exc:
        case_merge(actor=alice, merged=Case.objects.get(pk=dup.pk), survivor=other, reason="Again.")

    assert exc.value.code == "already_merged"
    assert f"{dup.reference} was merged into {keep.reference}" in str(exc.value)
    assert "decided case" not in str(exc.value)
