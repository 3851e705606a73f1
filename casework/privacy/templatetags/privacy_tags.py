"""The case page's legal-hold panel (casework/cases detail.html): shown while a hold keeps the
case from retention, on the case itself or on an entity it names."""

from __future__ import annotations

from django import template

from casework.privacy.holds import case_held_by

register = template.Library()


@register.inclusion_tag("privacy/_case_hold.html")
def legal_hold_panel(case):
    return {"holds": case_held_by(case)}
