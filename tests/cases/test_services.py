from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from audit.models import AuditEntry
from casework.cases.models import Case, Decision
from casework.cases.services import case_assign, case_close, case_comment, case_create, case_set_status
from casework.errors import Conflict

pytestmark = pytest.mark.django_db


def make_case(actor, **kwargs):
    return case_create(actor=actor, case_type=kwargs.pop("case_type", "fraud_alert"),
                       title=kwargs.pop("title", "Deposit cycling"), **kwargs)


def test_it_numbers_references_per_case_type(alice):
    first = make_case(alice)
    second = make_case(alice)
    ticket = make_case(alice, case_type="support_ticket")
    assert first.reference == "FRA-000001"
    assert second.reference == "FRA-000002"
    assert ticket.reference == "SUP-000001"


def test_it_audits_creation_in_the_same_transaction(alice):
    case = make_case(alice)
    entry = AuditEntry.objects.get(case_id=case.pk, action="case.created")
    assert entry.actor == "alice"
    assert entry.case_ref == case.reference
    assert entry.data["title"] == "Deposit cycling"


def test_it_refuses_an_unknown_priority_naming_the_field(alice):
    with pytest.raises(ValidationError) as exc:
        make_case(alice, priority="urgent")
    assert "priority" in exc.value.message_dict
    assert not Case.objects.exists()


def test_assigning_a_new_case_starts_it(alice):
    case = case_assign(actor=alice, case=make_case(alice), assignee=alice)
    assert case.status == Case.Status.IN_PROGRESS
    assert AuditEntry.objects.filter(action="case.assigned", data__to="alice").exists()


def test_it_refuses_to_assign_a_manager(alice, mona):
    with pytest.raises(ValidationError) as exc:
        case_assign(actor=alice, case=make_case(alice), assignee=mona)
    assert "assignee" in exc.value.message_dict


def test_it_refuses_an_empty_comment(alice):
    with pytest.raises(ValidationError):
        case_comment(actor=alice, case=make_case(alice), body="   ")


def test_closing_records_one_decision_and_closes(alice):
    case = make_case(alice)
    decision = case_close(actor=alice, case=case, outcome="confirmed_fraud", reason="Mule ring")
    case.refresh_from_db()
    assert case.status == Case.Status.CLOSED and case.closed_at is not None
    assert decision.decided_by == alice
    assert AuditEntry.objects.filter(action="case.closed", case_id=case.pk).count() == 1


def test_it_rejects_a_second_decision(alice, ivan):
    case = make_case(alice)
    case_close(actor=alice, case=case, outcome="legit", reason="Known customer")
    with pytest.raises(Conflict, match="already closed by alice"):
        case_close(actor=ivan, case=case, outcome="confirmed_fraud", reason="Second opinion")
    assert Decision.objects.filter(case=case).count() == 1


def test_it_refuses_an_outcome_of_another_case_type(alice):
    case = make_case(alice)
    with pytest.raises(ValidationError) as exc:
        case_close(actor=alice, case=case, outcome="approved", reason="x")
    assert "outcome" in exc.value.message_dict
    case.refresh_from_db()
    assert case.status == Case.Status.NEW


def test_it_refuses_a_close_without_reason(alice):
    with pytest.raises(ValidationError) as exc:
        case_close(actor=alice, case=make_case(alice), outcome="legit", reason=" ")
    assert "reason" in exc.value.message_dict


def test_a_closed_case_cannot_change_status(alice):
    case = make_case(alice)
    case_close(actor=alice, case=case, outcome="legit", reason="ok")
    with pytest.raises(Conflict):
        case_set_status(actor=alice, case=case, status=Case.Status.IN_PROGRESS)


def test_the_database_refuses_two_final_decisions(alice):
    from django.db import IntegrityError, transaction

    case = make_case(alice)
    Decision.objects.create(case=case, outcome="legit", reason="a", decided_by=alice)
    with pytest.raises(IntegrityError), transaction.atomic():
        Decision.objects.create(case=case, outcome="legit", reason="b", decided_by=alice)
