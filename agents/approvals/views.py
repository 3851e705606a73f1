"""/approvals/: the pending approvals of the cases a person may see, with filters by team and
case type; and the case page's approvals panel, whose buttons approve (arguments as asked, or
edited) or deny (with a reason)."""

from __future__ import annotations

import json

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET, require_POST

from agents.approvals import selectors, services
from agents.models import RunPause
from casework.cases.selectors import case_get_for_user
from casework.cases.types import CASE_TYPES
from casework.cases.visibility import case_types_visible
from casework.errors import DomainError, error_text
from casework.people.roles import investigator_required


@require_GET
@investigator_required
def inbox(request):
    teams = selectors.teams_for(request.user)
    team = next((t for t in teams if t.slug == request.GET.get("team")), None)
    types = case_types_visible(request.user, list(CASE_TYPES))
    case_type = request.GET.get("type") if request.GET.get("type") in types else ""
    pauses = list(selectors.approvals_visible_to(request.user, case_type=case_type, team=team)[:100])
    return render(request, "approvals/inbox.html", {
        "pauses": pauses, "teams": teams, "team": team, "types": [(t, CASE_TYPES[t].label) for t in types],
        "case_type": case_type})


@require_GET
@investigator_required
def panel(request, reference: str):
    """The case page's approvals panel (htmx polls it while an approval waits)."""
    case = case_get_for_user(request.user, reference)
    return render(request, "approvals/_panel.html", panel_context(case))


def panel_context(case) -> dict:
    pauses = list(selectors.approvals_for_case(case)[:10])
    return {"case": case, "pending": [p for p in pauses if p.is_pending],
            "answered": [p for p in pauses if not p.is_pending][:3]}


@require_POST
@investigator_required
def decide(request, reference: str, pk: int):
    """Approve (arguments as the agent asked, or as edited in the form: JSON) or deny (a reason)."""
    case = case_get_for_user(request.user, reference)
    pause = selectors.approval_get_for_user(request.user, pk)
    if pause.case_id != case.pk:
        return HttpResponse("No such approval on this case.", status=404)
    approve = request.POST.get("decision") == "approve"
    try:
        arguments = _arguments(request.POST.get("arguments", ""), pause) if approve else None
        services.approval_decide(pause=pause, actor=request.user, approve=approve, arguments=arguments,
                                 reason=request.POST.get("reason", ""))
    except (DomainError, ValidationError) as exc:
        message = error_text(exc)
        if request.htmx:
            return HttpResponse(message, status=getattr(exc, "status_code", 400))
        messages.error(request, message)
        return redirect(_back(request, case))
    verb = "approved" if approve else "denied"
    messages.success(request, f"{pause.tool} {verb}; the run goes on from that step.")
    if request.htmx:
        return render(request, "approvals/_panel.html", panel_context(case))
    return redirect(_back(request, case))


def _arguments(text: str, pause: RunPause) -> dict | None:
    """The edited arguments from the form (JSON), None when unchanged or left empty."""
    if not text.strip():
        return None
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise ValidationError({"arguments": [f"arguments: not valid JSON ({exc.msg})."]}) from None
    return None if value == pause.arguments else value


def _back(request, case) -> str:
    wanted = request.POST.get("next", "")
    if wanted and url_has_allowed_host_and_scheme(wanted, allowed_hosts={request.get_host()}):
        return wanted
    return reverse("cases:detail", args=[case.reference]) + "#approvals"
