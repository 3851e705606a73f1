"""The employee's claim and the manager's verdict, each answering an open request."""

from __future__ import annotations

import logging
from datetime import datetime

from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.utils import timezone

from audit.services import audit_record
from casework.access.links import link_check
from casework.access.models import (
    Employee,
    EmployeeClaim,
    HRMutation,
    InfoRequest,
    ManagerVerdict,
)
from casework.access.services.notifications import notifications_mark_read_for_target, notify_answer
from casework.access.services.submission import _employee_actor, _enqueue
from casework.access.states import AccessStatus, mutation_transition
from casework.entities.extraction import entities_extract
from casework.errors import Conflict, DomainError

logger = logging.getLogger(__name__)

# The employee may answer while the change awaits them, and while the e-mail with their link is
# still recorded as queued (their answer through the link shows it reached them).
ANSWERABLE = (AccessStatus.AWAITING_USER_RESPONSE, AccessStatus.USER_REQUEST_QUEUED)


class LinkRefused(DomainError):
    """The employee's link cannot be used: forged (400), or used, expired, withdrawn (410)."""

    def __init__(self, message: str, *, code: str):
        super().__init__(message, code=code)
        self.status_code = 400 if code == "link_forged" else 410



@transaction.atomic
def claim_submit(*, token: str, claim_type: str, explanation: str, colleague: Employee | None = None,
                 period_start=None, period_end=None, now: datetime | None = None) -> EmployeeClaim:
    """The employee's answer through their link.

    Steps: check the link (forged, used, expired and withdrawn links are refused with a
    LinkRefused naming which, and change nothing); check the flow still waits for this
    answer; validate the answer; mark the link used with a conditional UPDATE (a second
    submission, even a concurrent one, updates nothing and is refused); store the claim;
    audit; on commit, start the claim's validation.
    """
    now = now or timezone.now()
    check = link_check(token, now=now)
    if not check.ok:
        raise LinkRefused(check.message(), code=f"link_{check.state}")
    request = check.request
    # Locked as request_email_delivered locks it: the answer and the e-mail's acceptance may
    # arrive together, and only one of them moves the change on.
    mutation = HRMutation.objects.select_for_update().get(pk=request.mutation_id)
    if mutation.status not in ANSWERABLE:
        raise Conflict("This change is no longer waiting for your answer.", code="not_waiting")
    claim = EmployeeClaim(request=request, claim_type=claim_type, colleague=colleague, period_start=period_start,
                          period_end=period_end, explanation=(explanation or "").strip(), submitted_at=now)
    _validate_claim_fields(claim, employee=mutation.changed_by)
    claim.full_clean(exclude=["request"])
    taken = InfoRequest.objects.filter(pk=request.pk, answered_at__isnull=True, cancelled_at__isnull=True,
                                       expires_at__gt=now).update(answered_at=now)
    if taken != 1:
        raise LinkRefused("This link was already used. Thank you for your answer.", code="link_used")
    claim.save()
    if colleague is not None:
        entities_extract(case=mutation.case)  # the colleague is named by the case now
    actor = _employee_actor(mutation.changed_by)
    if mutation.status == AccessStatus.USER_REQUEST_QUEUED:
        # The worker has not yet recorded that the mail server accepted the e-mail, but the
        # employee answered through the link only that e-mail carried: it reached them.
        request.answered_at = now
        mutation_transition(actor=actor, mutation=mutation, to=AccessStatus.AWAITING_USER_RESPONSE,
                            reason=f"{request.recipient.name} answered through their signed link (request "
                                   f"#{request.pk}), so its email reached them.", fact=request)
    audit_record(actor=actor, action="access.claim_submitted", case=mutation.case, obj=claim,
                 # The absence details (kind, dates, explanation) are special-category: they stay in the
                 # claim, encrypted, and out of the audit trail and the notification.
                 data={"colleague": colleague.employee_id if colleague else None})
    notify_answer(actor=actor, request=request, who=f"{mutation.changed_by.name} (the employee)",
                  summary="their explanation is on the case.")
    _enqueue(mutation, "validate_claim", actor)
    return claim


def _validate_claim_fields(claim: EmployeeClaim, *, employee: Employee) -> None:
    errors = {}
    if claim.claim_type not in EmployeeClaim.ClaimType.values:
        errors["claim_type"] = "Choose what happened."
    elif claim.claim_type != EmployeeClaim.ClaimType.OTHER:
        if claim.colleague is None:
            errors["colleague"] = "Name the colleague you covered for."
        elif claim.colleague.pk == employee.pk:
            errors["colleague"] = "Name the colleague you covered for, not yourself."
        if not claim.period_start or not claim.period_end:
            errors["period_start"] = "Give the first and last day you covered."
    if claim.period_start and claim.period_end and claim.period_end < claim.period_start:
        errors["period_end"] = "The last day cannot be before the first."
    if not claim.explanation:
        errors["explanation"] = "Explain in a sentence or two why you made the change."
    elif len(claim.explanation) > 4000:
        errors["explanation"] = "Keep the explanation under 4000 characters."
    if errors:
        raise ValidationError(errors)


# --- the manager answers ----------------------------------------------------------------------

@transaction.atomic
def verdict_submit(*, actor: User, request: InfoRequest, approved: bool, comment: str,
                   now: datetime | None = None) -> ManagerVerdict:
    """The manager approves or denies the employee's validated claim.

    Only the validator the request is addressed to may answer, and never the changer or the
    beneficiary (PermissionDenied otherwise);
    the request is taken with a conditional UPDATE so a double submission is refused; the
    status moves to Approved or Rejected - Manager Denied; on commit the advisory step starts.
    """
    now = now or timezone.now()
    request = InfoRequest.objects.select_related("recipient", "mutation__case").get(pk=request.pk)
    if request.kind != InfoRequest.Kind.MANAGER or request.recipient.user_id != actor.pk:
        raise PermissionDenied("This validation request is addressed to another manager.")
    if request.recipient_id in (request.mutation.changed_by_id, request.mutation.changed_for_id):
        # validator_choose never asks them; a request written some other way is refused here.
        raise PermissionDenied("The person who made the change, or benefits from it, cannot validate it.")
    comment = (comment or "").strip()
    if not comment:
        raise ValidationError({"comment": "Add a comment: the investigator reads it with your decision."})
    if len(comment) > 4000:
        raise ValidationError({"comment": "Keep the comment under 4000 characters."})
    mutation = request.mutation
    if request.answered_at:
        raise Conflict(f"You already answered this request on {request.answered_at:%d %B %Y %H:%M} UTC.",
                       code="already_answered")
    if request.cancelled_at:
        raise Conflict(f"This request was withdrawn: {request.cancel_reason or 'no longer needed'}.",
                       code="request_cancelled")
    if mutation.status != AccessStatus.AWAITING_MANAGER_RESPONSE:
        raise Conflict("This change is no longer waiting for your answer.", code="not_waiting")
    taken = InfoRequest.objects.filter(pk=request.pk, answered_at__isnull=True,
                                       cancelled_at__isnull=True).update(answered_at=now)
    if taken != 1:
        raise Conflict("This request was answered a moment ago.", code="already_answered")
    verdict = ManagerVerdict.objects.create(request=request, approved=approved, comment=comment, decided_by=actor,
                                            decided_at=now)
    to = AccessStatus.APPROVED if approved else AccessStatus.REJECTED_MANAGER_DENIED
    who = actor.get_full_name() or actor.get_username()
    mutation_transition(actor=actor, mutation=mutation, to=to,
                        reason=f"Manager {who} {'approved' if approved else 'denied'}: {comment}")
    audit_record(actor=actor, action="access.verdict_submitted", case=mutation.case, obj=verdict,
                 data={"approved": approved, "comment": comment[:500]})
    # Answering is acting on the request: the manager's notifications about it are read.
    notifications_mark_read_for_target(user=actor, target=request)
    notify_answer(actor=actor, request=request, who=f"{request.recipient.name} (the manager)",
                  summary=f"{'approved' if approved else 'denied'}: {comment}")
    _enqueue(mutation, "advise", actor)
    return verdict

