"""Transaction investigation pages: start one, import history, the case page's actions
(recommendations, the rule draft, resume) and the promoted rules. Investigators only,
except promoting, which managers and admins do."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404, HttpResponseBadRequest
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from casework.cases.selectors import case_get_for_user
from casework.errors import DomainError
from casework.people.roles import investigator_required
from casework.transactions import selectors, services
from casework.transactions.data_io import error_lines, import_csv
from casework.transactions.forms import InvestigationStartForm, RuleEditForm, TransactionImportForm
from casework.transactions.models import Recommendation, RuleDraft

RECENT_SHOWN = 30


def _investigation(request, reference: str):
    case = case_get_for_user(request.user, reference)
    investigation = selectors.investigation_get_for_case(case)
    if investigation is None:
        raise Http404(f"{case.reference} has no transaction investigation.")
    return case, investigation


@require_http_methods(["GET", "POST"])
@investigator_required
def index(request):
    start_form = InvestigationStartForm(request.POST if "transaction_id" in request.POST else None)
    import_form = TransactionImportForm(request.POST, request.FILES) if request.FILES else TransactionImportForm()
    status = 200
    if start_form.is_bound and start_form.is_valid():
        try:
            investigation = services.investigation_start(actor=request.user,
                                                         transaction_id=start_form.cleaned_data["transaction_id"])
            return redirect("cases:detail", reference=investigation.case.reference)
        except Http404 as exc:
            start_form.add_error("transaction_id", str(exc))
        except DomainError as exc:
            start_form.add_error("transaction_id", exc.message)
        status = 400
    elif request.FILES and import_form.is_valid():
        try:
            created = import_csv(actor=request.user, text=import_form.cleaned_data["file"].read().decode("utf-8-sig"))
            messages.success(request, f"Imported {len(created)} transactions.")
            return redirect("transactions:index")
        except (ValidationError, UnicodeDecodeError) as exc:
            import_form.add_error(None, error_lines(exc) if isinstance(exc, ValidationError) else "Not UTF-8 text.")
        status = 400
    elif request.method == "POST":
        status = 400
    recent = selectors.investigation_list(request.user)[:RECENT_SHOWN]
    return render(request, "transactions/index.html",
                  {"start_form": start_form, "import_form": import_form, "recent": recent}, status=status)


@require_GET
@investigator_required
def progress(request, reference: str):
    case, _ = _investigation(request, reference)
    from casework.transactions.templatetags.txn_tags import txn_page

    return render(request, "transactions/_progress.html",
                  {"case": case, "txn": txn_page({"request": request}, case), "request": request})


@require_POST
@investigator_required
def resume(request, reference: str):
    case, investigation = _investigation(request, reference)
    try:
        services.investigation_resume(actor=request.user, investigation=investigation)
        messages.success(request, "Resuming: the planner continues from the saved state.")
    except DomainError as exc:
        messages.error(request, exc.message)
    return redirect("cases:detail", reference=case.reference)


@require_POST
@investigator_required
def recommendation(request, reference: str, pk: int):
    case, investigation = _investigation(request, reference)
    rec = get_object_or_404(Recommendation, pk=pk, investigation=investigation)
    decision = request.POST.get("decision")
    if decision not in ("accept", "reject"):
        return HttpResponseBadRequest("decision must be accept or reject")
    try:
        services.recommendation_decide(actor=request.user, recommendation=rec, accept=decision == "accept",
                                       note=request.POST.get("note", ""))
    except DomainError as exc:
        messages.error(request, exc.message)
    if request.htmx:
        from casework.transactions.templatetags.txn_tags import txn_page

        return render(request, "transactions/_recommendations.html",
                      {"case": case, "txn": txn_page({"request": request}, case)})
    return redirect("cases:detail", reference=case.reference)


@require_POST
@investigator_required
def rule_edit(request, reference: str):
    case, investigation = _investigation(request, reference)
    rule = get_object_or_404(RuleDraft, investigation=investigation)
    form = RuleEditForm(request.POST)
    if form.is_valid():
        try:
            services.rule_draft_update(actor=request.user, rule=rule, **form.cleaned_data)
            messages.success(request, "Rule saved and back-tested again.")
        except ValidationError as exc:
            messages.error(request, "; ".join(exc.messages))
        except DomainError as exc:
            messages.error(request, exc.message)
    else:
        messages.error(request, "; ".join(m for errs in form.errors.values() for m in errs))
    return redirect("cases:detail", reference=case.reference)


@require_POST
@login_required
def rule_promote(request, reference: str):
    if not services.may_promote(request.user):
        raise PermissionDenied("Only managers and admins promote rules.")
    rule = selectors.rule_draft_to_promote(request.user, reference)
    try:
        services.rule_promote(actor=request.user, rule=rule)
        messages.success(request, f"Rule {rule.name!r} promoted.")
    except DomainError as exc:
        messages.error(request, exc.message)
    return redirect("cases:detail", reference=rule.investigation.case.reference)
