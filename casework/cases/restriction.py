"""Restricting a case to named people (an investigation of an employee, say): the writes.

Who sees a restricted case is the one rule's (casework/cases/visibility.py: its named people
and admins); these services change the list. Only a lead of a team owning the case's type, or
an admin, may (`user_leads`); the lead is always among the named people, so restricting never
locks its author out. Whoever can no longer see the case stops being its assignee.
"""

from __future__ import annotations

from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction

from audit.services import audit_entry_build, audit_record_many
from casework.cases.models import Case, CaseRestriction
from casework.cases.navigation import nav_changed
from casework.cases.reasons import REASON_MAX_LENGTH, reason_on_record  # noqa: F401 (REASON_MAX_LENGTH re-exported)
from casework.cases.visibility import case_visible, user_leads
from casework.people.roles import is_investigator

PEOPLE_MAX = 50


def _may_restrict(actor, case: Case) -> None:
    if not isinstance(actor, User) or not user_leads(actor, case):
        raise PermissionDenied(f"Only a lead of a team that owns {case.type_info.label.lower()} cases "
                               "(or an admin) may restrict a case or lift its restriction.")


def _reason(reason: str) -> str:
    return reason_on_record(reason)


def _named(actor: User, people) -> list[User]:
    """The actor and `people`, once each, in username order; each must be an active person who
    works cases (an account that cannot open the case page would be named for nothing)."""
    named = {actor.pk: actor}
    for person in people:
        named.setdefault(person.pk, person)
    if len(named) > PEOPLE_MAX:
        raise ValidationError({"people": f"At most {PEOPLE_MAX} people."})
    refused = sorted(p.get_username() for p in named.values() if not p.is_active or not is_investigator(p))
    if refused:
        raise ValidationError({"people": f"{', '.join(refused)}: not an active person who works cases."})
    return sorted(named.values(), key=lambda p: p.get_username())


def _lock(case: Case) -> Case:
    # As casework.cases.services._lock: the case row only (the assignee join is nullable).
    return Case.objects.select_for_update(of=("self",)).select_related("assignee").get(pk=case.pk)


def _unassign_if_blind(actor, case: Case, entries: list) -> None:
    """The assignee who no longer sees the case (left off the list; outside the team when the
    restriction is lifted) is unassigned, on record."""
    if case.assignee is not None and not case_visible(case.assignee, case):
        entries.append(audit_entry_build(actor=actor, action="case.assigned", case=case, obj=case, data={
            "from": case.assignee.get_username(), "to": None, "why": "no longer sees the restricted case"}))
        case.assignee = None
        case.save(update_fields=["assignee", "updated_at"])


@transaction.atomic
def case_restrict(*, actor, case: Case, people, reason: str) -> Case:
    """Restrict the case to `people` (and the actor), or change the list of a restricted one.

    Steps: check the actor leads (PermissionDenied) and the reason and people (ValidationError
    naming the field); lock the case row; add the new names, remove the dropped ones; mark the
    case restricted; unassign an assignee who no longer sees it; audit who, whom and why."""
    _may_restrict(actor, case)
    reason = _reason(reason)
    named = _named(actor, people)
    case = _lock(case)
    before = set(CaseRestriction.objects.filter(case=case).values_list("user__username", flat=True))
    after = {p.get_username() for p in named}
    CaseRestriction.objects.filter(case=case).exclude(user__in=named).delete()
    CaseRestriction.objects.bulk_create(
        [CaseRestriction(case=case, user=p, granted_by=actor) for p in named if p.get_username() not in before])
    nav_changed()  # bulk_create sends no post_save: whom the case is shown to changed (visibility)
    was_restricted = case.restricted
    if not was_restricted:
        case.restricted = True
        case.save(update_fields=["restricted", "updated_at"])
    entries = [audit_entry_build(actor=actor, action="case.restricted", case=case, obj=case, data={
        "people": sorted(after), "added": sorted(after - before), "removed": sorted(before - after),
        "reason": reason, "was_restricted": was_restricted})]
    _unassign_if_blind(actor, case, entries)
    audit_record_many(entries)
    return case


@transaction.atomic
def case_unrestrict(*, actor, case: Case, reason: str) -> Case:
    """Lift the restriction: the case is its teams' again. The named people are forgotten (on
    record in the audit entry); one outside the teams who was assignee is unassigned."""
    _may_restrict(actor, case)
    reason = _reason(reason)
    case = _lock(case)
    if not case.restricted:
        return case
    people = sorted(CaseRestriction.objects.filter(case=case).values_list("user__username", flat=True))
    CaseRestriction.objects.filter(case=case).delete()
    case.restricted = False
    case.save(update_fields=["restricted", "updated_at"])
    entries = [audit_entry_build(actor=actor, action="case.unrestricted", case=case, obj=case,
                                 data={"people": people, "reason": reason})]
    _unassign_if_blind(actor, case, entries)
    audit_record_many(entries)
    return case


def case_restricted_to(case: Case) -> list[User]:
    """The people a restricted case is shown to (besides admins), by username."""
    return list(User.objects.filter(case_restrictions__case=case).order_by("username"))
