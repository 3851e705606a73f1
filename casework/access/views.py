"""Pages for the three people of an access review.

The employee answers through a signed link (no login). The manager answers in their inbox.
The investigator submits changes, follows the investigation on the case page (tabs
registered in apps.py) and decides. Views parse, call one service or selector, render.
"""

from __future__ import annotations

from functools import wraps

from django.contrib import messages
from django.contrib.auth.decorators import login_not_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from casework.access import selectors, services
from casework.access.forms import ClaimForm, DecideForm, MutationForm, VerdictForm
from casework.access.links import link_check
from casework.access.models import InfoRequest
from casework.cases.selectors import case_get_for_user
from casework.errors import Conflict, DomainError
from casework.people.roles import investigator_required, is_manager
from casework.security.throttles import page_throttle


def manager_required(view):
    @wraps(view)
    def wrapper(request, *args, **kwargs):
        if not is_manager(request.user):
            raise PermissionDenied("Only managers have an inbox of validation requests.")
        return view(request, *args, **kwargs)

    return wrapper


# --- the employee -----------------------------------------------------------------------------

def _refused(request, check_or_message, *, status: int):
    message = check_or_message if isinstance(check_or_message, str) else check_or_message.message()
    state = "" if isinstance(check_or_message, str) else check_or_message.state
    return render(request, "access/respond_refused.html", {"message": message, "state": state}, status=status)


_REFUSED_STATUS = {"forged": 400, "used": 410, "expired": 410, "cancelled": 410}


@login_not_required
@never_cache
@page_throttle("signed_link")
@require_http_methods(["GET", "POST"])
def respond(request, token: str):
    """The employee's answer page. A forged, used, expired or withdrawn link gets a page
    saying which, and nothing changes."""
    check = link_check(token)
    if not check.ok:
        return _refused(request, check, status=_REFUSED_STATUS[check.state])
    req = check.request
    mutation = req.mutation
    form = ClaimForm(request.POST or None, employee=mutation.changed_by)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            claim = services.claim_submit(token=token, claim_type=data["claim_type"], colleague=data["colleague"],
                                          period_start=data["period_start"], period_end=data["period_end"],
                                          explanation=data["explanation"])
        except services.LinkRefused:
            return _refused(request, link_check(token), status=410)
        except Conflict as exc:
            return _refused(request, exc.message, status=409)
        except ValidationError as exc:
            form.add_error(None, exc)
        else:
            return render(request, "access/respond_thanks.html", {"claim": claim, "mutation": mutation})
    status = 400 if form.errors else 200
    return render(request, "access/respond.html", {"form": form, "req": req, "mutation": mutation}, status=status)


# --- the manager ------------------------------------------------------------------------------

@require_GET
@manager_required
def inbox(request):
    return render(request, "access/inbox.html", selectors.inbox_for(request.user))


@require_http_methods(["GET", "POST"])
@manager_required
def inbox_detail(request, pk: int):
    req = selectors.request_get_for_manager(request.user, pk)
    form = VerdictForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            services.verdict_submit(actor=request.user, request=req,
                                    approved=form.cleaned_data["decision"] == "approve",
                                    comment=form.cleaned_data["comment"])
        except DomainError as exc:
            messages.error(request, exc.message)
            return redirect("access:inbox_detail", pk=req.pk)
        except ValidationError as exc:
            form.add_error(None, exc)
        else:
            verb = "approved" if form.cleaned_data["decision"] == "approve" else "denied"
            messages.success(request, f"You {verb} the change. The investigator has your answer.")
            return redirect("access:inbox")
    context = selectors.request_context(req) | {"form": form}
    return render(request, "access/inbox_detail.html", context, status=400 if form.errors else 200)


# --- the investigator -------------------------------------------------------------------------

@require_http_methods(["GET", "POST"])
@investigator_required
def mutation_new(request):
    form = MutationForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            mutation = services.mutation_submit(actor=request.user, **form.cleaned_data)
        except DomainError as exc:
            form.add_error(None, exc.message)
        except ValidationError as exc:
            form.add_error(None, exc)
        else:
            messages.success(request, f"{mutation.case.reference} opened; the investigation has started.")
            return redirect("cases:detail", reference=mutation.case.reference)
    return render(request, "access/mutation_new.html", {"form": form}, status=400 if form.errors else 200)


TAB_TEMPLATES = {"change": "access/tabs/change.html", "messages": "access/tabs/messages.html",
                 "answers": "access/tabs/answers.html", "report": "access/tabs/report.html"}


@require_GET
@investigator_required
def case_tab(request, reference: str, tab: str):
    """One access tab of the case page, for htmx to refresh while agents work."""
    case = case_get_for_user(request.user, reference)
    if tab not in TAB_TEMPLATES:
        raise PermissionDenied("No such tab.")
    return render(request, TAB_TEMPLATES[tab], {"case": case})


@require_POST
@investigator_required
def decide(request, reference: str):
    case = case_get_for_user(request.user, reference)
    mutation = selectors.mutation_for_case(case)
    form = DecideForm(request.POST)
    if mutation is None:
        messages.error(request, "This case has no recorded change to decide on.")
    elif not form.is_valid():
        messages.error(request, "Choose an outcome and give a reason.")
    else:
        try:
            services.mutation_decide(actor=request.user, mutation=mutation, **form.cleaned_data)
            messages.success(request, f"{case.reference} decided and closed.")
        except DomainError as exc:
            messages.error(request, exc.message)
        except ValidationError as exc:
            messages.error(request, "; ".join(exc.messages))
    return redirect("cases:detail", reference=case.reference)


@require_POST
@investigator_required
def resend(request, reference: str, pk: int):
    case = case_get_for_user(request.user, reference)
    req = get_object_or_404(InfoRequest, pk=pk, mutation__case=case)
    try:
        fresh = services.request_resend(actor=request.user, request=req)
    except DomainError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(request, f"A new link was sent to {fresh.recipient.name}; the old one no longer works.")
    return redirect("cases:detail", reference=case.reference)
