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

from agents.models import AgentRun
from agents.runtime.pipeline import Pipeline, RunContext, Stage, register_pipeline
from casework.access.agents.flow import NAME, Flow, thread_correlation
from casework.access.agents.prompts import (
    ADVISORY,
    CASEWORK,
    IA,
    ORCHESTRATOR,
    REQUEST_INFO,
    RIA,
    RIGHTS_CHECK,
)
from casework.access.agents.retry_schedule import (
    MAX_ATTEMPTS,
    MODE_STEPS,
    attempt_calls,
    schedule_retry,
    settle,
)
from casework.access.states import WAITING

__all__ = ["ADVISORY", "MAX_ATTEMPTS", "MODE_STEPS", "NAME", "ORCHESTRATOR", "PIPELINE", "REQUEST_INFO",
           "RIGHTS_CHECK"]


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
        correlation = thread_correlation(InfoRequest.Kind.MANAGER)(flow)
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
    settle(flow, ctx.run.mode)
    # The state is saved with the run's end, in the same transaction, guarded by its claim.
    flow.reload()
    if not flow.closed and flow.status in WAITING:
        return AgentRun.Status.WAITING
    schedule_retry(flow)  # a failed step with attempts left: the next one, after its backoff
    return None


def _stages(mode: str) -> list[Stage]:
    stages = []
    for step in MODE_STEPS[mode]:
        for attempt in range(1, MAX_ATTEMPTS + 1):
            name = step.name if attempt == 1 else f"{step.name} (attempt {attempt})"
            stages.append(Stage(name, functools.partial(attempt_calls, step, attempt, mode)))
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
