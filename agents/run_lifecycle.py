"""An agent run's statuses as a declared lifecycle (shown on /lifecycles/): how a run goes from
queued to its end, and where it waits for a person without holding a worker: "Waiting for a
person" (the next step is a new run, queued on the person's answer) and "Waiting for approval"
(the same run resumes from its saved step once a person approves, edits or denies the step:
agents.runtime.pause). The executor (agents.runtime.pipeline) writes these statuses with its
claim-guarded UPDATEs; this table says which moves exist and who makes them."""

from __future__ import annotations

from agents.models import AgentRun
from casework.cases.lifecycle import AGENT, PERSON, SYSTEM, Lifecycle, State, move

S = AgentRun.Status

MEANINGS = {
    S.QUEUED: "Waiting for a worker (or, scheduled, for its next try: a retry's backoff, a model endpoint "
              "that is down).",
    S.RUNNING: "A worker holds it (claim token, heartbeat) and makes its steps; each step is saved whole.",
    S.WAITING: "Its work is done until a person answers (an employee's explanation, a manager's verdict); the "
               "answer queues the next run.",
    S.WAITING_APPROVAL: "Stopped before a consequential tool call (one that acts outside Casework) until a "
                        "person approves it, edits its arguments or denies it; the run resumes from that step "
                        "with the answer. No worker, thread or connection waits.",
    S.APPROVAL_EXPIRED: "Nobody answered the approval within AGENT_APPROVAL_TTL_SECONDS: the call was never made.",
    S.COMPLETED: "Its plan ran to the end and every agent answered.",
    S.COMPLETED_WITH_ERRORS: "Its plan ran to the end, but at least one agent's result is an error.",
    S.FAILED: "An error that a retry cannot mend stopped it.",
    S.TIMED_OUT: "It passed RUN_TIMEOUT_SECONDS of working time; what it had is kept.",
    S.CANCELLED: "Its case was closed while it waited (for a person, an approval or its budget).",
    S.BUDGET_REACHED: "Its next model call was refused: the case's budget would not cover it (casework/budgets). "
                      "It waits on a pause of kind budget (agents.runtime.pause), holding no worker; its steps so "
                      "far are saved. A lead raises the budget (it resumes from its saved step) or stops it.",
    S.STOPPED: "A lead ended it where it waited instead of raising the budget.",
}
FINAL = {S.APPROVAL_EXPIRED, S.COMPLETED, S.COMPLETED_WITH_ERRORS, S.FAILED, S.TIMED_OUT, S.CANCELLED, S.STOPPED}

RUN_LIFECYCLE = Lifecycle(
    key="agent_run",
    label="Agent run",
    record="agents.AgentRun",
    field="status",
    initial=S.QUEUED,
    audit_action="agent.run_status",
    # case_status "": a run's status never moves its case (agents recommend; people decide).
    states=tuple(State(value, label, MEANINGS[value], final=value in FINAL) for value, label in S.choices),
    transitions=tuple(
        move(S.QUEUED, S.RUNNING, SYSTEM, note="a worker claims it")
        + move(S.RUNNING, S.QUEUED, SYSTEM, note="the model's endpoint is down, or a retry is spaced out")
        + move(S.RUNNING, S.WAITING, AGENT, SYSTEM, note="the flow now waits for a person's answer")
        + move(S.RUNNING, S.WAITING_APPROVAL, AGENT, note="an agent asked for a tool call its policy holds for a person")
        + move(S.WAITING_APPROVAL, S.QUEUED, PERSON, note="approved (as asked or edited) or denied: it resumes")
        + move(S.WAITING_APPROVAL, S.APPROVAL_EXPIRED, SYSTEM, note="nobody answered in time (the expiry sweep)")
        + move(S.RUNNING, S.BUDGET_REACHED, SYSTEM, note="a model call refused by the case's budget")
        + move(S.BUDGET_REACHED, S.QUEUED, PERSON, note="a lead raises the budget: it resumes from its last step")
        + move(S.BUDGET_REACHED, S.STOPPED, PERSON, note="a lead stops it")
        + move([S.WAITING, S.WAITING_APPROVAL, S.BUDGET_REACHED], S.CANCELLED, PERSON, SYSTEM,
               note="its case was closed")
        + [t for end in (S.COMPLETED, S.COMPLETED_WITH_ERRORS, S.FAILED, S.TIMED_OUT)
           for t in move(S.RUNNING, end, SYSTEM, note="its plan ended, or it failed or ran out of time")]
    ),
)
