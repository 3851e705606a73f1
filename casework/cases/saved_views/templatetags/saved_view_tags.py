from __future__ import annotations

from django import template

from casework.cases.navigation import nav_get

register = template.Library()


@register.simple_tag
def pinned_views(user) -> list[dict]:
    """The saved views pinned into this person's navigation (`pk`, `name`; cached)."""
    return [{"pk": pk, "name": name} for pk, name in nav_get(user, "pinned")] if user.is_authenticated else []


@register.simple_tag
def my_teams(user) -> list[dict]:
    """The teams a view can be shared with: this person's teams (`pk`, `name`; cached)."""
    return [{"pk": pk, "name": name} for pk, name in nav_get(user, "teams")] if user.is_authenticated else []


@register.simple_tag(takes_context=True)
def current_saved_view(context):
    """The saved view the queue was opened from (?view=<id>), if this person can see it."""
    from casework.cases.saved_views.selectors import saved_views_visible

    request = context["request"]
    pk = request.GET.get("view", "")
    return saved_views_visible(request.user).filter(pk=pk).first() if pk.isdigit() else None
