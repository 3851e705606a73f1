"""The page shell's contributions from the case types (casework.cases.shell)."""

from __future__ import annotations

from django import template
from django.templatetags.static import static
from django.urls import reverse
from django.utils.html import format_html, format_html_join

from casework.cases.shell import NAV_LINKS, STYLESHEETS

register = template.Library()


@register.simple_tag
def case_type_stylesheets() -> str:
    """A <link> for each stylesheet the case types registered."""
    return format_html_join("\n  ", '<link rel="stylesheet" href="{}">', ((static(path),) for path in STYLESHEETS)) \
        or format_html("")


@register.simple_tag
def case_type_nav(request) -> list[dict]:
    """The navigation links the case types registered that this person may use, each with
    its href, whether it is the current page, and its count (0 when it has none)."""
    user = request.user
    match = getattr(request, "resolver_match", None)
    links = []
    for link in NAV_LINKS:
        if not link.visible(user):
            continue
        current = bool(match) and ((link.current_app and match.app_name == link.current_app)
                                   or (link.current_url_name and match.url_name == link.current_url_name))
        links.append({"label": link.label, "href": reverse(link.url_name), "current": current,
                      "count": link.count(user) if link.count else 0, "count_label": link.count_label})
    return links
