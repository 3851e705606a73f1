"""{% case_due case %}: the SLA countdown ("due in 3 h", "overdue by 2 h") on queue rows and
the case page; no query (reads the case's own due_at and status)."""

from __future__ import annotations

from django import template

from casework.cases.sla import case_countdown

register = template.Library()


@register.inclusion_tag("cases/_due.html")
def case_due(case) -> dict:
    return {"case": case, "due": case_countdown(case)}
