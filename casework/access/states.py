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

from django.db import models, transaction

from casework.errors import Conflict, DomainError


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


def transition_allowed(current: str, to: str) -> bool:
    return to in TRANSITIONS.get(current, frozenset())


@transaction.atomic
def mutation_transition(*, actor, mutation, to: str, reason: str):
    """Move an HR mutation to `to`, or refuse.

    Steps: lock the mutation row; refuse an unknown status (DomainError) or a move the table
    does not allow from the current status (Conflict, 409 in the API); save; audit
    `access.status_changed` with from, to and reason; bring the case's shared status along
    (unless the case is already closed, when only the access status moves).
    """
    from casework.access.models import HRMutation
    from casework.cases.services import case_set_status

    if to not in AccessStatus.values:
        raise DomainError(f"Unknown access status {to!r}.", code="unknown_status")
    locked = HRMutation.objects.select_for_update(of=("self",)).select_related("case").get(pk=mutation.pk)
    current = locked.status
    if not transition_allowed(current, to):
        raise Conflict(
            f"{locked.case.reference} cannot go from {AccessStatus(current).label} to {AccessStatus(to).label}.",
            code="transition_refused",
        )
    locked.status = to
    locked.save(update_fields=["status", "updated_at"])
    from audit.services import audit_record

    audit_record(actor=actor, action="access.status_changed", case=locked.case, obj=locked,
                 data={"from": current, "to": to, "from_label": AccessStatus(current).label,
                       "to_label": AccessStatus(to).label, "reason": (reason or "")[:1000]})
    if not locked.case.is_closed:
        case_set_status(actor=actor, case=locked.case, status=CASE_STATUS[to])
    mutation.status = to
    return locked
