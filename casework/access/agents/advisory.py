"""The advisory report: the last step of every path, standard or manual intervention."""

from __future__ import annotations

from agents.models import AgentRun
from casework.access.agents.claim_check import claim_row, current_claim
from casework.access.agents.flow import NAME, Flow, Step, facts, investigation_context
from casework.access.agents.prompts import ADVISORY, IA


def _advise_needed(flow: Flow) -> bool:
    return flow.status in ("approved", "rejected_invalid_claim", "rejected_manager_denied",
                           "manual_intervention_required") and not flow.mutation.reports.exists()


def _advise_input(flow: Flow) -> dict:
    from casework.access.models import ManagerVerdict

    m = flow.mutation
    check = m.rights_checks.first()
    claim = current_claim(flow)
    verdict = ManagerVerdict.objects.filter(request__mutation=m).select_related("decided_by").order_by("-decided_at").first()
    manual = m.status == "manual_intervention_required"
    return {
        "action": "generate_advisory_report", "mutation_id": m.mutation_id, "status": m.status,
        "status_label": m.status_label, "report_kind": "manual_intervention" if manual else "standard",
        "context": facts(flow), **investigation_context(flow),
        "rights_check": {"authorized": check.authorized, "held_level": check.held_level, "message": check.message,
                         "covering": [r.get("reference") for r in check.evidence if r.get("covers")]} if check else None,
        "claim": claim_row(claim) if claim else None,
        "manager_verdict": {"approved": verdict.approved, "comment": verdict.comment,
                            "manager": verdict.decided_by.get_full_name() or verdict.decided_by.get_username()}
        if verdict else None,
        "failures": _all_failures(flow),
    }


def _all_failures(flow: Flow) -> list[dict]:
    """Failed steps of this and earlier runs on the case (a manual-intervention report names them)."""
    failures = list(flow.state.get("failures", []))
    for run in AgentRun.objects.filter(case_id=flow.ctx.run.case_id, pipeline=NAME).exclude(pk=flow.run_id):
        failures += run.state.get("access", {}).get("failures", [])
    return failures


def _advise_accept(flow: Flow, key: str, output: dict) -> str:
    if output.get("mutation_id") != flow.mutation.mutation_id:
        return f"The report is about mutation {output.get('mutation_id')!r}, not {flow.mutation.mutation_id}."
    if not flow.tool_results(key, "generate_report"):
        return "generate_report did not succeed."
    return ""


def _advise_done(flow: Flow, key: str, output: dict) -> dict:
    from casework.access.services import investigators_to_notify, notification_send, report_record

    filed = flow.tool_results(key, "generate_report")[-1]["result"]
    report = report_record(mutation=flow.mutation, report_id=filed["report_id"], kind=output["report_kind"],
                           summary=output["summary"], recommendation=output["recommendation"],
                           details=output["details"], run_id=flow.run_id, failures=_all_failures(flow))
    flow.transition("advisory_report_generated",
                    f"{report.get_kind_display()} {report.report_id}: {report.get_recommendation_display()}",
                    actor="agent:access_advisory")
    case = flow.mutation.case
    for user in investigators_to_notify(case) if case.assignee_id else []:
        notification_send(actor="agent:access_advisory", kind="report_ready", case=case, user=user,
                          subject=f"{case.reference}: advisory report ready ({report.get_recommendation_display()})",
                          body=report.summary, url=f"/cases/{case.reference}/")
    return {"report_id": report.report_id, "recommendation": report.recommendation, "kind": report.kind}



ADVISE = Step(
    name="advise", label="Advisory report", agent=ADVISORY, sender=IA, action="generate_advisory_report",
    reply="advisory_report_result", needed=_advise_needed, build=_advise_input, accept=_advise_accept,
    done=_advise_done,
)
