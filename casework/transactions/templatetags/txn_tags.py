"""`{% txn_page case as txn %}`: the investigation page's view model, read once per case."""

from __future__ import annotations

from django import template

from casework.transactions import selectors

register = template.Library()

_ATTR = "_txn_page"


@register.simple_tag(takes_context=True)
def txn_page(context, case):
    if not hasattr(case, _ATTR):
        investigation = selectors.investigation_get_for_case(case)
        request = context.get("request")
        page = selectors.investigation_page(investigation, getattr(request, "user", None)) if investigation else None
        setattr(case, _ATTR, page)
    return getattr(case, _ATTR)


@register.filter
def pct(value) -> str:
    try:
        return f"{float(value) * 100:.0f}%"
    except (TypeError, ValueError):
        return "—"
