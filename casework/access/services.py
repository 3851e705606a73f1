"""Every write to an access change goes through these functions; each is audited in its
transaction, and side effects (starting the next pipeline step, sending email) happen on
commit. Status moves go through casework.access.states.mutation_transition only.
"""

from __future__ import annotations

import logging
import uuid
from datetime import datetime, timedelta

from django.conf import settings
from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.mail import send_mail
from django.db import transaction
from django.urls import reverse
from django.utils import timezone

from audit.services import audit_record
from casework.access.links import absolute_url, link_check, link_url
from casework.access.models import (
    AccessLevel,
    AdvisoryReport,
    AgentMessage,
    Employee,
    EmployeeClaim,
    HRMutation,
    InfoRequest,
    ManagerVerdict,
    Notification,
    RightsCheck,
    System,
)
from casework.access.states import FINAL, MANUAL, AccessStatus, mutation_transition
from casework.errors import Conflict, DomainError

logger = logging.getLogger(__name__)

PIPELINE = "access"
# How far in the future a change may be dated (clock skew between systems).
FUTURE_SKEW = timedelta(minutes=10)


class LinkRefused(DomainError):
    """The employee's link cannot be used: forged (400), or used, expired, withdrawn (410)."""

    def __init__(self, message: str, *, code: str):
        super().__init__(message, code=code)
        self.status_code = 400 if code == "link_forged" else 410


def _employee_actor(employee: Employee) -> str:
    # Employees answering through a link have no login; the audit names them by id.
    return f"employee:{employee.employee_id}"


def _priority(*, changed_by: Employee, changed_for: Employee, level: AccessLevel) -> str:
    if changed_by.pk == changed_for.pk:
        return "critical"  # someone changed their own access
    ranks = list(AccessLevel.objects.values_list("rank", flat=True))
    if ranks and level.rank >= max(ranks):
        return "high"
    if ranks and level.rank <= min(ranks):
        return "low"
    return "medium"


# --- submitting a change ----------------------------------------------------------------------

@transaction.atomic
def mutation_submit(
    *,
    actor,
    changed_by: Employee,
    changed_for: Employee,
    system: System,
    access_level: AccessLevel,
    field_changed: str,
    changed_at: datetime,
    change_type: str = HRMutation.ChangeType.UPDATE,
    old_value: str = "",
    new_value: str = "",
    reason: str = "",
    manager: Employee | None = None,
    mutation_id: str = "",
    metadata: dict | None = None,
    initial_status: str = AccessStatus.PENDING,
    investigate: bool = True,
    now: datetime | None = None,
) -> HRMutation:
    """Record a change under investigation as a new access-change case and, on commit,
    start its investigation. `initial_status` other than Pending is for importing history:
    such a mutation is stored as it was and not investigated."""
    from casework.cases.services import case_create

    now = now or timezone.now()
    if changed_at is None or timezone.is_naive(changed_at):
        raise ValidationError({"changed_at": "Give the change's time with a time zone (UTC)."})
    if changed_at > now + FUTURE_SKEW:
        raise ValidationError({"changed_at": "A change cannot be dated in the future."})
    if initial_status not in AccessStatus.values:
        raise ValidationError({"status": f"Unknown status {initial_status!r}."})
    manager = manager or changed_by.manager
    mutation_id = (mutation_id or "").strip() or f"M-{uuid.uuid4().hex[:8]}"
    if HRMutation.objects.filter(mutation_id=mutation_id).exists():
        raise Conflict(f"A mutation {mutation_id} already exists.", code="duplicate_mutation")
    title = f"{changed_by.name}: {field_changed} for {changed_for.name} on {system.code}"[:200]
    mutation = HRMutation(
        mutation_id=mutation_id, changed_by=changed_by, changed_for=changed_for, system=system,
        access_level=access_level, change_type=change_type, field_changed=(field_changed or "").strip(),
        old_value=old_value or "", new_value=new_value or "", changed_at=changed_at, reason=reason or "",
        manager=manager, metadata=metadata or {}, status=initial_status,
    )
    mutation.full_clean(exclude=["case"])
    case = case_create(
        actor=actor, case_type="access_change", title=title,
        description=mutation.summary() + (f"\n\nReason given with the change: {reason}" if reason else ""),
        priority=_priority(changed_by=changed_by, changed_for=changed_for, level=access_level),
    )
    mutation.case = case
    mutation.save()
    audit_record(actor=actor, action="access.mutation_submitted", case=case, obj=mutation,
                 data={"mutation_id": mutation_id, "changed_by": changed_by.employee_id,
                       "changed_for": changed_for.employee_id, "system": system.code,
                       "access_level": access_level.name, "changed_at": changed_at.isoformat(),
                       "status": initial_status})
    if initial_status == AccessStatus.PENDING and investigate:
        _enqueue(mutation, "investigate", actor)
    return mutation


def _enqueue(mutation: HRMutation, mode: str, actor) -> None:
    from agents.tasks import pipeline_enqueue

    pipeline_enqueue(case=mutation.case, pipeline=PIPELINE, mode=mode, actor=actor,
                     initial_state={"input_mutation_id": mutation.mutation_id})


# --- what agents hand back --------------------------------------------------------------------

@transaction.atomic
def rights_check_record(*, mutation: HRMutation, result: dict, message: str, run_id: int | None = None,
                        call_key: str = "") -> RightsCheck:
    """Store the rights-check evidence a step accepted (once per run and call)."""
    if call_key and run_id is not None:
        existing = RightsCheck.objects.filter(run_id=run_id, call_key=call_key).first()
        if existing:
            return existing
    check = RightsCheck.objects.create(
        mutation=mutation, authorized=bool(result.get("authorized")), held_level=result.get("held_level") or "",
        evidence=list(result.get("evidence") or []), message=(message or "")[:4000], run_id=run_id,
        call_key=call_key,
    )
    audit_record(actor="agent:access_rights_check", action="access.rights_checked", case=mutation.case, obj=check,
                 data={"authorized": check.authorized, "held_level": check.held_level,
                       "covering": [r.get("reference") for r in check.evidence if r.get("covers")]})
    return check


@transaction.atomic
def report_record(*, mutation: HRMutation, report_id: str, kind: str, summary: str, recommendation: str,
                  details: list[str], run_id: int | None = None) -> AdvisoryReport:
    existing = AdvisoryReport.objects.filter(report_id=report_id).first()
    if existing:
        return existing
    report = AdvisoryReport(mutation=mutation, report_id=report_id, kind=kind, summary=summary,
                            recommendation=recommendation, details=[str(d)[:2000] for d in details][:40],
                            run_id=run_id)
    report.full_clean()
    report.save()
    audit_record(actor="agent:access_advisory", action="access.report_generated", case=mutation.case, obj=report,
                 data={"report_id": report_id, "kind": kind, "recommendation": recommendation})
    return report


@transaction.atomic
def claim_record_validation(*, claim: EmployeeClaim, status: str, result: dict) -> EmployeeClaim:
    if status not in EmployeeClaim.Validation.values or status == EmployeeClaim.Validation.PENDING:
        raise DomainError(f"Unknown claim validation {status!r}.", code="bad_validation")
    EmployeeClaim.objects.filter(pk=claim.pk).update(validation_status=status, validation=result,
                                                     validated_at=timezone.now())
    claim.refresh_from_db()
    audit_record(actor="agent:access_request_info", action="access.claim_validated",
                 case=claim.request.mutation.case, obj=claim,
                 data={"status": status, "message": str(result.get("message", ""))[:500]})
    return claim


# --- agent-to-agent messages ------------------------------------------------------------------

def new_correlation_id() -> str:
    return f"corr-{uuid.uuid4().hex[:12]}"


@transaction.atomic
def message_send(*, case, sender: str, receiver: str, action: str, context: dict,
                 status: str = AgentMessage.Status.PENDING, error: dict | None = None, correlation_id: str = "",
                 reply_to: AgentMessage | None = None, run_id: int | None = None, key: str = "") -> AgentMessage:
    """Store one message in the seed's envelope. With run_id and key it is written once:
    a resumed run that sends it again gets the stored one back."""
    if key and run_id is not None:
        existing = AgentMessage.objects.filter(run_id=run_id, key=key).first()
        if existing:
            return existing
    message = AgentMessage(case=case, sender=sender, receiver=receiver, action=action, context=context,
                           correlation_id=correlation_id or new_correlation_id(), status=status, error=error,
                           reply_to=reply_to, run_id=run_id, key=key)
    # Field checks only: the foreign keys come from the database and the constraints live there.
    message.full_clean(exclude=["case", "reply_to"], validate_unique=False, validate_constraints=False)
    message.save()
    audit_record(actor=f"agent:{sender}" if sender.endswith("Agent") else "system", action="access.message_sent",
                 case=case, obj=message,
                 data={"sender": sender, "receiver": receiver, "action": action, "status": status,
                       "correlation_id": message.correlation_id, "error": error,
                       # what the case timeline shows after the arrow
                       "to": f"{receiver}: {action}" + (" (error)" if status == "error" else "")})
    return message


@transaction.atomic
def message_reply(*, request: AgentMessage, action: str, context: dict, status: str, error: dict | None = None,
                  run_id: int | None = None, key: str = "", receiver: str = "") -> AgentMessage:
    """The receiver answers: same correlation id, to the sender (or to `receiver`, when the
    answer goes on to the orchestrator); the request's own status becomes the outcome."""
    reply = message_send(case=request.case, sender=request.receiver, receiver=receiver or request.sender, action=action,
                         context=context, status=status, error=error, correlation_id=request.correlation_id,
                         reply_to=request, run_id=run_id, key=key)
    AgentMessage.objects.filter(pk=request.pk, status=AgentMessage.Status.PENDING).update(status=status)
    return reply


# --- notifications ----------------------------------------------------------------------------

@transaction.atomic
def notification_send(*, actor, kind: str, subject: str, body: str, url: str = "", case=None,
                      user: User | None = None, email: str = "", name: str = "") -> Notification:
    """An in-app notification (when the person has a login) and an email (when they have an
    address), sent once the transaction commits."""
    email = email or (user.email if user else "")
    name = name or (user.get_full_name() or user.get_username() if user else "")
    if not user and not email:
        raise DomainError(f"{name or 'This person'} has neither a login nor an email address to notify.",
                          code="no_channel")
    note = Notification.objects.create(recipient_user=user, recipient_email=email, recipient_name=name, case=case,
                                       kind=kind, subject=subject[:200], body=body, url=url)
    audit_record(actor=actor, action="access.notification_sent", case=case, obj=note,
                 data={"kind": kind, "to": email or name, "in_app": user is not None, "subject": note.subject})
    if email:
        transaction.on_commit(lambda: _email(note.pk))
    return note


def _email(notification_id: int) -> None:
    note = Notification.objects.get(pk=notification_id)
    text = note.body + (f"\n\n{absolute_url(note.url) if note.url.startswith('/') else note.url}" if note.url else "")
    try:
        send_mail(note.subject, text, settings.DEFAULT_FROM_EMAIL, [note.recipient_email])
    except Exception:  # noqa: BLE001 - an unreachable mail server must not undo the request
        logger.exception("Could not email notification %s to %s", note.pk, note.recipient_email)
        return
    Notification.objects.filter(pk=note.pk).update(emailed_at=timezone.now())


def notification_mark_read(*, user: User, notification: Notification) -> None:
    if notification.recipient_user_id != user.pk:
        raise PermissionDenied("This notification is not yours.")
    Notification.objects.filter(pk=notification.pk, read_at__isnull=True).update(read_at=timezone.now())


def notifications_mark_all_read(*, user: User) -> int:
    return Notification.objects.filter(recipient_user=user, read_at__isnull=True).update(read_at=timezone.now())


def investigators_to_notify(case) -> list[User]:
    from casework.people.roles import INVESTIGATOR

    if case.assignee_id:
        return [case.assignee]
    return list(User.objects.filter(groups__name=INVESTIGATOR, is_active=True).order_by("username"))


# --- requests to people -----------------------------------------------------------------------

_REQUEST_STATUS = {
    InfoRequest.Kind.EMPLOYEE: AccessStatus.CLARIFICATION_REQUESTED,
    InfoRequest.Kind.MANAGER: AccessStatus.MANAGER_VERIFICATION_REQUESTED,
}


@transaction.atomic
def request_send(*, actor, mutation: HRMutation, kind: str, subject: str, body: str, correlation_id: str = "",
                 now: datetime | None = None) -> tuple[InfoRequest, bool]:
    """Ask the employee (a signed link by email) or their manager (the inbox, in the app and
    by email) about the change. Returns (request, created).

    Sending again while a request of the same kind is open returns that request: a retried
    agent step does not send the person a second message. Only allowed at the step of the
    flow that asks that person.
    """
    now = now or timezone.now()
    mutation = HRMutation.objects.select_related("case", "changed_by", "manager__user").get(pk=mutation.pk)
    if kind not in _REQUEST_STATUS:
        raise DomainError(f"Unknown request kind {kind!r}.", code="bad_kind")
    if mutation.case.is_closed:
        raise Conflict(f"{mutation.case.reference} is closed.", code="case_closed")
    open_request = (InfoRequest.objects.select_for_update().filter(mutation=mutation, kind=kind,
                                                                   answered_at__isnull=True,
                                                                   cancelled_at__isnull=True).first())
    if open_request and open_request.state(now) == "open":
        return open_request, False
    if mutation.status != _REQUEST_STATUS[kind]:
        raise Conflict(f"{mutation.case.reference} is {mutation.status_label}; this request is not due.",
                       code="request_not_due")
    if open_request:  # expired without an answer: replace it
        InfoRequest.objects.filter(pk=open_request.pk).update(cancelled_at=now, cancel_reason="replaced by a new request")
    if kind == InfoRequest.Kind.EMPLOYEE:
        recipient = mutation.changed_by
        if not recipient.email:
            raise DomainError(f"{recipient} has no email address to send the request to.", code="no_email")
        expires_at = now + timedelta(days=settings.ACCESS_LINK_MAX_AGE_DAYS)
    else:
        recipient = mutation.manager
        if recipient is None:
            raise DomainError(f"{mutation.changed_by} has no manager to validate the claim.", code="no_manager")
        if recipient.user_id is None or not recipient.user.is_active:
            raise DomainError(f"The manager {recipient} has no Casework login to answer with.", code="no_login")
        expires_at = None
    request = InfoRequest.objects.create(mutation=mutation, kind=kind, recipient=recipient, subject=subject[:200],
                                         body=body[:4000], correlation_id=correlation_id, sent_at=now,
                                         expires_at=expires_at)
    _notify_request(request, actor=actor, reminder=False)
    audit_record(actor=actor, action="access.request_sent", case=mutation.case, obj=request,
                 data={"kind": kind, "to": recipient.employee_id,
                       "expires_at": expires_at.isoformat() if expires_at else None})
    return request, True


@transaction.atomic
def request_link_thread(*, request: InfoRequest, correlation_id: str, actor="system") -> InfoRequest:
    """Tie a request to the agent-message thread that asked for it (once: a set id stays)."""
    if request.correlation_id or not correlation_id:
        return request
    InfoRequest.objects.filter(pk=request.pk, correlation_id="").update(correlation_id=correlation_id)
    request.correlation_id = correlation_id
    audit_record(actor=actor, action="access.request_threaded", case=request.mutation.case, obj=request,
                 data={"correlation_id": correlation_id})
    return request


def request_url(request: InfoRequest) -> str:
    if request.kind == InfoRequest.Kind.EMPLOYEE:
        return link_url(request)
    return reverse("access:inbox_detail", args=[request.pk])


def _notify_request(request: InfoRequest, *, actor, reminder: bool) -> Notification:
    recipient = request.recipient
    prefix = "Reminder: " if reminder else ""
    if request.kind == InfoRequest.Kind.EMPLOYEE:
        ending = (f"Answer here (no login needed; the link works once and until "
                  f"{request.expires_at:%d %B %Y %H:%M} UTC):")
        return notification_send(actor=actor, kind="request_reminder" if reminder else "request", case=request.mutation.case,
                                 subject=prefix + request.subject, body=f"{request.body}\n\n{ending}",
                                 url=link_url(request), email=recipient.email, name=recipient.name)
    return notification_send(actor=actor, kind="request_reminder" if reminder else "request", case=request.mutation.case,
                             subject=prefix + request.subject,
                             body=f"{request.body}\n\nOpen your Casework inbox to approve or deny:",
                             url=request_url(request), user=recipient.user, email=recipient.email or recipient.user.email,
                             name=recipient.name)


@transaction.atomic
def request_resend(*, actor, request: InfoRequest, now: datetime | None = None) -> InfoRequest:
    """Send the employee a fresh link (the old one stops working), for a request that expired
    unanswered or whose email went astray. Only while the flow still waits for that answer."""
    now = now or timezone.now()
    request = InfoRequest.objects.select_related("mutation__case", "recipient").get(pk=request.pk)
    mutation = request.mutation
    if request.kind != InfoRequest.Kind.EMPLOYEE:
        raise DomainError("Only an employee's link can be sent again; a manager answers in their inbox.",
                          code="not_a_link")
    if request.answered_at or request.cancelled_at:
        raise Conflict("This request is already answered or withdrawn.", code="request_closed")
    if mutation.status != AccessStatus.AWAITING_USER_RESPONSE or mutation.case.is_closed:
        raise Conflict("The change is no longer waiting for the employee.", code="not_waiting")
    taken = InfoRequest.objects.filter(pk=request.pk, answered_at__isnull=True, cancelled_at__isnull=True).update(
        cancelled_at=now, cancel_reason="replaced by a new link")
    if taken != 1:
        raise Conflict("This request was answered a moment ago.", code="request_closed")
    fresh = InfoRequest.objects.create(mutation=mutation, kind=request.kind, recipient=request.recipient,
                                       subject=request.subject, body=request.body,
                                       correlation_id=request.correlation_id, sent_at=now,
                                       expires_at=now + timedelta(days=settings.ACCESS_LINK_MAX_AGE_DAYS))
    _notify_request(fresh, actor=actor, reminder=False)
    audit_record(actor=actor, action="access.request_resent", case=mutation.case, obj=fresh,
                 data={"replaces": request.pk, "to": request.recipient.employee_id,
                       "expires_at": fresh.expires_at.isoformat()})
    return fresh


@transaction.atomic
def requests_cancel_open(*, actor, mutation: HRMutation, reason: str, now: datetime | None = None) -> int:
    now = now or timezone.now()
    ids = list(InfoRequest.objects.filter(mutation=mutation, answered_at__isnull=True, cancelled_at__isnull=True)
               .values_list("pk", flat=True))
    if not ids:
        return 0
    InfoRequest.objects.filter(pk__in=ids).update(cancelled_at=now, cancel_reason=reason[:200])
    audit_record(actor=actor, action="access.requests_cancelled", case=mutation.case, obj=mutation,
                 data={"requests": ids, "reason": reason[:200]})
    return len(ids)


# --- the employee answers ---------------------------------------------------------------------

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
    mutation = request.mutation
    if mutation.status != AccessStatus.AWAITING_USER_RESPONSE:
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
    actor = _employee_actor(mutation.changed_by)
    audit_record(actor=actor, action="access.claim_submitted", case=mutation.case, obj=claim,
                 data={"claim_type": claim_type, "colleague": colleague.employee_id if colleague else None,
                       "period_start": period_start, "period_end": period_end})
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

    Only the manager the request is addressed to may answer (PermissionDenied otherwise);
    the request is taken with a conditional UPDATE so a double submission is refused; the
    status moves to Approved or Rejected - Manager Denied; on commit the advisory step starts.
    """
    now = now or timezone.now()
    request = InfoRequest.objects.select_related("recipient", "mutation__case").get(pk=request.pk)
    if request.kind != InfoRequest.Kind.MANAGER or request.recipient.user_id != actor.pk:
        raise PermissionDenied("This validation request is addressed to another manager.")
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
    _enqueue(mutation, "advise", actor)
    return verdict


# --- the investigator decides -----------------------------------------------------------------

@transaction.atomic
def mutation_decide(*, actor: User, mutation: HRMutation, outcome: str, reason: str):
    """Close the case with the investigator's decision, which may override the advisory
    recommendation. A case still being investigated goes to Manual Intervention Required
    first, and any open request to a person is withdrawn."""
    from casework.cases.services import case_close

    mutation = HRMutation.objects.select_related("case").get(pk=mutation.pk)
    if mutation.case.is_closed:
        raise Conflict(f"{mutation.case.reference} is already closed.", code="already_closed")
    reason = (reason or "").strip()
    if not reason:
        raise ValidationError({"reason": "Give a reason for the decision."})
    report = mutation.reports.first()
    if mutation.status not in FINAL and mutation.status != MANUAL:
        mutation_transition(actor=actor, mutation=mutation, to=MANUAL,
                            reason=f"The investigator decided before the investigation finished: {reason}")
    requests_cancel_open(actor=actor, mutation=mutation, reason="The investigator decided the case.")
    decision = case_close(actor=actor, case=mutation.case, outcome=outcome, reason=reason)
    audit_record(actor=actor, action="access.decided", case=mutation.case, obj=mutation,
                 data={"outcome": outcome, "recommendation": report.recommendation if report else None,
                       "overrides_recommendation": bool(report and report.proposed_outcome != outcome),
                       "status": mutation.status})
    return decision


def mutation_after_case_closed(*, case, actor) -> None:
    """A case closed by any path (the generic close form, the API) withdraws open requests
    and, if the investigation was still running, stops it at Manual Intervention Required."""
    mutation = HRMutation.objects.filter(case=case).first()
    if mutation is None:
        return
    with transaction.atomic():
        requests_cancel_open(actor=actor or "system", mutation=mutation, reason="The case was closed.")
        if mutation.status not in FINAL and mutation.status != MANUAL:
            mutation_transition(actor=actor or "system", mutation=mutation, to=MANUAL,
                                reason="The case was closed before the investigation finished.")
