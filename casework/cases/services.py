"""Every write to a case goes through these functions; each is audited in its transaction."""

from __future__ import annotations

from datetime import datetime

from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from audit.rowsql import row_update
from audit.services import audit_entry_build, audit_record, audit_record_many
from casework.cases.lifecycle.case import CASE_LIFECYCLE
from casework.cases.lifecycle.check import transition_check
from casework.cases.models import Case, CaseCounter, Comment, Decision
from casework.cases.signals import case_assigned, case_closed, case_closing, case_decision_recorded
from casework.cases.sla import sla_due_at, sla_resumed_due_at
from casework.cases.types import CASE_TYPES, MERGED_OUTCOME
from casework.cases.visibility import case_visible
from casework.errors import Conflict
from casework.outbox.services import case_data, decision_data, event_record
from casework.people.roles import has_role, is_investigator

COMMENT_MAX_LENGTH = 10_000


def _next_reference(case_type: str) -> str:
    counter, _ = CaseCounter.objects.get_or_create(case_type=case_type)
    CaseCounter.objects.filter(pk=counter.pk).update(last=F("last") + 1)
    counter.refresh_from_db()
    return f"{CASE_TYPES[case_type].prefix}-{counter.last:06d}"


@transaction.atomic
def case_create(
    *,
    actor,
    case_type: str,
    title: str,
    description: str = "",
    priority: str = Case.Priority.MEDIUM,
    assignee: User | None = None,
) -> Case:
    if case_type not in CASE_TYPES:
        raise ValidationError({"case_type": f"Unknown case type {case_type!r}."})
    case = Case(
        case_type=case_type,
        title=(title or "").strip(),
        description=description or "",
        priority=priority,
        assignee=assignee,
        created_by=actor if isinstance(actor, User) else None,
        due_at=sla_due_at(case_type=case_type, priority=priority, start=timezone.now())
        if priority in Case.Priority.values else None,
    )
    # The database enforces the check constraints; validating them here costs 3 queries.
    case.full_clean(exclude=["reference"], validate_constraints=False)
    case.reference = _next_reference(case_type)
    case.save()
    audit_record(
        actor=actor, action="case.created", case=case, obj=case,
        data={"case_type": case_type, "title": case.title, "priority": case.priority,
              "due_at": case.due_at.isoformat() if case.due_at else None},
    )
    event_record(type="case.created", case=case, data={"case": case_data(case)})
    if assignee is not None:
        transaction.on_commit(lambda: case_assigned.send(sender=Case, case=case, assignee=assignee, actor=actor))
    return case


def _lock(case: Case) -> Case:
    """Re-read the case under a row lock (PostgreSQL); SQLite's IMMEDIATE BEGIN already serialises.

    of=("self",): PostgreSQL refuses FOR UPDATE on the nullable side of the assignee join,
    and only the case row needs locking.
    """
    return Case.objects.select_for_update(of=("self",)).select_related("assignee").get(pk=case.pk)


def _refuse_if_closed(case: Case) -> None:
    if case.is_closed:
        raise Conflict(f"{case.reference} is closed; it can no longer change.", code="case_closed")


@transaction.atomic
def case_assign(*, actor, case: Case, assignee: User | None) -> Case:
    case = _lock(case)
    _refuse_if_closed(case)
    if assignee is not None and not is_investigator(assignee):
        raise ValidationError({"assignee": f"{assignee.get_username()} is not an investigator."})
    if assignee is not None and not case_visible(assignee, case):
        # Assignment stays inside the teams that may see the case (and its restriction).
        raise ValidationError({"assignee": f"{assignee.get_username()} is not among the people "
                                           f"{case.reference} is restricted to." if case.restricted else
                                           f"{assignee.get_username()} is in no team that sees "
                                           f"{case.type_info.label} cases."})
    previous = case.assignee
    case.assignee = assignee
    entries = [audit_entry_build(
        actor=actor, action="case.assigned", case=case, obj=case,
        data={
            "from": previous.get_username() if previous else None,
            "to": assignee.get_username() if assignee else None,
        },
    )]
    fields = ["assignee"]
    if assignee is not None and case.status == Case.Status.NEW:
        fields += _status_change(actor=actor, case=case, status=Case.Status.IN_PROGRESS, entries=entries)
    _save_changed(case, fields)
    audit_record_many(entries)
    if assignee != previous:
        event_record(type="case.assigned", case=case, data={
            "case": case_data(case), "previous_assignee": previous.get_username() if previous else None,
            "assignee": assignee.get_username() if assignee else None})
    if assignee is not None and assignee != previous:
        transaction.on_commit(lambda: case_assigned.send(sender=Case, case=case, assignee=assignee, actor=actor))
    return case


@transaction.atomic
def case_set_status(*, actor, case: Case, status: str) -> Case:
    case = _lock(case)
    entries = []
    case_status_move(actor=actor, case=case, status=status, entries=entries)
    audit_record_many(entries)
    return case


def case_status_move(*, actor, case: Case, status: str, entries: list) -> None:
    """case_set_status on a case the caller has locked in its own transaction (a lifecycle
    move locks its record and the record's case in one statement): the audit entry is added
    to `entries`, for the caller's one INSERT of all its entries."""
    _refuse_if_closed(case)
    _save_changed(case, _status_change(actor=actor, case=case, status=status, entries=entries))


def _save_changed(case: Case, fields: list[str]) -> None:
    if fields:
        row_update(case, [*fields, "updated_at"])


def _status_change(*, actor, case: Case, status: str, entries: list) -> list[str]:
    """Set a locked case's status; returns the fields for the caller to save, and adds the
    audit entry to `entries` (the caller inserts its entries together: audit_record_many)."""
    if status == Case.Status.CLOSED:
        raise ValidationError({"status": "Close a case with a decision, not by setting its status."})
    if status not in Case.Status.values:
        raise ValidationError({"status": f"Unknown status {status!r}."})
    if status == Case.Status.RESOLVED and not isinstance(actor, User):
        # Resolved means a person decided; an agent's end state is awaiting_decision.
        raise ValidationError({"status": "Only a person can resolve a case; agents leave it awaiting a decision."})
    if status == case.status:
        return []
    # The rest of the shared case's table (casework/cases/lifecycle/case.py): a 409 naming both states.
    transition_check(CASE_LIFECYCLE, actor=actor, source=case.status, target=status, reference=case.reference)
    previous = case.status
    case.status = status
    entries.append(audit_entry_build(actor=actor, action="case.status_changed", case=case, obj=case,
                                     data={"from": previous, "to": status}))
    return ["status"]


@transaction.atomic
def case_set_priority(*, actor, case: Case, priority: str, reason: str = "") -> Case:
    """Change a case's priority (an agent's assessment, a person's judgement); no-op if unchanged."""
    case = _lock(case)
    _refuse_if_closed(case)
    entries = []
    _save_changed(case, _priority_change(actor=actor, case=case, priority=priority, reason=reason, entries=entries))
    audit_record_many(entries)
    return case


def _priority_change(*, actor, case: Case, priority: str, reason: str, entries: list) -> list[str]:
    """Set a locked case's priority and deadline; returns the fields to save, and adds the
    audit entry to `entries`."""
    if priority not in Case.Priority.values:
        raise ValidationError({"priority": f"Choose one of: {', '.join(Case.Priority.values)}."})
    if priority == case.priority:
        return []
    previous = case.priority
    case.priority = priority
    # The deadline follows the priority, still counted from the case's creation. A deadline
    # that moves into the future may be warned about again; a breach is recorded once per case.
    case.due_at = sla_due_at(case_type=case.case_type, priority=priority, start=case.created_at)
    if case.due_at > timezone.now():
        case.sla_warned_at = None
    entries.append(audit_entry_build(actor=actor, action="case.priority_changed", case=case, obj=case,
                                     data={"from": previous, "to": priority, "reason": reason[:500],
                                           "due_at": case.due_at.isoformat()}))
    return ["priority", "due_at", "sla_warned_at"]



@transaction.atomic
def case_sla_pause(*, actor, case: Case, reason: str, now: datetime | None = None) -> Case:
    """Stop the case's SLA clock (it waits on someone outside the team, e.g. a customer);
    no-op if it is stopped already or has no deadline. Audited."""
    case = _lock(case)
    if case.sla_paused_at is not None or case.due_at is None or case.is_closed:
        return case
    case.sla_paused_at = now or timezone.now()
    case.save(update_fields=["sla_paused_at", "updated_at"])
    audit_record(actor=actor, action="case.sla_paused", case=case, obj=case,
                 data={"reason": reason[:500], "due_at": case.due_at.isoformat()})
    return case


@transaction.atomic
def case_sla_resume(*, actor, case: Case, reason: str, now: datetime | None = None) -> Case:
    """Start the clock again: due_at moves later by the paused time. No-op if not paused."""
    case = _lock(case)
    if case.sla_paused_at is None:
        return case
    now = now or timezone.now()
    paused = case.sla_paused_at
    case.due_at = sla_resumed_due_at(due_at=case.due_at, paused_at=paused, now=now)
    case.sla_paused_at = None
    fields = ["due_at", "sla_paused_at"]
    if case.due_at > now:
        case.sla_warned_at = None
        fields.append("sla_warned_at")
    case.save(update_fields=[*fields, "updated_at"])
    audit_record(actor=actor, action="case.sla_resumed", case=case, obj=case,
                 data={"reason": reason[:500], "paused_seconds": int((now - paused).total_seconds()),
                       "due_at": case.due_at.isoformat()})
    return case


@transaction.atomic
def case_comment(*, actor, case: Case, body: str) -> Comment:
    body = (body or "").strip()
    if not body:
        raise ValidationError({"body": "A comment cannot be empty."})
    if len(body) > COMMENT_MAX_LENGTH:
        raise ValidationError({"body": f"A comment is at most {COMMENT_MAX_LENGTH} characters."})
    comment = Comment(case=case, author=actor, body=body)
    comment.full_clean()
    comment.save()
    Case.objects.filter(pk=case.pk).update(updated_at=timezone.now())
    audit_record(actor=actor, action="case.commented", case=case, obj=comment,
                 data={"body": body[:500]})
    return comment


def case_may_decide(actor, case: Case) -> None:
    """A case type may ask for a role to decide its cases (releases: release managers)."""
    role = case.type_info.decider_role
    if role and isinstance(actor, User) and not has_role(actor, role):
        raise PermissionDenied(f"Only a {role.replace('_', ' ')} (or an admin) decides a {case.type_info.label.lower()}.")


@transaction.atomic
def case_reopen(*, actor, case: Case, reason: str) -> Case:
    """Open a closed case again: the outside world answered its decision (a customer wrote back
    to a solved support ticket). The decision stays on record, no longer final (its data says
    when and why it was superseded), so a new decision can close the case again; audited.
    A merged case never reopens (Conflict): a merge is not undone."""
    case = _lock(case)
    if not case.is_closed:
        return case
    reason = (reason or "").strip()
    if not reason:
        raise ValidationError({"reason": "Say why the case is reopened."})
    if case.decisions.filter(final=True, outcome=MERGED_OUTCOME).exists():
        # Its comments, tasks, runs ... live on the survivor now: reopened, it would be an
        # empty shell beside the case people work. There is no un-merge; work the survivor.
        raise Conflict(f"{case.reference} was merged into another case and does not reopen; "
                       "work on the case it was merged into.", code="merged")
    transition_check(CASE_LIFECYCLE, actor=actor, source=case.status, target=Case.Status.IN_PROGRESS,
                     reference=case.reference)
    decision = case.decisions.filter(final=True).first()
    if decision is not None:
        decision.final = False
        decision.data = {**decision.data, "superseded": {"at": timezone.now().isoformat(), "reason": reason[:500]}}
        decision.save(update_fields=["final", "data"])
    case.status = Case.Status.IN_PROGRESS
    case.closed_at = None
    case.save(update_fields=["status", "closed_at", "updated_at"])
    audit_record(actor=actor, action="case.reopened", case=case, obj=case,
                 data={"reason": reason[:1000], "decision": decision.pk if decision else None,
                       "outcome": decision.outcome if decision else None})
    return case


@transaction.atomic
def case_close(*, actor, case: Case, outcome: str, reason: str) -> Decision:
    """Record the case's one final decision and close it.

    Steps: lock the case row; refuse if it is already closed (Conflict, which the API
    answers with 409); validate outcome and reason; insert the decision (the database's
    one-final-decision constraint is the last guard against a concurrent close); close
    the case; audit; write case.decided and the type's decision effects (its action events)
    to the outbox; after commit, tell case-type packages (knowledge capture ...).
    """
    case_may_decide(actor, case)
    case = _lock(case)
    _refuse_second_close(case)
    outcomes = dict(case.type_info.outcomes)
    if outcome not in outcomes:
        raise ValidationError({"outcome": f"Choose one of: {', '.join(outcomes)}."})
    reason = (reason or "").strip()
    if not reason:
        raise ValidationError({"reason": "Give a reason for the decision."})
    decision = _close(actor=actor, case=case, outcome=outcome, reason=reason)
    event_record(type="case.decided", case=case, data={"case": case_data(case), "decision": {
        "outcome": outcome, "outcome_label": str(outcomes[outcome]), "reason": reason,
        "decided_by": actor.get_username() if isinstance(actor, User) else None,
        "decided_at": decision.decided_at.isoformat()}})
    # The type's actions (block the card, revert the change ...), in this transaction.
    for effect in case.type_info.decision_effects:
        effect(actor=actor, case=case, decision=decision)
    transaction.on_commit(lambda: case_closed.send(sender=Case, case=case, decision=decision, actor=actor))
    return decision


@transaction.atomic
def case_close_merged(*, actor, case: Case, survivor: Case, reason: str, moved: dict) -> Decision:
    """Close a duplicate merged into `survivor` (casework.entities.services.case_merge does the
    merge and calls this): the same close as case_close (the lifecycle's check, case_closing,
    one final decision, case.closed audited, case_closed after commit, so the type's record
    follows to its own decided or closed state), with the MERGED_OUTCOME decision naming the
    survivor, and `case.merged` in the outbox in place of case.decided. No decision effect
    runs: a merge asks no other system to act (the survivor's own decision will)."""
    case_may_decide(actor, case)
    case = _lock(case)
    _refuse_second_close(case)
    decision = _close(actor=actor, case=case, outcome=MERGED_OUTCOME,
                      reason=f"Merged into {survivor.reference}: {reason}")
    event_record(type="case.merged", case=case, data={
        "case": case_data(case), "survivor": case_data(survivor), "decision": decision_data(decision),
        "moved": moved})
    transaction.on_commit(lambda: case_closed.send(sender=Case, case=case, decision=decision, actor=actor))
    return decision


def _refuse_second_close(case: Case) -> None:
    existing = case.decisions.filter(final=True).select_related("decided_by").first()
    if case.is_closed or existing:
        who = existing.decided_by.get_username() if existing and existing.decided_by else "someone"
        when = f" at {existing.decided_at:%Y-%m-%d %H:%M} UTC" if existing else ""
        raise Conflict(f"{case.reference} was already closed by {who}{when}.", code="already_closed")


def _close(*, actor, case: Case, outcome: str, reason: str) -> Decision:
    """The close itself, on a locked open case with a valid outcome and reason: the lifecycle's
    check, the type's veto (case_closing), the one final decision, the case closed, what it
    names flagged when the outcome confirms fraud, audited."""
    transition_check(CASE_LIFECYCLE, actor=actor, source=case.status, target=Case.Status.CLOSED,
                     reference=case.reference)
    # The case's type may refuse what its record cannot take (a support ticket closed as
    # replied with no reply sent); `send`, not `send_robust`: a refusal stops the close.
    case_closing.send(sender=Case, case=case, outcome=outcome, reason=reason, actor=actor)
    decision = Decision(case=case, outcome=outcome, reason=reason,
                        decided_by=actor if isinstance(actor, User) else None)
    try:
        with transaction.atomic():
            decision.save()
    except IntegrityError as exc:
        raise Conflict(f"{case.reference} was already closed by someone else.", code="already_closed") from exc
    case.status = Case.Status.CLOSED
    case.closed_at = decision.decided_at
    case.save(update_fields=["status", "closed_at", "updated_at"])
    # What sits on cases follows the decision in the same transaction (a decision that confirms
    # fraud flags what the case names).
    case_decision_recorded.send(sender=Case, case=case, decision=decision, actor=actor)
    audit_record(actor=actor, action="case.closed", case=case, obj=decision,
                 data={"outcome": outcome, "reason": reason})
    return decision


def case_decide(*, actor, case: Case, outcome: str, reason: str) -> Decision:
    """A person's decision made outside the type's own page (the bulk close): through the
    decision service the case's type registered (casework.cases.types.case_type_register_decide:
    a support ticket's escalate / no action, an access change's mutation_decide, a release's
    release_decide with its role and override rules), or case_close when it has none or the
    case has no record yet."""
    decide = case.type_info.decide if case.record is not None else None
    return (decide or case_close)(actor=actor, case=case, outcome=outcome, reason=reason)
