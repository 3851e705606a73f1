"""The case page's "Seen in other cases" panel and its links (casework/cases detail.html)."""

from __future__ import annotations

from django import template

from casework.entities import selectors
from casework.entities.forms import LinkForm, MergeForm

register = template.Library()


@register.inclusion_tag("entities/_case_panel.html", takes_context=True)
def seen_in_other_cases(context, case):
    viewer = context["request"].user
    return {"case": case, "rows": selectors.case_seen_elsewhere(case, viewer=viewer),
            "links": selectors.case_links(case, viewer=viewer),
            "link_form": LinkForm(), "merge_form": MergeForm(), "csrf_token": context.get("csrf_token"),
            "request": context.get("request")}
