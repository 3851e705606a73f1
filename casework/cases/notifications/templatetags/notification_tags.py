from __future__ import annotations

from django import template

from casework.cases.navigation import nav_get

register = template.Library()


@register.simple_tag
def notifications_unread(user) -> int:
    """The navigation's unread count (cached; casework/cases/navigation.py)."""
    return nav_get(user, "unread") if getattr(user, "is_authenticated", False) else 0
