"""The import page's other two ways in: one alert typed by hand, and the CSV template."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from casework.fraud.csv_import import LINE_NOTE
from casework.fraud.forms import AlertImportForm
from casework.fraud.manual_entry import ManualAlertForm, alert_csv_template, alert_enter
from casework.fraud.views import CREATED_SHOWN
from casework.people.roles import investigator_required


@require_POST
@investigator_required
def alert_enter_view(request):
    form = ManualAlertForm(request.POST)
    if form.is_valid():
        try:
            alert = alert_enter(actor=request.user, values=form.values())
        except ValidationError as exc:
            for name, problems in exc.message_dict.items():
                form.add_error(None if name == "__all__" or name not in form.fields else name, problems)
        else:
            messages.success(request, f"{alert.case.reference} opened for {alert.account.account_id}; "
                                      "its investigation is queued.")
            return redirect("cases:detail", reference=alert.case.reference)
    context = {"form": AlertImportForm(), "manual_form": form, "line_note": LINE_NOTE, "created_shown": CREATED_SHOWN}
    return render(request, "fraud/import.html", context, status=400)


@require_GET
@investigator_required
def alert_csv_template_view(request):
    response = HttpResponse(alert_csv_template(), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = 'attachment; filename="fraud-alerts-template.csv"'
    return response
