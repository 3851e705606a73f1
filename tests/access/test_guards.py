"""Issue 22, code guards what the access agents say (casework/access/guards.py): whether a
claim holds is read from the records, a recommendation must agree with the case's facts
(and so must the decision form's pre-selection), and the validator is never the changer or
the beneficiary and not someone absent. Each override is an audit entry shown on the case."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from audit.models import AuditEntry
from casework.access.guards import claim_verdict, validator_choose
from casework.access.models import AdvisoryReport, EmployeeClaim, InfoRequest, SickLeave, Vacation
from casework.errors import DomainError
from casework.people.roles import MANAGER
from casework.people.services import user_create

pytestmark = pytest.mark.django_db

DAY = date(2025, 11, 10)


def overrides(case) -> list[dict]:
    return list(AuditEntry.objects.filter(case_id=case.pk, action="access.guard_override")
                .values_list("data", flat=True))


def claim_of(asked, claim_type, colleague=None, start=None, end=None):
    return EmployeeClaim.objects.create(request=asked, claim_type=claim_type, colleague=colleague,
                                        period_start=start, period_end=end, explanation="I covered.")


# --- whether the claim holds: the records decide ------------------------------------------------

def test_a_claim_the_records_confirm_cites_the_covering_absence(org, asked):
    verdict = claim_verdict(claim=claim_of(asked, "sick_leave_cover", org.kees, date(2025, 11, 9), date(2025, 11, 12)),
                            mutation=asked.mutation)
    assert verdict.status == "valid"
    assert verdict.cited_records == [f"sick_leave:{org.sick.pk}"]


def test_an_invalid_claim_names_the_record_that_contradicts_it_or_says_none_covers_the_day(org, asked):
    mutation = asked.mutation
    # A vacation claimed, a sick leave recorded: the sick leave is named.
    verdict = claim_verdict(claim=claim_of(asked, "vacation_cover", org.kees, date(2025, 11, 9), date(2025, 11, 12)),
                            mutation=mutation)
    assert verdict.status == "invalid"
    assert f"the records show a sick leave instead: sick_leave:{org.sick.pk}" in verdict.message
    EmployeeClaim.objects.all().delete()
    # An absence that is not approved is named as such.
    pending = Vacation.objects.create(employee=org.jan, start_date=DAY, end_date=DAY, status="pending")
    verdict = claim_verdict(claim=claim_of(asked, "vacation_cover", org.jan, DAY, DAY), mutation=mutation)
    assert f"not approved: vacation:{pending.pk}" in verdict.message
    EmployeeClaim.objects.all().delete()
    # No record at all: it says so.
    verdict = claim_verdict(claim=claim_of(asked, "sick_leave_cover", org.sara, DAY, DAY), mutation=mutation)
    assert "no approved sick leave on 2025-11-10: no record of u004 covers the day" in verdict.message
    EmployeeClaim.objects.all().delete()
    # A colleague who had left: their employee record.
    org.kees.termination_date, org.kees.status = date(2025, 10, 31), "terminated"
    org.kees.save()
    verdict = claim_verdict(claim=claim_of(asked, "sick_leave_cover", org.kees, date(2025, 11, 9), date(2025, 11, 12)),
                            mutation=mutation)
    assert verdict.status == "invalid" and "employee record u002: terminated, left on 2025-10-31" in verdict.message


def test_another_reason_is_not_contradicted_no_record_could_verify_it(org, asked):
    """Issue 22: an "other" explanation was labelled "contradicted by the records" though no
    record contradicts it. It is unverifiable, and the reason says so."""
    claim = claim_of(asked, "other")
    verdict = claim_verdict(claim=claim, mutation=asked.mutation)
    assert verdict.status == "unverifiable"
    assert verdict.message.startswith("Not verified: no record could verify it")
    assert EmployeeClaim.Validation(verdict.status).label == "No record could verify it"


# --- the recommendation agrees with the facts ---------------------------------------------------

def deny(org, awaiting_manager):
    from casework.access.services import verdict_submit

    return verdict_submit(actor=org.mona_user, request=awaiting_manager, approved=False, comment="Not on my watch.")


def test_an_accept_on_a_manager_denied_change_is_replaced_and_recorded(org, awaiting_manager, alice_client):
    from casework.access.services import report_record

    deny(org, awaiting_manager)
    mutation = awaiting_manager.mutation
    # The model's answer: accept.
    report = report_record(mutation=mutation, report_id="RPT-G1", kind="standard", summary="Looks fine to me.",
                           recommendation="accept", details=["The manager answered."])
    assert report.recommendation == "reject_investigate"
    assert report.summary.startswith("The agent recommended Accept; code changed it to Reject / Investigate: "
                                     "the manager denied the change.")
    assert report.details[-1].startswith("The agent recommended Accept")
    (override,) = overrides(mutation.case)
    assert (override["guard"], override["agent_said"], override["code_says"]) == (
        "recommendation", "accept", "reject_investigate")
    page = alice_client.get(f"/cases/{mutation.case.reference}/").content.decode()
    assert 'id="access-overrides"' in page and 'id="override-recommendation"' in page
    assert 'id="access-overview-overrides"' in page
    assert 'value="rejected" checked' in page and 'value="accepted" required checked' not in page


def test_the_form_never_preselects_accept_on_a_denied_change_even_from_an_old_report(org, awaiting_manager,
                                                                                     alice_client):
    deny(org, awaiting_manager)
    mutation = awaiting_manager.mutation
    # A report stored before the guard (or imported) that says accept.
    AdvisoryReport.objects.create(mutation=mutation, report_id="RPT-OLD", summary="Accept it.",
                                  recommendation="accept", details=["-"])
    page = alice_client.get(f"/cases/{mutation.case.reference}/").content.decode()
    assert 'value="accepted" required checked' not in page
    assert 'value="rejected" checked' in page


def test_an_accept_nothing_covers_becomes_manual_intervention_and_a_covered_reject_too(org, submit):
    from casework.access.services import report_record, rights_check_record

    mutation = submit(investigate=False)
    report = report_record(mutation=mutation, report_id="RPT-G2", kind="manual_intervention", summary="Failed early.",
                           recommendation="accept", details=["Rights check failed 3 times."])
    assert report.recommendation == "manual_intervention"
    covered = submit(investigate=False, changed_by=org.kees)
    rights_check_record(mutation=covered, message="Kees held Admin.", result={
        "authorized": True, "held_level": "Admin", "evidence": [{"source": "role", "reference": "R-FD",
                                                                 "covers": True}]})
    report = report_record(mutation=covered, report_id="RPT-G3", kind="standard", summary="Revert it.",
                           recommendation="reject_investigate", details=["-"])
    assert report.recommendation == "manual_intervention"
    agreeing = report_record(mutation=covered, report_id="RPT-G4", kind="standard", summary="Fine.",
                             recommendation="accept", details=["-"])
    assert agreeing.recommendation == "accept" and len(overrides(covered.case)) == 1


# --- the validator -------------------------------------------------------------------------------

@pytest.fixture
def dana(org):
    """Mona's own manager, with a login."""
    from casework.access.models import Employee

    user = user_create(actor="system", username="dana", password="dana-pass-123", role=MANAGER,
                       first_name="Dana", last_name="Dekker", email="dana@example.com")
    employee = Employee.objects.create(employee_id="u900", name="Dana Dekker", department="Finance",
                                       email="dana@example.com", hire_date=date(2019, 1, 1), user=user)
    org.mona.manager = employee
    org.mona.save()
    return employee


def ask_validator(mutation, now=datetime(2025, 11, 11, 8, 0, tzinfo=UTC)):
    from casework.access.services import request_send
    from casework.access.states import AccessStatus, mutation_transition
    from tests.access.conftest import ask_employee

    for status in (AccessStatus.INVESTIGATION_STARTED, AccessStatus.CLARIFICATION_REQUESTED):
        mutation_transition(actor="system", mutation=mutation, to=status, reason="test")
    ask_employee(mutation)  # Awaiting User Response rests on the accepted email (issue 43)
    mutation_transition(actor="system", mutation=mutation, to=AccessStatus.MANAGER_VERIFICATION_REQUESTED,
                        reason="test")
    request, _ = request_send(actor="agent:access_request_info", mutation=mutation, kind=InfoRequest.Kind.MANAGER,
                              subject="Please validate", body="Priya says she covered Kees.", now=now)
    return request


def test_an_absent_manager_is_passed_over_for_their_own_manager(org, submit, dana, alice_client):
    vacation = Vacation.objects.create(employee=org.mona, start_date=date(2025, 11, 3), end_date=date(2025, 11, 14))
    mutation = submit(investigate=False)
    request = ask_validator(mutation)
    assert request.recipient == dana
    assert request.body.startswith("You are asked as the manager's manager, because Mona Marsh (u100, manager) is "
                                   f"absent: on vacation on 2025-11-10 (vacation:{vacation.pk}")
    (override,) = overrides(mutation.case)
    assert override["guard"] == "validator" and "Dana Dekker (u900" in override["code_says"]
    page = alice_client.get(f"/cases/{mutation.case.reference}/").content.decode()
    assert 'id="override-validator"' in page


def test_the_beneficiary_and_the_changer_never_validate(org, submit, dana):
    # Priya changed her manager Mona's access: Mona benefits, so Dana is asked.
    mutation = submit(investigate=False, changed_for=org.mona)
    assert ask_validator(mutation).recipient == dana
    # A change whose recorded manager is the changer herself.
    mutation = submit(investigate=False, manager=org.priya)
    choice = validator_choose(mutation=mutation, today=DAY)
    assert choice.validator == org.mona and choice.skipped == ["Priya Patel (u001, manager) made the change"]


def test_the_systems_fallback_approver_when_nobody_up_the_line_can(org, submit):
    SickLeave.objects.create(employee=org.mona, start_date=date(2025, 11, 11), end_date=date(2025, 11, 11))
    mutation = submit(investigate=False)
    with pytest.raises(DomainError, match="Nobody can validate the claim: Mona Marsh .* is absent: on sick leave"):
        ask_validator(mutation)
    org.finance.fallback_approver = org.mark
    org.finance.save()
    InfoRequest.objects.filter(mutation=mutation).delete()
    request = ask_validator(submit(investigate=False))
    assert request.recipient == org.mark
    assert "fallback approver for FinanceApp" in request.body


def test_a_request_addressed_to_the_changer_is_refused_at_the_answer(org, submit):
    from django.core.exceptions import PermissionDenied

    from casework.access.services import verdict_submit

    mutation = submit(investigate=False, changed_by=org.mona, changed_for=org.jan)
    request = InfoRequest.objects.create(mutation=mutation, kind=InfoRequest.Kind.MANAGER, recipient=org.mona,
                                         subject="Validate", body="Written around the guard.")
    with pytest.raises(PermissionDenied, match="cannot validate it"):
        verdict_submit(actor=org.mona_user, request=request, approved=True, comment="Fine by me.")
