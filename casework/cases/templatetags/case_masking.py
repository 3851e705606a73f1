"""{% masked case "email" value %}: a special-category value as the viewer may see it
(casework/cases/masking.py). The viewer is the context's `viewer` (a report made for someone)
or the request's user; `case` is a Case or a case-type key. `{% sees_special case as whole %}`
tells a template whether to show a block of them at all."""

from __future__ import annotations

from django import template

from casework.cases.masking import masked_for, sees_special

register = template.Library()


def _viewer(context):
    viewer = context.get("viewer")
    if viewer is None and context.get("request") is not None:
        viewer = context["request"].user
    return viewer


def _case_type(case) -> str:
    return case if isinstance(case, str) else case.case_type


@register.simple_tag(takes_context=True)
def masked(context, case, category: str, value):
    return masked_for(_viewer(context), _case_type(case), category, value)


@register.simple_tag(takes_context=True, name="sees_special")
def sees_special_tag(context, case) -> bool:
    return sees_special(_viewer(context), _case_type(case))
