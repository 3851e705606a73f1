"""The case page's Restriction panel: restrict a case to named people, or lift it."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from casework.cases import restriction, selectors
from casework.cases.forms import RestrictForm, UnrestrictForm
from casework.cases.templatetags.case_restriction import restriction_context
from casework.cases.visibility import user_leads
from casework.errors import error_text


@require_POST
def restriction_change(request, reference: str):
    """POST action=restrict (people, reason) or action=unrestrict (lift-reason). 403 for someone
    who sees the case but leads no team owning it (the service says so), 404 for the rest."""
    case = selectors.case_get_for_user(request.user, reference)
    if not user_leads(request.user, case):
        raise PermissionDenied("Only a lead of a team that owns this case type, or an admin, restricts it.")
    lifting = request.POST.get("action") == "unrestrict"
    form = UnrestrictForm(request.POST, prefix="lift") if lifting else RestrictForm(request.POST)
    errors = ""
    if form.is_valid():
        try:
            if lifting:
                case = restriction.case_unrestrict(actor=request.user, case=case, reason=form.cleaned_data["reason"])
            else:
                case = restriction.case_restrict(actor=request.user, case=case, **form.cleaned_data)
            form = None
        except ValidationError as exc:
            errors = error_text(exc)
    else:
        errors = error_text(form.errors)
    if not request.htmx:
        if errors:
            messages.error(request, errors)
        return redirect("cases:detail", reference=case.reference)
    context = restriction_context(case, request.user, **({"unrestrict_form": form} if lifting else {"form": form}))
    # The header's "Restricted" mark follows, out of band.
    return render(request, "cases/_restriction.html", {**context, "errors": errors, "oob_meta": True})
