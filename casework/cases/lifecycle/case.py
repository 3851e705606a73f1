"""The shared case's own lifecycle (Case.status): the queue's view of every case type.

A type's own states put the case in one of these (State.case_status), through the moves
below; only a person resolves a case, and only a person's decision closes it.
"""

from __future__ import annotations

from casework.cases.lifecycle.table import AGENT, PERSON, SYSTEM, Lifecycle, State, move

OPEN = ("new", "in_progress", "awaiting_response", "awaiting_decision")

CASE_LIFECYCLE = Lifecycle(
    key="case",
    label="Every case (the queue's status)",
    record="cases.Case",
    field="status",
    initial="new",
    audit_action="case.status_changed",
    states=(
        State("new", "New", "Opened; nobody has worked on it yet."),
        State("in_progress", "In progress", "Someone, or the agents, are working on it."),
        State("awaiting_response", "Awaiting response",
              "Waiting for a person outside the team: an employee, a manager, a customer."),
        State("awaiting_decision", "Awaiting decision",
              "The agents are done and have recommended; a person has to decide."),
        State("resolved", "Resolved", "A person marked it resolved; the decision that closes it is still to be recorded."),
        State("closed", "Closed", "A person decided, with an outcome and a reason. It reopens only when the "
              "outside world answers the decision (a customer writes back to a solved ticket): case_reopen."),
    ),
    transitions=tuple(
        move("new", "in_progress", PERSON, AGENT, SYSTEM, note="assigned, or the agents started")
        + move(["new", "in_progress", "awaiting_decision"], "awaiting_response", PERSON, AGENT, SYSTEM,
               note="a question went out to someone")
        + move(["new", "in_progress", "awaiting_response"], "awaiting_decision", PERSON, AGENT, SYSTEM,
               note="the agents finished with a recommendation")
        + move(["awaiting_response", "awaiting_decision"], "in_progress", PERSON, AGENT, SYSTEM,
               note="an answer came, or the case is worked again")
        + move(OPEN, "resolved", PERSON, note="only a person resolves")
        + move([*OPEN, "resolved"], "closed", PERSON, note="only a person's decision closes")
        + move("closed", "in_progress", PERSON, SYSTEM,
               note="reopened (case_reopen): the decision is kept, no longer final, and a new one closes it again")
    ),
)
