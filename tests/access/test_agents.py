"""Each access agent on the offline provider: it calls its tools, and its output fits its
schema and follows from what the tools returned. The tools read the database on their own
threads, hence the transactional database."""

from __future__ import annotations

import pytest

from agents.runtime.runner import run_agent
from casework.access.agents.pipeline import ADVISORY, ORCHESTRATOR, REQUEST_INFO, RIGHTS_CHECK
from casework.access.agents.tools import employee_row, mutation_row
from casework.access.models import InfoRequest
from casework.access.states import AccessStatus, mutation_transition
from casework.cases.notifications.models import Notification

pytestmark = pytest.mark.django_db(transaction=True)


def tools_called(result) -> list[tuple[str, bool]]:
    return [(call["name"], call["success"]) for call in result.tool_calls]


def facts(mutation) -> dict:
    return {"mutation": mutation_row(mutation), "changed_by": employee_row(mutation.changed_by),
            "changed_for": employee_row(mutation.changed_for)}


def rights_input(mutation) -> dict:
    return {"action": "check_rights", "mutation_id": mutation.mutation_id, "user_id": mutation.changed_by.employee_id,
            "system": mutation.system.code, "access_level": mutation.access_level.name,
            "change_date": mutation.change_date.isoformat()}


def test_the_orchestrator_reads_the_mutation_and_names_its_concerns(submit, org):
    mutation = submit(investigate=False, changed_for=org.priya)
    result = run_agent(ORCHESTRATOR, {"action": "investigate_mutation", "mutation_id": mutation.mutation_id,
                                      "context": facts(mutation)})
    assert result.ok, result.error
    assert tools_called(result) == [("lookup_data", True), ("lookup_data", True)]
    assert result.output["mutation_id"] == mutation.mutation_id
    assert result.output["next_action"] == "check_rights"
    assert "Priya Patel changed their own access." in result.output["concerns"]
    assert "The change needed admin rights." in result.output["concerns"]


# Cases share one test (and one database flush): transactional tests are the slow ones.
RIGHTS_CASES = [("kees", "admin", True, ["R-FD"]), ("priya", "write", True, ["A1"]), ("priya", "admin", False, [])]


def test_the_rights_check_follows_check_authorization(submit, org):
    for who, level, authorized, covering in RIGHTS_CASES:
        mutation = submit(investigate=False, changed_by=getattr(org, who), access_level=getattr(org, level))
        result = run_agent(RIGHTS_CHECK, rights_input(mutation))
        assert result.ok, result.error
        assert tools_called(result) == [("check_authorization", True)]
        assert result.output["checked"] is True
        assert result.output["authorized"] is authorized, (who, level)
        assert result.output["covering_references"] == covering
        if not authorized:
            assert "did not hold Admin on FinanceApp" in result.output["message"]
            assert "A2: ended on 2024-12-31" in result.output["message"]


def test_the_rights_check_reports_a_failing_tool_honestly(submit, org):
    mutation = submit(investigate=False, changed_by=org.kees, system=org.payroll, access_level=org.write)
    result = run_agent(RIGHTS_CHECK, rights_input(mutation))
    assert tools_called(result) == [("check_authorization", False)]
    assert result.tool_calls[0]["error_type"] == "ToolExecution"
    assert result.output["checked"] is False and result.output["authorized"] is False
    assert "unavailable" in result.output["message"]


def test_the_request_for_information_agent_asks_the_employee(submit, org):
    mutation = submit(investigate=False)
    for status in (AccessStatus.INVESTIGATION_STARTED, AccessStatus.CLARIFICATION_REQUESTED):
        mutation_transition(actor="system", mutation=mutation, to=status, reason="test")
    data = {"action": "request_clarification", "mutation_id": mutation.mutation_id, "context": facts(mutation),
            "rights_check": {"authorized": False, "held_level": "Write", "message": "No Admin."}}
    result = run_agent(REQUEST_INFO, data)
    assert result.ok, result.error
    assert tools_called(result) == [("send_notification", True)]
    request = InfoRequest.objects.get(mutation=mutation)
    assert result.output == {"action": "request_clarification", "notified": True, "request_id": request.pk,
                             "claim_status": None, "checks": [], "cited_records": [],
                             "message": "Priya Patel was asked."}
    assert "you held Write" in request.body and "Jan de Vries" in request.body
    note = Notification.objects.get()
    assert note.recipient_email == "priya@example.com" and note.recipient_user is None
    # Asking again while the request is open does not message her twice.
    again = run_agent(REQUEST_INFO, data)
    assert again.output["message"] == "Priya Patel was asked again (a request was already open)."
    assert InfoRequest.objects.count() == 1 and Notification.objects.count() == 1


def test_send_notification_refuses_a_request_that_is_not_due(submit):
    mutation = submit(investigate=False)
    result = run_agent(REQUEST_INFO, {"action": "request_clarification", "mutation_id": mutation.mutation_id,
                                      "context": facts(mutation), "rights_check": None})
    assert tools_called(result) == [("send_notification", False)]
    assert result.output["notified"] is False and "not due" in result.output["message"]
    assert not InfoRequest.objects.exists()


def claim_input(mutation, claim_type, colleague=None, start=None, end=None):
    return {"action": "validate_claim", "mutation_id": mutation.mutation_id,
            "change_date": mutation.change_date.isoformat(), "context": facts(mutation),
            "claim": {"claim_type": claim_type, "claim_type_label": claim_type, "explanation": "…",
                      "colleague_id": colleague.employee_id if colleague else None,
                      "colleague_name": colleague.name if colleague else None, "period_start": start,
                      "period_end": end}}


def test_the_claim_is_confirmed_by_an_approved_absence_covering_the_day(submit, org):
    mutation = submit(investigate=False)
    result = run_agent(REQUEST_INFO, claim_input(mutation, "sick_leave_cover", org.kees, "2025-11-09", "2025-11-12"))
    assert result.ok, result.error
    assert tools_called(result) == [("lookup_data", True), ("lookup_data", True)]
    assert result.output["claim_status"] == "valid"
    assert result.output["cited_records"] == [f"sick_leave:{org.sick.pk}"]
    assert all(check["passed"] for check in result.output["checks"])


def test_the_claim_is_invalid_when_the_records_disagree(submit, org):
    mutation = submit(investigate=False)
    for claim_type, start, end, failing in [
        ("vacation_cover", "2025-11-09", "2025-11-12", "An approved vacation of the colleague covers 2025-11-10"),
        ("sick_leave_cover", "2025-11-11", "2025-11-12", "The period the employee states includes 2025-11-10"),
    ]:
        result = run_agent(REQUEST_INFO, claim_input(mutation, claim_type, org.kees, start, end))
        assert result.output["claim_status"] == "invalid"
        assert [c["check"] for c in result.output["checks"] if not c["passed"]] == [failing]
        assert result.output["cited_records"] == []
    org.sick.status = "pending"  # a pending absence confirms nothing either
    org.sick.save()
    result = run_agent(REQUEST_INFO, claim_input(mutation, "sick_leave_cover", org.kees, "2025-11-09", "2025-11-12"))
    assert result.output["claim_status"] == "invalid"


def test_another_reason_cannot_be_checked_against_records(submit):
    mutation = submit(investigate=False)
    result = run_agent(REQUEST_INFO, claim_input(mutation, "other"))
    assert result.output["claim_status"] == "unverifiable"
    assert tools_called(result) == []


ADVISORY_CASES = [
    ("approved", {"authorized": True, "message": "held through R-FD"}, None, None, "accept"),
    ("approved", {"authorized": False, "message": "no"}, {"validation": "valid"}, {"approved": True}, "accept"),
    ("approved", {"authorized": False, "message": "no"}, {"validation": "unverifiable"}, {"approved": True},
     "manual_intervention"),
    ("rejected_invalid_claim", {"authorized": False, "message": "no"}, {"validation": "invalid"}, None,
     "reject_investigate"),
    ("rejected_manager_denied", {"authorized": False, "message": "no"}, {"validation": "valid"}, {"approved": False},
     "reject_investigate"),
    ("manual_intervention_required", None, None, None, "manual_intervention"),
]


def test_the_advisory_agent_files_a_report_with_the_right_recommendation(submit):
    mutation = submit(investigate=False)
    for status, rights, claim, verdict, recommendation in ADVISORY_CASES:
        claim = claim and {"claim_type": "sick_leave_cover", "claim_type_label": "Sick leave cover",
                           "explanation": "Covering.", "colleague_name": "Kees", "period_start": "2025-11-09",
                           "period_end": "2025-11-12", "validation_detail": {"message": "checked"}, **claim}
        verdict = verdict and {"comment": "ok", "manager": "Mona", **verdict}
        manual = status == "manual_intervention_required"
        result = run_agent(ADVISORY, {
            "action": "generate_advisory_report", "mutation_id": mutation.mutation_id, "status": status,
            "status_label": AccessStatus(status).label, "report_kind": "manual_intervention" if manual else "standard",
            "context": facts(mutation), "rights_check": rights, "claim": claim, "manager_verdict": verdict,
            "failures": [{"label": "Rights check", "attempts": 3, "errors": [{"error": "registry down"}]}]
            if manual else [],
        })
        assert result.ok, result.error
        assert tools_called(result) == [("lookup_data", True), ("generate_report", True)]
        assert result.output["recommendation"] == recommendation, (status, claim, verdict)
        assert result.output["mutation_id"] == mutation.mutation_id
        assert result.output["details"][0].startswith("Change: Priya Patel changed Access level for Jan de Vries")
        if manual:
            assert result.output["report_kind"] == "manual_intervention"
            assert "Rights check failed 3 times; last error: registry down" in result.output["details"]
