"""The case page's approvals panel (casework/cases detail.html): what the case's agents wait to
do, with approve, edit and deny."""

from __future__ import annotations

import json

from django import template

from agents.approvals.views import panel_context

register = template.Library()


@register.inclusion_tag("approvals/_panel.html", takes_context=True)
def approvals_panel(context, case):
    return {**panel_context(case), "request": context.get("request"), "csrf_token": context.get("csrf_token")}


@register.filter
def as_json(value) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True)
