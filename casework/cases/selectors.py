"""Reads, with related rows fetched up front, and the one access check for a case."""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.db.models import Case as CaseExpression  # Case is the model here
from django.db.models import IntegerField, QuerySet, Value, When
from django.shortcuts import get_object_or_404

from audit.models import AuditEntry
from casework.cases.models import Case
from casework.people.roles import is_investigator


def case_list() -> QuerySet[Case]:
    """Cases for the queue, each with the columns the queue shows and a sortable priority."""
    return Case.objects.select_related("assignee").annotate(
        priority_rank=CaseExpression(
            *[When(priority=p, then=Value(rank)) for p, rank in Case.PRIORITY_RANK.items()],
            output_field=IntegerField(),
        )
    )


def case_get_for_user(user, reference: str) -> Case:
    """The case with this reference, if this user may see it (404 / PermissionDenied)."""
    if not is_investigator(user):
        raise PermissionDenied("Only investigators can see cases.")
    return get_object_or_404(
        Case.objects.select_related("assignee", "created_by"), reference=reference.upper()
    )


def case_final_decision(case: Case):
    return case.decisions.filter(final=True).select_related("decided_by").first()


def case_comments(case: Case):
    return case.comments.select_related("author")


def case_timeline(case: Case) -> QuerySet[AuditEntry]:
    """The case's audit entries, newest first (a long investigation reads from the latest step)."""
    return AuditEntry.objects.filter(case_id=case.pk).order_by("-id")
