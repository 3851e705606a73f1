"""The flow's view of a run (the mutation it investigates, its per-step state) and the Step
a mode is made of."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from agents.models import AgentCall
from agents.runtime.agent import Agent
from agents.runtime.pipeline import RunContext
from casework.access.agents.prompts import ORCHESTRATOR_ACTOR
from casework.access.agents.tools import employee_row, mutation_row

NAME = "access"

class Flow:
    """A run's context plus the mutation it investigates, re-read from the database."""

    def __init__(self, ctx: RunContext):
        from casework.access.models import HRMutation

        self.ctx = ctx
        self.mutation = (HRMutation.objects.select_related("case", "changed_by", "changed_for", "system",
                                                           "access_level", "manager")
                         .get(case_id=ctx.run.case_id))
        self.state = ctx.state.setdefault("access", {"steps": {}, "processed": [], "failures": []})
        if "summary" not in self.state:
            # Seed 002: the investigation agent keeps its context throughout the workflow. A run
            # after the first (the employee's answer, the manager's, a retry) reads it back from
            # the orchestrator's reply on the case.
            self.state.update(orchestrator_context(self.mutation.case))

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


def orchestrator_context(case) -> dict:
    """The orchestrator's summary and concerns, from its latest successful reply on the case
    (the investigation_context message); {} before it has answered."""
    from casework.access.models import AgentMessage

    reply = (AgentMessage.objects.filter(case=case, action="investigation_context", status=AgentMessage.Status.SUCCESS)
             .order_by("-timestamp", "-id").values_list("context", flat=True).first())
    if reply is None:
        return {}
    return {"summary": str(reply.get("summary") or ""), "concerns": list(reply.get("concerns") or [])}


def investigation_context(flow: Flow) -> dict:
    """What every step after the orchestrator is given of its findings."""
    return {"orchestrator_summary": flow.state.get("summary", ""), "concerns": flow.state.get("concerns", [])}


def facts(flow: Flow) -> dict:
    m = flow.mutation
    return {"mutation": mutation_row(m), "changed_by": employee_row(m.changed_by),
            "changed_for": employee_row(m.changed_for)}


def thread_correlation(kind: str) -> Callable[[Flow], str]:
    def correlation(flow: Flow) -> str:
        from casework.access.models import InfoRequest

        request = InfoRequest.objects.filter(mutation=flow.mutation, kind=kind).order_by("-sent_at", "-id").first()
        return request.correlation_id if request else ""

    return correlation
