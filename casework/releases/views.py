"""Release pages: the list with a paste-a-release form, the case page's live overview, the
decision (with its override confirmation) and "assess again". Investigators only (release
managers hold the investigator role)."""

from __future__ import annotations

import json

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import HttpResponseClientRedirect

from casework.errors import DomainError
from casework.people.roles import investigator_required
from casework.releases import selectors, services
from casework.releases.services import OverrideNeedsConfirmation

OUTCOMES = [("go", "Go"), ("no_go", "No go"), ("deferred", "Defer")]


@require_http_methods(["GET", "POST"])
@investigator_required
def index(request):
    errors, text = {}, ""
    if request.method == "POST":
        text = request.POST.get("release_json", "")
        try:
            release = services.release_submit(actor=request.user, data=json.loads(text or "null"), via="web")
            return redirect("cases:detail", reference=release.case.reference)
        except json.JSONDecodeError as exc:
            errors = {"json": [f"Not valid JSON: {exc}"]}
        except ValidationError as exc:
            errors = exc.message_dict
        except DomainError as exc:
            errors = {"release_id": [exc.message]}
    releases = selectors.release_list(request.user)[:100]
    return render(request, "releases/index.html", {"releases": releases, "errors": errors, "text": text},
                  status=400 if errors else 200)


@require_GET
@investigator_required
def overview(request, release_id: str):
    release = selectors.release_get_for_user(request.user, release_id)
    return render(request, "releases/_overview.html", {"case": release.case})


@require_POST
@investigator_required
def decide(request, release_id: str):
    release = selectors.release_get_for_user(request.user, release_id)
    outcome, reason = request.POST.get("outcome", ""), request.POST.get("reason", "")
    context = {"release": release, "outcomes": OUTCOMES, "form_outcome": outcome, "form_reason": reason}
    try:
        services.release_decide(actor=request.user, release=release, outcome=outcome, reason=reason,
                                confirm_override=request.POST.get("confirm_override") == "1")
    except OverrideNeedsConfirmation as exc:
        context["needs_confirmation"] = exc.message
    except ValidationError as exc:
        context["error"] = "; ".join(m for msgs in exc.message_dict.values() for m in msgs)
    except DomainError as exc:
        context["error"] = exc.message
    else:
        messages.success(request, f"{release.case.reference}: decided.")
        if request.htmx:
            return HttpResponseClientRedirect(reverse("cases:detail", args=[release.case.reference]))
        return redirect("cases:detail", reference=release.case.reference)
    if request.htmx:
        return render(request, "releases/_decide_form.html", context)
    for note in (context.get("needs_confirmation"), context.get("error")):
        if note:
            messages.warning(request, note)
    return redirect("cases:detail", reference=release.case.reference)


@require_POST
@investigator_required
def reassess(request, release_id: str):
    release = selectors.release_get_for_user(request.user, release_id)
    try:
        services.release_reassess(actor=request.user, release=release)
        messages.success(request, "The detective is assessing the release again.")
    except DomainError as exc:
        messages.error(request, exc.message)
    return redirect("cases:detail", reference=release.case.reference)
