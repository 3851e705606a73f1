"""The investigation's status machine, in one place (seed 003: Investigation.status).

    Pending -> In progress -> Completed       (the planner finished; the agents recommend)
                           -> Inconclusive    (the context could not be loaded: nothing was learned)
                           -> Timed out  -> In progress (resumed)
                           -> Stopped at the step limit -> In progress (resumed, with a fresh budget)
                           -> Failed     -> In progress (resumed)
    Pending -> Failed (the run failed before its first step)

The seed knows PENDING, IN_PROGRESS, COMPLETED, FAILED and TIMED_OUT. Its completion node
calls an investigation whose context could not be loaded COMPLETED, at LOW severity with
confidence 0: a state that says more than happened (it lowered the case's priority and
counted as the agents saying "not fraud"). Here it ends INCONCLUSIVE: no severity is
claimed, the priority is left alone, and the dashboard counts no recommendation for it.

The seed routes the planner step that reaches max_steps to completion, which read "Completed,
LOW" even when no tool had run, counted as the agents saying "not fraud" and could not be
resumed. Here it ends STOPPED: the planner did not complete, what it found is kept, a severity
is claimed only if something was analysed (Investigation.assessed_severity), and it resumes.

Completed and Inconclusive are where the agents stop: a person decides the case from there,
and no person's "Resume" runs them again. Only the system moves them, back to In progress,
when a rule hit that joins the case raises the stakes (a larger amount than any the
investigation assessed, or a block rule): the investigation is re-assessed on that
transaction (casework.transactions.reassess), a new round of the planner whose findings
cover it. Failed, Timed out and Stopped are resumed (a person's "Resume", or the system
re-running the pipeline), and finished tools are never run again. Every write of Investigation.status goes through
`investigation_transition` (the shared lifecycle_transition over TXN_LIFECYCLE), which
checks the move, audits it and brings the shared case's status along.
"""

from __future__ import annotations

from django.db import models

from casework.cases.lifecycle.table import AGENT, PERSON, SYSTEM, Lifecycle, State, move


class InvestigationStatus(models.TextChoices):
    PENDING = "PENDING", "Pending"
    IN_PROGRESS = "IN_PROGRESS", "In progress"
    COMPLETED = "COMPLETED", "Completed"
    INCONCLUSIVE = "INCONCLUSIVE", "Inconclusive"
    FAILED = "FAILED", "Failed"
    TIMED_OUT = "TIMED_OUT", "Timed out"
    STOPPED = "STOPPED", "Stopped at the step limit"


S = InvestigationStatus
# The planner may still be working (the case page follows these live).
ACTIVE = (S.PENDING, S.IN_PROGRESS)
# A run of the pipeline picks these up again from their saved state.
RESUMABLE = (S.FAILED, S.TIMED_OUT, S.STOPPED)
# The agents are done (unless a joined hit raises the stakes); a person decides the case.
FINAL = (S.COMPLETED, S.INCONCLUSIVE)

MEANINGS = {
    S.PENDING: "Queued: the planner has not started.",
    S.IN_PROGRESS: "The planner is choosing tools and running them, one step at a time.",
    S.COMPLETED: "The planner finished with a severity, a confidence and recommendations; an investigator "
                 "decides. A joined hit that raises the stakes re-assesses it.",
    S.INCONCLUSIVE: "The transaction's context could not be loaded, so nothing was analysed: no severity, "
                    "no recommendation. An investigator looks at it by hand.",
    S.FAILED: "The run failed (an error, or writing the results failed); what was found so far is kept. "
              "Resume it.",
    S.TIMED_OUT: "The investigation timeout stopped it; what was found so far is kept. Resume it.",
    S.STOPPED: "The planner reached its step limit before it completed: what was found so far is kept (a "
               "severity only if something was analysed; never a recommendation of \"not fraud\"). Resume it "
               "with a fresh step budget.",
}

# Where each status puts the shared case in the queue. Failed, timed-out and inconclusive
# investigations need a person's work, so the case stays in the working part of the queue;
# only a completed one, which carries the agents' recommendations, awaits a decision.
CASE_STATUS = {
    S.PENDING: "new",
    S.IN_PROGRESS: "in_progress",
    S.COMPLETED: "awaiting_decision",
    S.INCONCLUSIVE: "in_progress",
    S.FAILED: "in_progress",
    S.TIMED_OUT: "in_progress",
    S.STOPPED: "in_progress",
}

TXN_LIFECYCLE = Lifecycle(
    key="transaction_investigation",
    label="Transaction investigation (seed 003)",
    record="transactions.Investigation",
    field="status",
    initial=S.PENDING,
    audit_action="txn.investigation_status_changed",
    # No state is a dead end: even a completed investigation is re-assessed by the system (below).
    states=tuple(State(str(s), s.label, MEANINGS[s], CASE_STATUS[s]) for s in S),
    transitions=tuple(
        move(S.PENDING, S.IN_PROGRESS, AGENT, SYSTEM, note="the planner's run started")
        + move(S.IN_PROGRESS, S.COMPLETED, AGENT, note="the planner completed, with recommendations")
        + move(S.IN_PROGRESS, S.INCONCLUSIVE, AGENT, note="the context could not be loaded")
        + move(S.IN_PROGRESS, S.TIMED_OUT, AGENT, SYSTEM, note="the investigation timeout")
        + move(S.IN_PROGRESS, S.STOPPED, AGENT, SYSTEM, note="the step limit came before the planner completed")
        + move([S.PENDING, S.IN_PROGRESS], S.FAILED, AGENT, SYSTEM, note="the run failed")
        + move(RESUMABLE, S.IN_PROGRESS, PERSON, SYSTEM, note="resumed from the saved state")
        + move(FINAL, S.IN_PROGRESS, SYSTEM, note="a joined rule hit raised the stakes: re-assessed on it")
    ),
)


def investigation_transition(*, actor, investigation, to: str, reason: str = "", data: dict | None = None,
                             save: tuple[str, ...] = ()):
    """Move an investigation to `to`, or refuse (a Conflict naming both states, 409 in the API):
    the shared lifecycle_transition over TXN_LIFECYCLE. `save` names other fields set on
    `investigation` to write in the same UPDATE."""
    from casework.cases.lifecycle.services import lifecycle_transition

    return lifecycle_transition(actor=actor, lifecycle=TXN_LIFECYCLE, record=investigation, to=to, reason=reason,
                                data=data, save=save)
