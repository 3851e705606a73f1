"""`{% fraud_case case as fraud %}`: the fraud case page's view model (selectors.fraud_assessment).

The overview, the decision box and five evidence tabs each include a partial that needs it;
it is computed once per case object and kept on it, so one page costs one assessment read.
"""

from __future__ import annotations

from django import template

from casework.fraud import selectors

register = template.Library()

_ATTR = "_fraud_assessment"


def remember(case, assessment: dict | None) -> dict | None:
    setattr(case, _ATTR, assessment)
    return assessment


@register.simple_tag(takes_context=True)
def fraud_case(context, case):
    if not hasattr(case, _ATTR):
        remember(case, selectors.fraud_assessment(case, viewer=context["request"].user))
    return getattr(case, _ATTR)


@register.filter
def percent(value) -> str:
    """0.734 -> '73%'; anything that is not a number -> '—'."""
    try:
        return f"{float(value) * 100:.0f}%"
    except (TypeError, ValueError):
        return "—"
