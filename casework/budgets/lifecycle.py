"""An agent run's lifecycle (AgentRun.status), declared so that /lifecycles/ draws it, with the
state a run waits in when its case's budget is reached and the moves out of it: a lead raises
the budget (back to the queue) or stops the run. The runtime writes the other moves
(agents/runtime/pipeline.py); this table is their declaration and the page's source."""

from __future__ import annotations

from agents.models import AgentRun
from casework.cases.lifecycle import PERSON, SYSTEM, Lifecycle, State, move

S = AgentRun.Status
MEANINGS = {
    S.QUEUED: "Waiting for a worker (or, after a breaker opened, for the model's endpoint to answer again).",
    S.RUNNING: "A worker holds it (claim token, heartbeat) and makes its calls.",
    S.WAITING: "Its agents finished; the flow waits for a person's answer, which starts the next run.",
    S.COMPLETED: "Every step done, every agent answered.",
    S.COMPLETED_WITH_ERRORS: "Every step done, but at least one agent's result is an error.",
    S.FAILED: "An error that a retry cannot mend ended it; its saved steps stay.",
    S.TIMED_OUT: "Past RUN_TIMEOUT_SECONDS; what it had is kept.",
    S.CANCELLED: "It waited (for a person or its budget) and the case was closed meanwhile.",
    S.BUDGET_REACHED: "Its next model call was refused: the case's budget would not cover it. It holds no "
                      "worker; its steps so far are saved. A lead raises the budget or stops it.",
    S.STOPPED: "A lead ended it where it waited instead of raising the budget.",
}
FINAL = {S.COMPLETED, S.COMPLETED_WITH_ERRORS, S.FAILED, S.TIMED_OUT, S.CANCELLED, S.STOPPED}

RUN_LIFECYCLE = Lifecycle(
    key="agent_run",
    label="Agent run",
    record="agents.AgentRun",
    field="status",
    initial=S.QUEUED,
    audit_action="agent.run_status",
    states=tuple(State(key, label, MEANINGS[key], final=key in FINAL) for key, label in S.choices),
    transitions=tuple(
        move(S.QUEUED, S.RUNNING, SYSTEM, note="a worker claims it")
        + move(S.RUNNING, S.QUEUED, SYSTEM, note="the model's endpoint is down: it waits for the breaker's next try")
        + move(S.RUNNING, S.COMPLETED, SYSTEM) + move(S.RUNNING, S.COMPLETED_WITH_ERRORS, SYSTEM)
        + move(S.RUNNING, S.WAITING, SYSTEM)
        + move(S.RUNNING, S.FAILED, SYSTEM) + move(S.RUNNING, S.TIMED_OUT, SYSTEM)
        + move(S.RUNNING, S.BUDGET_REACHED, SYSTEM, note="a model call refused by the case's budget")
        + move(S.BUDGET_REACHED, S.QUEUED, PERSON, note="a lead raises the budget: it resumes from its last step")
        + move(S.BUDGET_REACHED, S.STOPPED, PERSON, note="a lead stops it")
        + move([S.WAITING, S.BUDGET_REACHED], S.CANCELLED, PERSON, note="the case was closed")
    ),
)
