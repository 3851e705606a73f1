from __future__ import annotations

from django import template

from casework.cases.notifications import selectors

register = template.Library()


@register.simple_tag
def notifications_unread(user) -> int:
    """The navigation's unread count (one query per page)."""
    return selectors.unread_count(user)
