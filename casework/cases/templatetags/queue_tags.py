"""The queue's sortable column headers: a link that sorts by the column, then reverses it."""

from __future__ import annotations

from django import template
from django.utils.html import format_html

from casework.cases.filters import CaseOrderingFilter

register = template.Library()

# The first click sorts the way a person means: the urgent, the recent, A before Z.
FIRST = {"priority": "priority", "updated": "-updated", "reference": "reference", "status": "status"}


@register.simple_tag(takes_context=True)
def sort_header(context, key: str, label: str, css: str = ""):
    request = context["request"]
    current = request.GET.get("ordering", "")
    params = request.GET.copy()
    params.pop("page", None)
    if current.lstrip("-") == key:
        target = key if current.startswith("-") else f"-{key}"
        sort = "descending" if current.startswith("-") else "ascending"
        # Priority's rank ascends from critical: "critical first" reads as descending urgency.
        if key == "priority":
            sort = "descending" if current == "priority" else "ascending"
        title = CaseOrderingFilter.LABELS[current]
    else:
        target, sort, title = FIRST[key], None, ""
    params["ordering"] = target
    hint = f"Sort: {CaseOrderingFilter.LABELS[target]}"
    arrow = {"ascending": " ▲", "descending": " ▼"}.get(sort or "", "")
    return format_html(
        '<th scope="col" class="{}"{}><a href="?{}" class="sort-link" title="{}" aria-label="{}. {}">{}'
        '<span aria-hidden="true">{}</span></a></th>',
        css, format_html(' aria-sort="{}"', sort) if sort else "", params.urlencode(), hint,
        label, (f"Sorted {title}. " if title else "") + hint, label, arrow,
    )


@register.simple_tag
def bulk_options(user):
    """What the queue's bulk bar offers: investigators (cached), priorities, outcomes grouped by type."""
    from casework.cases.bulk import bulk_outcome_choices
    from casework.cases.models import Case
    from casework.cases.navigation import nav_get

    return {"investigators": nav_get(user, "investigators"),
            "outcomes": bulk_outcome_choices(), "priorities": Case.Priority.choices}
