"""The case page's Actions panel: its live fragment, and a person confirming or failing an action."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_POST

from casework.cases.actions.services import action_resolve
from casework.cases.selectors import case_get_for_user
from casework.errors import DomainError, error_text
from casework.outbox.models import Action
from casework.people.roles import investigator_required


@require_GET
@investigator_required
def case_actions(request, reference: str):
    from casework.cases.actions.templatetags.case_actions import case_actions_context

    case = case_get_for_user(request.user, reference)
    return render(request, "case_actions/_case_actions_list.html", case_actions_context(case))


@require_POST
@investigator_required
def action_resolve_view(request, reference: str):
    case = case_get_for_user(request.user, reference)
    pk = request.POST.get("action", "")
    if not pk.isdigit():
        messages.error(request, "action: choose the action to confirm or fail.")
        return redirect("cases:detail", reference=case.reference)
    action = get_object_or_404(Action, pk=int(pk), case=case)
    try:
        action = action_resolve(actor=request.user, action=action, to=request.POST.get("to", ""),
                                reason=request.POST.get("reason", ""))
        messages.success(request, f"{action.label}: {action.get_state_display().lower()}, on your word.")
    except (ValidationError, DomainError) as exc:
        messages.error(request, error_text(exc))
    return redirect("cases:detail", reference=case.reference)
