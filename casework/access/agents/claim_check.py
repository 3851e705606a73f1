"""The claim check (seed 002, section 5): is the employee's explanation supported by the
sick-leave and vacation records? The agent reads the records and explains; code decides
(casework.access.guards.claim_verdict). Valid goes to the manager, anything else to
Rejected - Invalid User Claim."""

from __future__ import annotations

from casework.access.agents.flow import Flow, Step, facts, investigation_context, thread_correlation
from casework.access.agents.prompts import CASEWORK, IA, REQUEST_INFO


def current_claim(flow: Flow):
    from casework.access.models import EmployeeClaim

    return (EmployeeClaim.objects.filter(request__mutation=flow.mutation).select_related("colleague", "request")
            .order_by("-submitted_at").first())


def claim_row(claim) -> dict:
    return {"claim_type": claim.claim_type, "claim_type_label": claim.get_claim_type_display(),
            "colleague_id": claim.colleague.employee_id if claim.colleague else None,
            "colleague_name": claim.colleague.name if claim.colleague else None,
            "period_start": claim.period_start.isoformat() if claim.period_start else None,
            "period_end": claim.period_end.isoformat() if claim.period_end else None,
            "explanation": claim.explanation, "submitted_at": claim.submitted_at.isoformat(),
            "validation": claim.validation_status, "validation_detail": claim.validation}


def _validate_input(flow: Flow) -> dict:
    claim = current_claim(flow)
    return {"action": "validate_claim", "mutation_id": flow.mutation.mutation_id,
            "change_date": flow.mutation.change_date.isoformat(), "context": facts(flow), "claim": claim_row(claim),
            **investigation_context(flow)}


def _validate_needed(flow: Flow) -> bool:
    claim = current_claim(flow)
    return flow.status == "awaiting_user_response" and claim is not None and claim.validation_status == "pending"


def _validate_accept(flow: Flow, key: str, output: dict) -> str:
    """The agent must have answered the validation (a verdict to compare with the records');
    whether the claim holds is the code's to say (_validate_done)."""
    if output.get("claim_status") not in ("valid", "invalid", "unverifiable"):
        return "The claim validation gave no verdict (valid, invalid or unverifiable)."
    return ""


VERDICT_REASONS = {
    "valid": "The records confirm the employee's claim (the details are on the Answers tab).",
    "invalid": "The records do not confirm the employee's claim (the details are on the Answers tab).",
    "unverifiable": "No record could verify the employee's claim (the details are on the Answers tab).",
}


def _validate_done(flow: Flow, key: str, output: dict) -> dict:
    """Record the claim's status as the records decide it (casework.access.guards.claim_verdict),
    whatever the agent concluded; where they differ, the override is recorded on the case.
    Valid goes to the manager; anything else is Rejected - Invalid User Claim, its reason
    saying what happened (a record contradicts it, no record covers it, or no record could
    verify it)."""
    from casework.access.guards import claim_verdict, guard_override_record
    from casework.access.services import claim_record_validation

    claim = current_claim(flow)
    verdict = claim_verdict(claim=claim, mutation=flow.mutation)
    agent_status = output["claim_status"]
    claim_record_validation(claim=claim, status=verdict.status, result={
        "checks": verdict.checks, "cited_records": verdict.cited_records, "message": verdict.message,
        "decided_by": "records", "agent_status": agent_status, "agent_message": output.get("message", "")[:2000],
        "agent_cited_records": output.get("cited_records", []), "overridden": agent_status != verdict.status,
        "run_id": flow.run_id, "call_key": key})
    # The verdict's message names the absence the records show (special-category): it stays in
    # the claim's validation, encrypted and masked; the status history, the override record and
    # the audit trail, which everyone who sees the case reads, get the verdict without it.
    reason = VERDICT_REASONS[verdict.status]
    if agent_status != verdict.status:
        guard_override_record(case=flow.mutation.case, obj=claim, guard="claim_validity", agent_said=agent_status,
                              code_says=verdict.status, reason=reason)
    if verdict.status == "valid":
        flow.transition("manager_verification_requested", reason)
    else:
        flow.transition("rejected_invalid_claim", reason)
    return {"claim_status": verdict.status, "message": verdict.message, "cited_records": verdict.cited_records,
            "agent_status": agent_status}



VALIDATE_CLAIM = Step(
    name="validate_claim", label="Claim validation", agent=REQUEST_INFO, sender=CASEWORK,
    action="user_response_received", reply="clarification_response", reply_to=IA,
    needed=_validate_needed, build=_validate_input, accept=_validate_accept, done=_validate_done,
    correlation=thread_correlation("employee_clarification"),
)
