"""One filter set for the queue page and the cases API (django-filter)."""

from __future__ import annotations

import django_filters
from django.contrib.auth.models import User
from django.db.models import Q

from casework.cases.models import Case
from casework.cases.types import case_type_choices_available
from casework.people.roles import ADMIN, INVESTIGATOR


def _investigators(request=None):
    # django-filter calls a queryset callable with the request.
    return User.objects.filter(groups__name__in=[INVESTIGATOR, ADMIN]).distinct().order_by("username")


class CaseFilter(django_filters.FilterSet):
    q = django_filters.CharFilter(method="search", label="Search")
    # Only types whose pipeline exists (callable: read per request, after the pipelines registered).
    case_type = django_filters.ChoiceFilter(choices=case_type_choices_available, label="Type",
                                            empty_label="All types")
    status = django_filters.ChoiceFilter(choices=Case.Status.choices, empty_label="Any status")
    priority = django_filters.ChoiceFilter(choices=Case.Priority.choices, empty_label="Any priority")
    assignee = django_filters.ModelChoiceFilter(
        queryset=_investigators, to_field_name="username", empty_label="Anyone", null_label="Unassigned",
        null_value="none",
    )
    ordering = django_filters.OrderingFilter(
        fields=(
            ("priority_rank", "priority"),
            ("created_at", "created"),
            ("updated_at", "updated"),
            ("reference", "reference"),
            ("status", "status"),
        ),
        label="Sort",
        empty_label="Newest first",
    )

    class Meta:
        model = Case
        fields = ["q", "case_type", "status", "priority", "assignee"]

    def search(self, queryset, name, value):
        value = value.strip()
        if not value:
            return queryset
        return queryset.filter(Q(reference__icontains=value) | Q(title__icontains=value))
