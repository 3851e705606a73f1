"""Every path of the access review end to end, through the pages and the API, with the
offline agents really calling their tools. Transactional: the agents' tools run on their
own threads and connections, so they only see committed rows."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from agents.llm.offline_registry import OFFLINE_ANALYSTS
from agents.models import AgentCall, AgentRun
from audit.models import AuditEntry
from casework.access.models import AgentMessage, HRMutation, InfoRequest
from tests.access.conftest import CHANGED_AT, employee_link, manager_request, token_of

pytestmark = pytest.mark.django_db(transaction=True)


def statuses(mutation) -> list[str]:
    return [d["to"] for d in AuditEntry.objects.filter(case_id=mutation.case_id, action="access.status_changed")
            .order_by("id").values_list("data", flat=True)]


def conversation(mutation) -> list[tuple[str, str, str, str]]:
    return list(AgentMessage.objects.filter(case_id=mutation.case_id).order_by("timestamp", "id")
                .values_list("sender", "receiver", "action", "status"))


def fresh(mutation) -> HRMutation:
    return HRMutation.objects.select_related("case").get(pk=mutation.pk)


def answer_as_employee(client, mutation, **data):
    path = employee_link(mutation)
    page = client.get(path)
    assert page.status_code == 200
    form = {"claim_type": "sick_leave_cover", "explanation": "Kees was ill and asked me to.", **data}
    return client.post(path, form)


def test_an_authorised_change_is_approved_and_reported_through_the_api(org, api):
    response = api.post("/api/access/mutations/", {
        "mutation_id": "M-1", "changed_by": "u002", "changed_for": "u003", "system": "financeapp",
        "access_level": "admin", "field_changed": "Access level", "old_value": "Read", "new_value": "Write",
        "changed_at": CHANGED_AT.isoformat()}, format="json")
    assert response.status_code == 201, response.json()
    reference = response.json()["reference"]

    body = api.get(f"/api/access/mutations/{reference}/").json()
    assert body["status"] == "advisory_report_generated"
    assert body["case_status"] == "awaiting_decision"  # issue 13: agents never resolve
    assert body["rights_check"]["authorized"] is True
    assert [row["reference"] for row in body["rights_check"]["evidence"] if row["covers"]] == ["R-FD"]
    assert body["report"]["recommendation"] == "accept"
    assert body["requests"] == [] and body["claim"] is None
    assert [(m["sender"], m["receiver"], m["action"], m["status"]) for m in body["messages"]] == [
        ("Casework", "InvestigationAgent", "investigate_mutation", "success"),
        ("InvestigationAgent", "Casework", "investigation_context", "success"),
        ("InvestigationAgent", "RightsCheckAgent", "check_rights", "success"),
        ("RightsCheckAgent", "InvestigationAgent", "check_rights_result", "success"),
        ("InvestigationAgent", "AdvisoryAgent", "generate_advisory_report", "success"),
        ("AdvisoryAgent", "InvestigationAgent", "advisory_report_result", "success"),
    ]
    first = body["messages"][2]
    assert first["context"]["user_id"] == "u002" and first["context"]["system"] == "FinanceApp"
    assert first["correlation_id"] == body["messages"][3]["correlation_id"]
    mutation = HRMutation.objects.get(mutation_id="M-1")
    assert statuses(mutation) == ["investigation_started", "approved", "advisory_report_generated"]
    assert AgentRun.objects.get(case=mutation.case).status == "completed"


def test_sick_leave_cover_confirmed_and_approved_by_the_manager_through_the_pages(org, submit, client, alice,
                                                                                 inbox):
    mutation = submit()
    assert mutation.status == "awaiting_user_response"
    assert fresh(mutation).case.status == "awaiting_response"
    assert AgentRun.objects.get(case=mutation.case).status == "waiting"
    # The employee got an email with their link; nobody else was told anything yet.
    assert [m.to for m in inbox] == [["priya@example.com"]]  # as the SMTP server received it
    assert employee_link(mutation) in inbox[0].body

    response = answer_as_employee(client, mutation, colleague=org.kees.pk, period_start="2025-11-09",
                                  period_end="2025-11-12")
    assert response.status_code == 200
    assert b"Thank you" in response.content
    mutation = fresh(mutation)
    assert mutation.status == "awaiting_manager_response"
    claim = mutation.requests.get(kind="employee_clarification").claim
    assert claim.validation_status == "valid"
    assert claim.validation["cited_records"] == [f"sick_leave:{org.sick.pk}"]

    # Mona sees it in her inbox, with the evidence and the validated claim, and approves.
    client.force_login(org.mona_user)
    inbox = client.get("/access/inbox/")
    assert mutation.case.reference in inbox.content.decode()
    request = manager_request(mutation)
    detail = client.get(f"/access/inbox/{request.pk}/").content.decode()
    assert "Confirmed by the records" in detail and "Write is below the required Admin" in detail
    response = client.post(f"/access/inbox/{request.pk}/", {"decision": "approve", "comment": "I asked her to."})
    assert response.status_code == 302
    mutation = fresh(mutation)
    assert mutation.status == "advisory_report_generated"
    assert mutation.reports.get().recommendation == "accept"
    assert statuses(mutation) == [
        "investigation_started", "clarification_requested", "awaiting_user_response",
        "manager_verification_requested", "awaiting_manager_response", "approved", "advisory_report_generated"]
    actions = [a for _, _, a, _ in conversation(mutation)]
    assert actions == [
        "investigate_mutation", "investigation_context", "check_rights", "check_rights_result",
        "request_clarification", "notification_sent", "user_response_received", "clarification_response",
        "request_manager_validation", "notification_sent", "manager_response_received",
        "manager_validation_response", "generate_advisory_report", "advisory_report_result"]

    # The investigator reads it all on the case page and decides, following the recommendation.
    client.force_login(alice)
    page = client.get(f"/cases/{mutation.case.reference}/").content.decode()
    for text in ("Advisory Report Generated", "Rights-check evidence", "check_rights_result",
                 "I asked her to.", "Recommendation: Accept", "Kees was ill"):
        assert text in page, text
    response = client.post(f"/access/cases/{mutation.case.reference}/decide/",
                           {"outcome": "accepted", "reason": "Confirmed cover."})
    assert response.status_code == 302
    mutation = fresh(mutation)
    assert mutation.case.status == "closed"
    decided = AuditEntry.objects.get(case_id=mutation.case_id, action="access.decided").data
    assert decided == {"outcome": "accepted", "recommendation": "accept", "overrides_recommendation": False,
                       "status": "advisory_report_generated"}


def test_vacation_cover_denied_by_the_manager_through_the_api(org, submit, mark):
    mutation = submit(changed_by=org.sara, changed_for=org.sara, system=org.hr, access_level=org.admin,
                      field_changed="Own HR record")
    # Sara has Admin on HRPortal (A3): authorised, nothing to ask.
    assert mutation.status == "advisory_report_generated"

    from casework.access.models import Vacation
    Vacation.objects.create(employee=org.jan, start_date=CHANGED_AT.date(), end_date=CHANGED_AT.date())
    mutation = submit(changed_by=org.priya, changed_for=org.kees)
    anonymous = APIClient()
    response = anonymous.post("/api/access/answers/employee/", {
        "token": token_of(employee_link(mutation)), "claim_type": "vacation_cover", "colleague": "u003",
        "period_start": "2025-11-10", "period_end": "2025-11-10",
        "explanation": "Jan was on holiday and I had to do it."}, format="json")
    assert response.status_code == 201, response.json()
    assert fresh(mutation).status == "awaiting_manager_response"

    manager = APIClient()
    manager.force_authenticate(org.mona_user)
    assert [r["id"] for r in manager.get("/api/access/inbox/").json()] == [manager_request(mutation).pk]
    response = manager.post(f"/api/access/requests/{manager_request(mutation).pk}/answer/",
                            {"approved": False, "comment": "Jan's deputy was in."}, format="json")
    assert response.status_code == 201, response.json()
    mutation = fresh(mutation)
    assert mutation.status == "advisory_report_generated"
    assert statuses(mutation)[-2:] == ["rejected_manager_denied", "advisory_report_generated"]
    assert mutation.reports.get().recommendation == "reject_investigate"
    # A second answer is refused.
    again = manager.post(f"/api/access/requests/{manager_request(mutation).pk}/answer/",
                         {"approved": True, "comment": "Changed my mind."}, format="json")
    assert again.status_code == 409


def test_a_claim_the_records_contradict_is_rejected(org, submit, client):
    mutation = submit()
    response = answer_as_employee(client, mutation, claim_type="vacation_cover", colleague=org.kees.pk,
                                  period_start="2025-11-09", period_end="2025-11-12")
    assert response.status_code == 200
    mutation = fresh(mutation)
    assert mutation.status == "advisory_report_generated"
    assert statuses(mutation)[-2:] == ["rejected_invalid_claim", "advisory_report_generated"]
    claim = mutation.requests.get().claim
    assert claim.validation_status == "invalid"
    assert "no approved vacation on 2025-11-10" in claim.validation["message"]
    assert mutation.reports.get().recommendation == "reject_investigate"
    assert not mutation.requests.filter(kind="manager_validation").exists()


def test_a_tool_failing_three_times_ends_in_manual_intervention_with_a_report(org, submit, api):
    mutation = submit(changed_by=org.kees, system=org.payroll, access_level=org.write, field_changed="Salary band")
    mutation = fresh(mutation)
    assert statuses(mutation) == ["investigation_started", "manual_intervention_required", "advisory_report_generated"]
    failing = AgentCall.objects.filter(run__case=mutation.case, kind="tool", name="check_authorization")
    assert failing.count() == 3 and set(failing.values_list("status", flat=True)) == {"error"}
    replies = AgentMessage.objects.filter(case=mutation.case, action="check_rights_result").order_by("id")
    assert [(r.status, r.error["attempt"], r.error["retries_left"]) for r in replies] == [
        ("error", 1, 2), ("error", 2, 1), ("error", 3, 0)]
    assert "registry of Payroll is unavailable" in replies[0].error["message"]
    report = mutation.reports.get()
    assert (report.kind, report.recommendation) == ("manual_intervention", "manual_intervention")
    assert any("Rights check failed 3 times" in line for line in report.details)
    body = api.get(f"/api/access/mutations/{mutation.case.reference}/").json()
    assert body["report"]["kind"] == "manual_intervention"


def test_an_explanation_no_record_can_confirm_is_rejected_as_an_invalid_claim(org, submit, client, alice):
    """Issue 13 (seed 002, section 5): a claim is valid only if the records support it, so an
    "other" explanation is Rejected - Invalid User Claim and the investigator decides. Issue
    22: but no record contradicts it, and the claim and the move say so: no record could
    verify it (before, it read "Contradicted by the records")."""
    mutation = submit()
    response = answer_as_employee(client, mutation, claim_type="other",
                                  explanation="My admin access should still be valid; I did it for the incident.")
    assert response.status_code == 200
    mutation = fresh(mutation)
    assert statuses(mutation)[-2:] == ["rejected_invalid_claim", "advisory_report_generated"]
    assert not mutation.requests.filter(kind="manager_validation").exists()
    claim = mutation.requests.get(kind="employee_clarification").claim
    assert (claim.validation_status, claim.get_validation_status_display()) == (
        "unverifiable", "No record could verify it")
    why = claim.validation["message"]
    assert why.startswith("Not verified: no record could verify it")
    assert "The rights check found: A2 (Admin on FinanceApp) ended on 2024-12-31" in why
    rejected = AuditEntry.objects.filter(case_id=mutation.case_id, action="access.status_changed",
                                         data__to="rejected_invalid_claim").get()
    # The status history says the verdict, not the absence details behind it (special-category).
    assert rejected.data["reason"] == "No record could verify the employee's claim (the details are on the Answers tab)."
    report = mutation.reports.get()
    assert report.recommendation == "reject_investigate"
    assert "No record could verify the employee's explanation." in report.summary
    assert "contradicted" not in report.summary
    # The investigator decides, overriding the recommendation.
    client.force_login(alice)
    client.post(f"/access/cases/{mutation.case.reference}/decide/",
                {"outcome": "accepted", "reason": "Confirmed by phone: an approved incident change."})
    assert fresh(mutation).case.decisions.get().outcome == "accepted"
    assert fresh(mutation).status == "decided"
    decided = AuditEntry.objects.get(case_id=mutation.case_id, action="access.decided")
    assert decided.data["overrides_recommendation"] is True


def test_a_rights_check_contradicting_its_tool_is_retried_then_escalated(org, submit, monkeypatch):
    honest = OFFLINE_ANALYSTS["access_rights_check"]

    def lying(data, messages=None):
        answer = honest(data, messages)
        if isinstance(answer, dict):
            answer["authorized"] = True
        return answer

    monkeypatch.setitem(OFFLINE_ANALYSTS, "access_rights_check", lying)
    mutation = fresh(submit())
    replies = AgentMessage.objects.filter(case=mutation.case, action="check_rights_result")
    assert replies.count() == 3
    assert all("concluded authorized=True but check_authorization found authorized=False" in r.error["message"]
               for r in replies)
    assert "approved" not in statuses(mutation)
    assert statuses(mutation)[:2] == ["investigation_started", "manual_intervention_required"]


def test_an_investigator_taking_over_withdraws_the_link(org, submit, client, alice):
    mutation = submit()
    path = employee_link(mutation)
    client.force_login(alice)
    response = client.post(f"/access/cases/{mutation.case.reference}/decide/",
                           {"outcome": "rejected", "reason": "Priya confirmed by phone it was a mistake."})
    assert response.status_code == 302
    mutation = fresh(mutation)
    assert mutation.case.status == "closed"
    assert mutation.status == "decided"  # issue 22: a person decided; nothing failed
    client.logout()
    refused = client.get(path)
    assert refused.status_code == 410
    assert b"withdrawn" in refused.content


def test_closing_through_the_generic_close_form_also_withdraws_requests(org, submit, client, alice):
    mutation = submit()
    client.force_login(alice)
    client.post(f"/cases/{mutation.case.reference}/close/", {"outcome": "manual", "reason": "Handled by phone."})
    mutation = fresh(mutation)
    assert mutation.case.status == "closed"
    assert mutation.status == "decided"
    assert InfoRequest.objects.get(mutation=mutation).cancelled_at is not None
