"""Who looked at a case (its leads and admins: a panel the case page loads with htmx), and the
admins' CSV export of the access log per person or per case."""

from __future__ import annotations

import csv

from django.core.exceptions import PermissionDenied, ValidationError
from django.http import HttpResponseBadRequest, StreamingHttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from audit.access import access_not_recorded, access_record
from casework.cases import selectors
from casework.cases.access_log import (
    PANEL_CAP,
    access_csv_rows,
    access_export_entries,
    case_readers,
    export_filename,
    export_id,
)
from casework.cases.visibility import sees_every_case, user_leads
from casework.errors import error_text


@require_GET
@access_not_recorded  # part of the case page, whose opening is the read
def who_looked(request, reference: str):
    case = selectors.case_get_for_user(request.user, reference)  # 404 outside the rule
    if not user_leads(request.user, case):
        raise PermissionDenied("Only the leads of the team that owns this case, and admins, see who looked at it.")
    rows, more = case_readers(case)
    return render(request, "cases/_who_looked_rows.html", {"case": case, "rows": rows, "more": more,
                                                           "cap": PANEL_CAP})


class _Echo:
    def write(self, value: str) -> str:
        return value


@require_GET
def export(request):
    if not sees_every_case(request.user):
        raise PermissionDenied("Only admins export the access log.")
    try:
        entries, chosen = access_export_entries(request.GET)
    except ValidationError as exc:
        return HttpResponseBadRequest(error_text(exc), content_type="text/plain; charset=utf-8")
    access_record(request.user, via="access_log:export", object_type="export", case_ref=chosen.get("case", ""),
                  object_id=export_id(chosen), path=request.get_full_path())
    writer = csv.writer(_Echo())
    response = StreamingHttpResponse((writer.writerow(row) for row in access_csv_rows(entries)),
                                     content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{export_filename(chosen)}"'
    return response
