"""The case page's Budget panel: spend against budget for everyone who sees the case; for a
lead, the form that sets the budget (raising it resumes a run waiting in "Budget reached") and
the one that stops such runs instead."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from casework.budgets import services
from casework.budgets.forms import BudgetForm, StopForm
from casework.budgets.selectors import runs_waiting_for_budget
from casework.budgets.templatetags.case_budget import budget_context
from casework.cases import selectors
from casework.cases.visibility import user_leads
from casework.errors import DomainError, error_text


@require_POST
def budget_change(request, reference: str):
    """POST action=set (limit_usd, limit_tokens, reason) or action=stop (stop-reason). 404 for
    whoever may not see the case, 403 for someone who sees it but leads no team owning it."""
    case = selectors.case_get_for_user(request.user, reference)
    if not user_leads(request.user, case):
        raise PermissionDenied("Only a lead of a team that owns this case type, or an admin, changes its budget.")
    stopping = request.POST.get("action") == "stop"
    form = StopForm(request.POST, prefix="stop") if stopping else BudgetForm(request.POST)
    errors, done = "", ""
    if form.is_valid():
        try:
            if stopping:
                runs = runs_waiting_for_budget(case)
                for run in runs:
                    services.budget_run_stop(actor=request.user, run=run, reason=form.cleaned_data["reason"])
                done = f"Stopped {len(runs)} run{'s' if len(runs) != 1 else ''}." if runs else "No run was waiting."
            else:
                services.budget_set(actor=request.user, case=case, **form.cleaned_data)
                done = "Budget saved."
            form = None
        except (ValidationError, DomainError) as exc:
            errors = error_text(exc) if isinstance(exc, ValidationError) else str(exc)
    else:
        errors = error_text(form.errors)
    if not request.htmx:
        if errors:
            messages.error(request, errors)
        elif done:
            messages.success(request, done)
        return redirect("cases:detail", reference=case.reference)
    context = budget_context(case, request.user, **({"stop_form": form} if stopping else {"form": form}))
    return render(request, "budgets/_budget.html", {**context, "errors": errors, "done": done})
