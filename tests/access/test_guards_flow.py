"""Issue 22, the guards in the running flow: the offline agents are replaced by ones that
give a wrong answer, and code's reading of the records stands, recorded on the case.
Transactional: the agents' tools run on their own threads and connections."""

from __future__ import annotations

from datetime import date

import pytest

from agents.llm.offline_registry import OFFLINE_ANALYSTS, tool_results
from audit.models import AuditEntry
from casework.access.models import HRMutation, InfoRequest
from tests.access.conftest import employee_link, manager_request

pytestmark = pytest.mark.django_db(transaction=True)


def fresh(mutation) -> HRMutation:
    return HRMutation.objects.select_related("case").get(pk=mutation.pk)


def overrides(mutation) -> list[dict]:
    return list(AuditEntry.objects.filter(case_id=mutation.case_id, action="access.guard_override")
                .order_by("id").values_list("data", flat=True))


def answer(client, mutation, **data):
    form = {"claim_type": "sick_leave_cover", "explanation": "Kees was ill and asked me to.", **data}
    return client.post(employee_link(mutation), form)


def lying_validation(monkeypatch, status: str, cited: list[str] | None = None):
    honest = OFFLINE_ANALYSTS["access_request_info"]

    def lying(data, messages=None):
        result = honest(data, messages)
        if data["action"] == "validate_claim" and isinstance(result, dict) and result.get("claim_status"):
            result = {**result, "claim_status": status, "cited_records": cited or [],
                      "message": f"I say {status}."}
        return result

    monkeypatch.setitem(OFFLINE_ANALYSTS, "access_request_info", lying)


def test_a_claim_the_model_calls_valid_is_rejected_when_the_records_contradict_it(org, submit, client, monkeypatch,
                                                                                  alice):
    lying_validation(monkeypatch, "valid", cited=[f"sick_leave:{org.sick.pk}"])
    mutation = submit()
    # A vacation claimed; the records hold a sick leave on the day.
    answer(client, mutation, claim_type="vacation_cover", colleague=org.kees.pk, period_start="2025-11-09",
           period_end="2025-11-12")
    mutation = fresh(mutation)
    assert mutation.status == "advisory_report_generated"
    assert not mutation.requests.filter(kind="manager_validation").exists()
    claim = mutation.requests.get().claim
    assert claim.validation_status == "invalid"
    assert claim.validation["agent_status"] == "valid" and claim.validation["overridden"] is True
    assert f"the records show a sick leave instead: sick_leave:{org.sick.pk}" in claim.validation["message"]
    (override,) = overrides(mutation)
    assert (override["guard"], override["agent_said"], override["code_says"]) == ("claim_validity", "valid", "invalid")
    client.force_login(alice)
    page = client.get(f"/cases/{mutation.case.reference}/").content.decode()
    assert 'id="override-claim_validity"' in page and 'id="claim-override"' in page


def test_a_claim_the_model_calls_invalid_goes_to_the_manager_when_the_records_confirm_it(org, submit, client,
                                                                                         monkeypatch):
    lying_validation(monkeypatch, "invalid")
    mutation = submit()
    answer(client, mutation, colleague=org.kees.pk, period_start="2025-11-09", period_end="2025-11-12")
    mutation = fresh(mutation)
    assert mutation.status == "awaiting_manager_response"
    claim = mutation.requests.get(kind="employee_clarification").claim
    assert claim.validation_status == "valid"
    assert claim.validation["cited_records"] == [f"sick_leave:{org.sick.pk}"]
    assert [o["code_says"] for o in overrides(mutation)] == ["valid"]


def test_an_other_explanation_the_model_calls_invalid_reads_no_record_could_verify_it(org, submit, client,
                                                                                      monkeypatch):
    lying_validation(monkeypatch, "invalid")
    mutation = submit()
    answer(client, mutation, claim_type="other", explanation="It was an emergency.")
    mutation = fresh(mutation)
    claim = mutation.requests.get().claim
    assert claim.validation_status == "unverifiable"
    assert [o["code_says"] for o in overrides(mutation)] == ["unverifiable"]


def test_an_advisory_accept_on_a_denied_change_is_replaced_and_not_preselected(org, submit, client, monkeypatch,
                                                                               alice):
    honest = OFFLINE_ANALYSTS["access_advisory"]

    def accepting(data, messages=None):
        result = honest(data, messages)
        for call in result if isinstance(result, list) else []:
            if call["name"] == "generate_report":
                call["arguments"] = {**call["arguments"], "recommendation": "accept"}
        return result

    monkeypatch.setitem(OFFLINE_ANALYSTS, "access_advisory", accepting)
    mutation = submit()
    answer(client, mutation, colleague=org.kees.pk, period_start="2025-11-09", period_end="2025-11-12")
    client.force_login(org.mona_user)
    client.post(f"/access/inbox/{manager_request(mutation).pk}/", {"decision": "deny", "comment": "No."})
    mutation = fresh(mutation)
    report = mutation.reports.get()
    assert report.recommendation == "reject_investigate"
    assert any("code changed it to Reject / Investigate: the manager denied the change" in d for d in report.details)
    assert [(o["guard"], o["agent_said"]) for o in overrides(mutation)] == [("recommendation", "accept")]
    client.force_login(alice)
    page = client.get(f"/cases/{mutation.case.reference}/").content.decode()
    assert 'value="rejected" checked' in page and 'value="accepted" required checked' not in page


def test_an_absent_manager_is_passed_over_in_the_running_flow(org, submit, client, mark):
    from casework.access.models import Vacation

    Vacation.objects.create(employee=org.mona, start_date=date(2025, 11, 10), end_date=date(2025, 11, 10))
    org.finance.fallback_approver = org.mark
    org.finance.save()
    mutation = submit()
    answer(client, mutation, colleague=org.kees.pk, period_start="2025-11-09", period_end="2025-11-12")
    mutation = fresh(mutation)
    assert mutation.status == "awaiting_manager_response"
    request = InfoRequest.objects.get(mutation=mutation, kind="manager_validation")
    assert request.recipient == org.mark
    assert "As their fallback approver for FinanceApp" in request.body
    client.force_login(mark)
    client.post(f"/access/inbox/{request.pk}/", {"decision": "approve", "comment": "I covered Mona's team."})
    assert fresh(mutation).reports.get().recommendation == "accept"


# --- issue 43: the investigation's context across runs; the manual-intervention report ------------

def recording(monkeypatch, agent_id: str) -> list[dict]:
    """The inputs the offline analyst `agent_id` is given, in order (it still answers honestly)."""
    honest = OFFLINE_ANALYSTS[agent_id]
    seen: list[dict] = []

    def listening(data, messages=None):
        if not tool_results(messages):  # the call's first turn
            seen.append(data)
        return honest(data, messages)

    monkeypatch.setitem(OFFLINE_ANALYSTS, agent_id, listening)
    return seen


def test_the_orchestrators_summary_and_concerns_reach_the_later_runs(org, submit, client, monkeypatch):
    """Seed 002: the investigation agent "maintains investigation context throughout workflow";
    the claim-validation and advisory runs saw an empty summary and no concerns."""
    request_info, advisory = recording(monkeypatch, "access_request_info"), recording(monkeypatch, "access_advisory")
    mutation = submit(changed_for=org.priya)  # Priya changes her own access
    answer(client, mutation, colleague=org.kees.pk, period_start="2025-11-09", period_end="2025-11-12")
    client.force_login(org.mona_user)
    client.post(f"/access/inbox/{manager_request(mutation).pk}/", {"decision": "approve", "comment": "Fine."})
    mutation = fresh(mutation)
    own = "Priya Patel changed their own access."
    by_action = {d["action"]: d for d in request_info}
    assert set(by_action) == {"request_clarification", "validate_claim", "request_manager_validation"}
    for data in [*by_action.values(), *advisory]:  # three runs: investigate, validate_claim, advise
        assert data["orchestrator_summary"].startswith("Priya Patel (u001"), data["action"]
        assert own in data["concerns"], data["action"]
    assert f"Concern: {own}" in mutation.reports.get().details


def test_a_retried_step_and_the_manual_intervention_report_keep_the_context(org, submit, monkeypatch):
    """The retries of a failing rights check run as runs of their own, and saw no summary."""
    rights = recording(monkeypatch, "access_rights_check")
    advisory = recording(monkeypatch, "access_advisory")
    mutation = fresh(submit(changed_by=org.kees, changed_for=org.kees, system=org.payroll, access_level=org.write))
    assert mutation.status == "advisory_report_generated"
    assert len(rights) == 3 and len(advisory) == 1
    for data in [*rights, *advisory]:
        assert data["orchestrator_summary"].startswith("Kees Bakker (u002")
    assert "Kees Bakker changed their own access." in advisory[0]["concerns"]


def _filing(monkeypatch, **arguments):
    honest = OFFLINE_ANALYSTS["access_advisory"]

    def filing(data, messages=None):
        result = honest(data, messages)
        for call in result if isinstance(result, list) else []:
            if call["name"] == "generate_report":
                call["arguments"] = {**call["arguments"], **arguments}
        return result

    monkeypatch.setitem(OFFLINE_ANALYSTS, "access_advisory", filing)


def test_a_step_that_failed_three_times_gets_a_manual_intervention_report_whatever_the_model_files(
        org, submit, monkeypatch):
    """Seed 002: after the third failure, "Generate Manual Intervention Report"; the kind was the
    model's to choose."""
    _filing(monkeypatch, report_kind="standard", recommendation="reject_investigate")
    mutation = fresh(submit(changed_by=org.kees, system=org.payroll, access_level=org.write))
    report = mutation.reports.get()
    assert (report.kind, report.recommendation) == ("manual_intervention", "manual_intervention")
    assert [(o["guard"], o["agent_said"], o["code_says"]) for o in overrides(mutation)] == [
        ("report_kind", "standard report recommending reject_investigate",
         "manual_intervention report recommending manual_intervention")]
    assert "Rights check failed 3 times" in overrides(mutation)[0]["reason"]


def test_a_finished_investigation_is_never_filed_as_a_manual_intervention_report(org, submit, monkeypatch):
    _filing(monkeypatch, report_kind="manual_intervention")
    mutation = fresh(submit(changed_by=org.kees))  # authorised through the Finance Admin role
    report = mutation.reports.get()
    assert (report.kind, report.recommendation) == ("standard", "accept")
    assert [(o["guard"], o["code_says"]) for o in overrides(mutation)] == [
        ("report_kind", "standard report recommending accept")]
