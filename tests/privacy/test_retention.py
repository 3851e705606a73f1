"""Retention with an injected clock (issue 42.1): what is due goes, what is not due or held stays,
a second run changes nothing, and each purge is on record naming the policy, not the data."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.exceptions import ImproperlyConfigured

from agents.models import AgentCall, AgentRun
from audit.models import AuditEntry
from audit.services import audit_sequence, audit_verify_chain
from casework.cases.attachments.models import Attachment
from casework.cases.models import Case, Comment, Decision
from casework.entities.models import Mention
from casework.outbox.models import OutboundEmail, OutboxEvent
from casework.privacy.holds import legal_hold_lift, legal_hold_place
from casework.privacy.models import RetentionPurge
from casework.privacy.retention import REMOVED, retention_overview, retention_run
from casework.settings import _retention
from tests.privacy.conftest import NOW, closed_case, entity

pytestmark = pytest.mark.django_db

YEAR = timedelta(days=365)


def _with_outbox(case):
    OutboundEmail.objects.create(purpose="test", case=case, from_email="us@example.com", to="jane.doe@example.com",
                                 subject="Your ticket", body="Dear Jane", message_id=f"<{case.pk}@example.com>")
    OutboxEvent.objects.create(type="case.closed", case=case, payload={"customer": "jane.doe@example.com"})


def _with_agent_call(case):
    run = AgentRun.objects.create(case=case, pipeline="test", status="completed")
    AgentCall.objects.create(run=run, key="k1", name="triage", input={"text": "jane.doe@example.com"},
                             output={"answer": "Jane"})


def test_it_removes_a_support_tickets_personal_data_two_years_after_close(alice, django_capture_on_commit_callbacks):
    due = closed_case("support_ticket", closed_at=NOW - 2 * YEAR - timedelta(days=1), author=alice)
    _with_agent_call(due)
    _with_outbox(due)
    stored = Attachment.objects.get(case=due).file
    assert stored.storage.exists(stored.name)

    with django_capture_on_commit_callbacks(execute=True):
        report = retention_run(now=NOW)

    assert report.purged == {due.reference: "support_ticket=730@closed"}
    due.refresh_from_db()
    assert due.description == "" and due.status == "closed"
    assert not Attachment.objects.filter(case=due).exists() and not stored.storage.exists(stored.name)
    assert not Mention.objects.filter(case=due).exists()
    assert Comment.objects.get(case=due).body == REMOVED
    call = AgentCall.objects.get(run__case=due)
    assert (call.input, call.output) == ({"removed": "retention"}, None)
    assert OutboundEmail.objects.get(case=due).body == REMOVED
    assert {e.payload["removed"] for e in OutboxEvent.objects.filter(case=due)} == {"retention"}
    # The decision and its outcome stay, the address in its reason masked.
    decision = Decision.objects.get(case=due)
    assert (decision.outcome, decision.reason) == ("no_action", "Answered j***@example.com by phone.")
    purge = RetentionPurge.objects.get(case=due)
    assert purge.removed["attachments"] == 1 and purge.removed["entity mentions"] == 1
    # The case's audit entries are tombstones now, by the erasure's path, and the chain verifies.
    assert purge.audit_tombstoned_at == NOW
    entries = AuditEntry.objects.filter(case_id=due.pk)
    assert {e.tombstone for e in entries.exclude(action="retention.purged")} == {f"retention-{due.reference}"}
    assert purge.removed["audit entries tombstoned"] == entries.exclude(action="retention.purged").count() >= 2
    assert not any("jane" in str(e.data).lower() for e in entries)
    entry = entries.get(action="retention.purged")
    assert entry.data["policy"] == "support_ticket=730@closed"
    audit_sequence()
    assert audit_verify_chain().intact


def test_it_keeps_what_is_not_due_yet(alice):
    recent = closed_case("support_ticket", closed_at=NOW - 2 * YEAR + timedelta(days=1))
    fraud = closed_case("fraud_alert", closed_at=NOW - 3 * YEAR)  # AML: five years

    assert retention_run(now=NOW).purged == {}
    for case in (recent, fraud):
        case.refresh_from_db()
        assert case.description.startswith("Jane Doe")
        assert Attachment.objects.filter(case=case).exists() and Mention.objects.filter(case=case).exists()
    # Five years on, the fraud alert goes.
    assert set(retention_run(now=NOW + 2 * YEAR + timedelta(days=2)).purged) == {recent.reference, fraud.reference}


def test_a_held_case_and_a_case_naming_a_held_entity_are_kept_and_reported(admin_user):
    held_case = closed_case("support_ticket", closed_at=NOW - 3 * YEAR, customer="CUST-001")
    naming_held = closed_case("transaction_investigation", closed_at=NOW - 6 * YEAR, customer="CUST-002")
    free = closed_case("support_ticket", closed_at=NOW - 3 * YEAR, customer="CUST-003")
    hold = legal_hold_place(actor=admin_user, case=held_case, reason="Litigation 2030-17.", now=NOW - YEAR)
    legal_hold_place(actor=admin_user, entity=entity("customer", "CUST-002"), reason="Police request 88.",
                     now=NOW - YEAR)

    report = retention_run(now=NOW)

    assert list(report.purged) == [free.reference]
    assert report.kept_legal_hold == [held_case.reference, naming_held.reference]
    assert report.as_dict()["kept: legal hold"] == [held_case.reference, naming_held.reference]
    for case in (held_case, naming_held):
        assert Attachment.objects.filter(case=case).exists() and Mention.objects.filter(case=case).exists()
    assert {r["policy"].case_type: r["held"] for r in retention_overview(now=NOW)}["support_ticket"] == 1

    # Lifted, the case goes at the next run.
    legal_hold_lift(actor=admin_user, hold=hold, reason="Settled.", now=NOW)
    assert list(retention_run(now=NOW + timedelta(hours=1)).purged) == [held_case.reference]


def test_a_hold_that_ended_keeps_nothing(admin_user):
    case = closed_case("support_ticket", closed_at=NOW - 3 * YEAR)
    legal_hold_place(actor=admin_user, case=case, reason="Until the audit.", until=NOW - timedelta(days=1),
                     now=NOW - YEAR)
    assert list(retention_run(now=NOW).purged) == [case.reference]


def test_a_second_run_changes_nothing():
    case = closed_case("support_ticket", closed_at=NOW - 3 * YEAR)
    assert list(retention_run(now=NOW).purged) == [case.reference]
    assert retention_run(now=NOW).purged == {}
    assert AuditEntry.objects.filter(action="retention.purged", case_id=case.pk).count() == 1


def test_it_works_in_batches():
    first = closed_case("support_ticket", closed_at=NOW - 3 * YEAR)
    second = closed_case("support_ticket", closed_at=NOW - 3 * YEAR)
    report = retention_run(now=NOW, batch_size=1)
    assert (list(report.purged), report.left_for_next_run) == ([first.reference], 1)
    assert list(retention_run(now=NOW, batch_size=1).purged) == [second.reference]


def test_an_open_case_is_never_due():
    case = closed_case("support_ticket", closed_at=NOW - 3 * YEAR)
    Case.objects.filter(pk=case.pk).update(status="in_progress", closed_at=None)
    assert retention_run(now=NOW).purged == {}


@pytest.mark.parametrize("value", ["support_ticket=0@closed", "support_ticket=730@opened", "support_ticket=2y",
                                   "support_ticket=730@closed,support_ticket=10@closed"])
def test_a_bad_policy_is_refused_at_start_up(value):
    with pytest.raises(ImproperlyConfigured):
        _retention(value)


def test_an_unknown_type_in_the_policy_fails_the_system_check(settings):
    from casework.privacy.checks import retention_check

    settings.RETENTION = {**settings.RETENTION, "parcel": {"days": 10, "from": "closed"}}
    assert [e.id for e in retention_check()] == ["privacy.E001"]


def test_the_beat_task_runs_a_pass_at_the_clock_it_is_given():
    from casework.privacy.tasks import privacy_retention_enforce

    case = closed_case("support_ticket", closed_at=NOW - 3 * YEAR)
    assert privacy_retention_enforce(now=NOW.isoformat())["purged"] == {case.reference: "support_ticket=730@closed"}


def test_the_admin_page_lists_each_policy_with_what_is_due_and_held(admin_user, client):
    closed_case("support_ticket", closed_at=NOW - 3 * YEAR)
    admin_user.is_staff = True
    admin_user.save()
    client.force_login(admin_user)
    page = client.get("/admin/privacy/retentionpurge/").content.decode()
    assert 'id="retention-policies"' in page
    for label in ("Support ticket", "Access change", "Fraud alert", "730 days", "183 days", "1826 days"):
        assert label in page
