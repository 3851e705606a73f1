"""The case page's "Who looked at this case" panel: shown to the leads of the team that owns
the case and to admins; its rows come by htmx once the page is up (they never slow it)."""

from __future__ import annotations

from django import template

from casework.cases.visibility import user_leads

register = template.Library()


@register.inclusion_tag("cases/_who_looked.html", takes_context=True)
def who_looked_panel(context, case):
    request = context.get("request")
    return {"case": case, "shown": request is not None and user_leads(request.user, case)}
