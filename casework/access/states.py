"""The access-change status machine, in one place (seed 002, "Status Flow Diagram").

    Pending -> Investigation Started -> Approved ---------------------------> Advisory Report Generated
                                     -> Clarification Requested -> Awaiting User Response
                                           -> Rejected - Invalid User Claim ----------------^
                                           -> Manager Verification Requested -> Awaiting Manager Response
                                                 -> Approved / Rejected - Manager Denied ---^
                                     -> Manual Intervention Required ---------------------^

The seed draws the error/escalation edge only from Investigation Started; every later step
can fail too (a tool failing three times in claim validation, the advisory agent failing),
and an investigator can take a case over while it waits for a person, so every working
state may also go to Manual Intervention Required. Nothing else is allowed:
`mutation_transition` refuses any other move with a Conflict and audits every one it makes.

Each status maps onto the shared Case.status so the investigators' queue shows where an
access change stands (waiting for a person -> awaiting_response, report ready -> awaiting_decision: the
agents are done and the investigator decides; only a person's decision closes the case).
"""

from __future__ import annotations

from django.db import models

from casework.cases.lifecycle.table import AGENT, PERSON, SYSTEM, Lifecycle, State, move


class AccessStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    INVESTIGATION_STARTED = "investigation_started", "Investigation Started"
    APPROVED = "approved", "Approved"
    CLARIFICATION_REQUESTED = "clarification_requested", "Clarification Requested"
    AWAITING_USER_RESPONSE = "awaiting_user_response", "Awaiting User Response"
    REJECTED_INVALID_CLAIM = "rejected_invalid_claim", "Rejected - Invalid User Claim"
    MANAGER_VERIFICATION_REQUESTED = "manager_verification_requested", "Manager Verification Requested"
    AWAITING_MANAGER_RESPONSE = "awaiting_manager_response", "Awaiting Manager Response"
    REJECTED_MANAGER_DENIED = "rejected_manager_denied", "Rejected - Manager Denied"
    MANUAL_INTERVENTION_REQUIRED = "manual_intervention_required", "Manual Intervention Required"
    ADVISORY_REPORT_GENERATED = "advisory_report_generated", "Advisory Report Generated"


S = AccessStatus
MANUAL = S.MANUAL_INTERVENTION_REQUIRED

# from -> the statuses it may move to. Nothing else is a legal move.
TRANSITIONS: dict[str, frozenset[str]] = {
    S.PENDING: frozenset({S.INVESTIGATION_STARTED}),
    S.INVESTIGATION_STARTED: frozenset({S.APPROVED, S.CLARIFICATION_REQUESTED, MANUAL}),
    S.CLARIFICATION_REQUESTED: frozenset({S.AWAITING_USER_RESPONSE, MANUAL}),
    S.AWAITING_USER_RESPONSE: frozenset({S.REJECTED_INVALID_CLAIM, S.MANAGER_VERIFICATION_REQUESTED, MANUAL}),
    S.MANAGER_VERIFICATION_REQUESTED: frozenset({S.AWAITING_MANAGER_RESPONSE, MANUAL}),
    S.AWAITING_MANAGER_RESPONSE: frozenset({S.APPROVED, S.REJECTED_MANAGER_DENIED, MANUAL}),
    S.APPROVED: frozenset({S.ADVISORY_REPORT_GENERATED, MANUAL}),
    S.REJECTED_INVALID_CLAIM: frozenset({S.ADVISORY_REPORT_GENERATED, MANUAL}),
    S.REJECTED_MANAGER_DENIED: frozenset({S.ADVISORY_REPORT_GENERATED, MANUAL}),
    MANUAL: frozenset({S.ADVISORY_REPORT_GENERATED}),
    S.ADVISORY_REPORT_GENERATED: frozenset(),
}

# Where each access status puts the shared case in the queue.
CASE_STATUS = {
    S.PENDING: "new",
    S.INVESTIGATION_STARTED: "in_progress",
    S.APPROVED: "in_progress",
    S.CLARIFICATION_REQUESTED: "in_progress",
    S.AWAITING_USER_RESPONSE: "awaiting_response",
    S.REJECTED_INVALID_CLAIM: "in_progress",
    S.MANAGER_VERIFICATION_REQUESTED: "in_progress",
    S.AWAITING_MANAGER_RESPONSE: "awaiting_response",
    S.REJECTED_MANAGER_DENIED: "in_progress",
    # A person has to act: it stays in the working part of the queue.
    MANUAL: "in_progress",
    S.ADVISORY_REPORT_GENERATED: "awaiting_decision",
}

# Waiting for a person (the run that got here ends WAITING).
WAITING = frozenset({S.AWAITING_USER_RESPONSE, S.AWAITING_MANAGER_RESPONSE})
# Agents are at work; the case page follows these live.
WORKING = frozenset({S.PENDING, S.INVESTIGATION_STARTED, S.APPROVED, S.CLARIFICATION_REQUESTED,
                     S.REJECTED_INVALID_CLAIM, S.MANAGER_VERIFICATION_REQUESTED, S.REJECTED_MANAGER_DENIED})
# The advisory agent writes a report from these.
REPORTABLE = frozenset({S.APPROVED, S.REJECTED_INVALID_CLAIM, S.REJECTED_MANAGER_DENIED, MANUAL})
FINAL = frozenset({S.ADVISORY_REPORT_GENERATED})

# The seed's happy and unhappy paths in order, for the progress strip on the case page.
PATH_ORDER = [S.PENDING, S.INVESTIGATION_STARTED, S.CLARIFICATION_REQUESTED, S.AWAITING_USER_RESPONSE,
              S.MANAGER_VERIFICATION_REQUESTED, S.AWAITING_MANAGER_RESPONSE, S.APPROVED,
              S.REJECTED_INVALID_CLAIM, S.REJECTED_MANAGER_DENIED, MANUAL, S.ADVISORY_REPORT_GENERATED]


MEANINGS = {
    S.PENDING: "Reported; the investigation has not started.",
    S.INVESTIGATION_STARTED: "The orchestrator is reading the change and the rights check runs.",
    S.APPROVED: "The change is covered: by the changer's own rights, or by the manager's approval.",
    S.CLARIFICATION_REQUESTED: "The changer was not authorised; a request for an explanation is being sent.",
    S.AWAITING_USER_RESPONSE: "Waiting for the employee who made the change to explain it (signed link).",
    S.REJECTED_INVALID_CLAIM: "The employee's explanation is not backed by the absence records.",
    S.MANAGER_VERIFICATION_REQUESTED: "The explanation holds; the manager's validation is being requested.",
    S.AWAITING_MANAGER_RESPONSE: "Waiting for the manager to approve or deny.",
    S.REJECTED_MANAGER_DENIED: "The manager denied the explanation.",
    MANUAL: "A step failed three times, or a person took the case over: a person handles it.",
    S.ADVISORY_REPORT_GENERATED: "The advisory report is written; the investigator decides.",
}

# Who makes each move: the pipeline's agents (and the system, which runs their steps and the
# reminders), the manager's verdict (a person), and Manual Intervention from anywhere.
_PEOPLE_MOVES = {(S.AWAITING_MANAGER_RESPONSE, S.APPROVED), (S.AWAITING_MANAGER_RESPONSE, S.REJECTED_MANAGER_DENIED)}


def _by(source: str, target: str) -> tuple[str, ...]:
    if (source, target) in _PEOPLE_MOVES:
        return (PERSON,)
    if target == MANUAL:
        return (PERSON, AGENT, SYSTEM)
    return (AGENT, SYSTEM)


ACCESS_LIFECYCLE = Lifecycle(
    key="access_change",
    label="Access change (seed 002)",
    record="access.HRMutation",
    field="status",
    initial=S.PENDING,
    audit_action="access.status_changed",
    states=tuple(State(str(status), status.label, MEANINGS[status], CASE_STATUS[status], final=status in FINAL)
                 for status in AccessStatus),
    transitions=tuple(t for source, targets in TRANSITIONS.items() for target in sorted(targets)
                      for t in move(str(source), str(target), *_by(source, target))),
)


def transition_allowed(current: str, to: str) -> bool:
    return ACCESS_LIFECYCLE.move(current, to) is not None


def mutation_transition(*, actor, mutation, to: str, reason: str):
    """Move an HR mutation to `to`, or refuse: the shared lifecycle_transition over
    ACCESS_LIFECYCLE (an unknown status is a DomainError, a move the table does not allow a
    Conflict, 409 in the API). It audits `access.status_changed` with from, to and reason and
    brings the case's shared status along unless the case is closed."""
    from casework.cases.lifecycle.services import lifecycle_transition

    return lifecycle_transition(actor=actor, lifecycle=ACCESS_LIFECYCLE, record=mutation, to=to, reason=reason)
