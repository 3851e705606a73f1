"""A case's badges, built in Python: the queue draws them on each of its 25 rows, where an
include or an inclusion tag per badge cost more than the rest of the row (issue 29).

{% restricted_badge case %}: "Restricted" on a case a lead restricted to named people;
{% case_due case %}: the SLA countdown ("due in 3 h", "overdue by 2 h"); {% status_badge case %}
and {% priority_badge case %} (cases/_status.html and cases/_priority.html draw them too, for
the templates that include those); `|utc_minute`: "2026-11-25 21:07". None of them queries."""

from __future__ import annotations

from datetime import UTC, datetime

from django import template
from django.utils.html import format_html
from django.utils.safestring import mark_safe

from casework.cases.sla import case_countdown

register = template.Library()


@register.filter
def utc_minute(value: datetime | None) -> str:
    """The date filter's 'Y-m-d H:i' in UTC, without its per-call formatter."""
    return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M") if value else ""


@register.simple_tag
def case_due(case) -> str:
    due = case_countdown(case)
    if due.state == "done":
        return ""
    return format_html('<span class="due due-{}" title="Due {} UTC"{}>{}{}</span>', due.state,
                       utc_minute(case.due_at), format_html(' data-sla="breached"') if due.breached else "",
                       format_html('<span aria-hidden="true">⚠ </span>') if due.breached else "", due.text)


_RESTRICTED = mark_safe('<span class="badge badge-restricted" data-restricted="true" '
                        'title="Restricted by a lead: only the people named and admins see this case" '
                        'aria-label="Restricted case: only the people named and admins see it">'
                        '<span aria-hidden="true">🔒 </span>Restricted</span>')


@register.simple_tag
def restricted_badge(case) -> str:
    """"Restricted" in words (not a colour alone), and what it means for assistive technology."""
    if not case.restricted:
        return ""
    return _RESTRICTED


@register.simple_tag
def status_badge(case) -> str:
    return format_html('<span class="badge badge-status-{}">{}</span>', case.status, case.get_status_display())


@register.simple_tag
def priority_badge(case) -> str:
    return format_html('<span class="badge badge-priority-{}">{}</span>', case.priority, case.get_priority_display())
