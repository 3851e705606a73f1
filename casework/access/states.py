"""The access-change status machine, in one place (seed 002, "Status Flow Diagram").

    Pending -> Investigation Started -> Approved ---------------------------> Advisory Report Generated
                                     -> Clarification Requested -> Request queued -> Awaiting User Response
                                                                                  (the email with the link
                                                                                  accepted; or Request not
                                                                                  delivered if it failed)
                                           -> Rejected - Invalid User Claim ----------------^
                                           -> Manager Verification Requested -> Awaiting Manager Response
                                                 -> Approved / Rejected - Manager Denied ---^
                                     -> Manual Intervention Required ---------------------^
    any state but Decided -> Decided by the Investigator (a person's decision closed the case)

The seed draws the error/escalation edge only from Investigation Started; every later step
can fail too (a tool failing three times in claim validation, the advisory agent failing),
so every working state may also go to Manual Intervention Required.

Two states the seed does not draw, because its flow never says what happens then:
- Link Expired: the employee's signed link expired unanswered. The periodic reminder task
  moves the change there (it reads "Awaiting User Response" no longer: nobody can answer);
  the investigator sends a fresh link (back to Awaiting User Response) or decides.
- Decided by the Investigator: a person's decision closed the case, before or after the
  report, through the access decision form, the generic close or a bulk close. It is the
  only end state, and only a person reaches it (the move follows case_close, so the queue
  status is already Closed).

A claim rests on a fact (DESIGN.md): "Awaiting User Response" says the employee was told, so
it is entered only with the record of that: their request's notification, whose email the mail
server accepted (Notification.emailed_at). The request step leaves the change at "Request to
the employee queued"; the notification's email moves it on (casework.access.signals), or, if it
gave up, to "Request not delivered", where the investigator sends a fresh link.

Nothing else is allowed: `mutation_transition` refuses any other move with a Conflict and
audits every one it makes.

Each status maps onto the shared Case.status so the investigators' queue shows where an
access change stands (waiting for a person -> awaiting_response, report ready -> awaiting_decision: the
agents are done and the investigator decides; only a person's decision closes the case).
"""

from __future__ import annotations

from django.db import models

from casework.cases.lifecycle.table import AGENT, PERSON, SYSTEM, Fact, Lifecycle, State, move


class AccessStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    INVESTIGATION_STARTED = "investigation_started", "Investigation Started"
    APPROVED = "approved", "Approved"
    CLARIFICATION_REQUESTED = "clarification_requested", "Clarification Requested"
    USER_REQUEST_QUEUED = "user_request_queued", "Request to the Employee Queued - Email Not Sent Yet"
    AWAITING_USER_RESPONSE = "awaiting_user_response", "Awaiting User Response"
    USER_REQUEST_FAILED = "user_request_failed", "Request Not Delivered - Email Failed"
    REJECTED_INVALID_CLAIM = "rejected_invalid_claim", "Rejected - Invalid User Claim"
    MANAGER_VERIFICATION_REQUESTED = "manager_verification_requested", "Manager Verification Requested"
    AWAITING_MANAGER_RESPONSE = "awaiting_manager_response", "Awaiting Manager Response"
    REJECTED_MANAGER_DENIED = "rejected_manager_denied", "Rejected - Manager Denied"
    MANUAL_INTERVENTION_REQUIRED = "manual_intervention_required", "Manual Intervention Required"
    ADVISORY_REPORT_GENERATED = "advisory_report_generated", "Advisory Report Generated"
    LINK_EXPIRED = "link_expired", "Link Expired - No User Response"
    DECIDED = "decided", "Decided by the Investigator"


S = AccessStatus
MANUAL = S.MANUAL_INTERVENTION_REQUIRED
DECIDED = S.DECIDED

# from -> the statuses it may move to (besides Decided, which a person reaches from every
# other state). Nothing else is a legal move.
_FLOW: dict[str, frozenset[str]] = {
    S.PENDING: frozenset(),
    S.INVESTIGATION_STARTED: frozenset({S.APPROVED, S.CLARIFICATION_REQUESTED, MANUAL}),
    S.CLARIFICATION_REQUESTED: frozenset({S.USER_REQUEST_QUEUED, S.AWAITING_USER_RESPONSE, S.USER_REQUEST_FAILED,
                                          MANUAL}),
    S.USER_REQUEST_QUEUED: frozenset({S.AWAITING_USER_RESPONSE, S.USER_REQUEST_FAILED, MANUAL}),
    S.USER_REQUEST_FAILED: frozenset({S.USER_REQUEST_QUEUED, MANUAL}),
    S.AWAITING_USER_RESPONSE: frozenset({S.REJECTED_INVALID_CLAIM, S.MANAGER_VERIFICATION_REQUESTED, MANUAL,
                                         S.LINK_EXPIRED, S.USER_REQUEST_FAILED}),
    S.LINK_EXPIRED: frozenset({S.USER_REQUEST_QUEUED, MANUAL}),
    S.MANAGER_VERIFICATION_REQUESTED: frozenset({S.AWAITING_MANAGER_RESPONSE, MANUAL}),
    S.AWAITING_MANAGER_RESPONSE: frozenset({S.APPROVED, S.REJECTED_MANAGER_DENIED, MANUAL}),
    S.APPROVED: frozenset({S.ADVISORY_REPORT_GENERATED, MANUAL}),
    S.REJECTED_INVALID_CLAIM: frozenset({S.ADVISORY_REPORT_GENERATED, MANUAL}),
    S.REJECTED_MANAGER_DENIED: frozenset({S.ADVISORY_REPORT_GENERATED, MANUAL}),
    MANUAL: frozenset({S.ADVISORY_REPORT_GENERATED}),
    S.ADVISORY_REPORT_GENERATED: frozenset(),
}
TRANSITIONS: dict[str, frozenset[str]] = {
    **{source: targets | {DECIDED} for source, targets in _FLOW.items()},
    S.PENDING: frozenset({S.INVESTIGATION_STARTED, DECIDED}),
    DECIDED: frozenset(),
}

# Where each access status puts the shared case in the queue.
CASE_STATUS = {
    S.PENDING: "new",
    S.INVESTIGATION_STARTED: "in_progress",
    S.APPROVED: "in_progress",
    S.CLARIFICATION_REQUESTED: "in_progress",
    S.USER_REQUEST_QUEUED: "awaiting_response",
    S.AWAITING_USER_RESPONSE: "awaiting_response",
    # Nobody was told: the investigator sends a fresh link (or decides).
    S.USER_REQUEST_FAILED: "in_progress",
    S.REJECTED_INVALID_CLAIM: "in_progress",
    S.MANAGER_VERIFICATION_REQUESTED: "in_progress",
    S.AWAITING_MANAGER_RESPONSE: "awaiting_response",
    S.REJECTED_MANAGER_DENIED: "in_progress",
    # A person has to act: it stays in the working part of the queue.
    MANUAL: "in_progress",
    S.ADVISORY_REPORT_GENERATED: "awaiting_decision",
    # Nobody can answer the expired link: the investigator has to act (resend or decide).
    S.LINK_EXPIRED: "in_progress",
    # Reached only after the person's decision closed the case (case_close first), so the
    # queue already shows Closed; lifecycle_transition never moves a closed case.
    DECIDED: "closed",
}

# Waiting for a person (the run that got here ends WAITING).
WAITING = frozenset({S.USER_REQUEST_QUEUED, S.AWAITING_USER_RESPONSE, S.USER_REQUEST_FAILED,
                     S.AWAITING_MANAGER_RESPONSE})
# Agents are at work; the case page follows these live.
WORKING = frozenset({S.PENDING, S.INVESTIGATION_STARTED, S.APPROVED, S.CLARIFICATION_REQUESTED,
                     S.REJECTED_INVALID_CLAIM, S.MANAGER_VERIFICATION_REQUESTED, S.REJECTED_MANAGER_DENIED})
# The advisory agent writes a report from these.
REPORTABLE = frozenset({S.APPROVED, S.REJECTED_INVALID_CLAIM, S.REJECTED_MANAGER_DENIED, MANUAL})
FINAL = frozenset({DECIDED})
# The agents are done with these: a decision may follow; nothing else is in flight.
SETTLED = frozenset({S.ADVISORY_REPORT_GENERATED, DECIDED})

# The seed's happy and unhappy paths in order, for the progress strip on the case page.
PATH_ORDER = [S.PENDING, S.INVESTIGATION_STARTED, S.CLARIFICATION_REQUESTED, S.USER_REQUEST_QUEUED,
              S.USER_REQUEST_FAILED, S.AWAITING_USER_RESPONSE,
              S.MANAGER_VERIFICATION_REQUESTED, S.AWAITING_MANAGER_RESPONSE, S.APPROVED,
              S.REJECTED_INVALID_CLAIM, S.REJECTED_MANAGER_DENIED, MANUAL, S.LINK_EXPIRED,
              S.ADVISORY_REPORT_GENERATED, DECIDED]


MEANINGS = {
    S.PENDING: "Reported; the investigation has not started.",
    S.INVESTIGATION_STARTED: "The orchestrator is reading the change and the rights check runs.",
    S.APPROVED: "The change is covered: by the changer's own rights, or by the manager's approval.",
    S.CLARIFICATION_REQUESTED: "The changer was not authorised; a request for an explanation is being sent.",
    S.USER_REQUEST_QUEUED: ("The request for an explanation is written and its email (with the signed link) is "
                            "queued: the employee has not been told yet. The email's delivery moves it on."),
    S.AWAITING_USER_RESPONSE: ("The email with the signed link reached the employee's mail server: waiting for the "
                               "employee who made the change to explain it."),
    S.USER_REQUEST_FAILED: ("The email with the employee's link failed after its retries (the reason is on the "
                            "case): nobody was told. The investigator sends a fresh link, or decides."),
    S.REJECTED_INVALID_CLAIM: ("The employee's explanation is not backed by the records: a record contradicts it, "
                               "or no record could verify it (the claim's validation says which)."),
    S.MANAGER_VERIFICATION_REQUESTED: "The explanation holds; the manager's validation is being requested.",
    S.AWAITING_MANAGER_RESPONSE: "Waiting for the manager to approve or deny.",
    S.REJECTED_MANAGER_DENIED: "The manager denied the explanation.",
    MANUAL: "A step failed three times: a person handles it (the advisory agent writes a manual-intervention report).",
    S.ADVISORY_REPORT_GENERATED: "The advisory report is written; the investigator decides.",
    S.LINK_EXPIRED: ("The employee's link expired unanswered (the periodic task saw it): the investigator sends "
                     "a fresh link or decides."),
    DECIDED: ("A person decided and closed the case (the access decision, the generic close or a bulk close), "
              "before or after the report; the decision's outcome and reason are on the case."),
}

# Who makes each move: the pipeline's agents (and the system, which runs their steps and the
# reminders); people: the manager's verdict, the investigator's fresh link after an expired
# one, and every decision. Manual Intervention is the agents' and the system's escalation.
_PEOPLE_MOVES = {(S.AWAITING_MANAGER_RESPONSE, S.APPROVED), (S.AWAITING_MANAGER_RESPONSE, S.REJECTED_MANAGER_DENIED),
                 (S.LINK_EXPIRED, S.USER_REQUEST_QUEUED), (S.USER_REQUEST_FAILED, S.USER_REQUEST_QUEUED)}
# Moves only the system makes: the periodic task, and the employee's email as the mail server answered.
_SYSTEM_MOVES = {(S.AWAITING_USER_RESPONSE, S.LINK_EXPIRED), (S.USER_REQUEST_QUEUED, S.AWAITING_USER_RESPONSE),
                 (S.CLARIFICATION_REQUESTED, S.AWAITING_USER_RESPONSE), (S.USER_REQUEST_QUEUED, S.USER_REQUEST_FAILED),
                 (S.AWAITING_USER_RESPONSE, S.USER_REQUEST_FAILED), (S.CLARIFICATION_REQUESTED, S.USER_REQUEST_FAILED)}


def _by(source: str, target: str) -> tuple[str, ...]:
    if (source, target) in _PEOPLE_MOVES or target == DECIDED:
        return (PERSON,)
    if (source, target) in _SYSTEM_MOVES:
        return (SYSTEM,)
    return (AGENT, SYSTEM)


def _note(source: str, target: str) -> str:
    if target == DECIDED:
        return "a person decided and closed the case (decision form, generic or bulk close)"
    if target == S.LINK_EXPIRED:
        return "the periodic task: the employee's link expired unanswered"
    if target == S.USER_REQUEST_QUEUED:
        return ("the investigator sent a fresh link (its email queued)" if source in (S.LINK_EXPIRED,
                S.USER_REQUEST_FAILED) else "the request's email with the signed link is queued")
    if target == S.AWAITING_USER_RESPONSE:
        return "the mail server accepted the email with the employee's link"
    if target == S.USER_REQUEST_FAILED:
        return "the email with the employee's link failed after its retries"
    if target == MANUAL:
        return "a step failed three times"
    return ""


def _employee_reached(request) -> bool:
    """The employee's request reached them: the mail server accepted an e-mail carrying its link
    (a request notification or a reminder naming this request), or they answered through that
    link, which only that e-mail carried (the answer arrives before the worker records the
    e-mail's acceptance when the worker is behind)."""
    from django.contrib.contenttypes.models import ContentType

    from casework.cases.notifications.models import Notification

    if request.kind != "employee_clarification":
        return False
    if request.answered_at is not None:
        return True
    return Notification.objects.filter(
        target_type=ContentType.objects.get_for_model(type(request)), target_id=request.pk,
        kind__in=("request", "request_reminder"), emailed_at__isnull=False).exists()


# What a state says happened outside Casework, and the record it rests on.
CLAIMS = {
    S.AWAITING_USER_RESPONSE: {
        "claim": "the employee was notified: the email with their signed link reached their mail server",
        "fact": Fact("access.InfoRequest", "the employee's request: its email accepted by the mail server "
                     "(the notification's emailed_at set), or answered through the link only that email carried",
                     holds=_employee_reached)},
}


ACCESS_LIFECYCLE = Lifecycle(
    key="access_change",
    label="Access change (seed 002)",
    record="access.HRMutation",
    field="status",
    initial=S.PENDING,
    audit_action="access.status_changed",
    states=tuple(State(str(status), status.label, MEANINGS[status], CASE_STATUS[status], final=status in FINAL,
                       **CLAIMS.get(status, {}))
                 for status in AccessStatus),
    transitions=tuple(t for source, targets in TRANSITIONS.items() for target in sorted(targets)
                      for t in move(str(source), str(target), *_by(source, target),
                                    note=_note(source, target))),
)


def transition_allowed(current: str, to: str) -> bool:
    return ACCESS_LIFECYCLE.move(current, to) is not None


def mutation_transition(*, actor, mutation, to: str, reason: str, fact=None):
    """Move an HR mutation to `to`, or refuse: the shared lifecycle_transition over
    ACCESS_LIFECYCLE (an unknown status is a DomainError, a move the table does not allow a
    Conflict, 409 in the API). It audits `access.status_changed` with from, to and reason and
    brings the case's shared status along unless the case is closed."""
    from casework.cases.lifecycle.services import lifecycle_transition

    return lifecycle_transition(actor=actor, lifecycle=ACCESS_LIFECYCLE, record=mutation, to=to, reason=reason,
                                fact=fact)
