"""Reads, with related rows fetched up front, and the one access check for a case."""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.shortcuts import get_object_or_404

from casework.cases.models import Case
from casework.cases.visibility import cases_visible_to
from casework.people.roles import is_investigator


def case_list(user) -> QuerySet[Case]:
    """The cases this person may see (casework.cases.visibility), for the queue, newest first,
    with the columns the queue shows (priority_rank is a stored column: the priority sort reads
    its index), and whether an action is overdue. Someone who works no cases (a manager) gets
    403, as from case_get_for_user: the two are the gates every case read goes through."""
    if not is_investigator(user):
        raise PermissionDenied("Only investigators can see cases.")
    from casework.cases.actions.services import case_has_overdue_action

    # action_overdue: an action its decision asked for is unconfirmed past its deadline (the badge).
    return (cases_visible_to(user, Case.objects.select_related("assignee")).annotate(action_overdue=case_has_overdue_action())
            .order_by(*Case.TIEBREAKERS))


def case_get_for_user(user, reference: str) -> Case:
    """The case with this reference, if this user may see it: investigators (and release
    managers, admins) work cases, and of those only the ones their teams may see
    (casework.cases.visibility). Any other case is answered as if it did not exist (404), so
    that its reference does not leak; someone who works no cases at all gets 403."""
    if not is_investigator(user):
        raise PermissionDenied("Only investigators can see cases.")
    return get_object_or_404(
        cases_visible_to(user, Case.objects.select_related("assignee", "created_by")), reference=reference.upper()
    )


def case_final_decision(case: Case):
    return case.decisions.filter(final=True).select_related("decided_by").first()


def case_comments(case: Case):
    return case.comments.select_related("author")


# --- what a person set, which the agents do not overwrite (DESIGN.md, "Agents recommend; people
# decide") ---------------------------------------------------------------------------------------

def case_set_by_person(case: Case, action: str) -> str | None:
    """The person who made the case's newest `action` change (case.priority_changed,
    case.assigned), read from the audit trail; None if an agent, the system or nobody did."""
    from audit.models import AuditEntry

    last = (AuditEntry.objects.filter(case_id=case.pk, action=action)
            .order_by("-id").values_list("actor_type", "actor").first())
    return last[1] if last and last[0] == AuditEntry.ActorType.USER else None


def case_priority_set_by(case: Case) -> str | None:
    """The person who last set the case's priority (the case page, the queue's bulk action)."""
    return case_set_by_person(case, "case.priority_changed")


def case_assignee_set_by(case: Case) -> str | None:
    """The person who last assigned the case (or unassigned it)."""
    return case_set_by_person(case, "case.assigned")


def agent_priority(case: Case, assessed: str, *, may_lower: bool = True) -> tuple[str | None, str | None]:
    """What an agent's assessment may do to the case's priority: (the priority to set, or None
    to leave it; the person whose priority stands against the assessment, or None). A
    person's priority is never overwritten (the caller records the override); `may_lower`
    false: the assessment only ever raises the priority."""
    if assessed == case.priority:
        return None, None
    person = case_priority_set_by(case)
    if person:
        return None, person
    if not may_lower and Case.PRIORITY_RANK[assessed] > Case.PRIORITY_RANK[case.priority]:
        return None, None
    return assessed, None
