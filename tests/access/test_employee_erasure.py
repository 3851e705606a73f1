"""Erasure of an employee as a data subject (issue 42): found through their employee entity,
the access changes naming them are erased, their name and address pseudonymised wherever they
are, their own absence records deleted, and their Casework account (a manager's) deactivated
and pseudonymised while the audit trail keeps pointing at it and still verifies. The report says
what was kept and why.

Here, beside the access fixtures (tests/access/conftest.py: Mona manages Priya, Jan and Kees;
Kees was on sick leave 9-12 Nov 2025)."""

from __future__ import annotations

import pytest

from audit.models import AuditEntry
from audit.services import audit_sequence, audit_verify_chain
from casework.access.models import Employee, EmployeeClaim, SickLeave, Vacation
from casework.entities.models import Entity
from casework.people.roles import DATA_PROTECTION
from casework.people.services import user_create
from casework.privacy.erasure import ERASED, erasure_request
from casework.privacy.models import ErasureRequest


@pytest.fixture
def dora(db):
    return user_create(actor="system", username="dora", password="dora-pass-123", role=DATA_PROTECTION)


def _erase(dora, entity, capture) -> ErasureRequest:
    with capture(execute=True):  # the request runs on commit (Celery is eager)
        request = erasure_request(actor=dora, subjects=[[entity]], reason="The employee asked, 2030-05-02.")
    request.refresh_from_db()
    assert request.status == "done", request.error
    return request


def test_a_manager_with_an_account_is_erased_and_their_account_pseudonymised(
        awaiting_manager, org, dora, django_capture_on_commit_callbacks):
    case = awaiting_manager.mutation.case
    mona_user = org.mona_user
    acted = AuditEntry.objects.filter(actor_user_id=mona_user.pk).count()
    request = _erase(dora, Entity.objects.get(kind="employee", value="u100"), django_capture_on_commit_callbacks)

    assert case.reference in request.report["cases"][ERASED]
    mona_user.refresh_from_db()
    assert (mona_user.is_active, mona_user.username, mona_user.email, mona_user.get_full_name()) == (
        False, f"erased-{request.reference}-{mona_user.pk}", "", "")
    assert not mona_user.has_usable_password()
    assert request.report["entities"]["accounts deactivated and pseudonymised"] == 1
    # Her employee row stays for the changes pointing at it, without her name or address.
    mona = Employee.objects.get(pk=org.mona.pk)
    assert "Mona" not in mona.name and "mona@example.com" not in mona.email
    # What she did stays hers, by id; the report says so, and why.
    assert AuditEntry.objects.filter(actor_user_id=mona_user.pk).count() >= acted
    assert any("who did what stays verifiable" in kept["why"] for kept in request.report["kept"])
    # Kees is no subject here: his records stay.
    assert SickLeave.objects.filter(employee=org.kees).exists()
    audit_sequence()
    assert audit_verify_chain().intact


def test_an_employee_named_by_a_claim_loses_their_absence_records_and_the_claim(
        awaiting_manager, org, dora, django_capture_on_commit_callbacks):
    case = awaiting_manager.mutation.case
    # Kees, whose sick leave the claim is about, is named by the case since the claim came in.
    assert case.entity_mentions.filter(entity__kind="employee", entity__value="u002",
                                       source_field="claim.colleague").exists()
    claim = EmployeeClaim.objects.get(request__mutation=awaiting_manager.mutation)
    request = _erase(dora, Entity.objects.get(kind="employee", value="u002"), django_capture_on_commit_callbacks)

    assert case.reference in request.report["cases"][ERASED]
    assert not SickLeave.objects.filter(employee=org.kees).exists()
    assert not Vacation.objects.filter(employee=org.kees).exists()
    assert request.report["removed"]["sick leave records"] == 1
    assert request.report["removed"]["vacation records"] == 1
    claim.refresh_from_db()
    assert "Kees" not in claim.explanation and claim.period_start is None
    assert "Kees" not in Employee.objects.get(pk=org.kees.pk).name
    # The other people of the change are not the subject.
    assert Employee.objects.get(pk=org.priya.pk).name == "Priya Patel"
    assert org.mona_user.__class__.objects.get(pk=org.mona_user.pk).is_active
