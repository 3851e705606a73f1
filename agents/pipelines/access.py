"""Access changes (seed 002): investigation orchestrator -> rights check -> request for
information (the employee, then their manager) -> advisory report.

One pipeline, three modes, one per stretch of work between two people:

  investigate     orchestrator (lookup_data) -> rights check (check_authorization)
                  -> authorised: Approved -> advisory report
                  -> not: Clarification Requested -> request for information sends the
                     employee a signed link (send_notification) -> Awaiting User Response.
                     The run ends WAITING; nothing sleeps.
  validate_claim  enqueued when the employee answers: request for information checks the
                  claim against sick leave and vacation (lookup_data) -> invalid: Rejected -
                  Invalid User Claim -> advisory report; valid: Manager Verification
                  Requested -> the manager is asked (send_notification) -> Awaiting Manager
                  Response; the run ends WAITING.
  advise          enqueued when the manager answers (the answer itself moved the status to
                  Approved or Rejected - Manager Denied): advisory report.

Each step is an agent call whose validated output must also pass the step's gate (the
decision is taken from the tool's evidence, not from the model's prose). A step that fails
(agent error, tool error, failed gate) gets three attempts, each its own stage so a resumed
run repeats none that finished; after the third failure the case goes to Manual
Intervention Required and the advisory agent writes a manual-intervention report (seed 002,
"Error Handling & Retry Logic"). Every request between agents and every reply is an
AgentMessage in the seed's envelope. Status moves go through casework.access.states only.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from django.core.exceptions import ValidationError
from pydantic import BaseModel, Field

from agents.models import AgentCall, AgentRun
from agents.pipelines.access_tools import (
    CHECK_AUTHORIZATION,
    GENERATE_REPORT,
    LOOKUP_DATA,
    SEND_NOTIFICATION,
    GenerateReportArgs,
    employee_row,
    mutation_row,
)
from agents.runtime.agent import Agent
from agents.runtime.pipeline import CallSpec, Pipeline, RunContext, Stage, register_pipeline
from casework.errors import DomainError

logger = logging.getLogger(__name__)

MAX_ATTEMPTS = 3
NAME = "access"

CASEWORK = "Casework"
IA = "InvestigationAgent"
RCA = "RightsCheckAgent"
RIA = "RequestForInformationAgent"
AA = "AdvisoryAgent"
ORCHESTRATOR_ACTOR = "agent:access_orchestrator"


# --- output models ----------------------------------------------------------------------------

class OrchestratorOutput(BaseModel):
    mutation_id: str = Field(description="The mutation under investigation.")
    summary: str = Field(description="One paragraph: who changed what, for whom, on which system, at which level, when.")
    concerns: list[str] = Field(default_factory=list, description="Anything that makes the change risky, one per item.")
    next_action: Literal["check_rights"] = Field(description="The next step of the investigation.")


class RightsCheckOutput(BaseModel):
    checked: bool = Field(description="True when check_authorization returned a result.")
    authorized: bool = Field(description="Whether the changer held the needed level on the system on the day.")
    held_level: str = Field(default="", description="The highest level they held on the system that day, if any.")
    covering_references: list[str] = Field(default_factory=list, description="Authorisation or role ids that cover the change.")
    message: str = Field(description="A short explanation an investigator can read.")


class ClaimCheck(BaseModel):
    check: str = Field(description="What was checked.")
    passed: bool
    detail: str = Field(description="What the records show.")


class RequestInfoOutput(BaseModel):
    action: Literal["request_clarification", "request_manager_validation", "validate_claim"] = Field(
        description="What this call did (the action it was given).")
    notified: bool = Field(default=False, description="For a request: whether send_notification succeeded.")
    request_id: int | None = Field(default=None, description="The request send_notification returned.")
    claim_status: Literal["valid", "invalid", "unverifiable"] | None = Field(default=None, description=(
        "For validate_claim: valid when the records confirm the claim, invalid when they contradict it, "
        "unverifiable when no record can confirm or contradict it (claim type other)."))
    checks: list[ClaimCheck] = Field(default_factory=list, description="For validate_claim: each check made.")
    cited_records: list[str] = Field(default_factory=list, description=(
        "For a valid claim: the record_id values (e.g. sick_leave:12) from lookup_data that confirm it."))
    message: str = Field(description="A short explanation an investigator can read.")


# --- agents -----------------------------------------------------------------------------------

ORCHESTRATOR = Agent(
    id="access_orchestrator",
    system_prompt=(
        "You are the Investigation Agent, orchestrating the review of one HR access change. Use lookup_data to "
        "read the mutation (dataset mutation) and its audit trail, then summarise who changed what, for whom, "
        "on which system, at which access level and when, list any concerns (a change to one's own access, an "
        "admin-level change, a change outside the changer's department) and hand over to the rights check."
    ),
    output_model=OrchestratorOutput,
    tools=(LOOKUP_DATA,),
)

RIGHTS_CHECK = Agent(
    id="access_rights_check",
    system_prompt=(
        "You are the Rights Check Agent. Decide whether the employee who made the change held the access level "
        "it needed on the system on the day of the change. Call check_authorization with the changer's id, the "
        "system, the access level and the change date; you may use lookup_data for supporting evidence. Base "
        "`authorized` only on check_authorization's result. If the tool fails, say so with checked=false."
    ),
    output_model=RightsCheckOutput,
    tools=(CHECK_AUTHORIZATION, LOOKUP_DATA),
)

REQUEST_INFO = Agent(
    id="access_request_info",
    system_prompt=(
        "You are the Request for Information Agent. The input's action says what to do.\n"
        "request_clarification: call send_notification once with recipient=employee, a clear subject and a "
        "polite body explaining which change they made and that the records show they did not hold the rights "
        "for it, and asking them to explain (for instance covering for a colleague on sick leave or vacation).\n"
        "request_manager_validation: call send_notification once with recipient=manager, summarising the change, "
        "the employee's claim and what the records showed, asking them to approve or deny.\n"
        "validate_claim: check the employee's claim with lookup_data: for sick leave or vacation cover, read "
        "the colleague's sick_leave or vacation rows and employee record, and confirm that an approved absence "
        "covers the change date and that the period the employee states includes it. Answer valid (cite the "
        "record_id values that confirm it), invalid, or unverifiable when the claim type is other."
    ),
    output_model=RequestInfoOutput,
    tools=(SEND_NOTIFICATION, LOOKUP_DATA),
)

ADVISORY = Agent(
    id="access_advisory",
    system_prompt=(
        "You are the Advisory Agent. Synthesise the investigation in the input (the change, the rights check, "
        "the employee's claim and its validation, the manager's answer, any failed steps) into a report for "
        "the investigator. You may read the audit trail with lookup_data. Finish by calling generate_report: "
        "recommend accept when the change was authorised or the manager approved a claim the records "
        "confirm; reject_investigate when the claim was invalid or the manager denied it; "
        "manual_intervention when a step failed or the claim could not be checked against records."
    ),
    output_model=GenerateReportArgs,
    tools=(LOOKUP_DATA, GENERATE_REPORT),
    final_tool="generate_report",
)

SEED_NAME = {ORCHESTRATOR.id: IA, RIGHTS_CHECK.id: RCA, REQUEST_INFO.id: RIA, ADVISORY.id: AA}


# --- the flow's view of a run -----------------------------------------------------------------

class Flow:
    """A run's context plus the mutation it investigates, re-read from the database."""

    def __init__(self, ctx: RunContext):
        from casework.access.models import HRMutation

        self.ctx = ctx
        self.mutation = (HRMutation.objects.select_related("case", "changed_by", "changed_for", "system",
                                                           "access_level", "manager")
                         .get(case_id=ctx.run.case_id))
        self.state = ctx.state.setdefault("access", {"steps": {}, "processed": [], "failures": []})

    def reload(self) -> None:
        self.mutation.refresh_from_db()
        self.mutation.case.refresh_from_db()

    @property
    def run_id(self) -> int:
        return self.ctx.run.pk

    @property
    def status(self) -> str:
        return self.mutation.status

    @property
    def closed(self) -> bool:
        return self.mutation.case.is_closed

    def step(self, name: str) -> dict:
        return self.state["steps"].setdefault(name, {"status": "", "errors": []})

    def tool_results(self, key: str, tool: str) -> list[dict]:
        """The successful calls of `tool` made during the agent call `key`: arguments and result."""
        calls = AgentCall.objects.filter(run=self.ctx.run, kind=AgentCall.Kind.TOOL, key__startswith=f"{key}.",
                                         name=tool, status=AgentCall.Status.OK).order_by("id")
        return [{"arguments": c.input, "result": (c.output or {}).get("result")} for c in calls]

    def transition(self, to: str, reason: str, *, actor: str = ORCHESTRATOR_ACTOR) -> None:
        from casework.access.states import mutation_transition

        if self.status != to:
            mutation_transition(actor=actor, mutation=self.mutation, to=to, reason=reason)
        self.reload()


@dataclass(frozen=True)
class Step:
    name: str
    label: str
    agent: Agent
    sender: str
    action: str  # the request message's action
    reply: str  # the reply's action
    needed: Callable[[Flow], bool]
    build: Callable[[Flow], dict]
    # The gate: returns "" when the output is acceptable, else why not (or (why, error type)).
    accept: Callable[[Flow, str, dict], str | tuple[str, str]]
    # Writes the accepted output back; returns the reply's context.
    done: Callable[[Flow, str, dict], dict]
    # Who the reply goes to (default: the sender).
    reply_to: str = ""
    correlation: Callable[[Flow], str] | None = None


def _facts(flow: Flow) -> dict:
    m = flow.mutation
    return {"mutation": mutation_row(m), "changed_by": employee_row(m.changed_by),
            "changed_for": employee_row(m.changed_for)}


# --- orchestrate ------------------------------------------------------------------------------

def _orchestrate_accept(flow: Flow, key: str, output: dict) -> str:
    if output.get("mutation_id") != flow.mutation.mutation_id:
        return f"The orchestrator summarised mutation {output.get('mutation_id')!r}, not {flow.mutation.mutation_id}."
    return ""


def _orchestrate_done(flow: Flow, key: str, output: dict) -> dict:
    flow.state["summary"] = output.get("summary", "")
    flow.state["concerns"] = output.get("concerns", [])
    return {"summary": output.get("summary", ""), "concerns": output.get("concerns", [])}


# --- rights check -----------------------------------------------------------------------------

def _rights_input(flow: Flow) -> dict:
    m = flow.mutation
    return {"action": "check_rights", "mutation_id": m.mutation_id, "user_id": m.changed_by.employee_id,
            "system": m.system.code, "access_level": m.access_level.name, "change_date": m.change_date.isoformat(),
            "context": _facts(flow), "orchestrator_summary": flow.state.get("summary", "")}


def _matching_check(flow: Flow, key: str) -> dict | None:
    m = flow.mutation
    for call in reversed(flow.tool_results(key, "check_authorization")):
        args = call["arguments"]
        if (args.get("employee_id") == m.changed_by.employee_id and str(args.get("system", "")).lower() == m.system.code.lower()
                and str(args.get("access_level", "")).lower() == m.access_level.name.lower()
                and str(args.get("on_date")) == m.change_date.isoformat() and isinstance(call["result"], dict)):
            return call["result"]
    return None


def _rights_accept(flow: Flow, key: str, output: dict) -> str | tuple[str, str]:
    failed = AgentCall.objects.filter(run=flow.ctx.run, kind=AgentCall.Kind.TOOL, key__startswith=f"{key}.",
                                      name="check_authorization", status=AgentCall.Status.ERROR).last()
    result = _matching_check(flow, key)
    if result is None:
        if failed:
            return failed.error, "tool_error"
        return "The rights check did not call check_authorization for this change's employee, system, level and day."
    if bool(output.get("authorized")) != bool(result.get("authorized")):
        return (f"The rights check concluded authorized={output.get('authorized')} but check_authorization "
                f"found authorized={result.get('authorized')}.")
    return ""


def _rights_done(flow: Flow, key: str, output: dict) -> dict:
    from casework.access.services import rights_check_record

    result = _matching_check(flow, key)
    check = rights_check_record(mutation=flow.mutation, result=result, message=output.get("message", ""),
                                run_id=flow.run_id, call_key=key)
    covering = [r["reference"] for r in check.evidence if r.get("covers")]
    if check.authorized:
        flow.transition("approved", f"Authorised: {', '.join(covering)} covered the change.")
    else:
        flow.transition("clarification_requested",
                        f"Not authorised: {output.get('message', '')[:300] or 'no authorisation covered the change'}")
    return {"authorized": check.authorized, "held_level": check.held_level, "covering": covering,
            "message": output.get("message", "")}


# --- request for information: the employee ----------------------------------------------------

def _request_accept(kind: str) -> Callable[[Flow, str, dict], str | tuple[str, str]]:
    def accept(flow: Flow, key: str, output: dict) -> str | tuple[str, str]:
        from casework.access.models import InfoRequest

        recipient = "employee" if kind == InfoRequest.Kind.EMPLOYEE else "manager"
        sent = [c for c in flow.tool_results(key, "send_notification")
                if c["arguments"].get("recipient") == recipient
                and c["arguments"].get("mutation_id") == flow.mutation.mutation_id]
        if not sent:
            failed = AgentCall.objects.filter(run=flow.ctx.run, kind=AgentCall.Kind.TOOL, key__startswith=f"{key}.",
                                              name="send_notification", status=AgentCall.Status.ERROR).last()
            return (failed.error, "tool_error") if failed else \
                f"The request for information did not notify the {recipient}."
        if not InfoRequest.objects.filter(mutation=flow.mutation, kind=kind, answered_at__isnull=True,
                                          cancelled_at__isnull=True).exists():
            return f"No open request to the {recipient} exists after send_notification."
        return ""

    return accept


def _request_done(kind: str, to: str) -> Callable[[Flow, str, dict], dict]:
    def done(flow: Flow, key: str, output: dict) -> dict:
        from casework.access.models import AgentMessage, InfoRequest
        from casework.access.services import request_link_thread

        request = InfoRequest.objects.filter(mutation=flow.mutation, kind=kind, answered_at__isnull=True,
                                             cancelled_at__isnull=True).select_related("recipient").first()
        thread = AgentMessage.objects.filter(run_id=flow.run_id, key=f"{key}.request").first()
        if thread and not request.correlation_id:
            request_link_thread(request=request, correlation_id=thread.correlation_id,
                                actor=f"agent:{REQUEST_INFO.id}")
        flow.transition(to, f"{request.recipient.name} was notified (request #{request.pk}).")
        return {"request_id": request.pk, "recipient": request.recipient.employee_id,
                "expires_at": request.expires_at.isoformat() if request.expires_at else None}

    return done


def _clarification_input(flow: Flow) -> dict:
    check = flow.mutation.rights_checks.first()
    return {"action": "request_clarification", "mutation_id": flow.mutation.mutation_id, "context": _facts(flow),
            "rights_check": {"authorized": check.authorized, "held_level": check.held_level,
                             "message": check.message} if check else None}


# --- request for information: validating the claim --------------------------------------------

def _current_claim(flow: Flow):
    from casework.access.models import EmployeeClaim

    return (EmployeeClaim.objects.filter(request__mutation=flow.mutation).select_related("colleague", "request")
            .order_by("-submitted_at").first())


def _claim_row(claim) -> dict:
    return {"claim_type": claim.claim_type, "claim_type_label": claim.get_claim_type_display(),
            "colleague_id": claim.colleague.employee_id if claim.colleague else None,
            "colleague_name": claim.colleague.name if claim.colleague else None,
            "period_start": claim.period_start.isoformat() if claim.period_start else None,
            "period_end": claim.period_end.isoformat() if claim.period_end else None,
            "explanation": claim.explanation, "submitted_at": claim.submitted_at.isoformat(),
            "validation": claim.validation_status, "validation_detail": claim.validation}


def _validate_input(flow: Flow) -> dict:
    claim = _current_claim(flow)
    return {"action": "validate_claim", "mutation_id": flow.mutation.mutation_id,
            "change_date": flow.mutation.change_date.isoformat(), "context": _facts(flow), "claim": _claim_row(claim)}


def _validate_needed(flow: Flow) -> bool:
    claim = _current_claim(flow)
    return flow.status == "awaiting_user_response" and claim is not None and claim.validation_status == "pending"


def _validate_accept(flow: Flow, key: str, output: dict) -> str:
    """A claim the agent calls valid must cite records that really confirm it: approved
    absences of the named colleague, of the claimed kind, covering the change date."""
    from casework.access.models import SickLeave, Vacation

    claim = _current_claim(flow)
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


def _validate_done(flow: Flow, key: str, output: dict) -> dict:
    from casework.access.services import claim_record_validation

    claim = _current_claim(flow)
    status = output["claim_status"]
    claim_record_validation(claim=claim, status=status, result={
        "checks": output.get("checks", []), "cited_records": output.get("cited_records", []),
        "message": output.get("message", ""), "run_id": flow.run_id, "call_key": key})
    if status == "invalid":
        flow.transition("rejected_invalid_claim", f"Claim invalid: {output.get('message', '')[:300]}")
    else:
        flow.transition("manager_verification_requested",
                        f"Claim {status}: {output.get('message', '')[:300]}")
    return {"claim_status": status, "message": output.get("message", ""), "cited_records": output.get("cited_records", [])}


def _thread_correlation(kind: str) -> Callable[[Flow], str]:
    def correlation(flow: Flow) -> str:
        from casework.access.models import InfoRequest

        request = InfoRequest.objects.filter(mutation=flow.mutation, kind=kind).order_by("-sent_at", "-id").first()
        return request.correlation_id if request else ""

    return correlation


def _manager_input(flow: Flow) -> dict:
    claim = _current_claim(flow)
    check = flow.mutation.rights_checks.first()
    return {"action": "request_manager_validation", "mutation_id": flow.mutation.mutation_id,
            "context": _facts(flow), "claim": _claim_row(claim) if claim else None,
            "manager": employee_row(flow.mutation.manager) if flow.mutation.manager else None,
            "rights_check": {"authorized": check.authorized, "message": check.message} if check else None}


# --- advisory report --------------------------------------------------------------------------

def _advise_needed(flow: Flow) -> bool:
    return flow.status in ("approved", "rejected_invalid_claim", "rejected_manager_denied",
                           "manual_intervention_required") and not flow.mutation.reports.exists()


def _advise_input(flow: Flow) -> dict:
    from casework.access.models import ManagerVerdict

    m = flow.mutation
    check = m.rights_checks.first()
    claim = _current_claim(flow)
    verdict = ManagerVerdict.objects.filter(request__mutation=m).select_related("decided_by").order_by("-decided_at").first()
    manual = m.status == "manual_intervention_required"
    return {
        "action": "generate_advisory_report", "mutation_id": m.mutation_id, "status": m.status,
        "status_label": m.status_label, "report_kind": "manual_intervention" if manual else "standard",
        "context": _facts(flow), "orchestrator_summary": flow.state.get("summary", ""),
        "concerns": flow.state.get("concerns", []),
        "rights_check": {"authorized": check.authorized, "held_level": check.held_level, "message": check.message,
                         "covering": [r.get("reference") for r in check.evidence if r.get("covers")]} if check else None,
        "claim": _claim_row(claim) if claim else None,
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
                           details=output["details"], run_id=flow.run_id)
    flow.transition("advisory_report_generated",
                    f"{report.get_kind_display()} {report.report_id}: {report.get_recommendation_display()}",
                    actor="agent:access_advisory")
    case = flow.mutation.case
    for user in investigators_to_notify(case) if case.assignee_id else []:
        notification_send(actor="agent:access_advisory", kind="report_ready", case=case, user=user,
                          subject=f"{case.reference}: advisory report ready ({report.get_recommendation_display()})",
                          body=report.summary, url=f"/cases/{case.reference}/")
    return {"report_id": report.report_id, "recommendation": report.recommendation, "kind": report.kind}


# --- the steps of each mode -------------------------------------------------------------------

ORCHESTRATE = Step(
    name="orchestrate", label="Investigation orchestrator", agent=ORCHESTRATOR, sender=CASEWORK,
    action="investigate_mutation", reply="investigation_context",
    needed=lambda f: f.status == "investigation_started" and f.mutation.rights_checks.count() == 0,
    build=lambda f: {"action": "investigate_mutation", "mutation_id": f.mutation.mutation_id, "context": _facts(f)},
    accept=_orchestrate_accept, done=_orchestrate_done,
)
CHECK_RIGHTS = Step(
    name="rights_check", label="Rights check", agent=RIGHTS_CHECK, sender=IA, action="check_rights",
    reply="check_rights_result",
    needed=lambda f: f.status == "investigation_started" and f.step("orchestrate")["status"] == "ok",
    build=_rights_input, accept=_rights_accept, done=_rights_done,
)
REQUEST_CLARIFICATION = Step(
    name="request_clarification", label="Request for information (employee)", agent=REQUEST_INFO, sender=IA,
    action="request_clarification", reply="notification_sent",
    needed=lambda f: f.status == "clarification_requested",
    build=_clarification_input, accept=_request_accept("employee_clarification"),
    done=_request_done("employee_clarification", "awaiting_user_response"),
)
VALIDATE_CLAIM = Step(
    name="validate_claim", label="Claim validation", agent=REQUEST_INFO, sender=CASEWORK,
    action="user_response_received", reply="clarification_response", reply_to=IA,
    needed=_validate_needed, build=_validate_input, accept=_validate_accept, done=_validate_done,
    correlation=_thread_correlation("employee_clarification"),
)
REQUEST_MANAGER = Step(
    name="request_manager_validation", label="Request for information (manager)", agent=REQUEST_INFO, sender=IA,
    action="request_manager_validation", reply="notification_sent",
    needed=lambda f: f.status == "manager_verification_requested",
    build=_manager_input, accept=_request_accept("manager_validation"),
    done=_request_done("manager_validation", "awaiting_manager_response"),
)
ADVISE = Step(
    name="advise", label="Advisory report", agent=ADVISORY, sender=IA, action="generate_advisory_report",
    reply="advisory_report_result", needed=_advise_needed, build=_advise_input, accept=_advise_accept,
    done=_advise_done,
)

MODE_STEPS: dict[str, list[Step]] = {
    "investigate": [ORCHESTRATE, CHECK_RIGHTS, REQUEST_CLARIFICATION, ADVISE],
    "validate_claim": [VALIDATE_CLAIM, REQUEST_MANAGER, ADVISE],
    "advise": [ADVISE],
}


# --- the machinery: attempts as stages, settling results, escalation ---------------------------

def _key(step: Step, attempt: int) -> str:
    return f"{step.name}.{attempt}"


def _attempt_calls(step: Step, attempt: int, mode: str, ctx: RunContext) -> list[CallSpec]:
    """The call for this attempt of this step, if it is due: the first attempt when the step
    is needed now, a later one when the attempt before it failed."""
    from casework.access.services import message_send

    # Most stages are retries that are not due; tell from the run's state alone, without a
    # database read, unless a finished call is still waiting to be handled.
    state = ctx.state.get("access", {})
    info = state.get("steps", {}).get(step.name, {})
    unsettled = any(key not in state.get("processed", []) for key in ctx.results)
    if not unsettled and (info.get("status") in ("ok", "exhausted")
                          or (attempt > 1 and (info.get("status") != "failed"
                                               or len(info.get("errors", [])) != attempt - 1))):
        return []
    flow = Flow(ctx)
    _settle(flow, mode)
    if flow.closed:
        return []
    info = flow.step(step.name)
    if info["status"] in ("ok", "exhausted"):
        return []
    if attempt == 1:
        if info["status"] == "failed" or not step.needed(flow):
            return []
    elif info["status"] != "failed" or len(info["errors"]) != attempt - 1:
        return []
    key = _key(step, attempt)
    data = step.build(flow)
    message_send(case=flow.mutation.case, sender=step.sender, receiver=SEED_NAME[step.agent.id], action=step.action,
                 context={"mutation_id": flow.mutation.mutation_id, "attempt": attempt,
                          **{k: v for k, v in data.items() if k not in ("context", "action", "mutation_id")}},
                 correlation_id=step.correlation(flow) if step.correlation else "",
                 run_id=flow.run_id, key=f"{key}.request")
    return [CallSpec(key=key, agent=step.agent, input=data)]


def _settle(flow: Flow, mode: str) -> None:
    """Handle every finished attempt not yet handled: gate it, write it back, reply, and on a
    third failure escalate. Idempotent: handled keys are remembered in the run's state, and
    every write underneath is keyed or guarded by the current status."""
    for step in MODE_STEPS[mode]:
        for attempt in range(1, MAX_ATTEMPTS + 1):
            key = _key(step, attempt)
            if key in flow.ctx.results and key not in flow.state["processed"]:
                _handle(flow, step, attempt, key)
                flow.state["processed"].append(key)


def _handle(flow: Flow, step: Step, attempt: int, key: str) -> None:
    from casework.access.models import AgentMessage
    from casework.access.services import message_reply, message_send

    info = flow.step(step.name)
    entry = flow.ctx.results[key]
    request = AgentMessage.objects.filter(run_id=flow.run_id, key=f"{key}.request").first()
    if request is None:  # defensive: a run resumed from a state written before messages existed
        request = message_send(case=flow.mutation.case, sender=step.sender, receiver=SEED_NAME[step.agent.id],
                               action=step.action, context={"attempt": attempt}, run_id=flow.run_id,
                               key=f"{key}.request")
    flow.reload()
    if flow.closed:
        message_reply(request=request, action=step.reply, context={"attempt": attempt}, status="error",
                      error={"type": "case_closed", "message": "The case was closed; the result was not used."},
                      run_id=flow.run_id, key=f"{key}.reply")
        info["status"] = "exhausted"
        return
    error, error_type = entry.get("error") or "", entry.get("error_type") or ""
    reply_context: dict = {}
    if not error:
        verdict = step.accept(flow, key, entry["output"] or {})
        # A gate returns "" (accepted), why not, or (why not, error type) when a tool failed.
        error, error_type = verdict if isinstance(verdict, tuple) else (verdict, "gate" if verdict else "")
    if not error:
        try:
            reply_context = step.done(flow, key, entry["output"])
        except (DomainError, ValidationError) as exc:
            error, error_type = getattr(exc, "message", None) or "; ".join(getattr(exc, "messages", [str(exc)])), \
                "write_back"
    receiver = step.reply_to or step.sender
    if not error:
        info["status"] = "ok"
        message_reply(request=request, action=step.reply, context={"attempt": attempt, **reply_context},
                      status="success", run_id=flow.run_id, key=f"{key}.reply", receiver=receiver)
        return
    info["errors"].append({"attempt": attempt, "type": error_type, "error": error[:1000]})
    exhausted = attempt >= MAX_ATTEMPTS
    info["status"] = "exhausted" if exhausted else "failed"
    message_reply(request=request, action=step.reply, context={"attempt": attempt}, status="error",
                  error={"type": error_type, "message": error[:1000], "attempt": attempt,
                         "retries_left": MAX_ATTEMPTS - attempt},
                  run_id=flow.run_id, key=f"{key}.reply", receiver=receiver)
    logger.info("Access step %s attempt %s failed for %s: %s", step.name, attempt, flow.mutation.mutation_id, error)
    if exhausted:
        flow.state["failures"].append({"step": step.name, "label": step.label, "attempts": attempt,
                                       "errors": info["errors"]})
        if flow.status not in ("manual_intervention_required", "advisory_report_generated"):
            flow.transition("manual_intervention_required",
                            f"{step.label} failed {attempt} times; last error: {error[:300]}")


# --- prepare and finish -----------------------------------------------------------------------

def _prepare(ctx: RunContext) -> None:
    from casework.access.models import AgentMessage, InfoRequest, ManagerVerdict
    from casework.access.services import message_reply, message_send

    flow = Flow(ctx)
    mode = ctx.run.mode
    if flow.closed:
        return
    if mode == "investigate" and flow.status == "pending":
        flow.transition("investigation_started", "The investigation agent was triggered.")
    elif mode == "advise":
        verdict = (ManagerVerdict.objects.filter(request__mutation=flow.mutation)
                   .select_related("request", "decided_by").order_by("-decided_at").first())
        if verdict is None:
            return
        correlation = _thread_correlation(InfoRequest.Kind.MANAGER)(flow)
        # An event from the page, not a request waiting for a reply: delivered as it is sent.
        received = message_send(case=flow.mutation.case, sender=CASEWORK, receiver=RIA,
                                action="manager_response_received", status="success",
                                context={"mutation_id": flow.mutation.mutation_id, "approved": verdict.approved,
                                         "comment": verdict.comment},
                                correlation_id=correlation, run_id=flow.run_id, key="prepare.manager_response")
        request = AgentMessage.objects.filter(case=flow.mutation.case, action="request_manager_validation",
                                              correlation_id=correlation).first() if correlation else None
        context = {"mutation_id": flow.mutation.mutation_id, "approved": verdict.approved, "comment": verdict.comment,
                   "manager": verdict.decided_by.get_full_name() or verdict.decided_by.get_username()}
        message_reply(request=request or received, action="manager_validation_response", context=context,
                      status="success", run_id=flow.run_id, key="prepare.manager_validation_response",
                      receiver=IA)


def _finish(ctx: RunContext) -> str | None:
    flow = Flow(ctx)
    _settle(flow, ctx.run.mode)
    # The state is saved with the run's end, in the same transaction, guarded by its claim.
    flow.reload()
    if not flow.closed and flow.status in ("awaiting_user_response", "awaiting_manager_response"):
        return AgentRun.Status.WAITING
    return None


def _stages(mode: str) -> list[Stage]:
    stages = []
    for step in MODE_STEPS[mode]:
        for attempt in range(1, MAX_ATTEMPTS + 1):
            name = step.name if attempt == 1 else f"{step.name} (attempt {attempt})"
            stages.append(Stage(name, functools.partial(_attempt_calls, step, attempt, mode)))
    return stages


PIPELINE = register_pipeline(Pipeline(
    name=NAME,
    modes={mode: _stages(mode) for mode in MODE_STEPS},
    prepare=_prepare,
    finish=_finish,
    description="Access change review (seed 002): orchestrator, rights check, requests to the employee and "
                "the manager, advisory report; three attempts per step, then manual intervention.",
    agents={a.id: a for a in (ORCHESTRATOR, RIGHTS_CHECK, REQUEST_INFO, ADVISORY)},
))

# The offline analysts live beside this module; importing them here keeps them registered
# whichever module load_all imports first.
from agents.pipelines import access_offline  # noqa: E402, F401
