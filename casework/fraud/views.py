"""Fraud pages: the case page's live assessment and its buttons, CSV import and the
captured-patterns library. Investigators only."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.http import Http404
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from casework.cases.selectors import case_get_for_user
from casework.errors import DomainError
from casework.fraud import selectors, services
from casework.fraud.csv_import import LINE_NOTE, CsvRefused, import_alerts_file
from casework.fraud.forms import AlertImportForm, PatternSearchForm
from casework.fraud.manual_entry import ManualAlertForm
from casework.fraud.templatetags.fraud_tags import remember
from casework.people.roles import investigator_required

PATTERNS_PAGE_SIZE = 25
# The result lists the first created cases; the rest are one click away in the queue.
CREATED_SHOWN = 50


def _case_and_alert(request, reference: str):
    case = case_get_for_user(request.user, reference)
    alert = selectors.alert_get_for_case(case)
    if alert is None:
        raise Http404(f"{case.reference} has no fraud alert.")
    return case, alert


@require_GET
@investigator_required
def assessment(request, reference: str):
    """The overview's assessment block, polled by htmx while a run is active; the evidence
    tabs and the captured pattern come along as out-of-band swaps."""
    case, _ = _case_and_alert(request, reference)
    fraud = remember(case, selectors.fraud_assessment(case, viewer=request.user))
    return render(request, "fraud/_assessment_poll.html", {"case": case, "fraud": fraud})


def _act(request, reference: str, service, done: str):
    """A button on the alert's page: call the service, say what happens or why it cannot."""
    case, alert = _case_and_alert(request, reference)
    try:
        service(actor=request.user, alert=alert)
        messages.success(request, done)
    except DomainError as exc:
        messages.error(request, exc.message)
    return redirect("cases:detail", reference=case.reference)


@require_POST
@investigator_required
def reassess(request, reference: str):
    return _act(request, reference, services.alert_reassess,
                "Re-assessing: the orchestrator reads the cached specialist findings again.")


@require_POST
@investigator_required
def rerun(request, reference: str):
    return _act(request, reference, services.alert_rerun_all, "Re-running all six agents.")


@require_POST
@investigator_required
def capture_retry(request, reference: str):
    return _act(request, reference, services.alert_capture_retry,
                "Retrying knowledge capture: the agent reads the decision again.")


@require_http_methods(["GET", "POST"])
@investigator_required
def alert_import(request):
    form = AlertImportForm(request.POST, request.FILES) if request.method == "POST" else AlertImportForm()
    context = {"form": form, "manual_form": ManualAlertForm(), "line_note": LINE_NOTE, "created_shown": CREATED_SHOWN}
    status = 200
    if request.method == "POST" and form.is_valid():
        try:
            report = import_alerts_file(actor=request.user, file=form.cleaned_data["file"],
                                        skip_invalid=form.cleaned_data["skip_invalid"], via="csv_upload")
        except CsvRefused as exc:
            context["file_errors"] = exc.errors
            status = 400
        except ValidationError as exc:
            context["file_errors"] = exc.messages
            status = 400
        else:
            context["report"] = report
            context["created_more"] = max(0, len(report.created) - CREATED_SHOWN)
            if report.refused:
                status = 400
            elif report.created:
                context["form"] = AlertImportForm()
            else:
                context["file_errors"] = ["No valid rows; nothing imported."]
                status = 400
    elif request.method == "POST":
        status = 400
    return render(request, "fraud/import.html", context, status=status)


@require_GET
@investigator_required
def patterns(request):
    form = PatternSearchForm(request.GET or None)
    q = form.cleaned_data["q"] if form.is_valid() else ""
    page = Paginator(selectors.patterns_search(request.user, q), PATTERNS_PAGE_SIZE).get_page(request.GET.get("page"))
    context = {"form": form, "q": q, "page": page}
    if request.htmx and request.htmx.target == "pattern-results":
        return render(request, "fraud/_pattern_results.html", context)
    return render(request, "fraud/patterns.html", context)
