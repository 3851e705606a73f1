"""Requests for information: the employee is asked to explain, then their manager to approve."""

from __future__ import annotations

from collections.abc import Callable

from agents.models import AgentCall
from casework.access.agents.claim_check import claim_row, current_claim
from casework.access.agents.flow import Flow, Step, facts, investigation_context
from casework.access.agents.prompts import IA, REQUEST_INFO
from casework.access.agents.tools import employee_row


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
            if failed is not None and failed.error_type == "ApprovalDenied":
                return failed.error, "approval_denied"  # a person said no: not retried (retry_schedule)
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
        if to == "awaiting_user_response":
            # "Awaiting" rests on the email's acceptance (casework.access.signals): queued until then,
            # unless the email's outcome (accepted or failed) has moved the change already.
            flow.reload()
            if flow.status == "clarification_requested":
                flow.transition("user_request_queued", f"The request to {request.recipient.name} is written and "
                                f"the email with the signed link is queued (request #{request.pk}).")
        else:
            # The manager's request is in their Casework inbox from now on (and also emailed).
            flow.transition(to, f"{request.recipient.name} has the request in their inbox (request #{request.pk}).")
        return {"request_id": request.pk, "recipient": request.recipient.employee_id,
                "expires_at": request.expires_at.isoformat() if request.expires_at else None}

    return done


def _clarification_input(flow: Flow) -> dict:
    check = flow.mutation.rights_checks.first()
    return {"action": "request_clarification", "mutation_id": flow.mutation.mutation_id, "context": facts(flow),
            "rights_check": {"authorized": check.authorized, "held_level": check.held_level,
                             "message": check.message} if check else None, **investigation_context(flow)}



def _manager_input(flow: Flow) -> dict:
    from django.utils import timezone

    from casework.access.guards import validator_choose

    claim = current_claim(flow)
    check = flow.mutation.rights_checks.first()
    # Who will be asked is the code's choice (send_notification applies the same rule).
    choice = validator_choose(mutation=flow.mutation, today=timezone.now().date())
    return {"action": "request_manager_validation", "mutation_id": flow.mutation.mutation_id,
            "context": facts(flow), "claim": claim_row(claim) if claim else None,
            "manager": employee_row(flow.mutation.manager) if flow.mutation.manager else None,
            "validator": {**employee_row(choice.validator), "role": choice.role} if choice.validator else None,
            "rights_check": {"authorized": check.authorized, "message": check.message} if check else None,
            **investigation_context(flow)}



REQUEST_CLARIFICATION = Step(
    name="request_clarification", label="Request for information (employee)", agent=REQUEST_INFO, sender=IA,
    action="request_clarification", reply="notification_sent",
    needed=lambda f: f.status == "clarification_requested",
    build=_clarification_input, accept=_request_accept("employee_clarification"),
    done=_request_done("employee_clarification", "awaiting_user_response"),
)
REQUEST_MANAGER = Step(
    name="request_manager_validation", label="Request for information (manager)", agent=REQUEST_INFO, sender=IA,
    action="request_manager_validation", reply="notification_sent",
    needed=lambda f: f.status == "manager_verification_requested",
    build=_manager_input, accept=_request_accept("manager_validation"),
    done=_request_done("manager_validation", "awaiting_manager_response"),
)
