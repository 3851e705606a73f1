"""/cases/export.csv: the queue's cases as CSV, with the queue's filters (casework.cases.filters).

Only the cases the person may see (selectors.case_list: casework.cases.visibility), at most
EXPORT_CAP rows in the queue's order; the response says how many it holds and whether more
matched (X-Export-Rows, X-Export-Cap, X-Export-Capped), so a capped file is never mistaken for
the whole. Each case exported is a read on record (audit.access, one entry per row), and the
export itself is an audit entry naming the filters and the count.
"""

from __future__ import annotations

import csv
import io

from django.db import transaction
from django.http import HttpResponse
from django.utils import timezone
from django.views.decorators.http import require_GET

from audit.access import access_record_cases
from audit.services import audit_record
from casework.cases import selectors
from casework.cases.filters import CaseFilter

EXPORT_CAP = 5_000
COLUMNS = ("reference", "case_type", "title", "status", "priority", "assignee", "created_at", "updated_at",
           "due_at", "closed_at")


def _cell(value) -> str:
    text = "" if value is None else (value.isoformat() if hasattr(value, "isoformat") else str(value))
    # A spreadsheet runs a cell starting with = + - @ as a formula: case titles are untrusted input.
    return f"'{text}" if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


@transaction.atomic
def cases_export(*, actor, filterset: CaseFilter) -> tuple[list[list[str]], bool]:
    """The rows (up to EXPORT_CAP) of the filtered cases this person may see, and whether more
    matched; the export audited and each case's read recorded."""
    cases = list(filterset.qs.select_related("assignee")[: EXPORT_CAP + 1])
    capped = len(cases) > EXPORT_CAP
    cases = cases[:EXPORT_CAP]
    rows = [[_cell(c.reference), c.case_type, _cell(c.title), c.status, c.priority,
             c.assignee.get_username() if c.assignee_id else "", _cell(c.created_at), _cell(c.updated_at),
             _cell(c.due_at), _cell(c.closed_at)] for c in cases]
    chosen = filterset.form.cleaned_data if filterset.is_bound else {}  # unbound: no filter, every case
    filters = {k: v for k, v in chosen.items() if v not in (None, "", [])}
    audit_record(actor=actor, action="cases.exported",
                 data={"filters": {k: str(v) for k, v in filters.items()}, "rows": len(rows), "capped": capped,
                       "cap": EXPORT_CAP})
    access_record_cases(actor, [c.reference for c in cases], via="cases:export_csv")
    return rows, capped


@require_GET
def export_csv(request):
    filterset = CaseFilter(request.GET or None, queryset=selectors.case_list(request.user), request=request)
    if filterset.is_bound and not filterset.is_valid():
        return HttpResponse("\n".join(filterset.error_messages()), status=400, content_type="text/plain")
    rows, capped = cases_export(actor=request.user, filterset=filterset)
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(COLUMNS)
    writer.writerows(rows)
    response = HttpResponse(out.getvalue(), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="cases-{timezone.now():%Y%m%d-%H%M%S}.csv"'
    response["X-Export-Rows"] = str(len(rows))
    response["X-Export-Cap"] = str(EXPORT_CAP)
    response["X-Export-Capped"] = "true" if capped else "false"
    return response
