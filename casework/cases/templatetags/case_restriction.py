"""{% case_restriction case %}: the case page's Restriction panel, for those who may restrict
the case (a lead of a team owning its type, or an admin); nothing for anyone else."""

from __future__ import annotations

from django import template

from casework.cases.forms import RestrictForm, UnrestrictForm
from casework.cases.restriction import case_restricted_to
from casework.cases.visibility import user_leads

register = template.Library()


def restriction_context(case, user, *, form=None, unrestrict_form=None) -> dict:
    named = case_restricted_to(case) if case.restricted else []
    return {"case": case, "restricted_to": named,
            "restrict_form": form or RestrictForm(initial={"people": [p.get_username() for p in named]}),
            "unrestrict_form": unrestrict_form or UnrestrictForm()}


@register.inclusion_tag("cases/_restriction.html", takes_context=True)
def case_restriction(context, case) -> dict:
    user = context["request"].user
    if not user_leads(user, case):
        return {"hidden": True}
    return {**restriction_context(case, user), "csrf_token": context.get("csrf_token")}
