"""Issue 22: a case a person decided says so, by whichever path it was closed.

Before, a decision before the report, the generic close (page and API) and the bulk close
left the access status at Manual Intervention Required: "a step failed three times", which
is not what happened. Now every path ends at Decided by the Investigator, by a person, with
the decision's outcome and reason in the move's reason. The close signal runs on commit,
hence django_capture_on_commit_callbacks(execute=True)."""

from __future__ import annotations

import pytest

from audit.models import AuditEntry
from casework.access.models import HRMutation, InfoRequest

pytestmark = pytest.mark.django_db


def last_move(mutation) -> dict:
    return AuditEntry.objects.filter(case_id=mutation.case_id, action="access.status_changed").last().data


def fresh(mutation) -> HRMutation:
    return HRMutation.objects.select_related("case").get(pk=mutation.pk)


def assert_decided_by_a_person(mutation, *, was: str, words: str):
    mutation = fresh(mutation)
    assert mutation.case.status == "closed"
    assert (mutation.status, mutation.status_label) == ("decided", "Decided by the Investigator")
    move = last_move(mutation)
    assert (move["from"], move["to"], move["by"]) == (was, "decided", "person")
    assert words in move["reason"], move["reason"]
    assert not InfoRequest.objects.filter(mutation=mutation, answered_at__isnull=True,
                                          cancelled_at__isnull=True).exists()


def test_a_decision_before_the_report_reads_decided_not_manual_intervention(asked, alice,
                                                                           django_capture_on_commit_callbacks):
    from casework.access.services import mutation_decide

    with django_capture_on_commit_callbacks(execute=True):
        mutation_decide(actor=alice, mutation=asked.mutation, outcome="rejected", reason="Priya said it was a mistake.")
    assert_decided_by_a_person(asked.mutation, was="awaiting_user_response",
                               words="alice decided (Change rejected) before the investigation finished (it was Awaiting "
                                     "User Response): Priya said it was a mistake.")
    assert AuditEntry.objects.get(case_id=asked.mutation.case_id, action="access.decided").data["status"] == \
        "awaiting_user_response"


def test_the_generic_close_page_reads_decided(asked, alice_client, django_capture_on_commit_callbacks):
    reference = asked.mutation.case.reference
    with django_capture_on_commit_callbacks(execute=True):
        response = alice_client.post(f"/cases/{reference}/close/", {"outcome": "manual", "reason": "By phone."})
    assert response.status_code == 302
    assert_decided_by_a_person(asked.mutation, was="awaiting_user_response", words="through the case's close")
    page = alice_client.get(f"/cases/{reference}/").content.decode()
    assert 'id="access-status">Decided by the Investigator' in page


def test_the_generic_close_api_reads_decided(asked, api, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        response = api.post(f"/api/cases/{asked.mutation.case.reference}/close/",
                            {"outcome": "rejected", "reason": "Reverted."}, format="json")
    assert response.status_code in (200, 201), response.content
    assert_decided_by_a_person(asked.mutation, was="awaiting_user_response", words="alice decided (Change rejected)")


def test_the_bulk_close_reads_decided(asked, alice, django_capture_on_commit_callbacks):
    from casework.cases.bulk import cases_bulk_apply

    with django_capture_on_commit_callbacks(execute=True):
        result = cases_bulk_apply(actor=alice, references=[asked.mutation.case.reference], action="close",
                                  outcome="manual", reason="Cleared in the weekly review.")
    assert result.done == [asked.mutation.case.reference], result
    assert_decided_by_a_person(asked.mutation, was="awaiting_user_response", words="Cleared in the weekly review.")


def test_a_decision_on_the_report_reads_decided(asked, alice, django_capture_on_commit_callbacks):
    from casework.access.services import mutation_decide, report_record
    from casework.access.states import AccessStatus, mutation_transition

    mutation = asked.mutation
    mutation_transition(actor="system", mutation=mutation, to=AccessStatus.MANUAL_INTERVENTION_REQUIRED, reason="t")
    report_record(mutation=mutation, report_id="RPT-D", kind="manual_intervention", summary="A step failed.",
                  recommendation="manual_intervention", details=["Claim validation failed 3 times."])
    mutation_transition(actor="agent:access_advisory", mutation=mutation,
                        to=AccessStatus.ADVISORY_REPORT_GENERATED, reason="t")
    with django_capture_on_commit_callbacks(execute=True):
        mutation_decide(actor=alice, mutation=mutation, outcome="manual", reason="Handled with IT.")
    assert_decided_by_a_person(mutation, was="advisory_report_generated", words="on the advisory report")


def test_no_agent_or_system_decides(asked):
    from casework.access.states import AccessStatus, mutation_transition
    from casework.errors import Conflict

    for actor in ("system", "agent:access_advisory"):
        with pytest.raises(Conflict, match="only a person makes that move"):
            mutation_transition(actor=actor, mutation=asked.mutation, to=AccessStatus.DECIDED, reason="t")
