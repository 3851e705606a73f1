"""{% case_budget case %}: the case page's Budget panel (spend against budget; the lead's forms)."""

from __future__ import annotations

from django import template

from casework.budgets.forms import BudgetForm, StopForm
from casework.budgets.selectors import case_spend, runs_waiting_for_budget
from casework.cases.visibility import user_leads

register = template.Library()


def budget_context(case, user, *, form=None, stop_form=None) -> dict:
    spend = case_spend(case)
    return {"case": case, "spend": spend, "waiting_runs": runs_waiting_for_budget(case),
            "lead": user_leads(user, case),
            "budget_form": form or BudgetForm(initial={"limit_usd": spend.limit_usd_input,
                                                       "limit_tokens": spend.limit_tokens}),
            "stop_form": stop_form or StopForm(prefix="stop")}


@register.inclusion_tag("budgets/_budget.html", takes_context=True)
def case_budget(context, case) -> dict:
    return {**budget_context(case, context["request"].user), "csrf_token": context.get("csrf_token")}
