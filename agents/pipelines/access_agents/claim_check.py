"""The claim check (seed 002, section 5): is the employee's explanation supported by the
sick-leave and vacation records? Valid goes to the manager, invalid to Rejected - Invalid User Claim."""

from __future__ import annotations

from agents.pipelines.access_agents.flow import Flow, Step, facts, thread_correlation
from agents.pipelines.access_agents.prompts import CASEWORK, IA, REQUEST_INFO


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
            "change_date": flow.mutation.change_date.isoformat(), "context": facts(flow), "claim": claim_row(claim)}


def _validate_needed(flow: Flow) -> bool:
    claim = current_claim(flow)
    return flow.status == "awaiting_user_response" and claim is not None and claim.validation_status == "pending"


def _validate_accept(flow: Flow, key: str, output: dict) -> str:
    """A claim the agent calls valid must cite records that really confirm it: approved
    absences of the named colleague, of the claimed kind, covering the change date."""
    from casework.access.models import SickLeave, Vacation

    claim = current_claim(flow)
    status = output.get("claim_status")
    if status not in ("valid", "invalid", "unverifiable"):
        return "The claim validation gave no verdict (valid, invalid or unverifiable)."
    if claim.claim_type == "other":
        return "" if status in ("unverifiable", "invalid") else "A claim of type other cannot be confirmed by records."
    if status == "unverifiable":
        return "A sick-leave or vacation claim can be checked against the records; it cannot be unverifiable."
    if status == "invalid":
        return ""
    model, prefix = (SickLeave, "sick_leave") if claim.claim_type == "sick_leave_cover" else (Vacation, "vacation")
    day = flow.mutation.change_date
    for ref in output.get("cited_records") or []:
        kind, _, pk = str(ref).partition(":")
        if kind != prefix or not pk.isdigit():
            continue
        record = model.objects.filter(pk=int(pk), employee=claim.colleague, status="approved").first()
        if record and record.covers(day) and claim.period_start <= day <= claim.period_end:
            return ""
    return (f"The claim was called valid, but no cited {prefix.replace('_', ' ')} record of "
            f"{claim.colleague.employee_id} covers {day} within the stated period.")


def _rights_contradictions(flow: Flow) -> list[str]:
    """What the rights check already found against the employee's own access on this system:
    grants that had ended or were revoked by the day of the change."""
    check = flow.mutation.rights_checks.first()
    if check is None or check.authorized:
        return []
    system = flow.mutation.system.code
    return [f"{row.get('reference')} ({row.get('level')} on {system}) {row.get('note')}"
            for row in check.evidence
            if row.get("source") == "direct" and row.get("system") == system
            and str(row.get("note", "")).startswith(("ended on", "revoked", "not yet valid"))]


def records_verdict(flow: Flow, claim, output: dict) -> tuple[str, str, list[dict]]:
    """The claim's status as the records decide it (seed 002, section 5): only an approved
    sick leave or vacation of the colleague on the day confirms a claim. A claim no record can
    confirm (type other) is invalid, and so is one the rights check contradicts; the message
    says exactly why. Returns (valid | invalid, message, checks)."""
    status = output["claim_status"]
    checks = list(output.get("checks") or [])
    message = output.get("message", "")
    if status == "valid":
        return status, message, checks
    if claim.claim_type == "other":
        reasons = ["no sick-leave or vacation record can confirm an explanation of another kind: only an approved "
                   "absence of a colleague covering the day of the change can"]
        checks.append({"check": "A record confirms the explanation", "passed": False, "detail": reasons[0]})
        contradictions = _rights_contradictions(flow)
        if contradictions:
            detail = "; ".join(contradictions)
            reasons.append(f"the rights check contradicts it: {detail}")
            checks.append({"check": "The employee's own access covered the change", "passed": False,
                           "detail": detail})
        message = "Claim invalid: " + "; and ".join(reasons) + "."
    return "invalid", message, checks


def _validate_done(flow: Flow, key: str, output: dict) -> dict:
    from casework.access.services import claim_record_validation

    claim = current_claim(flow)
    status, message, checks = records_verdict(flow, claim, output)
    claim_record_validation(claim=claim, status=status, result={
        "checks": checks, "cited_records": output.get("cited_records", []), "agent_status": output["claim_status"],
        "message": message, "run_id": flow.run_id, "call_key": key})
    if status == "invalid":
        flow.transition("rejected_invalid_claim", message[:1000] if message.startswith("Claim invalid")
                        else f"Claim invalid: {message[:300]}")
    else:
        flow.transition("manager_verification_requested", f"Claim valid: {message[:300]}")
    return {"claim_status": status, "message": message, "cited_records": output.get("cited_records", [])}



VALIDATE_CLAIM = Step(
    name="validate_claim", label="Claim validation", agent=REQUEST_INFO, sender=CASEWORK,
    action="user_response_received", reply="clarification_response", reply_to=IA,
    needed=_validate_needed, build=_validate_input, accept=_validate_accept, done=_validate_done,
    correlation=thread_correlation("employee_clarification"),
)
