"""Template helpers for the access pages."""

from __future__ import annotations

import json

from django import template

from casework.access import selectors

register = template.Library()


@register.simple_tag
def access_overview(case):
    """Everything the access tabs of a case page show (read once per page)."""
    return selectors.mutation_overview(case)


@register.simple_tag(takes_context=True)
def claim_shown(context, claim, addressed=False):
    """The claim as the page's viewer may see it (casework/access/special.py)."""
    from casework.access.special import claim_shown as shown

    return shown(context["request"].user, claim, addressed=addressed)


@register.simple_tag
def access_message_rows(messages):
    return selectors.message_rows(messages)


@register.filter
def pretty_json(value) -> str:
    return json.dumps(value, indent=1, sort_keys=True, ensure_ascii=False, default=str)


@register.filter
def request_state(req, now=None) -> str:
    return req.state(now)
